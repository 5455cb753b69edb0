"""delegate_task's cost, children included: a group's overhead, and three executors side by
side against the same three scripted tasks run in sequence in the workspace.

    .venv/bin/python tests/bench/delegate.py [--files N] [--runs N] [--dir FOLDER]

A committed git repository of ``--files`` files (2,500 by default) in folders of 50,
with an uncommitted change (the group's base is the dirty tree). Each run is parent
sessions driven by the script provider, the real loop and the real tools:

- overhead: one delegate call of three executors that answer at once: the call's time
  from ``tool.requested`` to ``tool.completed``, split from the parent's events into
  prepare (the decision, the task-base checkpoint, three worktrees checked out, the
  end-of-line check: up to the first ``task.started``), children (three child sessions
  started, run and ended, each captured from the parent's thread: up to the last task
  end) and release (the worktrees removed: up to the last ``worktree.removed``);
- parallel: one delegate call of three executors that each run ``sleep 1`` (a real
  command, sandboxed in its worktree), against sequential: the parent running the same
  three scripted tasks (``sleep 1`` each) itself, one after the other, in the workspace.
  Each is timed from its first ``tool.requested`` to its last ``tool.completed``.

Each run's state root is warmed first by a session that only answers (its repository
map is built then). Both ways run the same scripted tasks through the same loop, tools,
policy and sandbox; each ``run_command`` takes its pre-command checkpoint, of the
workspace in sequence and of its worktree in the group.

Prints the load average first and last, each figure's median and max over ``--runs``,
the splits (the parallel group's prepare apart from the rest too), the CPU time each
scenario cost (this process and every child it waited for, user plus system, the
background deletion of the released worktrees included: the next scenario starts once
it is done, and the wall time it took after the call is shown too), and the goals of
issue 21 (group overhead under 1 s; parallel under 0.5x the sequential run), met or
NOT MET. Wall time on a shared machine: compare several runs. ``--dir`` puts the
repository and the state root in another folder (a tmpfs, say, to tell the disk's
part of the checkout cost from ax's).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ax_agent.approvals import ApprovalAnswer, ApprovalRequest
from ax_agent.loop import run_turn
from ax_agent.session import StartOptions, start_session
from ax_log import read_events

GOAL_GROUP_S = 1.0
GOAL_RATIO = 0.5
TASKS = ["a", "b", "c"]
GIT_IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "gc.auto=0"]


class Yes:
    name = "bench"

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once", self.name)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_IDENTITY, "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    for n in range(files):
        path = repo / f"pkg{n // 50:03d}" / f"mod{n % 50:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {n}\n" + "".join(f"value_{i} = {n * i}\n" for i in range(20)))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "generated")
    (repo / "pkg000" / "mod00.py").write_text("# changed, not committed\n")
    return repo


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


def _deletions_done() -> float:
    """Wait for the released worktrees' background deletion; the seconds it still took."""
    began = time.perf_counter()
    for thread in threading.enumerate():
        if thread.name == "ax-worktree-delete":
            thread.join()
    return time.perf_counter() - began


CPU: dict[str, list[float]] = {}


def _session_events(
    name: str, workspace: Path, state: Path, script: dict[str, Any]
) -> list[dict[str, Any]]:
    began = _cpu()
    try:
        return _run_session(workspace, state, script)
    finally:
        LATER.append(_deletions_done())
        CPU.setdefault(name, []).append(_cpu() - began)


LATER: list[float] = []


def _run_session(workspace: Path, state: Path, script: dict[str, Any]) -> list[dict[str, Any]]:
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


