"""delegate_task's cost: a group's overhead, and three executors side by side against in turn.

    .venv/bin/python tests/bench/delegate.py [FILES] [RUNS]

A workspace of FILES small files (default 2,500). Each run is one parent
session driven by the script provider:

- overhead: one delegate call of three executors that answer at once; the
  figure is the call's time from ``tool.requested`` to ``tool.completed``
  (each executor's folder made, its child session started and ended, its
  capture, the folders removed);
- side by side: one call of three executors that each run ``sleep 1``,
  against three calls of one such executor each, in turn.

Prints the medians of RUNS runs and the ratio. Until the worktree modules are
merged, an executor's folder is the interim copy of ``delegation.isolation``
(every file copied), so the overhead here is the copy's, not a worktree's.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ax_agent.approvals import ApprovalAnswer, ApprovalRequest
from ax_agent.loop import run_turn
from ax_agent.session import StartOptions, start_session
from ax_log import read_events


class Yes:
    name = "bench"

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once", self.name)


def _task(label: str) -> dict[str, Any]:
    return {"role": "executor", "label": label, "prompt": "go"}


def _session_run(workspace: Path, state: Path, script: dict[str, Any]) -> list[dict[str, Any]]:
    path = state / "script.json"
    path.write_text(json.dumps(script))
    environ = {**os.environ, "AX_STATE_DIR": str(state)}
    session = start_session(
        StartOptions(
            workspace=workspace,
            environ=environ,
            provider="script",
            script=path,
            trust_once=True,
            approver=Yes(),
        )
    )
    try:
        run_turn(session, "go")
    finally:
        session.end("bench")
    return list(read_events(session.layout.session_log(session.id), session.id))


def _calls_seconds(events: list[dict[str, Any]]) -> float:
    from datetime import datetime

    def at(event: dict[str, Any]) -> float:
        return datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()

    requested = [at(e) for e in events if e["type"] == "tool.requested"]
    completed = [at(e) for e in events if e["type"] == "tool.completed"]
    return completed[-1] - requested[0]


def overhead(workspace: Path, state: Path) -> float:
    labels = ["a", "b", "c"]
    script = {
        "turns": [
            {
                "toolCalls": [
                    {"name": "delegate_task", "input": {"tasks": [_task(x) for x in labels]}}
                ]
            },
            {"text": "done"},
        ],
        "tasks": {label: [{"text": "done"}] for label in labels},
    }
    return _calls_seconds(_session_run(workspace, state, script))


def side_by_side(workspace: Path, state: Path, together: bool) -> float:
    labels = ["a", "b", "c"]
    sleep = [
        {"toolCalls": [{"name": "run_command", "input": {"command": "sleep 1"}}]},
        {"text": "slept"},
    ]
    if together:
        turns = [
            {
                "toolCalls": [
                    {"name": "delegate_task", "input": {"tasks": [_task(x) for x in labels]}}
                ]
            }
        ]
    else:
        turns = [
            {"toolCalls": [{"name": "delegate_task", "input": {"tasks": [_task(x)]}}]}
            for x in labels
        ]
    script = {"turns": [*turns, {"text": "done"}], "tasks": {x: sleep for x in labels}}
    start = time.perf_counter()
    _session_run(workspace, state, script)
    return time.perf_counter() - start


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp, "ws")
        for n in range(files):
            path = workspace / f"d{n % 50}" / f"f{n}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"file {n}\n")
        figures: dict[str, list[float]] = {"overhead": [], "together": [], "in turn": []}
        for run in range(runs):
            state = Path(tmp, f"state{run}")
            state.mkdir()
            figures["overhead"].append(overhead(workspace, state))
            figures["together"].append(side_by_side(workspace, state, together=True))
            figures["in turn"].append(side_by_side(workspace, state, together=False))
    medians = {name: statistics.median(values) for name, values in figures.items()}
    print(f"workspace: {files} files; {runs} runs (medians)")
    print(f"group of three executors, overhead:        {medians['overhead']:.2f} s")
    print(f"three executors of `sleep 1`, one group:    {medians['together']:.2f} s")
    print(f"three executors of `sleep 1`, three groups: {medians['in turn']:.2f} s")
    ratio = medians["together"] / medians["in turn"]
    print(f"ratio one group / three groups:             {ratio:.2f}")


if __name__ == "__main__":
    main()
