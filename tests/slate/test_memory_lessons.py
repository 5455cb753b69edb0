"""LESSONS.md: merge by slug, three per session, defused bodies, a person's bytes kept."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slate.memtest import memory_file

from ax_slate import LessonInput, propose_lesson
from ax_slate.lessons import (
    LESSON_TEXT_MAX_BYTES,
    LESSONS_PER_SESSION,
    parse_lessons,
    read_lessons,
)
from ax_slate.memstore import LESSONS_MAX_BYTES
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.paths import StateLayout, state_layout


def lesson(slug: str, text: str = "a pitfall and its cure") -> LessonInput:
    return LessonInput(slug=slug, text=text)


def keys(layout: StateLayout) -> list[str]:
    found = read_lessons(layout)
    return [span.key for span in found.entries] if found else []


def test_a_new_slug_goes_to_the_front_and_a_reused_one_moves_there(layout: StateLayout) -> None:
    assert propose_lesson(layout, "s1", lesson("one")).action == "added"
    propose_lesson(layout, "s1", lesson("two"))
    propose_lesson(layout, "s2", lesson("three"))
    assert keys(layout) == ["three", "two", "one"]
    result = propose_lesson(layout, "s2", lesson("one", "the better cure"))
    assert result.action == "updated"
    assert keys(layout) == ["one", "three", "two"]
    text = memory_file(layout, "LESSONS.md").read_text()
    assert (
        "the better cure" in text and "a pitfall and its cure\n\n_Proposed in session `s1`" in text
    )
    assert re.search(
        r"## one\n\nthe better cure\n\n_Updated in session `s2` at \S+ \(model-written\)\._\n", text
    )


def test_a_heading_in_a_proposal_cannot_forge_an_entry(layout: StateLayout) -> None:
    body = "Run migrations first.\n## forged-slug\n   ### deeper\nTitle\n===\nline\r## crlf-forged"
    propose_lesson(layout, "s1", lesson("real", body))
    propose_lesson(layout, "s1", lesson("forged-slug", "the real forged-slug"))
    parsed = read_lessons(layout)
    assert parsed is not None
    assert [span.key for span in parsed.entries] == ["forged-slug", "real"]
    real = parsed.entries[1].text
    assert "\\## forged-slug\n   \\### deeper\nTitle\n\\===\nline\n\\## crlf-forged\n" in real
    # The update reached the real entry, and the forged line stayed in the body it was in.
    assert parsed.entries[0].text.startswith("## forged-slug\n\nthe real forged-slug\n")


HAND_EDITED = (
    "\ufeff# Lessons  \r\n"
    "\r\n"
    "Kept by hand.\tTabs,   spaces and ü ß 日本 😀.\r\n"
    "\r\n"
    "## Don't run the suite as root \r\n"
    'It "works" — until it doesn\'t.   \r\n'
    "\r\n"
    "\r\n"
    "## model-one\r\n"
    "\r\n"
    "Generated, then edited: ✓\r\n"
    "\r\n"
    "_Proposed in session `s0` at 2026-01-01T00:00:00.000Z (model-written)._\r\n"
    "\r\n"
    "##\tlast-entry\r\n"
    "trailing spaces   \r\n"
    "no final newline"
)


def spans(text: str) -> list[str]:
    parsed = parse_lessons(Path("LESSONS.md"), text)
    return [parsed.preamble, *(span.text for span in parsed.entries)]


def test_a_persons_edits_survive_a_merge_byte_for_byte(layout: StateLayout) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(HAND_EDITED.encode())
    before = spans(HAND_EDITED)
    assert "".join(before) == HAND_EDITED

    propose_lesson(layout, "s1", lesson("brand-new", "a new one"))
    after = path.read_bytes()
    preamble, *rest = before
    added = spans(after.decode())[1]
    assert after == (preamble + added + "".join(rest)).encode()
    # The person's file uses CRLF, so the new entry does too.
    assert added.startswith("## brand-new\r\n\r\na new one\r\n")

    propose_lesson(layout, "s1", lesson("model-one", "replaced"))
    final = path.read_bytes().decode()
    untouched = [preamble, added, before[1], before[3]]
    for span in untouched:
        assert span in final
    assert final.startswith(preamble + "## model-one\r\n\r\nreplaced\r\n")
    assert final.endswith(before[1] + before[3])
    assert "Generated, then edited" not in final


def test_the_file_without_a_preamble_keeps_its_first_entry_first_after_the_new(
    layout: StateLayout,
) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    path.write_text("## mine\nkept")
    propose_lesson(layout, "s1", lesson("new"))
    assert path.read_text().endswith("\n## mine\nkept")
    assert keys(layout) == ["new", "mine"]


def test_a_session_proposes_at_most_three_lessons(layout: StateLayout) -> None:
    for slug in ("a", "b", "c"):
        propose_lesson(layout, "s1", lesson(slug))
    before = {p.name: p.read_bytes() for p in layout.memory_dir.iterdir()}
    with pytest.raises(OperationFailed, match="already proposed 3 lessons") as caught:
        propose_lesson(layout, "s1", lesson("d"))
    assert caught.value.status == 1
    assert {p.name: p.read_bytes() for p in layout.memory_dir.iterdir()} == before
    # Updating one of its own is not a new proposal; another session has its own count.
    result = propose_lesson(layout, "s1", lesson("b", "sharper"))
    assert (result.action, result.remaining) == ("updated", 0)
    assert propose_lesson(layout, "s2", lesson("d")).remaining == LESSONS_PER_SESSION - 1


def test_the_count_outlives_the_process_so_a_resumed_session_keeps_it(
    layout: StateLayout,
) -> None:
    for slug in ("a", "b", "c"):
        propose_lesson(layout, "s1", lesson(slug))
    resumed = state_layout(layout.workspace)
    with pytest.raises(OperationFailed, match="at most 3"):
        propose_lesson(resumed, "s1", lesson("d"))


@pytest.mark.parametrize(
    ("slug", "text", "problem"),
    [
        ("Not A Slug", "x", "invalid lesson slug"),
        ("a--b", "x", "invalid lesson slug"),
        ("x" * 65, "x", "invalid lesson slug"),
        ("ok", "  \n\n ", "has no text"),
        ("ok", "é" * (LESSON_TEXT_MAX_BYTES // 2 + 1), "a lesson holds at most 1024"),
    ],
)
def test_a_malformed_proposal_is_refused(
    layout: StateLayout, slug: str, text: str, problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        propose_lesson(layout, "s1", lesson(slug, text))
    assert not memory_file(layout, "LESSONS.md").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"## same\nx\n## same\ny\n", "two entries are headed '## same'"),
        (b"## fine\n\xc3(\n", "not UTF-8"),
    ],
)
def test_a_lessons_file_that_cannot_be_parsed_is_refused_and_kept(
    layout: StateLayout, text: bytes, problem: str
) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(text)
    with pytest.raises(CorruptStore, match=problem):
        propose_lesson(layout, "s1", lesson("new"))
    assert path.read_bytes() == text


def test_a_corrupt_ledger_is_refused(layout: StateLayout) -> None:
    layout.memory_dir.mkdir(parents=True)
    (layout.memory_dir / "lessons-ledger.json").write_text('{"version": 1, "sessions": 3}')
    with pytest.raises(CorruptStore, match="not a lessons ledger"):
        propose_lesson(layout, "s1", lesson("new"))
    assert not memory_file(layout, "LESSONS.md").exists()


# ---- the cap ---------------------------------------------------------------------------


def fill(layout: StateLayout, count: int) -> None:
    for number in range(count):
        propose_lesson(layout, f"s{number}", lesson(f"l{number}", "x" * 900))


def test_past_the_cap_the_oldest_model_written_lessons_are_evicted(layout: StateLayout) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    mine = "## mine\n\nWritten by a person; never evicted.\n\n"
    path.write_text("# Lessons\n\n" + mine)
    fill(layout, 12)
    assert len(path.read_bytes()) <= LESSONS_MAX_BYTES
    found = keys(layout)
    assert found[0] == "l11" and found[-1] == "mine" and "l0" not in found
    assert path.read_text().endswith(mine)
    result = propose_lesson(layout, "s99", lesson("newest", "y" * 900))
    assert result.evicted and result.bytes <= LESSONS_MAX_BYTES


def test_a_proposal_that_cannot_fit_without_evicting_a_persons_entry_is_refused(
    layout: StateLayout,
) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    text = "# Lessons\n\n## mine\n\n" + "a person's long note\n" * 385
    path.write_text(text)
    with pytest.raises(OperationFailed, match="over its cap of 8192"):
        propose_lesson(layout, "s1", lesson("new"))
    assert path.read_text() == text
    assert not (layout.memory_dir / "lessons-ledger.json").exists()


PIECES = ["a", "ü", "😀", " ", "\n", "\r\n", "#", "## ", "===", "-", "_Proposed", "word " * 40]


@st.composite
def proposals(draw: st.DrawFn) -> tuple[str, str, str]:
    session = draw(st.sampled_from(["s1", "s2", "s3", "s4"]))
    slug = draw(st.sampled_from(["a", "b", "c", "d", "e", "f-g"]))
    text = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=60)))
    return session, slug, text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(proposals(), min_size=1, max_size=15))
def test_any_sequence_of_proposals_stays_within_the_cap(
    sequence: list[tuple[str, str, str]],
) -> None:
    mine = "## mine\r\nA person's entry, CRLF and all: ü  \r\n\r\n"
    with tempfile.TemporaryDirectory() as root:
        ws = Path(root, "ws")
        ws.mkdir()
        layout = state_layout(ws, {"AX_STATE_DIR": str(Path(root, "state"))})
        path = memory_file(layout, "LESSONS.md")
        path.parent.mkdir(parents=True)
        path.write_text("# Lessons\n\n" + mine, newline="")
        for session, slug, text in sequence:
            before = path.read_bytes()
            try:
                propose_lesson(layout, session, lesson(slug, text))
            except (UsageError, OperationFailed):
                assert path.read_bytes() == before
            data = path.read_bytes()
            assert len(data) <= LESSONS_MAX_BYTES
            assert data.endswith(mine.encode())
            parsed = parse_lessons(path, data.decode())
            assert len({s.key for s in parsed.entries}) == len(parsed.entries)