def _at(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()


def _first(events: list[dict[str, Any]], kind: str) -> float:
    return min(_at(e) for e in events if e["type"] == kind)


def _last(events: list[dict[str, Any]], *kinds: str) -> float:
    return max(_at(e) for e in events if e["type"] in kinds)


def _group_call(tasks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    labels = list(tasks)
    call = {
        "name": "delegate_task",
        "input": {"tasks": [{"role": "executor", "label": x, "prompt": "go"} for x in labels]},
    }
    return {"turns": [{"toolCalls": [call]}, {"text": "done"}], "tasks": tasks}


def overhead(workspace: Path, state: Path) -> dict[str, float]:
    script = _group_call({x: [{"text": "done"}] for x in TASKS})
    events = _session_events("overhead", workspace, state, script)
    assert [e["ok"] for e in events if e["type"] == "worktree.removed"] == [True] * len(TASKS)
    requested = _first(events, "tool.requested")
    started = _first(events, "task.started")
    ended = _last(events, "task.completed", "task.failed", "task.cancelled")
    removed = _last(events, "worktree.removed")
    return {
        "group": _last(events, "tool.completed") - requested,
        "prepare": started - requested,
        "children": ended - started,
        "release": removed - ended,
    }


SLEEP = {"toolCalls": [{"name": "run_command", "input": {"command": "sleep 1"}}]}


def parallel(workspace: Path, state: Path) -> tuple[float, float]:
    """The group's wall time, and its prepare's (to the first ``task.started``)."""
    script = _group_call({x: [SLEEP, {"text": "slept"}] for x in TASKS})
    events = _session_events("parallel", workspace, state, script)
    assert len([e for e in events if e["type"] == "task.completed"]) == len(TASKS), "a task failed"
    requested = _first(events, "tool.requested")
    return _last(events, "tool.completed") - requested, _first(events, "task.started") - requested


def sequential(workspace: Path, state: Path) -> float:
    script = {"turns": [SLEEP for _ in TASKS] + [{"text": "done"}]}
    events = _session_events("sequential", workspace, state, script)
    ended = [e for e in events if e["type"] == "command.ended"]
    assert [e.get("exitCode") for e in ended] == [0] * len(TASKS), "a command failed"
    return _last(events, "tool.completed") - _first(events, "tool.requested")


def _show(name: str, values: list[float]) -> None:
    print(f"  {name:28s} {statistics.median(values):7.3f} / {max(values):7.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the repository and state go")
    options = parser.parse_args()
    print(f"load average at start: {os.getloadavg()} on {os.cpu_count()} CPUs")
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ax-bench-delegate-", dir=options.dir) as folder:
        root = Path(folder)
        repo = make_repo(root, options.files)
        for run in range(options.runs):
            state = root / f"state{run}"
            state.mkdir()
            # The first session of a state root builds the repository map: a warm-up pays
            # for it, so no scenario's CPU time carries it.
            _run_session(repo, state, {"turns": [{"text": "warm"}]})
            for part, seconds in overhead(repo, state).items():
                figures.setdefault(part, []).append(seconds)
            figures.setdefault("overhead, deletion after", []).append(LATER[-1])
            together, prepare = parallel(repo, state)
            figures.setdefault("parallel", []).append(together)
            figures.setdefault("parallel, prepare", []).append(prepare)
            figures.setdefault("parallel, after prepare", []).append(together - prepare)
            figures.setdefault("sequential", []).append(sequential(repo, state))
    print(f"{options.files} files, 3 executors, {options.runs} runs (median / max, seconds):")
    _show("group overhead", figures["group"])
    _show("  prepare (to task.started)", figures["prepare"])
    _show("  children and captures", figures["children"])
    _show("  release", figures["release"])
    _show("  deletion after the call", figures["overhead, deletion after"])
    _show("parallel: one group, sleep 1", figures["parallel"])
    _show("  its prepare", figures["parallel, prepare"])
    _show("  after it (children, release)", figures["parallel, after prepare"])
    _show("sequential: in the workspace", figures["sequential"])
    print("CPU time, user + system, this process and its children (median / max, seconds):")
    for name in ("overhead", "parallel", "sequential"):
        _show(f"  {name} session", CPU[name])
    group = statistics.median(figures["group"])
    sequential_s = statistics.median(figures["sequential"])
    ratio = statistics.median(figures["parallel"]) / sequential_s
    group_met, ratio_met = group < GOAL_GROUP_S, ratio < GOAL_RATIO
    print(
        f"goal: group overhead under {GOAL_GROUP_S:.1f} s: "
        f"{'met' if group_met else 'NOT MET'} ({group:.3f} s median)"
    )
    print(
        f"goal: parallel under {GOAL_RATIO}x sequential: "
        f"{'met' if ratio_met else 'NOT MET'} ({ratio:.2f}x of the medians)"
    )
    rest = statistics.median(figures["parallel, after prepare"])
    print(f"(without the worktrees' prepare the group would be {rest / sequential_s:.2f}x)")
    print(f"load average at end: {os.getloadavg()}")
    return 0 if group_met and ratio_met else 1


if __name__ == "__main__":
    sys.exit(main())
