"""Benchmark: concurrent appends and append cost against log length.

Run: .venv/bin/python tests/bench/log_append.py

1. 8 processes append 1,000 events each at once; checks all 8,000 are present,
   seq is gapless and no line is torn, and prints events/s.
2. Single-event append cost at a 100-event log and at a 100,000-event log,
   measured interleaved in one run, and their ratio (budget: within 1.2x).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import orjson

PROCESSES = 8
APPENDS_EACH = 1_000
SMALL_LOG = 100
LARGE_LOG = 100_000
SAMPLES = 500

WRITER = textwrap.dedent(
    """
    import sys, time
    from ax_log import append_events
    from libcommon.paths import state_layout

    layout = state_layout(sys.argv[1])
    name, count = sys.argv[2], int(sys.argv[3])
    go = float(sys.argv[4])
    while time.time() < go:
        time.sleep(0.001)
    for i in range(count):
        event = {"type": "custom", "kind": "w", "data": {"w": name, "i": i}}
        append_events(layout, "bench", [event])
    """
)


def concurrent(root: Path, workspace: Path) -> None:
    env = {**os.environ, "AX_STATE_DIR": str(root / "state-concurrent")}
    go = time.time() + 2.0  # every writer starts at the same moment, after interpreter start-up
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(workspace), f"p{n}", str(APPENDS_EACH), str(go)],
            env=env,
        )
        for n in range(PROCESSES)
    ]
    codes = [proc.wait() for proc in procs]
    elapsed = time.time() - go
    assert codes == [0] * PROCESSES, codes
    (log,) = (root / "state-concurrent").glob("projects/*/sessions/bench.jsonl")
    raw = log.read_bytes()
    records = [orjson.loads(line) for line in raw.splitlines()]  # a torn line would not parse
    seqs = [r["seq"] for r in records]
    total = PROCESSES * APPENDS_EACH
    assert raw.endswith(b"\n")
    assert seqs == list(range(1, total + 1)), "seq is not gapless"
    for n in range(PROCESSES):
        mine = [r["data"]["i"] for r in records if r["data"]["w"] == f"p{n}"]
        assert mine == list(range(APPENDS_EACH)), f"writer p{n} lost or reordered events"
    print(f"concurrent: {PROCESSES} processes x {APPENDS_EACH} appends = {len(records)} events")
    print("            all present, seq gapless 1..8000, no torn line, per-writer order kept")
    print(f"            {elapsed:.2f} s wall, {len(records) / elapsed:,.0f} events/s")


def build(layout, session: str, count: int) -> None:  # type: ignore[no-untyped-def]
    from ax_log import append_events

    batch = 10_000
    for start in range(0, count, batch):
        size = min(batch, count - start)
        append_events(
            layout,
            session,
            [
                {"type": "custom", "kind": "fill", "data": {"i": start + i, "pad": "x" * 120}}
                for i in range(size)
            ],
        )


def append_cost(root: Path, workspace: Path) -> None:
    os.environ["AX_STATE_DIR"] = str(root / "state-cost")
    from ax_log import append_events
    from libcommon.paths import state_layout

    layout = state_layout(workspace)
    build(layout, "small", SMALL_LOG)
    build(layout, "large", LARGE_LOG)
    sizes = {s: layout.session_log(s).stat().st_size for s in ("small", "large")}
    timings: dict[str, list[float]] = {"small": [], "large": []}
    event = {"type": "custom", "kind": "probe", "data": {"pad": "x" * 120}}
    for _ in range(SAMPLES):
        for session in ("small", "large"):  # interleaved, so drift hits both alike
            started = time.perf_counter()
            append_events(layout, session, [event])
            timings[session].append(time.perf_counter() - started)
    print(f"append cost (one event, incl. fdatasync; {SAMPLES} samples each, interleaved):")
    for label, pick in (("median", statistics.median), ("min", min)):
        small = pick(timings["small"]) * 1e3
        large = pick(timings["large"]) * 1e3
        print(
            f"    {label:>6}: {SMALL_LOG:,} events ({sizes['small']:,} B) {small:.3f} ms, "
            f"{LARGE_LOG:,} events ({sizes['large']:,} B) {large:.3f} ms, "
            f"ratio {large / small:.2f}x (budget 1.2x)"
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ax-bench-", dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        concurrent(root, workspace)
        append_cost(root, workspace)


if __name__ == "__main__":
    main()
