"""The memory a real ``ax-exec run`` takes while both streams flood, against its documented bound.

Peak RSS is read from a fresh wrapper process (``ru_maxrss`` of its waited children, which
is ax-exec's), for the flood at a modest cap and for the same flood at the smallest cap:
the difference is what the captured output cost, the interpreter and its imports aside.
One bound for any output: ASCII text, text with 4-byte characters (which would make a
Python string 4 bytes a character) and random bytes (which hold some, and invalid bytes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from axtest import tool_path

from ax_exec.capture import MEMORY_PER_STREAM, MIN_MAX_OUTPUT_BYTES

FLOOD_CAP = 8 * 1024 * 1024
FLOOD_S = 1.0
_WRAPPER = """\
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    subprocess.run(sys.argv[2:], stdout=out, check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


FLOODS = {
    "ascii": "yes '" + "A" * 200 + "'",
    "4-byte-characters": "yes '\U0001f600" + "A" * 200 + "'",
    "random-bytes": "cat /dev/urandom",
}


def flood(tmp_path: Path, cap: int, command: str) -> tuple[int, dict[str, Any]]:
    """Peak RSS (bytes) of ``ax-exec run`` while ``command`` floods both streams, and its
    outcome."""
    outcome = tmp_path / f"outcome-{cap}.json"
    argv = [tool_path("exec"), "run", "--max-output", str(cap), "--timeout", str(FLOOD_S)]
    shell = f"{command} & {command} >&2; wait"
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(outcome), *argv, "--shell", shell],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout) * 1024, json.loads(outcome.read_text())


@pytest.mark.parametrize("kind", list(FLOODS))
def test_a_flood_on_both_streams_stays_within_the_documented_bound(
    tmp_path: Path, kind: str
) -> None:
    baseline, _ = flood(tmp_path, MIN_MAX_OUTPUT_BYTES, FLOODS[kind])
    peak, outcome = flood(tmp_path, FLOOD_CAP, FLOODS[kind])
    assert outcome["termination"] == "timeout"
    for name in ("stdout", "stderr"):
        stream = outcome[name]
        assert stream["truncated"] and stream["bytes"] > 4 * FLOOD_CAP, stream["bytes"]
        if kind != "random-bytes":
            # The head may end, and the tail begin, inside a character.
            assert abs(len((stream["head"] + stream["tail"]).encode()) - FLOOD_CAP) <= 8
    bound = MEMORY_PER_STREAM * 2 * FLOOD_CAP
    assert peak - baseline <= bound, (
        f"peak {peak / 2**20:.1f} MiB over a baseline of {baseline / 2**20:.1f} MiB: "
        f"{(peak - baseline) / FLOOD_CAP / 2:.2f} x the cap per stream, "
        f"documented {MEMORY_PER_STREAM} x"
    )
