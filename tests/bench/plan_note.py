"""What the plan's per-turn note costs as a session's log grows (not collected).

    .venv/bin/python tests/bench/plan_note.py [EVENTS ...]

The note reads the plan file and folds the task states over the whole log, once
a turn, while a session has a plan (ax_agent.plans.note). For each size (default
1,000 and 20,000 events of 400-character tool outputs), a log of that many
events and a 20-task plan are written to a temporary state root, then the read
and the fold are timed 7 times: the median and the minimum are printed beside
the log's size, and the ratio of the largest size's median to the smallest's.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
BATCH = 500


def measure(events: int) -> tuple[float, float, int]:
    from ax_agent.plans.model import Plan
    from ax_agent.plans.store import read_plan, write_plan
    from ax_agent.tasks.fold import fold_tasks
    from ax_log import append_events, read_events
    from libcommon.paths import state_layout

    root = Path(tempfile.mkdtemp())
    os.environ["AX_STATE_DIR"] = str(root / "state")
    workspace = root / "ws"
    workspace.mkdir()
    layout = state_layout(workspace)
    tasks = [
        {"id": f"t{n}", "title": "x", "role": "executor", "touches": [f"d{n}"]} for n in range(20)
    ]
    write_plan(layout, "s-1", Plan.model_validate({"tasks": tasks}))
    append_events(layout, "s-1", [{"type": "session.started", "workspace": str(workspace)}])
    body = {
        "type": "tool.completed",
        "callId": "c",
        "ok": True,
        "summary": "s",
        "content": "x" * 400,
    }
    for _ in range(events // BATCH):
        append_events(layout, "s-1", [body] * BATCH)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        loaded = read_plan(layout, "s-1")
        assert loaded is not None
        fold_tasks(loaded.plan, read_events(layout.session_log("s-1"), "s-1"))
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), layout.session_log("s-1").stat().st_size


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [1_000, 20_000]
    medians = []
    for size in sizes:
        median, low, size_bytes = measure(size)
        medians.append(median)
        print(
            f"{size:>7} events, {size_bytes / 1e6:5.1f} MB: "
            f"median {median * 1000:6.1f} ms, min {low * 1000:6.1f} ms"
        )
    print(f"largest / smallest median: {medians[-1] / medians[0]:.1f}x")


if __name__ == "__main__":
    main()
