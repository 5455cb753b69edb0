"""CODEBASE.md: replaced whole, stamped with two digests, staleness computed from them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slate.memtest import memory_file

from ax_slate import (
    CodebaseDigests,
    CodebaseRequest,
    codebase_staleness,
    read_codebase,
    write_codebase,
)
from ax_slate.codebase import CODEBASE_TITLE
from ax_slate.memstore import CODEBASE_MAX_BYTES
from libcommon.errors import CorruptStore, UsageError
from libcommon.paths import StateLayout, state_layout

DIGESTS = CodebaseDigests(file_set="sha256:" + "a" * 64, content="sha256:" + "b" * 64)


def request(text: str = "Layout: tools/ and libcommon/.", **digests: str) -> CodebaseRequest:
    return CodebaseRequest(
        session_id="s1",
        text=text,
        digests=DIGESTS.model_copy(update=digests) if digests else DIGESTS,
    )


def test_the_summary_is_stamped_with_both_digests(layout: StateLayout) -> None:
    result = write_codebase(layout, request())
    text = memory_file(layout, "CODEBASE.md").read_text()
    assert text.startswith(f"{CODEBASE_TITLE}\n\nStamp: file-set digest `{DIGESTS.file_set}`, ")
    assert f"content digest `{DIGESTS.content}`, written by session `s1` at " in text
    assert "model-written" in text and text.endswith("Layout: tools/ and libcommon/.\n")
    found = read_codebase(layout)
    assert found is not None and found[0] == result.stamp


def test_staleness_is_computed_from_the_digests() -> None:
    from ax_slate import CodebaseStamp

    stamp = CodebaseStamp(
        file_set="f1", content="c1", session_id="s1", written_at="2026-11-30T10:00:00.000Z"
    )
    fresh = codebase_staleness(stamp, CodebaseDigests(file_set="f1", content="c1"))
    assert (fresh.state, fresh.reasons) == ("fresh", [])
    moved = codebase_staleness(stamp, CodebaseDigests(file_set="f2", content="c1"))
    assert moved.state == "stale" and moved.reasons == [
        "the set of files changed (file-set digest f1 when written, f2 now)"
    ]
    edited = codebase_staleness(stamp, CodebaseDigests(file_set="f1", content="c2"))
    assert edited.reasons == ["file contents changed (content digest c1 when written, c2 now)"]
    both = codebase_staleness(stamp, CodebaseDigests(file_set="f2", content="c2"))
    assert both.state == "stale" and len(both.reasons) == 2
    unknown = codebase_staleness(stamp, None)
    assert unknown.state == "unknown" and "not given" in unknown.reasons[0]


def test_a_new_summary_replaces_the_old_one_whole(layout: StateLayout) -> None:
    write_codebase(layout, request("first summary"))
    write_codebase(layout, request("second summary", content="c9"))
    text = memory_file(layout, "CODEBASE.md").read_text()
    assert "first summary" not in text and "second summary" in text
    found = read_codebase(layout)
    assert found is not None and found[0].content == "c9"


def test_headings_in_the_summary_are_defused(layout: StateLayout) -> None:
    write_codebase(layout, request("# Codebase summary\nStamp: forged\n## Lessons\nok"))
    text = memory_file(layout, "CODEBASE.md").read_text()
    assert text.count("\n# ") == 0 and "\\# Codebase summary\n" in text and "\\## Lessons" in text
    found = read_codebase(layout)
    assert found is not None and found[0].file_set == DIGESTS.file_set


def test_a_summary_over_the_cap_is_cut_at_whole_lines_with_a_marker(layout: StateLayout) -> None:
    lines = [f"line {n}: " + "détail " * 10 for n in range(400)]
    result = write_codebase(layout, request("\n".join(lines)))
    data = memory_file(layout, "CODEBASE.md").read_bytes()
    assert len(data) == result.bytes <= CODEBASE_MAX_BYTES
    assert result.omitted_bytes > 0
    text = data.decode()
    assert text.endswith(f"[… {result.omitted_bytes} bytes of the codebase summary not shown]\n")
    kept = text.split("\n\n", 2)[2].split("\n")[:-2]
    assert kept == lines[: len(kept)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=40_000).filter(str.strip))
def test_any_summary_fits_the_cap(text: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        ws = Path(root, "ws")
        ws.mkdir()
        layout = state_layout(ws, {"AX_STATE_DIR": str(Path(root, "state"))})
        longest = CodebaseRequest(
            session_id="s" * 128,
            text=text,
            digests=CodebaseDigests(file_set="f" * 128, content="c" * 128),
        )
        try:
            result = write_codebase(layout, longest)
        except UsageError:
            return  # nothing but control characters and blanks: refused as empty
        assert len(memory_file(layout, "CODEBASE.md").read_bytes()) == result.bytes
        assert result.bytes <= CODEBASE_MAX_BYTES


@pytest.mark.parametrize(
    "text",
    [
        b"# Notes about the code\n",
        b"# Codebase summary\n\nno stamp here\n",
        b"# Codebase summary\n\nStamp: file-set digest `a b`, content digest `c`, written by "
        b"session `s1` at t.\n",
    ],
    ids=["title", "no-stamp", "bad-digest"],
)
def test_a_codebase_file_that_cannot_be_parsed_is_refused_and_kept(
    layout: StateLayout, text: bytes
) -> None:
    path = memory_file(layout, "CODEBASE.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(text)
    with pytest.raises(CorruptStore):
        write_codebase(layout, request())
    assert path.read_bytes() == text


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"file_set": "has space"}, "not one token"),
        ({"content": ""}, "not one token"),
        ({"content": "x" * 129}, "not one token"),
    ],
)
def test_malformed_digests_are_refused(
    layout: StateLayout, fields: dict[str, str], problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        write_codebase(layout, request(**fields))
    assert not layout.memory_dir.exists()


def test_an_empty_summary_is_refused(layout: StateLayout) -> None:
    with pytest.raises(UsageError, match="empty"):
        write_codebase(layout, request(" \n "))
