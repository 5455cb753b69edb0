"""Fixtures for ax-preview: fixture projects and a guard that no process outlives a test."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import CliResult, CliRunner

from ax_preview import proc
from ax_preview.cli import main
from libcommon.paths import state_layout

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "preview"
MARK_VARIABLE = "AX_PREVIEW_TEST_MARK"
LEAK_GRACE_S = 5.0
READY_TIMEOUT = "10"


def marked_processes(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries this test's mark."""
    wanted = f"{MARK_VARIABLE}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if wanted not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(int(name))
    return found


@pytest.fixture(autouse=True)
def no_leftover_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Mark every process a test starts; at teardown, kill leftovers and fail the test.

    The mark is an environment variable inherited by the supervisor and the
    server (its name is not secret-shaped, so the server's filter keeps it).
    A short grace lets a supervisor finish exiting after a verified stop.
    """
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK_VARIABLE, mark)
    yield mark
    deadline = time.monotonic() + LEAK_GRACE_S
    left = marked_processes(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = marked_processes(mark)
    if left:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"test left processes behind (killed now): {left}")


@pytest.fixture
def projects(workspace: Path) -> Path:
    """The workspace holding a copy of every fixture project (use --project NAME)."""
    shutil.copytree(FIXTURES, workspace, dirs_exist_ok=True)
    return workspace


@pytest.fixture(name="marked_processes")
def marked_processes_fixture() -> Callable[[str], list[int]]:
    return marked_processes


def wait_until(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(0.05)


def tree_gone(entry: dict[str, Any]) -> bool:
    server = entry["server"]
    return not proc.is_alive(server["pid"], server["startTime"])


class Previews:
    """Drive ax-preview in one workspace and look at its registry."""

    def __init__(self, run_cli: CliRunner, ws: Path) -> None:
        self.run_cli = run_cli
        self.ws = ws

    def cli(self, *argv: str) -> CliResult:
        return self.run_cli(main, [argv[0], "-C", str(self.ws), *argv[1:]])

    def start(self, project: str, *extra: str) -> tuple[int, dict[str, Any]]:
        result = self.cli("start", "--project", project, "--ready-timeout", READY_TIMEOUT, *extra)
        return result.exit_code, json.loads(result.stdout)

    def stop(self, preview_id: str) -> CliResult:
        return self.cli("stop", preview_id)

    def sweep(self) -> dict[str, dict[str, Any]]:
        result = self.cli("sweep")
        assert result.exit_code == 0, result.stderr
        return {item["id"]: item for item in json.loads(result.stdout)["items"]}

    def rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(self.cli("list", "--json").stdout)["previews"]
        return rows

    def record_file(self, preview_id: str) -> Path:
        return state_layout(self.ws).previews_dir / f"{preview_id}.json"

    def record(self, preview_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.record_file(preview_id).read_text())
        return data

    def edit_record(self, preview_id: str, **changes: Any) -> None:
        path = self.record_file(preview_id)
        data = json.loads(path.read_text())
        data.update(changes)
        path.write_text(json.dumps(data))

    wait_until = staticmethod(wait_until)
    tree_gone = staticmethod(tree_gone)

    def wait_supervisor_gone(self, preview_id: str) -> None:
        supervisor = self.record(preview_id)["supervisor"]
        wait_until(lambda: not proc.is_alive(supervisor["pid"], supervisor["startTime"]))

    def wait_stopped(self, preview_id: str) -> dict[str, Any]:
        wait_until(lambda: self.record(preview_id)["stoppedAt"] is not None)
        return self.record(preview_id)


@pytest.fixture
def pv(run_cli: CliRunner, projects: Path) -> Previews:
    return Previews(run_cli, projects)
