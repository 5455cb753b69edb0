"""A real parent process mid-group: Ctrl+C cancels the group and ends its commands; a
SIGKILL leaves the tasks interrupted on resume, and nothing is applied.

The executors work in real git worktrees of a local repository, under the state
root; the resumed session's orphan sweep removes what the killed parent left, by
the owner's pid and start time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agenttest import call
from axtest import CliRunner
from checkpointgit import git, make_repo, needs_git

from ax_agent.cli import main
from ax_agent.tasks.fold import attempts
from ax_log import read_events
from libcommon import jsonio
from libcommon.paths import state_layout

pytestmark = needs_git
WAIT_S = 30.0


def _script(path: Path, turns: list[dict[str, Any]], tasks: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"turns": turns, "tasks": tasks}))
    return path


def _start(workspace: Path, script: Path, state_dir: Path) -> tuple[subprocess.Popen[str], str]:
    exe = Path(sys.executable).parent / "ax-agent"
    process = subprocess.Popen(
        [str(exe), "-C", str(workspace), "--provider", "script", "--script", str(script),
         "-p", "go", "--trust-this-workspace", "--dangerously-allow-all",
         "--output-format", "stream-json"],
        env={**os.environ, "AX_STATE_DIR": str(state_dir)},
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    return process, jsonio.loads(process.stdout.readline())["session"]


def _wait(path: Path, session: str, ready: Any) -> list[dict[str, Any]]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if path.exists():
            events = list(read_events(path, session))
            if ready(events):
                return events
        time.sleep(0.05)
    pytest.fail(f"{path} never got there within {WAIT_S}s")


def _group(*tasks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"tool_calls": [call("delegate_task", tasks=list(tasks))]}, {"text": "never"}]


def test_ctrl_c_cancels_the_group_and_ends_a_childs_command(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    make_repo(workspace)
    script = _script(
        tmp_path / "s.json",
        _group({"role": "executor", "label": "slow", "prompt": "wait"}),
        {"slow": [{"tool_calls": [call("run_command", command="sleep 60")]}, {"text": "x"}]},
    )
    process, session = _start(workspace, script, state_dir)
    try:
        log = state_layout(workspace).session_log(session)
        started = _wait(log, session, lambda es: any(e["type"] == "task.started" for e in es))
        child = next(e for e in started if e["type"] == "task.started")["child"]
        child_log = _child_log(state_dir, child)
        _wait(child_log, child, lambda es: any(e["type"] == "command.started" for e in es))
        began = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=WAIT_S) == 130
        assert time.monotonic() - began < 20  # not the 60 s of the sleep
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    events = list(read_events(log, session))
    cancelled = [e for e in events if e["type"] == "task.cancelled"]
    assert [(e["taskId"], e["reason"]) for e in cancelled] == [("slow", "person")]
    # Once the group ended, the child's log is filed beside its parent's session.
    filed = state_layout(workspace).session_dir(session) / "tasks" / f"{child}.jsonl"
    assert not child_log.exists()
    ended = [e for e in read_events(filed, child) if e["type"] == "command.ended"]
    assert [e["termination"] for e in ended] == ["aborted"]


def _child_log(state_dir: Path, child: str) -> Path:
    found = list(state_dir.glob(f"projects/*/sessions/{child}.jsonl"))
    deadline = time.monotonic() + WAIT_S
    while not found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = list(state_dir.glob(f"projects/*/sessions/{child}.jsonl"))
    assert len(found) == 1
    return found[0]


def test_sigkill_mid_group_then_resume_leaves_the_tasks_interrupted_and_nothing_applied(
    workspace: Path, tmp_path: Path, state_dir: Path, run_cli: CliRunner
) -> None:
    make_repo(workspace, {"a.txt": "alpha\n"})
    script = _script(
        tmp_path / "s.json",
        _group(
            {"role": "explorer", "label": "look", "prompt": "look"},
            {"role": "executor", "label": "edit", "prompt": "edit a.txt"},
        ),
        {
            "look": [{"hang": True}],
            "edit": [
                {"tool_calls": [call("write_file", path="a.txt", content="changed\n")]},
                {"hang": True},
            ],
        },
    )
    process, session = _start(workspace, script, state_dir)
    log = state_layout(workspace).session_log(session)
    try:
        events = _wait(log, session, lambda es: sum(e["type"] == "task.started" for e in es) == 2)
        edit = next(e for e in events if e.get("taskId") == "edit")["child"]
        _wait(
            _child_log(state_dir, edit),
            edit,
            lambda es: any(e["type"] == "file.mutated" for e in es),
        )
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    group = next(e for e in events if e["type"] == "task.started")["group"]
    folder = state_layout(workspace).project_dir / "worktrees" / f"{session}.{group}"
    assert (folder / "edit" / "a.txt").read_text() == "changed\n"
    # The resumed parent tries to apply the killed executor's work: it was never captured.
    again = tmp_path / "t.json"
    again.write_text(
        json.dumps(
            {
                "turns": [
                    {"tool_calls": [call("apply_task_changes", task="edit", files=["a.txt"])]},
                    {"text": "resumed"},
                ]
            }
        )
    )
    result = run_cli(
        main,
        ["-C", str(workspace), "--provider", "script", "--script", str(again),
         "--resume", session, "-p", "what happened?", "--trust-this-workspace",
         "--dangerously-allow-all"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    events = list(read_events(log, session))
    assert {(a.task_id, a.state) for a in attempts(events)} == {
        ("look", "interrupted"),
        ("edit", "interrupted"),
    }
    assert not [e for e in events if e["type"] in ("task.applied", "file.mutated")]
    assert (workspace / "a.txt").read_text() == "alpha\n"
    # The sweep removed the dead parent's group by its owner's identity, git's entry too.
    [swept] = [e for e in events if e["type"] == "worktrees.swept"]
    assert swept["removed"] == [f"{session}.{group}"] and swept["failed"] == []
    assert not folder.exists()
    listed = git(workspace, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 1
    # The killed executor's session is filed beside its parent's; its worktree's project
    # folder is gone with the worktree.
    layout = state_layout(workspace)
    filed = layout.session_dir(session) / "tasks" / f"{edit}.jsonl"
    assert next(e["type"] for e in read_events(filed, edit)) == "session.started"
    assert [p.name for p in (state_dir / "projects").iterdir()] == [layout.slug]
