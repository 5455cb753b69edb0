"""slate_note and recall_step against a real session slate."""

from __future__ import annotations

from agent.tools.toolkit import SESSION, Harness

from ax_agent.tools import recall_step, slate_note
from ax_slate import RecordRequest, list_notes, record, save_output


def test_set_replace_and_delete_a_note(harness: Harness) -> None:
    saved = harness.call(slate_note.TOOL, {"key": "plan", "text": "fix sub, then run tests"})
    assert saved.content == "saved note 'plan' (23 characters)"
    harness.call(slate_note.TOOL, {"action": "set", "key": "plan", "text": "done"})
    assert [(n.key, n.text) for n in list_notes(harness.layout, SESSION)] == [("plan", "done")]
    deleted = harness.call(slate_note.TOOL, {"action": "delete", "key": "plan"})
    assert deleted.content == "deleted note 'plan'"
    assert list_notes(harness.layout, SESSION) == []
    again = harness.call(slate_note.TOOL, {"action": "delete", "key": "plan"})
    assert not again.is_error and again.content == "there was no note 'plan'"


def test_note_refusals_come_back_as_errors(harness: Harness) -> None:
    empty = harness.call(slate_note.TOOL, {"key": "plan"})
    assert empty.is_error and "needs text" in empty.content
    bad_key = harness.call(slate_note.TOOL, {"key": "no spaces", "text": "x"})
    assert bad_key.is_error and "invalid note key" in bad_key.content
    huge = harness.call(slate_note.TOOL, {"key": "big", "text": "x" * 5_000})
    assert huge.is_error and "at most" in huge.content
    assert list_notes(harness.layout, SESSION) == []


def test_secrets_in_notes_are_redacted_by_the_slate(harness: Harness) -> None:
    harness.call(slate_note.TOOL, {"key": "k", "text": "token sk-ant-api03-abcdefghijklmnopqrstu"})
    (note,) = list_notes(harness.layout, SESSION)
    assert "sk-ant-api03" not in note.text


def test_recall_pages_and_errors(harness: Harness) -> None:
    path = save_output(harness.layout, SESSION, "first line\n" + "z" * 7_000)
    entry = record(
        harness.layout, SESSION, RecordRequest(tool="grep", outcome="ok", output=str(path))
    )
    first = harness.call(recall_step.TOOL, {"step": entry.step})
    assert first.content.startswith("first line\n")
    assert first.content.endswith(
        f"[step {entry.step}, page 1 of 2. Next: recall_step(step={entry.step}, page=2)]"
    )
    assert first.summary == f"recalled step {entry.step}, page 1 of 2"
    second = harness.call(recall_step.TOOL, {"step": entry.step, "page": 2})
    assert second.content.endswith(f"[step {entry.step}, page 2 of 2: the end]")
    past = harness.call(recall_step.TOOL, {"step": entry.step, "page": 3})
    assert past.is_error and "page 3 does not exist" in past.content
    nothing = harness.call(recall_step.TOOL, {"step": 99})
    assert nothing.is_error and "no step 99" in nothing.content
    plain = record(harness.layout, SESSION, RecordRequest(tool="read_file", outcome="ok"))
    unsaved = harness.call(recall_step.TOOL, {"step": plain.step})
    assert unsaved.is_error and "saved no full output" in unsaved.content
