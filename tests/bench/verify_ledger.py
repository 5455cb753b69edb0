"""What the verification gate and the repair ledger cost as a session's checks pile up
(not collected).

    .venv/bin/python tests/bench/verify_ledger.py [CHECKS ...]

The task fold now derives each task's verification (ax_agent.tasks.verify), and
a failing run_check folds the repair ledger (ax_agent.recovery.ledger), both
over the whole log. For each count of check runs (default 100 and 2,500), a
hand-built log holds that many paired runs (every other one failing on one of
seven test ids), a file change after each, and as many unrelated events; the
task fold of a two-task plan and the ledger are timed 7 times each: the median
and the minimum are printed beside the log's length, and the ratio of the
largest count's medians to the smallest's.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

RUNS = 7


def log(checks: int) -> list[dict[str, Any]]:
    lexer = {"group": "g", "taskId": "lexer"}
    events: list[dict[str, Any]] = [
        {"type": "task.started", **lexer, "role": "executor", "definitionSha256": SHA},
        {"type": "task.captured", **lexer, "files": ["src/lexer/a.py"]},
        {"type": "task.completed", **lexer},
        {"type": "task.applied", **lexer, "applied": ["src/lexer/a.py"]},
    ]
    place = {"kind": "test", "project": ".", "scope": ".", "recipeId": "python.pytest@."}
    for n in range(checks):
        failing = n % 2 == 1
        events.append({"type": "check.started", **place})
        events.append(
            {
                "type": "check.completed",
                **place,
                "verdict": "failed" if failing else "passed",
                "exitCode": 1 if failing else 0,
                "termination": "exited",
                "reason": None,
                "signals": [{"name": "test-failed", "detail": f"t{n % 7}"}] if failing else [],
            }
        )
        events.append({"type": "file.mutated", "path": "src/lexer/a.py"})
        events.append({"type": "tool.completed", "callId": "c", "ok": True})
    return events


def timed(work: Callable[..., object]) -> tuple[float, float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    from ax_agent.recovery.ledger import repair_ledger
    from ax_agent.tasks.fold import fold_tasks

    sizes = [int(arg) for arg in sys.argv[1:]] or [100, 2_500]
    medians: dict[str, list[float]] = {"fold": [], "ledger": []}
    for size in sizes:
        events = log(size)
        for name, work in (
            ("fold", lambda events=events: fold_tasks(PLAN, events)),
            ("ledger", lambda events=events: repair_ledger(events)),
        ):
            median, low = timed(work)
            medians[name].append(median)
            print(
                f"{size:>6} checks, {len(events):>6} events, {name:<6}: "
                f"median {median * 1000:7.1f} ms, min {low * 1000:7.1f} ms"
            )
    for name, found in medians.items():
        print(f"{name}: largest / smallest median {found[-1] / found[0]:.1f}x")


def _plan() -> tuple[Any, str]:
    from ax_agent.plans.model import Plan, task_sha256

    plan = Plan.model_validate(
        {
            "tasks": [
                {"id": "lexer", "title": "L", "role": "executor", "touches": ["src/lexer"],
                 "checks": ["test"]},
                {"id": "parser", "title": "P", "role": "executor", "dependsOn": ["lexer"],
                 "touches": ["src/parser"]},
            ]
        }
    )  # fmt: skip
    return plan, task_sha256(plan.tasks[0])


PLAN, SHA = _plan()

if __name__ == "__main__":
    main()
