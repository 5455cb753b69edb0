"""read_file: numbered pages, the note that says how to read on, and its refusals."""

from __future__ import annotations

import os
from pathlib import Path

from agent.tools.toolkit import Harness

from ax_agent.tools import read_file
from ax_agent.tools.read_file import READ_LINE_MAX_CHARS, READ_MAX_CHARS

TOOL = read_file.TOOL


def test_small_file_is_numbered_and_complete(harness: Harness, workspace: Path) -> None:
    (workspace / "app.py").write_text("import os\n\nprint(os.name)\n")
    result = harness.call(TOOL, {"path": "app.py"})
    assert not result.is_error
    assert result.content == "     1\timport os\n     2\t\n     3\tprint(os.name)"
    assert result.summary == "read app.py: lines 1-3 of 3"
    assert result.full_output is None


def test_paging_names_the_next_call(harness: Harness, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 251)))
    first = harness.call(TOOL, {"path": "big.txt", "limit": 100})
    assert first.content.splitlines()[0] == "     1\tline 1"
    assert "   100\tline 100" in first.content
    assert "line 101" not in first.content
    assert "showing lines 1-100 of 250" in first.content
    assert "read_file(path='big.txt', offset=101)" in first.content
    last = harness.call(TOOL, {"path": "big.txt", "offset": 201, "limit": 100})
    assert last.content.splitlines()[0] == "   201\tline 201"
    assert last.content.splitlines()[-1] == "   250\tline 250"
    assert "read_file(" not in last.content


def test_offset_past_the_end_is_an_error(harness: Harness, workspace: Path) -> None:
    (workspace / "short.txt").write_text("a\nb\n")
    result = harness.call(TOOL, {"path": "short.txt", "offset": 10})
    assert result.is_error
    assert "offset 10 is past the end" in result.content
    assert "2 lines" in result.content


def test_long_lines_and_the_character_cap(harness: Harness, workspace: Path) -> None:
    long = "x" * (READ_LINE_MAX_CHARS + 50)
    (workspace / "wide.txt").write_text(long + "\nshort\n")
    result = harness.call(TOOL, {"path": "wide.txt"})
    assert f"[line cut: {len(long)} characters]" in result.content
    assert "     2\tshort" in result.content
    lines = READ_MAX_CHARS // 1000 + 20
    (workspace / "heavy.txt").write_text(("y" * 1000 + "\n") * lines)
    heavy = harness.call(TOOL, {"path": "heavy.txt"})
    assert "the page reached its size cap" in heavy.content
    assert len(heavy.content) < READ_MAX_CHARS + 2_000
    shown = [line for line in heavy.content.splitlines() if "\t" in line]
    assert f"offset={len(shown) + 1})" in heavy.content


def test_empty_binary_folder_and_missing(harness: Harness, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    assert "empty" in harness.call(TOOL, {"path": "empty.txt"}).content
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    binary = harness.call(TOOL, {"path": "blob.bin"})
    assert binary.is_error and "binary file (30 bytes)" in binary.content
    (workspace / "src").mkdir()
    folder = harness.call(TOOL, {"path": "src"})
    assert folder.is_error and "list_dir" in folder.content
    (workspace / "config.yaml").write_text("a: 1\n")
    missing = harness.call(TOOL, {"path": "config.yml"})
    assert missing.is_error
    assert "config.yml does not exist" in missing.content
    assert "config.yaml" in missing.content


def test_paths_outside_the_workspace_are_refused(
    harness: Harness, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret plan\n")
    os.symlink(outside, workspace / "link.txt")
    for raw in ("../outside.txt", str(outside)):
        result = harness.call(TOOL, {"path": raw})
        # The policy asked about this path; the harness's decision names it, so after an
        # approval the tool follows it. A path it never named is refused.
        assert not result.is_error, result.content
    # A link swapped in after the decision: the decision saw a file inside the workspace.
    (workspace / "inside.txt").write_text("fine\n")
    tool_input = TOOL.input_model.model_validate({"path": "inside.txt"})
    decision = harness.decide(TOOL, tool_input)
    assert decision.verdict == "allow"
    (workspace / "inside.txt").unlink()
    os.symlink(outside, workspace / "inside.txt")
    from ax_agent.tools.base import ToolContext

    ctx = ToolContext(
        layout=harness.layout,
        session_id="s-tools",
        call_id="c",
        step=1,
        seam=harness.seam,
        decision=decision,
    )
    swapped = TOOL.run(tool_input, ctx)
    assert swapped.is_error
    assert "through a symlink" in swapped.content and "outside the workspace" in swapped.content
    assert "secret plan" not in swapped.content


def test_an_outside_path_needs_a_decision_that_named_it_and_did_not_deny(
    harness: Harness, tmp_path: Path
) -> None:
    from ax_agent.tools.base import ToolContext
    from ax_policy import Decision, PathFacts

    outside = tmp_path / "outside.txt"
    outside.write_text("elsewhere\n")
    seen = PathFacts(raw=str(outside), write=False, valid=True, resolved=str(outside))
    tool_input = TOOL.input_model.model_validate({"path": str(outside)})

    def run(verdict: str, paths: list[PathFacts]) -> str:
        decision = Decision.model_validate(
            {"verdict": verdict, "class": "sensitive", "rule": "r", "reason": "r"}
        ).model_copy(update={"paths": paths})
        ctx = ToolContext(
            layout=harness.layout,
            session_id="s-tools",
            call_id="c",
            step=1,
            seam=harness.seam,
            decision=decision,
        )
        return TOOL.run(tool_input, ctx).content

    assert "elsewhere" in run("ask", [seen])
    assert "outside the workspace" in run("deny", [seen])
    assert "outside the workspace" in run("ask", [])
    written = seen.model_copy(update={"write": True})
    assert "outside the workspace" in run("ask", [written])


def test_a_huge_line_is_cut_without_holding_it(harness: Harness, workspace: Path) -> None:
    from ax_agent.tools.read_file import READ_LINE_READ_BYTES

    size = READ_LINE_READ_BYTES * 50 + 7
    (workspace / "bundle.js").write_text("m" * size + "\nnext line\n" + "z" * READ_LINE_READ_BYTES)
    result = harness.call(TOOL, {"path": "bundle.js"})
    first, second, third = result.content.splitlines()
    assert first == "     1\t" + "m" * READ_LINE_MAX_CHARS + f" … [line cut: {size} bytes]"
    assert second == "     2\tnext line"
    assert third.endswith(f"[line cut: {READ_LINE_READ_BYTES} characters]")
    assert result.summary == "read bundle.js: lines 1-3 of 3"
