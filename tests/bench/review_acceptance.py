"""What the review fold and the acceptance state cost as a session grows (not collected).

    .venv/bin/python tests/bench/review_acceptance.py [CHECKS ...]

``/accept``, ``/report``, the journal and every contextual question fold the
whole log (``ax_agent.acceptance.acceptance_state``: the task fold, the
review fold, the repair ledger, the unchecked files). For each count of check
runs (default 100 and 2,500), a hand-built log holds that many paired runs
(every other one failing), a change to one of 50 files after each, as many
unrelated events, two reviewer rounds of 20 findings each and a triage of
each. ``review_state`` and ``acceptance_state`` are timed 7 times each: the
median and the minimum are printed beside the log's length, and the ratio of
the largest count's medians to the smallest's.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

RUNS = 7
FILES = 50
FINDINGS = 20


def log(checks: int) -> list[dict[str, Any]]:
    impl = {"group": "g", "taskId": "impl"}
    events: list[dict[str, Any]] = [
        {"type": "task.started", **impl, "role": "executor", "definitionSha256": SHAS["impl"]},
        {"type": "task.captured", **impl, "files": ["src/a.py"]},
        {"type": "task.completed", **impl},
        {"type": "task.applied", **impl, "applied": ["src/a.py"]},
    ]
    place = {"kind": "test", "project": ".", "scope": ".", "recipeId": "python.pytest@."}
    for n in range(checks):
        failing = n % 2 == 1
        events.append({"type": "check.started", **place})
        events.append({"type": "check.completed", **place,
                       "verdict": "failed" if failing else "passed",
                       "exitCode": 1 if failing else 0, "termination": "exited",
                       "reason": None})  # fmt: skip
        events.append({"type": "file.mutated", "path": f"src/f{n % FILES}.py"})
        events.append({"type": "tool.completed", "callId": "c", "ok": True})
        if n in (checks // 3, 2 * checks // 3):
            events += _round(f"r{n}")
    return events


def _round(group: str) -> list[dict[str, Any]]:
    ids = {"group": group, "taskId": "look"}
    events: list[dict[str, Any]] = [
        {"type": "task.started", **ids, "role": "reviewer", "definitionSha256": SHAS["look"]}
    ]
    for number in range(1, FINDINGS + 1):
        events.append({"type": "review.finding", **ids, "number": number, "severity": "high",
                       "path": "src/a.py", "title": f"finding {number}"})  # fmt: skip
    events.append({"type": "review.captured", **ids, "findings": FINDINGS})
    events.append({"type": "task.completed", **ids})
    for number in range(1, FINDINGS + 1):
        events.append({"type": "review.triaged", "finding": f"{group}/look/{number}",
                       "action": "refute", "reason": "no"})  # fmt: skip
    return events


def timed(work: Callable[..., object]) -> tuple[float, float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    from ax_agent.acceptance import acceptance_state
    from ax_agent.tasks.review import review_state

    sizes = [int(arg) for arg in sys.argv[1:]] or [100, 2_500]
    medians: dict[str, list[float]] = {"review": [], "acceptance": []}
    for size in sizes:
        events = log(size)
        for name, work in (
            ("review", lambda events=events: review_state(PLAN, events)),
            ("acceptance", lambda events=events: acceptance_state(PLAN, events)),
        ):
            median, low = timed(work)
            medians[name].append(median)
            print(
                f"{size:>6} checks, {len(events):>6} events, {name:<10}: "
                f"median {median * 1000:7.1f} ms, min {low * 1000:7.1f} ms"
            )
    for name, found in medians.items():
        print(f"{name}: largest / smallest median {found[-1] / found[0]:.1f}x")


def _plan() -> tuple[Any, dict[str, str]]:
    from ax_agent.plans.model import Plan, task_sha256

    plan = Plan.model_validate(
        {
            "tasks": [
                {"id": "impl", "title": "I", "role": "executor", "touches": ["src"]},
                {"id": "look", "title": "R", "role": "reviewer", "dependsOn": ["impl"]},
            ]
        }
    )
    return plan, {task.id: task_sha256(task) for task in plan.tasks}


PLAN, SHAS = _plan()

if __name__ == "__main__":
    main()
