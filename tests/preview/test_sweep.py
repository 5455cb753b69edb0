"""The crash sweep: after the supervisor is SIGKILLed, kill only on positive identity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ax_preview import proc


def kill_supervisor(pv: Any, preview_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = pv.record(preview_id)
    supervisor = entry["supervisor"]
    os.kill(supervisor["pid"], signal.SIGKILL)
    pv.wait_until(lambda: not proc.is_alive(supervisor["pid"], supervisor["startTime"]))
    return entry


def live_tree(entry: dict[str, Any]) -> list[proc.ProcInfo]:
    server = entry["server"]
    found = proc.server_tree(server["pid"], server["startTime"], entry["commandToken"])
    return [info for info in found if info.alive]


@pytest.fixture
def orphan(pv: Any) -> Iterator[dict[str, Any]]:
    """A ready server (with a child process) whose supervisor was killed with SIGKILL."""
    code, result = pv.start("child")
    assert code == 0, result
    entry = kill_supervisor(pv, result["id"])
    yield entry
    # Safety net for a failing test: stop it by its verified identity.
    server = entry["server"]
    proc.kill_tree(
        lambda: proc.server_tree(server["pid"], server["startTime"], entry["commandToken"])
    )


def test_orphan_keeps_serving_and_logging_without_its_supervisor(
    pv: Any, orphan: dict[str, Any]
) -> None:
    # Output goes to the log through an inherited descriptor, not a pipe to the
    # supervisor, so the server survives and keeps writing after SIGKILL.
    with urllib.request.urlopen(orphan["url"], timeout=5) as response:
        assert response.status == 200
    pv.wait_until(lambda: b"request:" in Path(orphan["logPath"]).read_bytes())
    rows = pv.rows()
    assert rows[0]["state"] == "orphaned"


def test_sweep_kills_an_orphan_that_matches_token_and_start_time(
    pv: Any, orphan: dict[str, Any]
) -> None:
    tree = live_tree(orphan)
    assert len(tree) >= 2  # the server and the child it spawned (plus sh, if it forked)
    items = pv.sweep()
    assert items[orphan["id"]]["action"] == "killed"
    assert not [info for info in tree if proc.is_alive(info.pid, info.start_time)]
    assert not pv.record_file(orphan["id"]).exists()
    assert pv.sweep() == {}


def test_sweep_skips_a_recycled_pid(pv: Any, orphan: dict[str, Any]) -> None:
    # The record's start time no longer matches the live process at that pid,
    # which is exactly what a reused pid looks like: it must not be killed.
    real = orphan["server"]
    pv.edit_record(orphan["id"], server={"pid": real["pid"], "startTime": real["startTime"] + 1})
    items = pv.sweep()
    assert items[orphan["id"]]["action"] == "skipped"
    assert "start time does not match" in items[orphan["id"]]["why"]
    assert proc.is_alive(real["pid"], real["startTime"])
    assert pv.record_file(orphan["id"]).exists()

    stop = pv.stop(orphan["id"])
    assert stop.exit_code == 1
    assert "not killing it" in stop.stderr
    assert proc.is_alive(real["pid"], real["startTime"])

    # Restored to the truth, the same record is swept.
    pv.edit_record(orphan["id"], server=real)
    assert pv.sweep()[orphan["id"]]["action"] == "killed"
    assert pv.tree_gone(orphan)


def test_sweep_never_kills_an_unrelated_process_at_the_recorded_pid(
    pv: Any, orphan: dict[str, Any]
) -> None:
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        info = proc.read_proc(stranger.pid)
        assert info is not None
        # Same pid and even the same start time, but not carrying the token.
        pv.edit_record(orphan["id"], server={"pid": stranger.pid, "startTime": info.start_time})
        item = pv.sweep()[orphan["id"]]
        assert item["action"] == "skipped"
        assert "command token" in item["why"]
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
    pv.edit_record(orphan["id"], server=orphan["server"])
    assert pv.sweep()[orphan["id"]]["action"] == "killed"


def test_sweep_skips_a_live_owner_and_drops_the_dead(
    pv: Any,
) -> None:
    code, alive = pv.start("py-procfile")
    assert code == 0, alive
    code, crashed = pv.start("crash")
    assert code == 1
    # A supervisor that has written its verdict may still be exiting; until it is
    # gone it owns the record and the sweep must leave it alone.
    pv.wait_supervisor_gone(crashed["id"])
    items = pv.sweep()
    assert items[alive["id"]]["action"] == "skipped"
    assert "is alive and owns it" in items[alive["id"]]["why"]
    assert items[crashed["id"]]["action"] == "dropped"
    assert not pv.record_file(crashed["id"]).exists()
    assert not Path(crashed["logPath"]).exists()
    assert pv.stop(alive["id"]).exit_code == 0


def test_stop_kills_an_orphan_directly_when_identity_is_positive(
    pv: Any, orphan: dict[str, Any]
) -> None:
    tree = live_tree(orphan)
    result = pv.stop(orphan["id"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["killVerified"] is True
    assert answer["stopReason"] == "stopped"
    assert not [info for info in tree if proc.is_alive(info.pid, info.start_time)]


def test_the_leak_guard_sees_a_marked_process(
    no_leftover_processes: str, marked_processes: Callable[[str], list[int]]
) -> None:
    # The guard must be able to fail: a marked process is found until it is gone.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 5
        while child.pid not in marked_processes(no_leftover_processes):
            assert time.monotonic() < deadline, "marked child not found"
            time.sleep(0.02)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in marked_processes(no_leftover_processes)


def test_a_preview_still_being_started_is_left_to_its_launcher(pv: Any) -> None:
    code, crashed = pv.start("crash")
    assert code == 1
    pv.wait_supervisor_gone(crashed["id"])
    me = proc.read_proc(os.getpid())
    assert me is not None
    # As the record looks between `start` writing it and the supervisor stamping it.
    pv.edit_record(
        crashed["id"],
        state="starting",
        supervisor=None,
        server=None,
        stoppedAt=None,
        launcher={"pid": me.pid, "startTime": me.start_time},
    )
    assert pv.sweep()[crashed["id"]]["action"] == "skipped"
    assert pv.rows()[0]["state"] == "starting"
    refused = pv.stop(crashed["id"])
    assert refused.exit_code == 4
    assert "still being started" in refused.stderr
    # Once the launcher is gone (a dead start process), the record is dropped.
    pv.edit_record(crashed["id"], launcher={"pid": me.pid, "startTime": me.start_time + 1})
    assert pv.rows()[0]["state"] == "lost"
    assert pv.sweep()[crashed["id"]]["action"] == "dropped"
