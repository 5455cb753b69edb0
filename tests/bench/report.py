"""ax-report over a generated 100,000-event session: time and peak memory.

Budget (DESIGN.md): the report over 100,000 events in under 3 s. Measured side
by side in one run:

1. ``build_report`` over the events in memory (time), and streamed from a
   generator (tracemalloc peak of the fold alone, events made on the fly).
2. The same stream at 10,000 and 100,000 events where the extra events are
   conversation and allowed tool calls: the peak must not grow with them,
   because memory follows files and commands, not events.
3. The CLI: ``ax-report < session.jsonl`` and ``ax-report --json``, wall time
   and the child's peak RSS (from wait4), beside ``python -c pass``.

Run: ``.venv/bin/python tests/bench/report.py``. Prints a table; exits 1 when
the 100,000-event report takes 3 s or more.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ax_report import build_report, render_json

EVENTS = 100_000
FILES = 500
BUDGET_S = 3.0
CWDS = [".", "api", "web", "api/src", "/ws/libs/core"]
BASELINE = [sys.executable, "-c", "import typer, pydantic, orjson"]


def session(
    total: int, files: int = FILES, noise_from: int | None = None
) -> Iterator[dict[str, Any]]:
    """A plausible session: edits, commands, checks, approvals, messages, custom events.

    With ``noise_from``, events after that many are only messages and allowed
    tool calls, which a report must fold without keeping.
    """
    seq = 0

    def event(event_type: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        ts = f"2026-11-30T10:{(seq // 60000) % 60:02d}:{(seq // 1000) % 60:02d}.{seq % 1000:03d}Z"
        return {"v": 1, "seq": seq, "ts": ts, "session": "bench", "type": event_type, **fields}

    yield event("session.started", workspace="/ws", provider="script", model="m")
    step = 0
    while seq < total - 1:
        step += 1
        call = f"c{step}"
        noisy = noise_from is not None and seq >= noise_from
        phase = 0 if noisy else step % 10
        if phase in (0, 5):
            yield event(
                "assistant.message",
                content=[{"type": "text", "text": "working on it"}],
                usage={"inputTokens": 120, "outputTokens": 30, "cacheReadInputTokens": 90},
            )
            yield event("tool.requested", callId=call, tool="read_file", input={"path": "a.py"})
            yield event(
                "policy.decision",
                callId=call,
                verdict="allow",
                **{"class": "read"},
                rule="read-inside-workspace",
                reason="inside",
            )
            yield event("tool.completed", callId=call, ok=True, summary="40 lines")
        elif phase in (1, 2, 3, 6, 7):
            directory = ["api", "web", "api/src", "libs/core", "docs"][step % 5]
            path = f"{directory}/f{step % files}.py"
            yield event("snapshot.stored", path=path, sha256="a" * 64)
            yield event("file.mutated", callId=call, path=path, pre="a" * 64, post="b" * 64)
        elif phase in (4, 8):
            yield event(
                "command.started",
                callId=call,
                command=["pytest", "-q"],
                cwd=CWDS[step % len(CWDS)],
                sandbox={"backend": "landlock", "profile": "workspace-write", "enforced": True},
            )
            killed = step % 97 == 0
            yield event(
                "command.ended",
                callId=call,
                termination="timeout" if killed else "exited",
                exitCode=None if killed else step % 3 // 2,
                durationMs=1234,
            )
        else:
            project = ["api", "web", "."][step % 3]
            fields = {"kind": "test", "project": project, "scope": ".", "recipeId": "python-pytest"}
            yield event("check.started", **fields)
            yield event(
                "check.completed",
                **fields,
                verdict="passed",
                exitCode=0,
                termination="exited",
                reason=None,
            )
            yield event("custom", kind=f"hook.{step % 7}", data={"n": step})


def timed_build(events: list[dict[str, Any]]) -> tuple[float, int, int]:
    start = time.perf_counter()
    document, markdown = build_report(events)
    rendered = render_json(document)
    return time.perf_counter() - start, len(markdown), len(rendered)


def streamed_peak(total: int, noise_from: int | None = None) -> int:
    tracemalloc.start()
    build_report(session(total, noise_from=noise_from))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def run_child(argv: list[str], stdin_path: Path | None) -> tuple[float, int, int]:
    """Wall time, exit status and peak RSS (KiB) of one child process."""
    stdin = stdin_path.open("rb") if stdin_path else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdin_path:
        stdin.close()  # type: ignore[union-attr]
    return elapsed, proc.returncode, usage.ru_maxrss


def cli_figures() -> list[tuple[str, tuple[float, int, int]]]:
    """Run the CLI children first, while this process is small: a forked child's
    peak RSS counts the parent's pages it starts with."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        with path.open("wb") as out:
            for item in session(EVENTS):
                out.write(orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE))
        print(f"stdin file: {path.stat().st_size / 2**20:.1f} MiB")
        script = str(Path(sys.executable).parent / "ax-report")
        return [
            ("python -c 'import typer, pydantic, orjson'", run_child(BASELINE, None)),
            ("ax-report < session.jsonl", run_child([script], path)),
            ("ax-report --json < session.jsonl", run_child([script, "--json"], path)),
        ]


def main() -> int:
    children = cli_figures()
    for label, (elapsed, code, rss) in children:
        print(f"{label:44} {elapsed:6.3f} s   maxrss {rss / 1024:6.1f} MiB   exit {code}")

    events = list(session(EVENTS))
    files = len({item["path"] for item in events if item["type"] == "file.mutated"})
    commands = sum(1 for item in events if item["type"] == "command.started")
    print(f"session: {len(events)} events, {files} files, {commands} commands")
    runs = [timed_build(events) for _ in range(3)]
    best = min(run[0] for run in runs)
    print(f"build_report (in memory, best of 3):   {best:6.3f} s   budget {BUDGET_S} s")
    print(f"  markdown {runs[0][1]:,} bytes, json {runs[0][2]:,} bytes")
    del events

    peak_full = streamed_peak(EVENTS)
    print(f"fold peak, streamed, 100k events:      {peak_full / 2**20:6.2f} MiB (tracemalloc)")
    small = streamed_peak(10_000, noise_from=9_000)
    large = streamed_peak(EVENTS, noise_from=9_000)
    print(
        f"fold peak, 9k events + noise to 10k:   {small / 2**20:6.2f} MiB\n"
        f"fold peak, 9k events + noise to 100k:  {large / 2**20:6.2f} MiB"
        f"   ratio {large / small:.2f}x (flat = bounded by files and commands)"
    )
    worst = max(best, *(figures[0] for label, figures in children[1:]))
    verdict = "within" if worst < BUDGET_S else "OVER"
    print(f"verdict: {verdict} budget (slowest {worst:.3f} s, budget {BUDGET_S} s)")
    return 0 if worst < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
