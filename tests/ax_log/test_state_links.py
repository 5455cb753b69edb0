"""ax-log never follows a symbolic link planted among a session's files (the installed ax-log).

Each file of a session (the log, its index and append lock, the ``.partial``
file, the undo lock) is opened with O_NOFOLLOW: a link in its place, dangling
or not, is refused with exit 1 and nothing is written where it points.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from axtest import tool_path

from libcommon.paths import StateLayout

EVENT = b'{"type":"custom","kind":"note","data":{}}'


def ax_log(
    layout: StateLayout, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [tool_path("log"), *args, "-C", str(layout.workspace)],
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


@pytest.mark.parametrize("exists", [True, False], ids=["to-a-file", "dangling"])
@pytest.mark.parametrize("which", ["log", "index"])
def test_append_refuses_a_linked_session_file(
    layout: StateLayout, tmp_path: Path, which: str, exists: bool
) -> None:
    outside = tmp_path / "outside.txt"
    if exists:
        outside.write_bytes(b"")
    log = layout.session_log("s")
    link = log if which == "log" else log.with_name(".s.index")
    plant(link, outside)

    done = ax_log(layout, "append", "--session", "s", stdin=EVENT)

    assert done.returncode == 1
    stderr = done.stderr.decode()
    assert f"{link} is a symbolic link (to {outside})" in stderr
    assert "Traceback" not in stderr
    assert outside.exists() == exists
    assert not exists or outside.read_bytes() == b""
    assert done.stdout == b""


def test_a_fragment_is_not_moved_through_a_linked_partial_file(
    layout: StateLayout, tmp_path: Path
) -> None:
    assert ax_log(layout, "append", "--session", "s", stdin=EVENT).returncode == 0
    log = layout.session_log("s")
    with log.open("ab") as handle:
        handle.write(b'{"v":1,"seq":2')
    before = log.read_bytes()
    outside = tmp_path / "outside.txt"
    plant(log.with_name("s.jsonl.partial"), outside)

    done = ax_log(layout, "append", "--session", "s", stdin=EVENT)

    assert done.returncode == 1
    assert "is a symbolic link" in done.stderr.decode()
    assert not outside.exists()
    assert log.read_bytes() == before


def test_events_and_undo_refuse_linked_files(layout: StateLayout, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(
        b'{"v":1,"seq":1,"ts":"2026-01-01T00:00:00.000Z","session":"s","type":"custom",'
        b'"kind":"forged","data":{}}\n'
    )
    plant(layout.session_log("s"), elsewhere)
    events = ax_log(layout, "events", "--session", "s")
    assert events.returncode == 1
    assert "is a symbolic link" in events.stderr.decode()
    assert events.stdout == b""

    (layout.workspace / "f").write_bytes(b"1")
    assert ax_log(layout, "snapshot", "--session", "u", "f").returncode == 0
    outside = tmp_path / "lock"
    plant(layout.sessions_dir / ".u.undo.lock", outside)
    undo = ax_log(layout, "undo", "--session", "u", "--all")
    assert undo.returncode == 1
    assert "is a symbolic link" in undo.stderr.decode()
    assert not outside.exists()
