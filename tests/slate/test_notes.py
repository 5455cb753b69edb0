"""Notes: the model's own working notes, by key, redacted and capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ax_slate import delete_note, list_notes, open_session, set_note
from ax_slate.cli import main
from ax_slate.session import NOTE_MAX_CHARS, NOTES_MAX_TOKENS
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout


@pytest.fixture
def session(layout: StateLayout) -> str:
    open_session(layout, "s1")
    return "s1"


def stored_notes(layout: StateLayout) -> dict[str, dict[str, str]]:
    doc = json.loads((layout.session_dir("s1") / "slate.json").read_text())
    return doc["notes"]


def test_set_replace_delete(layout: StateLayout, session: str) -> None:
    set_note(layout, session, "plan", "first")
    set_note(layout, session, "todo", "write tests")
    set_note(layout, session, "plan", "second")
    assert {k: v["text"] for k, v in stored_notes(layout).items()} == {
        "plan": "second",
        "todo": "write tests",
    }
    assert delete_note(layout, session, "plan") is True
    assert delete_note(layout, session, "plan") is False
    assert [n.key for n in list_notes(layout, session)] == ["todo"]
    with pytest.raises(OperationFailed):
        list_notes(layout, session, "plan")


def test_notes_are_redacted_before_they_are_stored(layout: StateLayout, session: str) -> None:
    secret = "ghp_" + "B" * 36
    note = set_note(layout, session, "creds", f"the token is {secret}")
    assert secret not in note.text
    assert secret not in (layout.session_dir("s1") / "slate.json").read_text()


def test_per_note_cap(layout: StateLayout, session: str) -> None:
    set_note(layout, session, "ok", "x" * NOTE_MAX_CHARS)
    with pytest.raises(UsageError) as caught:
        set_note(layout, session, "big", "x" * (NOTE_MAX_CHARS + 1))
    assert f"at most {NOTE_MAX_CHARS}" in caught.value.message
    assert "big" not in stored_notes(layout)


def test_shelf_cap_counts_replacements_once(layout: StateLayout, session: str) -> None:
    # Each full note is 500 tokens plus its key; 15 fit in 8,000 tokens, 16 do not.
    for i in range(15):
        set_note(layout, session, f"n{i:02d}", "x" * NOTE_MAX_CHARS)
    before = (layout.session_dir("s1") / "slate.json").read_bytes()
    with pytest.raises(UsageError) as caught:
        set_note(layout, session, "n15", "x" * NOTE_MAX_CHARS)
    assert f"at most {NOTES_MAX_TOKENS}" in caught.value.message
    assert (layout.session_dir("s1") / "slate.json").read_bytes() == before
    # Replacing an existing note does not count it twice.
    set_note(layout, session, "n00", "y" * NOTE_MAX_CHARS)


@pytest.mark.parametrize("key", ["", "../x", "a b", "k" * 65, "a/b"])
def test_bad_keys(layout: StateLayout, session: str, key: str) -> None:
    with pytest.raises(UsageError):
        set_note(layout, session, key, "text")
    assert stored_notes(layout) == {}


def test_no_slate_is_said_plainly(layout: StateLayout) -> None:
    with pytest.raises(OperationFailed) as caught:
        set_note(layout, "nosuch", "k", "v")
    assert "has no slate" in caught.value.message
    assert not (layout.session_dir("nosuch") / "slate.json").exists()


def test_note_cli(run_cli, layout: StateLayout, session: str, workspace: Path) -> None:
    ws = ["-C", str(workspace)]
    set_result = run_cli(main, ["note", "set", "plan", "--session", "s1", *ws], "step one\n")
    assert set_result.exit_code == 0, set_result.stderr
    shown = run_cli(main, ["notes", "--session", "s1", *ws])
    assert "[plan]" in shown.stdout and "step one" in shown.stdout
    as_json = run_cli(main, ["notes", "--session", "s1", "plan", "--json", *ws])
    assert json.loads(as_json.stdout)[0]["text"] == "step one"
    too_big = run_cli(
        main, ["note", "set", "big", "--session", "s1", *ws], "x" * (NOTE_MAX_CHARS + 1)
    )
    assert too_big.exit_code == 2
    assert "at most 2000" in too_big.stderr
    deleted = run_cli(main, ["note", "delete", "plan", "--session", "s1", *ws])
    assert deleted.exit_code == 0
    again = run_cli(main, ["note", "delete", "plan", "--session", "s1", *ws])
    assert again.exit_code == 1
    assert "no note 'plan'" in again.stderr
