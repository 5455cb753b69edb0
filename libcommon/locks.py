"""Cross-process locks and owner leases.

``file_lock`` serialises short critical sections (an append, a read-modify-write
of a shared JSON file); ``flock_lock`` is the same exclusive ``flock(2)`` and
also hands out its descriptor. Both open the lock file with O_NOFOLLOW and
never truncate it, so a symbolic link planted in its place (under the state
root, where grants, trust and slates are locked) is refused rather than
opened, created or truncated through. ``OwnerLease`` marks who owns a
long-lived thing (a session) and tells a live owner from a dead one by pid
*and* process start time, so a recycled pid never looks alive.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_json
from libcommon.errors import CorruptStore, Fenced
from libcommon.safeopen import open_state_file

LOCK_TIMEOUT_S = 30.0
FLOCK_POLL_MIN_S = 0.0002
FLOCK_POLL_MAX_S = 0.01


@contextmanager
def file_lock(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if missing).

    ``flock_lock`` without the descriptor. The filelock package this used to
    take depended on its release: 3.13.1 opened the file following a link and
    with O_TRUNC (a link planted in the lock's place emptied what it pointed
    at), 4.3 raised a bare OSError.
    """
    with flock_lock(path, timeout):
        yield


@contextmanager
def flock_lock(
    path: Path,
    timeout: float = LOCK_TIMEOUT_S,
    *,
    what: str = "lock",
    hint: str = "another ax process holds it; wait for it to finish and retry",
) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing); yields its fd.

    A symbolic link in the lock file's place is refused, never followed, and
    the file is never truncated. It is left in place on release, so waiters and
    later takers lock the same inode. A wait polls with a short exponential
    backoff and is reported as Fenced (naming ``what``, with ``hint``) after ``timeout``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    while True:
        fd = open_state_file(path, os.O_RDWR | os.O_CREAT)
        try:
            _flock_until(
                fd, deadline, f"could not take the {what} {path} within {timeout:g}s", hint
            )
            # Replaced or removed while we waited: a lock on the old inode guards nothing.
            if os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino:
                break
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _flock_until(fd: int, deadline: float, message: str, hint: str) -> None:
    delay = FLOCK_POLL_MIN_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise Fenced(message, hint=hint) from None
            time.sleep(delay)
            delay = min(delay * 2, FLOCK_POLL_MAX_S)


def process_start_time(pid: int) -> int | None:
    """The process start time in clock ticks since boot, or None if it is gone (or a zombie)."""
    # Here, not at the top: a plain flock (ax-map's build lock) needs no /proc reading,
    # whose imports (socket, struct, signal) cost ~9 ms of a start.
    from libcommon.procfs import read_proc

    info = read_proc(pid)
    return info.start_time if info is not None and info.alive else None


@dataclass(frozen=True)
class LeaseHolder:
    pid: int
    start_time: int | None
    acquired: str

    def is_alive(self) -> bool:
        current = process_start_time(self.pid)
        return current is not None and current == self.start_time

    def is_me(self) -> bool:
        return self.pid == os.getpid() and self.start_time == process_start_time(os.getpid())


class OwnerLease:
    """A lease file holding ``{"pid", "startTime", "acquired"}`` of its owner."""

    def __init__(self, path: Path, what: str = "session") -> None:
        self.path = path
        self.what = what
        self._guard = path.with_name(path.name + ".guard")

    def holder(self) -> LeaseHolder | None:
        data = jsonio.read_json(self.path)
        if data is None:
            return None
        try:
            return LeaseHolder(int(data["pid"]), data["startTime"], str(data["acquired"]))
        except (KeyError, TypeError, ValueError):
            raise CorruptStore(str(self.path), "lease file without pid/startTime") from None

    def acquire(self) -> LeaseHolder:
        """Take the lease; a stale one is replaced, a live foreign one raises Fenced."""
        with file_lock(self._guard):
            current = self.holder()
            if current is not None and current.is_alive() and not current.is_me():
                raise Fenced(
                    f"{self.what} is owned by live process {current.pid} "
                    f"(since {current.acquired})",
                    hint=f"wait for process {current.pid} to finish, or stop it",
                )
            mine = LeaseHolder(os.getpid(), process_start_time(os.getpid()), clock.timestamp())
            atomic_write_json(
                self.path,
                {"pid": mine.pid, "startTime": mine.start_time, "acquired": mine.acquired},
            )
            return mine

    def release(self) -> None:
        """Give the lease up if this process holds it; someone else's is left alone."""
        with file_lock(self._guard):
            current = self.holder()
            if current is not None and current.is_me():
                self.path.unlink(missing_ok=True)

    def __enter__(self) -> LeaseHolder:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
