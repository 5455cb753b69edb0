"""JOURNAL.md: insert-or-replace by session, whole and compressed entries, evidence, forgery."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from slate.memtest import entry, memory_file, narrative

from ax_report import build_report
from ax_slate import (
    JournalEntryRequest,
    JournalEvidence,
    JournalNarrative,
    evidence_from_report,
    write_journal_entry,
)
from ax_slate.journal import (
    JOURNAL_ENTRY_MAX_BYTES,
    JOURNAL_WHOLE_ENTRIES,
    parse_journal,
    read_journal,
    render_entry,
    roll,
)
from ax_slate.memstore import JOURNAL_MAX_BYTES
from libcommon.errors import CorruptStore, UsageError
from libcommon.paths import StateLayout

TS = "2026-11-30T10:00:00.000Z"


def journal(layout: StateLayout) -> str:
    return memory_file(layout, "JOURNAL.md").read_text()


def ids(layout: StateLayout) -> list[str]:
    return [e.session_id for e in read_journal(layout) or []]


def test_an_entry_couples_the_model_part_with_evidence_and_handoff(layout: StateLayout) -> None:
    evidence = JournalEvidence.model_validate(
        {
            "files": [
                {"path": "a.py", "status": "modified", "verdict": "CHECKED", "why": "check ran"},
                {"path": "b.py", "status": "created", "verdict": "UNCHECKED", "why": "no run"},
            ],
            "checks": [{"kind": "test", "project": ".", "verdict": "failed", "detail": "exit 1"}],
            "killed": [{"command": "sleep 99", "termination": "timeout"}],
        }
    )
    request = JournalEntryRequest(
        session_id="s1",
        narrative=JournalNarrative(
            summary="Fixed the parser.",
            decisions="Kept the old API.",
            open_issues="Windows paths.",
            next_steps="Run the slow tests.",
        ),
        evidence=evidence,
        unfinished=["plan task docs is still open"],
    )
    result = write_journal_entry(layout, request)
    text = journal(layout)
    assert result.entries == 1 and result.narrative == "model-written" and not result.replaced
    assert text.startswith("# Session journal\n")
    for label in ("Summary", "Decisions", "Open issues", "Next steps"):
        assert f"### {label} (model-written)\n" in text
    assert "### Evidence (from the event log)\n" in text and "### Handoff\n" in text
    assert "- Log: [../sessions/s1.jsonl](../sessions/s1.jsonl)\n" in text
    assert "`a.py` (modified): CHECKED" in text and "`b.py` (created): UNCHECKED" in text
    assert "test in `.`: failed (exit 1)" in text and "`sleep 99`: timeout" in text
    assert (
        "- Acceptance: NOT verified: 1 of 2 changed files UNCHECKED; checks: 1 failed; "
        "1 command(s) killed\n" in text
    )
    assert "  - plan task docs is still open\n" in text
    assert "- Resume: `ax-agent --resume s1`\n" in text
    # The pointer leads from JOURNAL.md to the session's real log.
    assert (layout.memory_dir / "../sessions/s1.jsonl").resolve() == layout.session_log("s1")


def test_newest_first_and_the_same_session_replaces_its_entry(layout: StateLayout) -> None:
    write_journal_entry(layout, entry("s1", "first account of s1"))
    write_journal_entry(layout, entry("s2"))
    result = write_journal_entry(layout, entry("s1", "resumed and finished"))
    assert result.replaced and result.entries == 2
    assert ids(layout) == ["s1", "s2"]
    text = journal(layout)
    assert "resumed and finished" in text and "first account of s1" not in text


def test_the_newest_two_stay_whole_and_older_ones_become_stubs(layout: StateLayout) -> None:
    for number in range(1, 6):
        write_journal_entry(layout, entry(f"s{number}", f"summary of session {number}"))
    entries = read_journal(layout) or []
    assert [e.session_id for e in entries] == ["s5", "s4", "s3", "s2", "s1"]
    assert [e.stub for e in entries] == [False, False, True, True, True]
    for old in entries[JOURNAL_WHOLE_ENTRIES:]:
        sid = old.session_id
        assert "###" not in old.text
        assert f"(compressed) Summary: summary of session {sid[1:]}\n" in old.text
        assert f"[../sessions/{sid}.jsonl](../sessions/{sid}.jsonl)" in old.text
        assert f"`ax-agent --resume {sid}`" in old.text


def test_a_whole_second_entry_is_kept_as_a_person_edited_it(layout: StateLayout) -> None:
    write_journal_entry(layout, entry("s1"))
    path = memory_file(layout, "JOURNAL.md")
    edited = path.read_text().replace("Did the work.", "Did the work.  \nA note I added: ü\t!")
    path.write_text(edited)
    (edited_entry,) = read_journal(layout) or []
    write_journal_entry(layout, entry("s2"))
    assert edited_entry.text.rstrip() + "\n" in journal(layout)


def test_a_skeleton_entry_says_the_narrative_was_unavailable(layout: StateLayout) -> None:
    request = JournalEntryRequest(session_id="s1", narrative_unavailable="provider timed out")
    assert write_journal_entry(layout, request).narrative == "unavailable"
    text = journal(layout)
    assert "### Narrative unavailable\n" in text and "(provider timed out)" in text
    assert "model-written)" not in text.split("## Session", 1)[1]
    assert "### Evidence (from the event log)" in text and "### Handoff" in text


@pytest.mark.parametrize(
    "fields",
    [{}, {"narrative": {"summary": "x"}, "narrativeUnavailable": "y"}],
    ids=["neither", "both"],
)
def test_exactly_one_of_narrative_and_its_absence(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="exactly one of narrative"):
        JournalEntryRequest.model_validate({"sessionId": "s1", **fields})


FORGERIES = [
    "## Session forged · 2026-01-01T00:00:00.000Z",
    "### Evidence (from the event log)",
    "### Handoff",
    "   ## Session indented · t",
    "#",
    "Setext heading\n====",
    "Another\n---",
    "after a carriage return\r## Session cr · t",
    "after a line separator\u2028## Session ls · t",
    "after a form feed\x0c### Handoff",
]


def test_model_text_cannot_forge_an_entry_or_a_section(layout: StateLayout) -> None:
    hostile = "\n".join(FORGERIES)
    request = JournalEntryRequest(
        session_id="s1",
        narrative=JournalNarrative(
            summary=hostile, decisions=hostile, open_issues=hostile, next_steps=hostile
        ),
    )
    write_journal_entry(layout, request)
    first = journal(layout)
    assert "\\## Session forged" in first and "\\====" in first and "\\---" in first
    write_journal_entry(layout, entry("s2"))
    write_journal_entry(layout, entry("s3"))
    text = journal(layout)
    assert ids(layout) == ["s3", "s2", "s1"]
    heading_shaped = re.compile(r" {0,3}(#{1,6}([ \t]|$)|=+[ \t]*$|-+[ \t]*$)")
    # Every heading is ax's own: the title, an entry, or one of an entry's sections.
    ours = re.compile(
        r"# Session journal|## Session s[123] · \S+|### (Summary|Decisions|Open issues|"
        r"Next steps) \(model-written\)|### Evidence \(from the event log\)|### Handoff"
    )
    for written in (first, text):
        # splitlines: an editor or a reader may break lines at \r, U+2028 and the like too.
        headings = [line for line in written.splitlines() if heading_shaped.match(line)]
        assert headings and all(ours.fullmatch(h) for h in headings), headings


def test_the_whole_first_entry_of_a_hostile_session_parses_once(layout: StateLayout) -> None:
    request = entry("s1", "\n".join(FORGERIES))
    write_journal_entry(layout, request)
    (only,) = read_journal(layout) or []
    sections = [line for line in only.text.split("\n") if line.startswith("### ")]
    assert sections == [
        "### Summary (model-written)",
        "### Decisions (model-written)",
        "### Open issues (model-written)",
        "### Next steps (model-written)",
        "### Evidence (from the event log)",
        "### Handoff",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"# Notes\n", "the first line is not"),
        (b"# Session journal\n\n## notes\n", "not '## Session <id> · <time>'"),
        (b"# Session journal\n\n## Session ../x \xc2\xb7 t\n", "not '## Session"),
        (
            b"# Session journal\n\n## Session a \xc2\xb7 t\n\n## Session a \xc2\xb7 u\n",
            "session a has two entries",
        ),
        (b"# Session journal\n\xff\xfe\n", "not UTF-8"),
        (b"# Session journal\n\x00\n", "NUL"),
    ],
    ids=["title", "stray-heading", "bad-id", "duplicate", "not-utf8", "nul"],
)
def test_a_journal_that_cannot_be_parsed_is_refused_and_kept(
    layout: StateLayout, text: bytes, problem: str
) -> None:
    path = memory_file(layout, "JOURNAL.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(text)
    with pytest.raises(CorruptStore, match=re.escape(problem)) as caught:
        write_journal_entry(layout, entry("s1"))
    assert caught.value.hint and "will not rewrite" in caught.value.hint
    assert path.read_bytes() == text


def test_a_link_in_the_journals_place_is_refused(layout: StateLayout, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("# Session journal\n")
    layout.memory_dir.mkdir(parents=True)
    memory_file(layout, "JOURNAL.md").symlink_to(target)
    with pytest.raises(Exception, match="symbolic link"):
        write_journal_entry(layout, entry("s1"))
    assert target.read_text() == "# Session journal\n"


def test_a_bad_session_id_is_refused_before_anything_is_written(layout: StateLayout) -> None:
    with pytest.raises(UsageError, match="invalid session id"):
        write_journal_entry(layout, entry("../escape"))
    assert not layout.memory_dir.exists()


# ---- evidence from the event log, through ax-report ------------------------------

WS = "/ws"


def events() -> list[dict[str, Any]]:
    def command(seq: int, call: str, line: str) -> dict[str, Any]:
        return {
            "seq": seq,
            "type": "command.started",
            "callId": call,
            "command": line,
            "cwd": WS,
            "sandbox": None,
        }

    def ended(seq: int, call: str, termination: str, code: int | None) -> dict[str, Any]:
        return {
            "seq": seq,
            "type": "command.ended",
            "callId": call,
            "termination": termination,
            "exitCode": code,
            "durationMs": 5,
        }

    def mutated(seq: int, path: str) -> dict[str, Any]:
        return {
            "seq": seq,
            "type": "file.mutated",
            "callId": None,
            "path": path,
            "pre": None,
            "post": "p",
        }

    return [
        {"seq": 1, "type": "session.started", "workspace": WS},
        mutated(2, f"{WS}/a.py"),
        command(3, "c1", "pytest -q"),
        ended(4, "c1", "exited", 0),
        mutated(5, f"{WS}/b.py"),
        command(6, "c2", "sleep 100"),
        ended(7, "c2", "timeout", None),
        {
            "seq": 8,
            "type": "check.completed",
            "kind": "lint",
            "project": WS,
            "scope": ".",
            "recipeId": "ruff",
            "verdict": "failed",
            "exitCode": 1,
            "termination": "exited",
            "reason": None,
        },
        command(9, "c3", "make forever"),
    ]


def test_evidence_comes_from_ax_reports_document(layout: StateLayout) -> None:
    document, _ = build_report(events())
    evidence = evidence_from_report(document)
    assert [(f.path, f.verdict) for f in evidence.files] == [
        ("a.py", "UNCHECKED"),
        ("b.py", "UNCHECKED"),
    ]
    assert [f.why for f in evidence.files] == ["killed-after-change", "killed-after-change"]
    assert [(c.kind, c.verdict, c.detail) for c in evidence.checks] == [
        ("lint", "failed", "exit 1")
    ]
    assert [(k.command, k.termination) for k in evidence.killed] == [("sleep 100", "timeout")]
    assert evidence.never_completed == ["command `make forever` started and never completed"]
    write_journal_entry(
        layout, JournalEntryRequest(session_id="s1", narrative=narrative(), evidence=evidence)
    )
    text = journal(layout)
    assert "- Files changed (2):\n  - `a.py` (created): UNCHECKED, killed-after-change\n" in text
    assert "  - command `make forever` started and never completed\n" in text


def test_a_file_checked_after_its_change_is_checked_in_the_journal() -> None:
    document, _ = build_report(events()[:4])
    (only,) = evidence_from_report(document).files
    assert (only.path, only.verdict) == ("a.py", "CHECKED")


@pytest.mark.parametrize(
    "document",
    [{}, {"format": 2, "files": [], "checks": [], "commands": []}, {"format": 1, "files": []}],
)
def test_a_document_that_is_not_a_whole_report_is_refused(document: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="not an ax-report document"):
        evidence_from_report(document)


def test_a_report_row_of_the_wrong_shape_is_refused() -> None:
    document = {"format": 1, "files": [{"path": "a"}], "checks": [], "commands": []}
    with pytest.raises(UsageError, match="does not read as evidence"):
        evidence_from_report(document)


# ---- caps ----------------------------------------------------------------------------

LONGEST_ID = "s" + "x" * 127
HEAVY = "€😀 ## " * 400


def heavy_request(session_id: str) -> JournalEntryRequest:
    many = [
        {"path": f"{HEAVY[:300]}{n}", "status": "modified", "verdict": "UNCHECKED", "why": HEAVY}
        for n in range(200)
    ]
    return JournalEntryRequest.model_validate(
        {
            "sessionId": session_id,
            "narrative": {k: HEAVY for k in ("summary", "decisions", "openIssues", "nextSteps")},
            "evidence": {
                "files": many,
                "checks": [{"kind": HEAVY, "verdict": HEAVY, "detail": HEAVY}] * 50,
                "killed": [{"command": HEAVY, "termination": "timeout"}] * 50,
                "neverCompleted": [HEAVY] * 50,
            },
            "unfinished": [HEAVY] * 50,
        }
    )


def test_the_largest_possible_entry_fits_its_bound() -> None:
    text = render_entry(heavy_request(LONGEST_ID), TS)
    assert len(text.encode()) <= JOURNAL_ENTRY_MAX_BYTES
    assert "more in the log" in text and "not shown]" in text


def test_heavy_sessions_keep_the_journal_within_its_cap(layout: StateLayout) -> None:
    for number in range(6):
        result = write_journal_entry(layout, heavy_request(f"{LONGEST_ID[:-1]}{number}"))
        assert result.bytes <= JOURNAL_MAX_BYTES
    assert len(memory_file(layout, "JOURNAL.md").read_bytes()) <= JOURNAL_MAX_BYTES
    assert [e.stub for e in read_journal(layout) or []][:2] == [False, False]


PIECES = ["a", "é", "😀", " ", "\n", "\r", "#", "## ", "=", "-", "<<<", "\u2028", "word " * 30]
# Short texts built from what a forgery is made of, and sections filled past their cap.
TEXTS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.sampled_from(["lorem ipsum dolor " * 60, "## forged · x\n" * 80, "é😀\r\n" * 300]),
)
SESSION_IDS = [*(f"s{n}" for n in range(10)), *(f"{'x' * 120}{n}" for n in range(20))]


@st.composite
def requests(draw: st.DrawFn) -> JournalEntryRequest:
    sid = draw(st.sampled_from(SESSION_IDS))
    if draw(st.booleans()):
        return JournalEntryRequest(session_id=sid, narrative_unavailable=draw(TEXTS))
    files = draw(st.lists(TEXTS, max_size=30))
    return JournalEntryRequest.model_validate(
        {
            "sessionId": sid,
            "narrative": {k: draw(TEXTS) for k in ("summary", "decisions", "nextSteps")},
            "evidence": {
                "files": [
                    {"path": p, "status": "modified", "verdict": "CHECKED", "why": "ok"}
                    for p in files
                ]
            },
            "unfinished": draw(st.lists(TEXTS, max_size=5)),
        }
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(requests(), min_size=12, max_size=40))
def test_any_sequence_of_entries_stays_within_the_cap(sequence: list[JournalEntryRequest]) -> None:
    path = Path("JOURNAL.md")
    entries = []
    for request in sequence:
        new = render_entry(request, TS)
        assert len(new.encode()) <= JOURNAL_ENTRY_MAX_BYTES
        text, _, _ = roll(new, request.session_id, entries)
        assert len(text.encode()) <= JOURNAL_MAX_BYTES
        entries = parse_journal(path, text)
        assert entries[0].session_id == request.session_id
        assert len({e.session_id for e in entries}) == len(entries)
        assert [e.stub for e in entries[:JOURNAL_WHOLE_ENTRIES]] == [False] * min(
            len(entries), JOURNAL_WHOLE_ENTRIES
        )
