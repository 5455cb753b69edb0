"""Memory writes across processes: two writers at once, a writer killed mid-write, a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slate.memtest import entry, memory_file

from ax_slate import LessonInput, propose_lesson, write_journal_entry
from ax_slate.journal import read_journal
from ax_slate.lessons import read_lessons
from libcommon.paths import StateLayout

# A writer that waits for a go signal, then holds the gap between its re-read and
# its write open for a while: two of them at once lose an entry unless the lock
# makes the second re-read after the first has written.
WRITER = r"""
import os, sys, time
from pathlib import Path

from ax_slate import JournalEntryRequest, JournalNarrative, LessonInput
from ax_slate import journal, lessons
from libcommon.paths import state_layout

kind, workspace, sid, ready, go = sys.argv[1:]


def slowly(write):
    def wrapper(path, text):
        time.sleep(0.3)
        write(path, text)

    return wrapper


journal.write_doc = slowly(journal.write_doc)
lessons.write_doc = slowly(lessons.write_doc)
Path(ready).touch()
while not os.path.exists(go):
    time.sleep(0.005)
layout = state_layout(workspace)
if kind == "journal":
    narrative = JournalNarrative(summary=f"the work of {sid}")
    journal.write_journal_entry(
        layout, JournalEntryRequest(session_id=sid, narrative=narrative)
    )
else:
    lessons.propose_lesson(layout, sid, LessonInput(slug=f"from-{sid}", text=f"by {sid}"))
"""


def run_together(kind: str, workspace: Path, tmp_path: Path, sessions: list[str]) -> None:
    go = tmp_path / "go"
    children = []
    for sid in sessions:
        ready = tmp_path / f"ready-{sid}"
        cmd = [sys.executable, "-c", WRITER, kind, str(workspace), sid, str(ready), str(go)]
        children.append((subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), ready))
    deadline = time.monotonic() + 30
    while not all(ready.exists() for _, ready in children):
        assert time.monotonic() < deadline, "the writers did not start"
        time.sleep(0.01)
    go.touch()
    for child, _ in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err


def test_two_sessions_ending_at_once_both_land_in_the_journal(
    layout: StateLayout, tmp_path: Path
) -> None:
    write_journal_entry(layout, entry("s0", "an earlier session"))
    run_together("journal", layout.workspace, tmp_path, ["s1", "s2"])
    assert sorted(e.session_id for e in read_journal(layout) or []) == ["s0", "s1", "s2"]


def test_two_sessions_proposing_at_once_both_land_in_the_lessons(
    layout: StateLayout, tmp_path: Path
) -> None:
    run_together("lessons", layout.workspace, tmp_path, ["s1", "s2"])
    found = read_lessons(layout)
    assert found is not None
    assert sorted(span.key for span in found.entries) == ["from-s1", "from-s2"]
    ledger = (layout.memory_dir / "lessons-ledger.json").read_text()
    assert '"s1"' in ledger and '"s2"' in ledger


# Dies by SIGKILL halfway through writing the new journal's bytes.
KILLED_MID_WRITE = r"""
import os, signal, sys

from ax_slate import JournalEntryRequest, JournalNarrative, write_journal_entry
from libcommon.paths import state_layout

real_write = os.write


def write(fd, data):
    if b"killed mid-write" in bytes(data):
        real_write(fd, bytes(data)[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)


os.write = write
narrative = JournalNarrative(summary="killed mid-write")
write_journal_entry(
    state_layout(sys.argv[1]), JournalEntryRequest(session_id="s2", narrative=narrative)
)
"""


def test_a_writer_killed_mid_write_leaves_the_old_journal_whole(layout: StateLayout) -> None:
    write_journal_entry(layout, entry("s1"))
    path = memory_file(layout, "JOURNAL.md")
    before = path.read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", KILLED_MID_WRITE, str(layout.workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert path.read_bytes() == before
    leftovers = [p.name for p in layout.memory_dir.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".JOURNAL.md.")
    # The lock died with the writer; the next session writes as usual.
    write_journal_entry(layout, entry("s3"))
    assert [e.session_id for e in read_journal(layout) or []] == ["s3", "s1"]


def test_a_failure_before_the_rename_leaves_the_old_file_and_no_debris(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_journal_entry(layout, entry("s1"))
    propose_lesson(layout, "s1", LessonInput(slug="one", text="kept"))
    before = {p.name: p.read_bytes() for p in layout.memory_dir.iterdir()}

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_journal_entry(layout, entry("s2"))
    with pytest.raises(OSError, match="No space left"):
        propose_lesson(layout, "s2", LessonInput(slug="two", text="lost"))
    assert {p.name: p.read_bytes() for p in layout.memory_dir.iterdir()} == before


def test_secrets_a_model_or_a_log_holds_never_reach_the_memory_files(
    layout: StateLayout,
) -> None:
    from axtest import files_holding_secrets, secrets_file

    from ax_slate import (
        CodebaseDigests,
        CodebaseRequest,
        JournalEntryRequest,
        JournalEvidence,
        JournalNarrative,
        write_codebase,
    )

    leak = secrets_file(0)
    evidence = JournalEvidence.model_validate(
        {
            "files": [{"path": leak, "status": "modified", "verdict": "UNCHECKED", "why": leak}],
            "killed": [
                {"command": f"curl -H 'Authorization: Bearer {leak}'", "termination": "timeout"}
            ],
        }
    )
    narrative = JournalNarrative(summary=leak, decisions=leak, open_issues=leak, next_steps=leak)
    write_journal_entry(
        layout,
        JournalEntryRequest(
            session_id="s1", narrative=narrative, evidence=evidence, unfinished=[leak]
        ),
    )
    write_journal_entry(layout, JournalEntryRequest(session_id="s2", narrative_unavailable=leak))
    write_codebase(
        layout,
        CodebaseRequest(
            session_id="s1", text=leak, digests=CodebaseDigests(file_set="f", content="c")
        ),
    )
    propose_lesson(layout, "s1", LessonInput(slug="keys", text=leak))
    assert files_holding_secrets(layout.memory_dir) == []
    assert "[REDACTED" in memory_file(layout, "LESSONS.md").read_text()
