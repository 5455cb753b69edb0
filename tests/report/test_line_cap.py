"""ax-report on stdin holds no more of a line than ax-log's line cap (the installed ax-report)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from axtest import tool_path

from ax_log.reader import LINE_MAX_BYTES

HUGE_LINE_BYTES = 200 * 1024 * 1024
PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)\n"
    "sys.stderr.buffer.write(done.stdout)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def event(seq: int) -> bytes:
    record = {"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00.000Z", "session": "s"}
    return orjson.dumps({**record, "type": "custom", "kind": "k", "data": {}}) + b"\n"


def report_of(path: Path) -> tuple[int, int, dict]:
    """Exit code, peak RSS in bytes and the JSON report of ax-report reading ``path``."""
    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", PEAK_RSS, tool_path("report"), "--json"],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    code, peak = done.stdout.split()
    return int(code), int(peak) * 1024, orjson.loads(done.stderr)


def test_a_200_mb_line_on_stdin_is_reported_not_loaded(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_bytes(event(1) + event(2))
    _, baseline, _ = report_of(small)
    huge = tmp_path / "huge.jsonl"
    chunk = b"x" * (1024 * 1024)
    with huge.open("wb") as handle:
        handle.write(event(1) + b'{"pad":"')
        for _ in range(HUGE_LINE_BYTES // len(chunk)):
            handle.write(chunk)
        handle.write(b'"}\n' + event(2))

    code, peak, report = report_of(huge)

    assert code == 0
    assert report["events"] == {"read": 2, "invalid": 1}
    [listed] = report["problems"]["listed"]
    assert listed["line"] == 2
    assert f"line of {HUGE_LINE_BYTES + 11} bytes is longer than" in listed["problem"]
    assert peak - baseline < 3 * LINE_MAX_BYTES, f"peak {peak >> 20} MiB, base {baseline >> 20}"
