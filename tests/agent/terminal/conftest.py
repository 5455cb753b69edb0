"""Driving the real ``ax-agent`` in a pseudo-terminal (the standard library's ``pty``).

``AgentPty`` forks the installed console script on a pty sized 100x30, reads
everything it writes on a background thread, and lets a test wait for text
(escapes stripped) and type keys. Nothing here is mocked: the script provider
stands in for the model, the rest is the program a person runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import tool_path

# Generous: two cores, a Python start, a session start.
WAIT_S = 15.0
_ESCAPE = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")

UP = b"\x1b[A"
DOWN = b"\x1b[B"
ENTER = b"\r"
CTRL_C = b"\x03"
CTRL_D = b"\x04"


def plain(data: bytes) -> str:
    return _ESCAPE.sub(b"", data).replace(b"\r", b"").decode("utf-8", "replace")


class AgentPty:
    def __init__(
        self, argv: list[str], cwd: Path, stdout_file: Path | None = None, term: str = "xterm"
    ) -> None:
        env = dict(os.environ, TERM=term, COLUMNS="100", LINES="30")
        env.pop("NO_COLOR", None)
        pid, fd = pty.fork()
        if pid == 0:  # the child: become ax-agent
            try:
                os.chdir(cwd)
                if stdout_file is not None:
                    out = os.open(stdout_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.dup2(out, 1)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.unicode = term != "dumb"
        self.pid = pid
        self.fd = fd
        self.data = b""
        self.mark = 0
        self.lock = threading.Lock()
        self.status: int | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    @property
    def text(self) -> str:
        with self.lock:
            return plain(self.data)

    def expect(self, needle: str, timeout: float = WAIT_S) -> str:
        """Wait until ``needle`` appears after the previous match; return the text up to it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text
            at = text.find(needle, self.mark)
            if at >= 0:
                seen = text[self.mark : at + len(needle)]
                self.mark = at + len(needle)
                return seen
            time.sleep(0.02)
        raise AssertionError(
            f"{needle!r} did not appear; the screen after the last match:\n"
            f"{self.text[self.mark :][-3000:]}"
        )

    def prompt(self) -> None:
        self.expect("❯ " if self.unicode else "> ")

    def send(self, data: bytes | str) -> None:
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def line(self, text: str) -> None:
        self.send(text.encode() + ENTER)

    def wait(self, timeout: float = WAIT_S) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                self.reader.join(2)
                return self.status
            time.sleep(0.02)
        raise AssertionError(f"ax-agent did not exit; the screen:\n{self.text[-3000:]}")

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


def write_script(
    path: Path, turns: list[dict[str, Any]], tasks: dict[str, Any] | None = None
) -> Path:
    """A script; ``tasks`` holds delegated tasks' turns by task id or label."""
    path.write_text(json.dumps({"model": "scripted", "turns": turns, "tasks": tasks or {}}))
    return path


@pytest.fixture
def agent(workspace: Path, tmp_path: Path) -> Iterator[Callable[..., AgentPty]]:
    started: list[AgentPty] = []

    def start(
        turns: list[dict[str, Any]],
        *extra: str,
        stdout_file: Path | None = None,
        term: str = "xterm",
        tasks: dict[str, Any] | None = None,
    ) -> AgentPty:
        script = write_script(tmp_path / f"script{len(started)}.json", turns, tasks)
        argv = [
            tool_path("agent"),
            "-C",
            str(workspace),
            "--trust-this-workspace",
            "--provider",
            "script",
            "--script",
            str(script),
            *extra,
        ]
        session = AgentPty(argv, workspace, stdout_file, term)
        started.append(session)
        return session

    yield start
    for session in started:
        session.close()


def session_events(state: Path) -> list[dict[str, Any]]:
    """Every event of every session log under the state root, in file order."""
    events: list[dict[str, Any]] = []
    for log in sorted(state.rglob("sessions/*.jsonl")):
        events.extend(json.loads(line) for line in log.read_text().splitlines() if line.strip())
    return events
