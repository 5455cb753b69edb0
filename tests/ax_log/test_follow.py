"""``ax-log events --follow`` as a real process.

It streams appends as they land and stops on SIGINT or when its reader goes away.
"""

from __future__ import annotations

import select
import signal
import subprocess
import time

import orjson

from ax_log import append_events
from ax_log.events import Custom
from libcommon.paths import StateLayout
from tests.conftest import tool_path

READ_TIMEOUT_S = 10.0


def read_line(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READ_TIMEOUT_S)
    assert ready, "no line from ax-log events --follow"
    return orjson.loads(proc.stdout.readline())


def start_follow(layout: StateLayout, env: dict[str, str], *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            tool_path("log"),
            "events",
            "--session",
            "s",
            "--follow",
            "-C",
            str(layout.workspace),
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Unbuffered, so select() on the pipe never misses lines already read ahead.
        bufsize=0,
    )


def test_follow_streams_new_events_and_stops_on_sigint(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    append_events(layout, "s", [Custom(kind="old", data={})])
    proc = start_follow(layout, child_env, "--type", "custom")
    try:
        assert read_line(proc)["seq"] == 1
        append_events(layout, "s", [Custom(kind="new", data={"i": 1})])
        assert read_line(proc)["data"] == {"i": 1}
        append_events(
            layout,
            "s",
            [{"type": "session.ended", "reason": "x"}, Custom(kind="new", data={"i": 2})],
        )
        assert read_line(proc)["seq"] == 4  # the filter skipped seq 3
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=READ_TIMEOUT_S)
    assert proc.returncode == 130
    assert b"Traceback" not in err


def test_follow_waits_for_a_log_that_does_not_exist_yet(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    proc = start_follow(layout, child_env, "--since", "1")
    try:
        time.sleep(0.3)
        append_events(layout, "s", [Custom(kind="a", data={}), Custom(kind="b", data={})])
        assert read_line(proc)["kind"] == "b"
    finally:
        proc.kill()
        proc.wait(timeout=READ_TIMEOUT_S)


def test_follow_stops_when_its_reader_goes_away(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    append_events(layout, "s", [Custom(kind="k", data={"i": i}) for i in range(3)])
    proc = start_follow(layout, child_env)
    assert [read_line(proc)["seq"] for _ in range(3)] == [1, 2, 3]
    assert proc.stdout is not None
    proc.stdout.close()
    # No new event arrives: the idle follower must notice the closed pipe on its own.
    assert proc.wait(timeout=READ_TIMEOUT_S) == 141
    assert proc.stderr is not None
    assert b"Traceback" not in proc.stderr.read()


def test_a_closed_pipe_ends_a_plain_read_quietly(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    append_events(layout, "s", [Custom(kind="k", data={"pad": "z" * 1000}) for _ in range(300)])
    proc = subprocess.Popen(
        [tool_path("log"), "events", "--session", "s", "-C", str(layout.workspace)],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert read_line(proc)["seq"] == 1
    assert proc.stdout is not None
    proc.stdout.close()
    assert proc.wait(timeout=READ_TIMEOUT_S) == 141
    assert proc.stderr is not None
    assert proc.stderr.read() == b""
