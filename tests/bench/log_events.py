"""Benchmark: ``ax-log events`` over a 100,000-event log, time and peak memory.

Run: .venv/bin/python tests/bench/log_events.py

The same command runs over a 1,000-event log in the same run; equal peak
memory at both sizes shows the events are streamed, not loaded whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1_000, 100_000)
RUNS = 3


def ax_log() -> str:
    beside = Path(sys.executable).parent / "ax-log"
    found = str(beside) if beside.exists() else shutil.which("ax-log")
    if found is None:
        raise SystemExit("ax-log is not installed in this environment")
    return found


BUILD = """
import sys
from ax_log import append_events
from libcommon.paths import state_layout

layout = state_layout(sys.argv[1])
session, count = sys.argv[2], int(sys.argv[3])
kinds = [
    lambda i: {"type": "tool.requested", "callId": f"c{i}", "tool": "read_file",
               "input": {"path": f"src/m{i % 50}.py"}},
    lambda i: {"type": "tool.completed", "callId": f"c{i}", "ok": True, "summary": "read"},
    lambda i: {"type": "custom", "kind": "note", "data": {"i": i, "text": "lorem ipsum " * 8}},
]
for start in range(0, count, 10_000):
    stop = min(count, start + 10_000)
    append_events(layout, session, [kinds[i % 3](i) for i in range(start, stop)])
print(layout.session_log(session).stat().st_size)
"""


def build(workspace: Path, session: str, count: int, env: dict[str, str]) -> int:
    """Write the log in a child, so this process stays small: a forked child's peak RSS
    counts the parent's pages until it execs, which would inflate the figures."""
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(workspace), session, str(count)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def run_events(workspace: Path, session: str, env: dict[str, str]) -> tuple[float, int, int]:
    """Wall time, peak RSS (KiB) and lines printed by one `ax-log events` run."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [ax_log(), "events", "--session", session, "-C", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    lines = sum(chunk.count(b"\n") for chunk in iter(lambda: proc.stdout.read(1 << 20), b""))  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.returncode
    return elapsed, usage.ru_maxrss, lines


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ax-bench-", dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        env = {**os.environ, "AX_STATE_DIR": str(root / "state")}
        print(f"ax-log events, best of {RUNS} runs, output read through a pipe:")
        for count in SIZES:
            session = f"s{count}"
            size = build(workspace, session, count, env)
            runs = [run_events(workspace, session, env) for _ in range(RUNS)]
            best = min(runs)
            assert best[2] == count, f"printed {best[2]} lines, expected {count}"
            peak = max(run[1] for run in runs)
            print(
                f"  {count:>7,} events ({size / 1e6:6.1f} MB): {best[0]:.2f} s, "
                f"{count / best[0]:,.0f} events/s, peak RSS {peak / 1024:.1f} MiB"
            )


if __name__ == "__main__":
    main()
