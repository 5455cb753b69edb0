"""Recall: a step's full output paged; archive search by decoded text or by row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ax_slate import RecordRequest, archive_message, recall_step, record, save_output, search
from ax_slate.cli import main
from ax_slate.recall import PAGE_CHARS
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.paths import StateLayout

pytestmark = pytest.mark.usefixtures("started")


def test_recall_pages_the_full_output(layout: StateLayout) -> None:
    text = "".join(f"line {i:05d}\n" for i in range(1500))  # 16,500 characters
    path = save_output(layout, "s1", text)
    record(layout, "s1", RecordRequest(tool="t", args={}, outcome="ok"))
    record(layout, "s1", RecordRequest(tool="shell", args={}, outcome="ok", output=str(path)))
    first = recall_step(layout, "s1", 2)
    assert first.pages == 3 and len(first.text) == PAGE_CHARS
    assert first.next == "ax-slate recall --session s1 --step 2 --page 2"
    pages = [first.text] + [recall_step(layout, "s1", 2, k).text for k in (2, 3)]
    assert "".join(pages) == text
    assert recall_step(layout, "s1", 2, 3).next is None
    with pytest.raises(UsageError):
        recall_step(layout, "s1", 2, 4)
    with pytest.raises(OperationFailed, match="saved no full output"):
        recall_step(layout, "s1", 1)
    with pytest.raises(OperationFailed, match="no step 9"):
        recall_step(layout, "s1", 9)


def test_recall_redacts_what_it_shows(layout: StateLayout, tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text("AWS key AKIAABCDEFGHIJKLMNOP here")
    record(layout, "s1", RecordRequest(tool="t", args={}, outcome="ok", output=str(raw)))
    assert "AKIA" not in recall_step(layout, "s1", 1).text


def test_recall_of_a_vanished_output(layout: StateLayout, tmp_path: Path) -> None:
    record(layout, "s1", RecordRequest(tool="t", args={}, outcome="ok", output=str(tmp_path / "x")))
    with pytest.raises(OperationFailed, match="is missing"):
        recall_step(layout, "s1", 1)


def fill_archive(layout: StateLayout) -> None:
    archive_message(layout, "s1", {"role": "user", "ts": "t1", "content": 'say "hi"\\there'})
    archive_message(
        layout,
        "s1",
        {"role": "assistant", "ts": "t2", "content": [{"type": "text", "text": "two\nlines"}]},
    )
    archive_message(layout, "s1", {"role": "user", "ts": "t3", "content": "x" * 13_000})


@pytest.mark.parametrize(
    ("query", "row"),
    [('"hi"', 1), ("\\there", 1), ("two\nlines", 2), ("TWO", 2)],
)
def test_search_matches_decoded_text(layout: StateLayout, query: str, row: int) -> None:
    fill_archive(layout)
    result = search(layout, "s1", query=query)
    assert [hit.row for hit in result.hits] == [row]


def test_search_does_not_match_json_escapes(layout: StateLayout) -> None:
    fill_archive(layout)
    # In the file the newline is stored as \n and the quote as \"; neither is text.
    assert search(layout, "s1", query="two\\nlines").hits == []
    assert search(layout, "s1", query='\\"hi').hits == []
    raw = (layout.session_dir("s1") / "archive.jsonl").read_text()
    assert "two\\nlines" in raw


def test_row_read_is_paged(layout: StateLayout) -> None:
    fill_archive(layout)
    first = search(layout, "s1", row=3)
    assert first.pages == 3 and first.text is not None and len(first.text) == PAGE_CHARS
    assert first.next == "ax-slate search --session s1 --row 3 --page 2"
    rest = "".join(search(layout, "s1", row=3, page=k).text or "" for k in (2, 3))
    assert (first.text + rest).endswith("x" * 13_000)
    with pytest.raises(OperationFailed, match="no archived row 9"):
        search(layout, "s1", row=9)


def test_search_results_are_paged(layout: StateLayout) -> None:
    for i in range(80):
        archive_message(layout, "s1", {"role": "user", "content": f"needle {i} " + "y" * 200})
    first = search(layout, "s1", query="needle")
    assert first.pages > 1
    assert sum(len(hit.snippet) for hit in first.hits) <= PAGE_CHARS
    assert first.next == "ax-slate search --session s1 --query needle --page 2"
    rows = [
        h.row
        for k in range(1, first.pages + 1)
        for h in search(layout, "s1", query="needle", page=k).hits
    ]
    assert rows == list(range(1, 81))


def test_archive_is_redacted(layout: StateLayout) -> None:
    archive_message(layout, "s1", {"role": "user", "content": "key sk-ant-" + "k" * 30})
    assert "sk-ant-k" not in (layout.session_dir("s1") / "archive.jsonl").read_text()


def test_search_cli(run_cli, layout: StateLayout, workspace: Path) -> None:
    fill_archive(layout)
    ws = ["-C", str(workspace)]
    found = run_cli(main, ["search", "--session", "s1", "--query", '"hi"', "--json", *ws])
    assert found.exit_code == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["row"] == 1
    both = run_cli(main, ["search", "--session", "s1", "--query", "a", "--row", "1", *ws])
    assert both.exit_code == 2 and "exactly one" in both.stderr
    row = run_cli(main, ["search", "--session", "s1", "--row", "2", *ws])
    assert "two\nlines" in row.stdout


def test_archive_rows_come_from_the_tail(layout: StateLayout) -> None:
    assert [
        archive_message(layout, "s1", {"role": "user", "content": str(i)}) for i in range(3)
    ] == [
        1,
        2,
        3,
    ]
    archive = layout.session_dir("s1") / "archive.jsonl"
    first = json.loads(archive.read_text().splitlines()[0])
    assert first == {"row": 1, "message": {"role": "user", "content": "0"}}
    with archive.open("ab") as handle:
        handle.write(b'{"row": 4, "message": {"role": "us')  # a writer died mid-append
    assert archive_message(layout, "s1", {"role": "user", "content": "after"}) == 4
    assert archive.with_name("archive.jsonl.partial").exists()
    assert [hit.row for hit in search(layout, "s1", query="after").hits] == [4]
    with archive.open("ab") as handle:
        handle.write(b'"not a message"\n')
    with pytest.raises(CorruptStore):
        search(layout, "s1", query="after")
