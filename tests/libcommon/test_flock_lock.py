"""libcommon.locks.flock_lock: the direct flock, and that it excludes file_lock both ways."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from libcommon.errors import ExitStatus, Fenced
from libcommon.locks import file_lock, flock_lock

# A child that takes the lock one way, says so, and keeps it until its stdin closes.
HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from libcommon.locks import file_lock, flock_lock
    take = flock_lock if sys.argv[1] == "flock" else file_lock
    with take(Path(sys.argv[2])):
        print("held", flush=True)
        sys.stdin.read()
    """
)

Taker = Callable[..., AbstractContextManager[None]]


@pytest.fixture
def hold() -> Iterator[Callable[[str, Path], subprocess.Popen[str]]]:
    children: list[subprocess.Popen[str]] = []

    def start(kind: str, path: Path) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, kind, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def _release(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("held_by", "taker"),
    [("file", flock_lock), ("flock", file_lock), ("flock", flock_lock)],
    ids=["file_lock-held", "flock_lock-held-file_lock-waits", "flock_lock-held"],
)
def test_a_lock_held_elsewhere_is_waited_for_then_fenced(
    tmp_path: Path, hold: Callable[[str, Path], subprocess.Popen[str]], held_by: str, taker: Taker
) -> None:
    path = tmp_path / "shared.lock"
    child = hold(held_by, path)
    started = time.monotonic()
    with pytest.raises(Fenced) as info, taker(path, timeout=0.3):
        pass
    assert time.monotonic() - started >= 0.25
    assert info.value.status == ExitStatus.FENCED
    assert str(path) in info.value.message
    assert info.value.hint
    _release(child)
    with taker(path, timeout=5):
        pass


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    inside = threading.Event()
    leave = threading.Event()

    def holder() -> None:
        with flock_lock(path):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(Fenced), flock_lock(path, timeout=0.2):
            pass
    finally:
        leave.set()
        thread.join(10)
    with flock_lock(path, timeout=1):
        pass


def test_taken_in_a_new_folder_and_given_back_when_the_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.lock"
    with pytest.raises(RuntimeError), flock_lock(path, timeout=1):
        assert path.parent.is_dir()
        raise RuntimeError("boom")
    assert path.exists()  # left in place, as filelock leaves it, so takers share one inode
    with flock_lock(path, timeout=0.1):
        pass
