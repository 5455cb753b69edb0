"""Events batched per call: the seam's before/after contract, and the loop's order kept."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agenttest import ScriptedApprover, call, events_of, open_session, real_tools, write_script

from ax_agent.loop import run_turn
from ax_agent.seam import BeforeStored
from ax_agent.seam.compose import make_seam
from ax_agent.seam.models import PathsRequest
from ax_log import read_events
from ax_policy import load_config
from libcommon.errors import UsageError
from libcommon.paths import state_layout

SESSION = "s-batch"
MODES = ["inprocess", "process"]


def _seam(workspace: Path, mode: str) -> Any:
    layout = state_layout(workspace)
    return make_seam(layout, SESSION, {**os.environ, "AX_COMPOSE": mode}, load_config(layout))


def _logged(workspace: Path) -> list[dict[str, Any]]:
    log = state_layout(workspace).session_log(SESSION)
    return list(read_events(log, SESSION)) if log.exists() else []


def _note(name: str) -> dict[str, Any]:
    return {"type": "custom", "kind": "test", "data": {"name": name}}


@pytest.mark.parametrize("mode", MODES)
def test_before_own_and_after_events_are_stored_and_answered_in_log_order(
    workspace: Path, mode: str
) -> None:
    seam = _seam(workspace, mode)
    (workspace / "a.txt").write_text("one")
    stored = seam.call(
        "log.snapshot", PathsRequest(paths=["a.txt"], before=[_note("b")], after=[_note("a")])
    )
    (workspace / "a.txt").write_text("two")
    stored += seam.call("log.mutated", PathsRequest(paths=["a.txt"], after=[_note("done")]))
    logged = _logged(workspace)
    assert [e["type"] for e in logged] == [
        "custom", "snapshot.stored", "custom", "file.mutated", "custom",
    ]  # fmt: skip
    assert [e["data"]["name"] for e in logged if e["type"] == "custom"] == ["b", "a", "done"]
    assert [e["seq"] for e in stored] == [e["seq"] for e in logged]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_snapshot_keeps_the_before_events_and_drops_the_after_ones(
    workspace: Path, mode: str
) -> None:
    seam = _seam(workspace, mode)
    (workspace / "folder").mkdir()
    request = PathsRequest(paths=["folder"], before=[_note("b")], after=[_note("a")])
    with pytest.raises(BeforeStored, match="is a directory"):
        seam.call("log.snapshot", request)
    assert [(e["type"], e["data"]["name"]) for e in _logged(workspace)] == [("custom", "b")]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_snapshot_without_before_events_stores_nothing(workspace: Path, mode: str) -> None:
    seam = _seam(workspace, mode)
    (workspace / "folder").mkdir()
    with pytest.raises(UsageError, match="is a directory") as info:
        seam.call("log.snapshot", PathsRequest(paths=["folder"], after=[_note("a")]))
    assert not isinstance(info.value, BeforeStored)
    assert _logged(workspace) == []


def test_in_process_a_bad_event_refuses_the_whole_batch(workspace: Path) -> None:
    seam = _seam(workspace, "inprocess")
    (workspace / "a.txt").write_text("one")
    request = PathsRequest(paths=["a.txt"], before=[_note("b")], after=[{"type": "no.such"}])
    with pytest.raises(UsageError, match="unknown event type"):
        seam.call("log.snapshot", request)
    assert _logged(workspace) == []


WRITE_CALL = [
    "assistant.message",
    "tool.requested",
    "policy.decision",
    "snapshot.stored",
    "file.mutated",
    "tool.completed",
]


@pytest.mark.parametrize("mode", MODES)
def test_a_write_call_records_every_event_once_in_order(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("write_file", path="a.txt", content="x")]},
            {"toolCalls": [call("write_file", path="folder", content="x")]},
            {"text": "ok"},
        ],
    )
    (workspace / "folder").mkdir()
    session = open_session(
        workspace,
        script,
        tools=real_tools(),
        approver=ScriptedApprover(["no"]),
        environ={**os.environ, "AX_COMPOSE": mode},
    )
    streamed: list[dict[str, Any]] = []
    session.listeners.append(streamed.append)
    run_turn(session, "go")
    events = events_of(session)
    assert streamed == events[-len(streamed) :]
    kinds = [e["type"] for e in events]
    start = kinds.index("assistant.message")
    assert kinds[start : start + len(WRITE_CALL)] == WRITE_CALL
    # The snapshot of a folder fails: the decision is stored once, before the question.
    second = kinds[start + len(WRITE_CALL) :]
    assert second[:5] == [
        "assistant.message", "tool.requested", "policy.decision", "approval.resolved",
        "tool.completed",
    ]  # fmt: skip
    assert kinds.count("policy.decision") == 2
