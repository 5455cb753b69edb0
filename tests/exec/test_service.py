"""ax-exec's start_service: a long-lived child under a run's containment (issue 23)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from ax_exec import start_service
from libcommon.errors import OperationFailed
from libcommon.procfs import read_proc

# The child forks a grandchild that leaves the session (setsid) and sleeps, writes a
# key-shaped line and a flood to stderr, then echoes stdin to stdout.
CHILD = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    print(os.getpid(), flush=True)
    time.sleep(60)
    os._exit(0)
time.sleep(0.2)
sys.stderr.write("token sk-ant-api03-" + "B" * 40 + "\\n")
sys.stderr.write("x" * 100 + "\\n")
sys.stderr.write(("y" * 100 + "\\n") * 100)
sys.stderr.flush()
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
"""


def alive(pid: int) -> bool:
    info = read_proc(pid)
    return info is not None and info.alive


def test_a_service_talks_over_its_pipes_and_its_whole_tree_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "err.log"
    service = start_service(
        [sys.executable, "-c", CHILD], env={}, cwd=tmp_path, log_path=log, max_log_bytes=300
    )
    stdout = service.process.stdout
    assert stdout is not None and service.process.stdin is not None
    grandchild = int(stdout.readline())
    service.process.stdin.write(b"hello\n")
    assert stdout.readline() == b"hello\n"
    assert alive(grandchild)
    stopped = service.stop()
    assert stopped.verified and stopped.killed >= 1
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)
    text = log.read_text()
    assert "sk-ant-api03-BBBB" not in text and "[REDACTED" in text
    assert len(text.encode()) < 400
    assert "bytes of stderr not kept]" in text


def test_a_command_that_cannot_start_is_named(tmp_path: Path) -> None:
    with pytest.raises(OperationFailed, match="cannot start '/nonexistent/x'"):
        start_service(
            ["/nonexistent/x"], env={}, cwd=tmp_path, log_path=tmp_path / "l", max_log_bytes=10
        )
