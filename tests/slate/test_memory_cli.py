"""`ax-slate memory list | show DOC | path DOC`, run as the installed command: read-only."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from slate.memtest import entry, memory_file, snapshot

from ax_slate import (
    CodebaseDigests,
    CodebaseRequest,
    LessonInput,
    propose_lesson,
    write_codebase,
    write_journal_entry,
)
from libcommon.paths import StateLayout


@pytest.fixture
def slate(
    tool_path: Callable[[str], str], layout: StateLayout
) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool_path("slate"), "memory", *args, "-C", str(layout.workspace)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


def write_all(layout: StateLayout) -> None:
    write_journal_entry(layout, entry("s1"))
    write_journal_entry(layout, entry("s2"))
    write_codebase(
        layout,
        CodebaseRequest(
            session_id="s2", text="Layout.", digests=CodebaseDigests(file_set="f1", content="c1")
        ),
    )
    propose_lesson(layout, "s2", LessonInput(slug="tabs", text="Makefiles need tabs."))


def test_list_shows_each_document_with_its_size_and_cap(
    slate: Callable[..., Any], layout: StateLayout
) -> None:
    empty = slate("list", "--json")
    assert empty.returncode == 0, empty.stderr
    assert [(r["doc"], r["status"]) for r in json.loads(empty.stdout)] == [
        ("journal", "missing"),
        ("codebase", "missing"),
        ("lessons", "missing"),
    ]
    write_all(layout)
    before = snapshot(layout.root)
    listed = slate("list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["doc"]: row for row in json.loads(listed.stdout)}
    journal = rows["journal"]
    assert journal["status"] == "ok" and journal["entries"] == 2 and journal["cap"] == 12 * 1024
    assert journal["bytes"] == len(memory_file(layout, "JOURNAL.md").read_bytes())
    assert journal["path"] == str(memory_file(layout, "JOURNAL.md"))
    assert rows["lessons"]["entries"] == 1 and rows["lessons"]["cap"] == 8 * 1024
    codebase = rows["codebase"]
    assert codebase["stamp"]["fileSet"] == "f1" and codebase["cap"] == 16 * 1024
    assert codebase["staleness"]["state"] == "unknown"
    text = slate("list")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("journal   JOURNAL.md   ") and "2 entries" in lines[0]
    assert "of 12,288 bytes" in lines[0] and "staleness unknown" in lines[1]
    assert snapshot(layout.root) == before


def test_show_prints_the_text_and_path_prints_where_it_is(
    slate: Callable[..., Any], layout: StateLayout
) -> None:
    write_all(layout)
    before = snapshot(layout.root)
    shown = slate("show", "lessons")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == memory_file(layout, "LESSONS.md").read_text()
    as_json = json.loads(slate("show", "journal", "--json").stdout)
    assert as_json["text"] == memory_file(layout, "JOURNAL.md").read_text()
    assert as_json["bytes"] == len(memory_file(layout, "JOURNAL.md").read_bytes())
    path = slate("path", "codebase")
    assert path.returncode == 0 and path.stdout == f"{memory_file(layout, 'CODEBASE.md')}\n"
    assert Path(path.stdout.strip()).is_absolute()
    assert snapshot(layout.root) == before


def test_path_names_a_document_that_does_not_exist_yet(
    slate: Callable[..., Any], layout: StateLayout
) -> None:
    result = slate("path", "lessons", "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "doc": "lessons",
        "path": str(memory_file(layout, "LESSONS.md")),
        "exists": False,
    }
    assert not layout.memory_dir.exists()


@pytest.mark.parametrize("verb", ["show", "path"])
def test_an_unknown_document_is_a_usage_error_naming_the_allowed_ones(
    slate: Callable[..., Any], verb: str
) -> None:
    result = slate(verb, "notes")
    assert result.returncode == 2
    assert "unknown memory document 'notes'; expected one of: journal, codebase, lessons" in (
        result.stderr
    )
    assert result.stdout == ""


def test_show_of_a_missing_document_fails_with_a_hint(slate: Callable[..., Any]) -> None:
    result = slate("show", "journal")
    assert result.returncode == 1
    assert "JOURNAL.md does not exist yet" in result.stderr and "hint:" in result.stderr


def test_show_makes_a_persons_escape_sequences_visible(
    slate: Callable[..., Any], layout: StateLayout
) -> None:
    path = memory_file(layout, "LESSONS.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"## colours\r\nred\t\x1b[31mtext\x07\r\n")
    shown = slate("show", "lessons")
    assert shown.stdout == "## colours\nred\t\\x1b[31mtext\\x07\n"
    assert json.loads(slate("show", "lessons", "--json").stdout)["text"] == (
        "## colours\r\nred\t\x1b[31mtext\x07\r\n"
    )


def test_a_corrupt_journal_is_listed_as_corrupt_and_kept(
    slate: Callable[..., Any], layout: StateLayout
) -> None:
    write_all(layout)
    path = memory_file(layout, "JOURNAL.md")
    path.write_bytes(b"# Session journal\n\n## my own notes\n")
    listed = slate("list", "--json")
    assert listed.returncode == 1
    rows = {row["doc"]: row for row in json.loads(listed.stdout)}
    assert rows["journal"]["status"] == "corrupt"
    assert rows["journal"]["problem"] == (
        "line 3: a '##' line that is not '## Session <id> · <time>'"
    )
    assert rows["lessons"]["status"] == "ok"
    assert "cannot parse" in listed.stderr and "hint:" in listed.stderr
    # It can still be read, so a person can fix it; nothing rewrote it.
    assert slate("show", "journal").stdout == "# Session journal\n\n## my own notes\n"
    assert path.read_bytes() == b"# Session journal\n\n## my own notes\n"
