"""Trail recording stays flat: the cost of a step at 20,000 vs at 100.

Records 20,000 steps into one session's trail through ``ax_slate.record`` (the
function ``ax-slate record`` and ax-agent call), timing each call, and compares
the median of a window around step 100 with the median of a window ending at
step 20,000. Budget: the later within 1.2x of the earlier, and under 2 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

STEPS = 20_000
WINDOW = 101  # steps in each measured window
EARLY_CENTRE = 100
BUDGET_RATIO = 1.2
BUDGET_MS = 2.0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        os.environ["AX_STATE_DIR"] = str(root / "state")

        from ax_slate import RecordRequest, open_session, record
        from libcommon.paths import state_layout

        layout = state_layout(root / "ws")
        open_session(layout, "bench")
        costs: list[float] = []
        for step in range(1, STEPS + 1):
            request = RecordRequest(
                tool="read_file",
                args={"path": f"src/module_{step % 97}.py", "offset": step},
                outcome="ok: 120 lines",
                output=None,
            )
            start = time.perf_counter()
            entry = record(layout, "bench", request)
            costs.append(time.perf_counter() - start)
            assert entry.step == step
        half = WINDOW // 2
        early = costs[EARLY_CENTRE - 1 - half : EARLY_CENTRE + half]
        late = costs[-WINDOW:]
        early_ms = statistics.median(early) * 1000
        late_ms = statistics.median(late) * 1000
        ratio = late_ms / early_ms
        size = layout.session_dir("bench").joinpath("trail.jsonl").stat().st_size
    print(f"trail append, {STEPS} steps in one session (median of {WINDOW}-step windows)")
    print(f"around step {EARLY_CENTRE:>6}: {early_ms:.3f} ms")
    print(f"around step {STEPS:>6}: {late_ms:.3f} ms")
    print(f"ratio late/early: {ratio:.2f}   trail.jsonl: {size / 1e6:.1f} MB")
    ok = ratio <= BUDGET_RATIO and late_ms < BUDGET_MS
    print(f"budget: ratio <= {BUDGET_RATIO} and < {BUDGET_MS} ms: {'met' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
