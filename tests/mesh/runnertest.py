"""Real runners (``ax-mesh run``) as subprocesses, and their JSON Lines, for tests.

Each runner is started in a process group of its own, so a test can SIGKILL it with its
ax-agent turn, and ``Runners.close`` kills whatever is left: no runner outlives a test.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from axtest import tool_path

from ax_policy import grant_trust
from libcommon.paths import state_layout


def trusted_workspace(base: Path, seat: str, env: dict[str, str]) -> Path:
    folder = base / f"ws-{seat}"
    folder.mkdir(parents=True, exist_ok=True)
    folder = Path(os.path.realpath(folder))
    grant_trust(state_layout(folder, env))
    return folder


class RunnerProcess:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if raw.strip():
                self.lines.put(json.loads(raw))

    def expect(self, event: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """The next line of ``event`` (with ``fields``), waiting up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {event} {fields} within {timeout} s; saw {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line.get("event") == event and all(line.get(k) == v for k, v in fields.items()):
                return line

    def kill_group(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


class Runners:
    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.env = env
        self.tmp = tmp
        self.started: list[RunnerProcess] = []

    def argv(self, seat: str, *extra: str) -> list[str]:
        workspace = trusted_workspace(self.tmp, seat, self.env)
        return [
            tool_path("mesh"),
            "run",
            seat,
            "-C",
            str(workspace),
            "--provider",
            "mesh-fake",
            *extra,
        ]

    def start(self, seat: str, *extra: str) -> RunnerProcess:
        runner = RunnerProcess(self.argv(seat, *extra), self.env)
        self.started.append(runner)
        return runner

    def once(self, seat: str, *extra: str) -> tuple[int, list[dict[str, Any]], str]:
        done = subprocess.run(
            self.argv(seat, "--once", *extra),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return done.returncode, lines, done.stderr

    def close(self) -> None:
        for runner in self.started:
            if runner.proc.poll() is None:
                os.killpg(runner.proc.pid, signal.SIGKILL)
            runner.proc.wait(timeout=30)
