"""A change the log refuses to record is reported, and the turn goes on (a scripted session).

write_file writes ``x/config``; a command running beside the agent then swaps
``x`` for a symlink (to ``.git``, or to the folder it moved ``x`` to) before the
loop records the change. ax-log refuses the path (it no longer leads where it
was snapshotted), so no ``file.mutated`` is stored and undo cannot revert the
write. The model and the log are told exactly that, and the turn continues;
both compositions (in-process and the real ``ax-log`` CLI) behave the same.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from agenttest import call, events_of, of_type, open_session, real_tools, write_script
from axtest import tool_path

from ax_agent.loop import run_turn
from ax_agent.providers import ToolResultBlock
from ax_agent.tools import write_file
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_slate import read_trail

GIT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n"


def swapping_write(target: str) -> ModelTool:
    """The real write_file, then what the command beside it does: ``x`` becomes a link."""

    def run(value: Any, ctx: ToolContext) -> ToolResult:
        result = write_file.TOOL.run(value, ctx)
        os.rename(ctx.workspace / "x", ctx.workspace / "moved")
        (ctx.workspace / "x").symlink_to(".git" if target == ".git" else "moved")
        return result

    real = write_file.TOOL
    return ModelTool(real.name, real.description, real.input_model, real.facts, run)


def results_of(session: Any) -> dict[str, ToolResultBlock]:
    return {
        block.tool_use_id: block
        for message in session.messages
        if message.role == "user"
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


@pytest.mark.parametrize("compose", ["inprocess", "process"])
@pytest.mark.parametrize("target", [".git", "moved"])
def test_an_unrecorded_change_is_reported_and_the_turn_goes_on(
    workspace: Path, tmp_path: Path, compose: str, target: str
) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_bytes(GIT_CONFIG)
    (workspace / "x").mkdir()
    (workspace / "x" / "config").write_bytes(GIT_CONFIG)
    (workspace / "notes.txt").write_text("still here\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("write_file", id="w1", path="x/config", content="new\n")]},
            {
                "expect": "undo will not cover it",
                "toolCalls": [call("read_file", id="r1", path="notes.txt")],
            },
            {"expect": "still here", "text": "done"},
        ],
    )
    tools = [t for t in real_tools() if t.name != "write_file"] + [swapping_write(target)]
    environ = {**os.environ, "AX_COMPOSE": compose}
    session = open_session(workspace, script, tools=tools, environ=environ)

    result = run_turn(session, "go")

    assert result.stop_reason == "end_turn", result.detail
    written = results_of(session)["w1"]
    assert not written.is_error
    assert "could not be recorded, so undo will not cover it" in written.content
    assert "x/config" in written.content
    assert not results_of(session)["r1"].is_error
    events = events_of(session)
    assert of_type(events, "file.mutated") == []
    [completed] = [e for e in of_type(events, "tool.completed") if e["callId"] == "w1"]
    assert completed["ok"] is True and completed["outcome"] == "ran"
    assert completed["unrecorded"]["paths"] == ["x/config"]
    assert completed["unrecorded"]["reason"]
    assert "not recorded: undo will not cover x/config" in completed["summary"]
    [entry, _] = read_trail(session.layout, session.id)
    assert "not recorded" in entry.outcome
    session.end("completed")

    undo = subprocess.run(
        [tool_path("log"), "undo", "--session", session.id, "--all", "--json"],
        cwd=workspace,
        capture_output=True,
        timeout=60,
    )
    assert undo.returncode == 0, undo.stderr
    assert orjson.loads(undo.stdout)["reverted"] == []
    assert (workspace / ".git" / "config").read_bytes() == GIT_CONFIG
    assert (workspace / "moved" / "config").read_text() == "new\n"
