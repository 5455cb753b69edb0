"""ax-exec overhead, measured side by side in one run (not collected by pytest).

    .venv/bin/python tests/bench/exec_overhead.py

Prints the median wall time of starting a trivial command through plain
subprocess.run, run_managed without a sandbox, and run_managed under each
Landlock profile; the one-off probe time; a 50 MB flood's time and peak
Python memory through both paths; and the peak RSS of a real `ax-exec run
--max-output 64 MiB` while both streams flood, against the cap (ASCII text,
text holding 4-byte characters, random bytes).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from ax_exec import ExecSpec, probe_sandbox, run_managed
from ax_exec.capture import MAX_MAX_OUTPUT_BYTES, MEMORY_PER_STREAM, MIN_MAX_OUTPUT_BYTES

ROUNDS = 40
FLOOD = ["head", "-c", "50000000", "/dev/zero"]
CLI_FLOODS = {
    "ASCII text": "yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "4-byte characters": "yes \U0001f600AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "random bytes": "cat /dev/urandom",
}
CLI_FLOOD_S = 3


def median_ms(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def peak_mb(action: Callable[[], object]) -> tuple[float, float]:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return time.perf_counter() - started, peak / 1e6


def main() -> None:
    started = time.perf_counter()
    probe = probe_sandbox()
    probe_ms = (time.perf_counter() - started) * 1000
    print(f"probe_sandbox (first call, {probe.selected}): {probe_ms:.1f} ms")

    base = median_ms(lambda: subprocess.run(["true"], capture_output=True, check=False))
    managed = median_ms(lambda: run_managed(ExecSpec(argv=["true"])))
    print(f"subprocess.run(['true'])           median {base:7.2f} ms")
    print(
        f"run_managed(['true'])              median {managed:7.2f} ms  ratio {managed / base:5.2f}x"
    )
    with tempfile.TemporaryDirectory() as workspace:
        for profile in ("read-only", "workspace-write"):
            spec = ExecSpec(argv=["true"], sandbox=profile, workspace=workspace)
            if not run_managed(spec).passed:
                print(f"run_managed {profile}: not enforced here, skipped")
                continue
            sandboxed = median_ms(lambda spec=spec: run_managed(spec))
            print(
                f"run_managed(['true'], {profile:15}) median {sandboxed:7.2f} ms  "
                f"ratio {sandboxed / base:5.2f}x"
            )

    plain_s, plain_mb = peak_mb(lambda: subprocess.run(FLOOD, capture_output=True, check=False))
    outcome: list[object] = []
    managed_s, managed_mb = peak_mb(lambda: outcome.append(run_managed(ExecSpec(argv=FLOOD))))
    print(f"50 MB flood, subprocess.run capture: {plain_s:6.2f} s, peak {plain_mb:7.1f} MB")
    print(
        f"50 MB flood, run_managed:            {managed_s:6.2f} s, peak {managed_mb:7.1f} MB "
        f"(memory ratio {managed_mb / plain_mb:.3f})"
    )
    for name, command in CLI_FLOODS.items():
        baseline = cli_peak_mb(MIN_MAX_OUTPUT_BYTES, command)
        peak = cli_peak_mb(MAX_MAX_OUTPUT_BYTES, command)
        per_stream = (peak - baseline) * 1e6 / MAX_MAX_OUTPUT_BYTES / 2
        print(
            f"ax-exec run --max-output 64 MiB, {name:17} on both streams: peak RSS "
            f"{peak:6.1f} MB, {baseline:5.1f} MB at the smallest cap: {per_stream:4.2f} x the "
            f"cap per stream (documented: at most {MEMORY_PER_STREAM} x, for any output)"
        )
    sys.stdout.flush()


def cli_peak_mb(cap: int, command: str) -> float:
    """Peak RSS of a real ``ax-exec run`` while ``command`` floods both streams."""
    ax_exec = Path(sys.executable).parent / "ax-exec"
    shell = f"{command} & {command} >&2; wait"
    argv = [str(ax_exec), "run", "--max-output", str(cap), "--timeout", str(CLI_FLOOD_S)]
    # A fresh process, so that the peak of its waited children is ax-exec's alone.
    wrapper = (
        "import resource, subprocess, sys; "
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *argv, "--shell", shell],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout) * 1024 / 1e6


if __name__ == "__main__":
    main()
