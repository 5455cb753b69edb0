"""run_command through ax-exec: real processes, the decision's boundary, timeouts and caps."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from agent.tools.toolkit import ENFORCED, SESSION, Harness

from ax_agent.tools import recall_step, run_command
from ax_agent.tools.run_command import RUN_OUTPUT_BYTES, sandbox_for
from ax_exec import ExecSpec, probe_sandbox
from ax_policy import Decision
from ax_slate import RecordRequest, record, save_output

TOOL = run_command.TOOL


def last_spec(harness: Harness) -> ExecSpec:
    verb, request = harness.seam.calls[-1]
    assert verb == "exec.run" and isinstance(request, ExecSpec)
    return request


def test_exit_code_and_both_streams(harness: Harness, workspace: Path) -> None:
    result = harness.call(TOOL, {"command": "echo out; echo err >&2; exit 3"})
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0].startswith("exit code 3 · ") and lines[0].endswith("· unsandboxed")
    assert lines[1:] == ["[stdout: 4 bytes]", "out", "[stderr: 4 bytes]", "err"]
    assert result.summary.startswith("exit code 3")
    assert result.full_output is None
    spec = last_spec(harness)
    # No enforced sandbox: the decision says unsandboxed, so the tool asks for none.
    assert spec.sandbox == "none"
    assert spec.shell == "echo out; echo err >&2; exit 3"
    assert spec.cwd == str(workspace)
    assert spec.spill_dir == str(harness.layout.objects_dir)


def test_cwd_inside_and_outside(harness: Harness, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    result = harness.call(TOOL, {"command": "pwd", "cwd": "sub"})
    assert f"{workspace}/sub" in result.content
    outside = harness.call(TOOL, {"command": "pwd", "cwd": ".."})
    assert outside.is_error and "outside the workspace" in outside.content
    assert len(harness.seam.calls) == 1


def test_timeout_kills_the_command(harness: Harness) -> None:
    started = time.monotonic()
    result = harness.call(TOOL, {"command": "sleep 30", "timeout_s": 0.5})
    assert time.monotonic() - started < 10
    assert result.is_error
    assert result.content.startswith("timed out after 0.5s; the command and its children")


def test_abort_kills_the_command(harness: Harness) -> None:
    abort = threading.Event()
    timer = threading.Timer(0.3, abort.set)
    timer.start()
    try:
        result = harness.call(TOOL, {"command": "sleep 30"}, abort=abort)
    finally:
        timer.cancel()
    assert result.is_error
    assert result.content.startswith("aborted")


def test_long_output_keeps_head_tail_and_the_whole_for_recall(harness: Harness) -> None:
    size = 300_000
    command = f"python3 -c \"import sys; sys.stdout.write('a' * {size} + 'END')\""
    result = harness.call(TOOL, {"command": command})
    assert not result.is_error
    assert f"[stdout: {size + 3} bytes, showing the first and last parts" in result.content
    assert "bytes left out] …" in result.content
    assert result.content.rstrip().endswith("END") or "END\n[stderr" in result.content
    assert len(result.content) < 2 * RUN_OUTPUT_BYTES + 2_000
    spill = last_spill(result.content)
    assert Path(spill).parent == harness.layout.objects_dir and Path(spill).is_file()
    assert result.full_output is not None and len(result.full_output) == size + 3
    # The loop saves the full output on the trail; recall_step pages through it.
    saved = save_output(harness.layout, SESSION, result.full_output)
    entry = record(
        harness.layout,
        SESSION,
        RecordRequest(tool="run_command", outcome="exit 0", output=str(saved)),
    )
    assert f"recall_step(step={harness.step})" in result.content
    page = harness.call(recall_step.TOOL, {"step": entry.step})
    assert page.content.startswith("aaaa")
    assert f"Next: recall_step(step={entry.step}, page=2)" in page.content
    last = harness.call(recall_step.TOOL, {"step": entry.step, "page": 51})
    assert last.content.split("\n[")[0].endswith("END")
    assert "the end" in last.content


def last_spill(content: str) -> str:
    marker = "spill file "
    start = content.index(marker) + len(marker)
    return content[start:].split("]", 1)[0]


def test_read_only_command_runs_in_the_enforced_sandbox(harness: Harness, workspace: Path) -> None:
    if not probe_sandbox().backends[0].enforced:
        pytest.skip("no enforced sandbox backend (Landlock) on this machine")
    harness.sandbox = ENFORCED
    (workspace / "file.txt").write_text("x\n")
    result = harness.call(TOOL, {"command": "ls"})
    assert last_spec(harness).sandbox == "read-only"
    assert "file.txt" in result.content
    assert "sandbox read-only (landlock)" in result.content.splitlines()[0]


def test_sandbox_profile_comes_from_the_decision() -> None:
    def decision(**fields: object) -> Decision:
        return Decision.model_validate(
            {"verdict": "allow", "class": "command", "rule": "r", "reason": "r", **fields}
        )

    assert sandbox_for(decision(execBoundary="sandboxed", sandboxProfile="read-only")) == (
        "read-only"
    )
    assert (
        sandbox_for(decision(execBoundary="sandboxed", sandboxProfile="workspace-write"))
        == "workspace-write"
    )
    assert sandbox_for(decision(execBoundary="unsandboxed")) == "none"
    assert sandbox_for(decision(execBoundary="unsandboxed", sandboxProfile="read-only")) == "none"
    assert sandbox_for(decision()) == "none"
