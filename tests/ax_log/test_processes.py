"""Real processes: concurrent writers, a writer SIGKILLed mid-line, and lock release on death."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson

from ax_log import append_events, read_events, verify_session
from ax_log.events import Custom
from libcommon.paths import StateLayout
from tests.conftest import tool_path

WRITER = textwrap.dedent(
    """
    import sys
    from ax_log import append_events
    from libcommon.paths import state_layout

    layout = state_layout(sys.argv[1])
    name, count, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    for i in range(count):
        event = {"type": "custom", "kind": "w", "data": {"writer": name, "i": i, "pad": "x" * size}}
        stored = append_events(layout, "shared", [event])
        print(stored[0]["seq"], flush=True)
    """
)


def start_writer(
    layout: StateLayout, env: dict[str, str], name: str, count: int, size: int = 0
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(layout.workspace), name, str(count), str(size)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_writers_lose_tear_duplicate_and_reorder_nothing(
    layout: StateLayout, child_env: dict[str, str], tmp_path: Path
) -> None:
    writers = [start_writer(layout, child_env, f"p{n}", 40, size=n * 300) for n in range(6)]
    batch = "".join(
        orjson.dumps({"type": "custom", "kind": "b", "data": {"i": i}}).decode() + "\n"
        for i in range(3)
    )
    batch_file = tmp_path / "batch.jsonl"
    batch_file.write_text(batch)
    cli = []
    for _ in range(4):
        with batch_file.open() as stdin:
            cli.append(
                subprocess.Popen(
                    [
                        tool_path("log"),
                        "append",
                        "--session",
                        "shared",
                        "-C",
                        str(layout.workspace),
                    ],
                    env=child_env,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
    outputs = [proc.communicate(timeout=60) for proc in writers + cli]
    assert [proc.returncode for proc in writers + cli] == [0] * 10, [err for _, err in outputs]

    raw = layout.session_log("shared").read_bytes()
    assert raw.endswith(b"\n")
    records = [orjson.loads(line) for line in raw.splitlines()]
    assert [r["seq"] for r in records] == list(range(1, 6 * 40 + 4 * 3 + 1))
    for n in range(6):
        mine = [
            r["data"]["i"] for r in records if r["kind"] == "w" and r["data"]["writer"] == f"p{n}"
        ]
        assert mine == list(range(40))
    # Each CLI batch landed as one contiguous run of seqs.
    batch_seqs = [r["seq"] for r in records if r["kind"] == "b"]
    for start in range(0, len(batch_seqs), 3):
        run = batch_seqs[start : start + 3]
        assert run == list(range(run[0], run[0] + 3))
    # What each writer was told is what is in the log.
    reported = sorted(int(seq) for out, _ in outputs[:6] for seq in out.split())
    assert reported == [r["seq"] for r in records if r["kind"] == "w"]
    assert verify_session(layout, "shared").ok


HALF_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from ax_log import append_events
    from ax_log import writer
    from libcommon.paths import state_layout

    real_write = os.write

    def write_half_then_hang(fd, data):
        # The writer gets half of its line out, then is killed before the rest.
        real_write(fd, bytes(data)[: len(data) // 2])
        print("half-written", flush=True)
        time.sleep(60)

    layout = state_layout(sys.argv[1])
    append_events(layout, "s", [{"type": "custom", "kind": "before", "data": {}}])
    writer.os.write = write_half_then_hang
    append_events(layout, "s", [{"type": "custom", "kind": "torn", "data": {"pad": "y" * 500}}])
    """
)


def test_writer_sigkilled_mid_line(layout: StateLayout, child_env: dict[str, str], run_cli) -> None:
    from ax_log.cli import main

    child = subprocess.Popen(
        [sys.executable, "-c", HALF_WRITER, str(layout.workspace)],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "half-written", (
        child.stderr.read() if child.stderr else ""
    )
    log = layout.session_log("s")
    torn = log.read_bytes()
    assert not torn.endswith(b"\n")
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL

    # The dead writer's lock is gone with it: the next append proceeds at once.
    started = time.monotonic()
    result = run_cli(
        main,
        ["append", "--session", "s", "-C", str(layout.workspace)],
        stdin='{"type":"custom","kind":"after","data":{}}',
    )
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - started < 5
    records = list(read_events(log, "s"))
    assert [(r["seq"], r["type"], r.get("kind")) for r in records] == [
        (1, "custom", "before"),
        (2, "log.recovered", None),
        (3, "custom", "after"),
    ]
    fragment = torn[len(torn.split(b"\n")[0]) + 1 :]
    assert log.with_name("s.jsonl.partial").read_bytes() == fragment + b"\n"
    assert records[1]["bytes"] == len(fragment)
    assert verify_session(layout, "s").ok


def test_writer_killed_in_a_loop_keeps_every_acknowledged_event(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    acknowledged: list[int] = []
    for round_ in range(3):
        child = start_writer(layout, child_env, f"k{round_}", 100_000, size=200_000)
        assert child.stdout is not None
        for _ in range(3 + round_):
            acknowledged.append(int(child.stdout.readline()))
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=10)
        acknowledged.extend(int(seq) for seq in rest.split())
        # The next append repairs whatever the kill left and continues the sequence.
        stored = append_events(layout, "shared", [Custom(kind="after-kill", data={})])
        assert stored[0]["seq"] > max(acknowledged)
    records = list(read_events(layout.session_log("shared"), "shared"))
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(1, len(records) + 1))
    assert set(acknowledged) <= set(seqs)
    assert verify_session(layout, "shared").ok


HOLDER = textwrap.dedent(
    """
    import sys, time
    from ax_log import writer
    from libcommon.paths import state_layout

    layout = state_layout(sys.argv[1])
    layout.sessions_dir.mkdir(parents=True, exist_ok=True)
    with writer.append_lock(writer.index_path(layout, "s")):
        print("holding", flush=True)
        time.sleep(60)
    """
)


def test_a_live_lock_holder_fences_after_the_timeout(
    layout: StateLayout, child_env: dict[str, str]
) -> None:
    from ax_log import writer
    from libcommon.errors import Fenced

    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(layout.workspace)],
        env=child_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "holding"
        started = time.monotonic()
        try:
            with writer.append_lock(writer.index_path(layout, "s"), timeout=0.3):
                raise AssertionError("took a lock another live process holds")
        except Fenced as exc:
            assert "within 0.3s" in exc.message
        assert 0.3 <= time.monotonic() - started < 3
    finally:
        child.kill()
        child.wait(timeout=10)
    # Once the holder is gone the lock is free again.
    with writer.append_lock(writer.index_path(layout, "s"), timeout=1):
        pass
