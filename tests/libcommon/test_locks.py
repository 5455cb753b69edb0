"""libcommon.locks: real locks and leases held by real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from libcommon.errors import CorruptStore, ExitStatus, Fenced, OperationFailed
from libcommon.locks import LeaseHolder, OwnerLease, file_lock, process_start_time

# A child that takes the lock or lease, says so, and keeps it until its stdin closes.
# With "exit" it then leaves without releasing (a crash); otherwise it releases.
HOLDER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from libcommon.locks import OwnerLease, file_lock
    kind, path, ending = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    if kind == "lock":
        with file_lock(path):
            print("held", os.getpid(), flush=True)
            sys.stdin.read()
    else:
        lease = OwnerLease(path)
        holder = lease.acquire()
        print("held", holder.pid, holder.start_time, flush=True)
        if ending == "crash-now":
            os._exit(0)
        sys.stdin.read()
        if ending == "crash":
            os._exit(0)
        lease.release()
    """
)


class Holder:
    def __init__(self, kind: str, path: Path, ending: str = "release") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, kind, str(path), ending],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "held", f"holder did not start: {line}"
        self.pid = int(line[1])
        assert self.pid == self.proc.pid

    def finish(self) -> None:
        """Let the child go on (release or crash) and reap it."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    started: list[Holder] = []
    yield started
    for holder in started:
        holder.kill()


def lease_doc(path: Path) -> dict[str, object]:
    doc: dict[str, object] = orjson.loads(path.read_bytes())
    return doc


# --- file_lock ------------------------------------------------------------------------


def test_file_lock_excludes_a_second_process(tmp_path: Path, holders: list[Holder]) -> None:
    path = tmp_path / "shared.lock"
    holder = Holder("lock", path)
    holders.append(holder)
    started = time.monotonic()
    with pytest.raises(Fenced) as info, file_lock(path, timeout=0.3):
        pass
    assert time.monotonic() - started >= 0.25
    assert info.value.status == ExitStatus.FENCED
    assert int(info.value.status) == 4
    assert str(path) in info.value.message
    assert info.value.hint
    holder.finish()
    with file_lock(path, timeout=5):
        pass


def test_file_lock_is_taken_and_given_back(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.lock"
    with file_lock(path, timeout=1):
        assert path.parent.is_dir()
    # Released: taking it again at once works.
    with file_lock(path, timeout=0.1):
        pass


def test_file_lock_released_when_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with pytest.raises(RuntimeError), file_lock(path, timeout=1):
        raise RuntimeError("boom")
    with file_lock(path, timeout=0.1):
        pass


@pytest.mark.parametrize("exists", [True, False], ids=["to-a-file", "dangling"])
def test_file_lock_refuses_a_link_in_the_lock_files_place(tmp_path: Path, exists: bool) -> None:
    # grants.json.lock, trust.json.lock, slate.json.lock: a link planted there must not
    # make the locker open, create or truncate (filelock 3.13.1 opened it with O_TRUNC)
    # whatever it points at.
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    if exists:
        victim.write_bytes(b"keep these bytes")
    link = tmp_path / "grants.json.lock"
    link.symlink_to(victim)

    with pytest.raises(OperationFailed) as caught, file_lock(link, timeout=1):
        pass

    assert caught.value.message == (
        f"{link} is a symbolic link (to {victim}); ax never follows a link among its state files"
    )
    assert caught.value.status == ExitStatus.FAILED
    assert victim.exists() == exists
    assert not exists or victim.read_bytes() == b"keep these bytes"
    assert link.is_symlink()


def test_a_lease_refuses_a_linked_guard(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    path = tmp_path / "s.lock"
    path.with_name("s.lock.guard").symlink_to(victim)
    with pytest.raises(OperationFailed, match="is a symbolic link"):
        OwnerLease(path).acquire()
    assert victim.read_bytes() == b"keep"
    assert not path.exists()


# --- process_start_time ------------------------------------------------------------------


def test_process_start_time_of_self_and_of_dead_pid() -> None:
    mine = process_start_time(os.getpid())
    assert isinstance(mine, int) and mine > 0
    assert process_start_time(os.getpid()) == mine
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert process_start_time(proc.pid) is None


# --- OwnerLease -----------------------------------------------------------------------


def test_acquire_and_release(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "s-1.lock"
    lease = OwnerLease(path)
    holder = lease.acquire()
    assert holder.pid == os.getpid()
    assert holder.start_time == process_start_time(os.getpid())
    assert holder.is_alive() and holder.is_me()
    doc = lease_doc(path)
    assert doc["pid"] == os.getpid()
    assert doc["startTime"] == holder.start_time
    assert doc["acquired"] == holder.acquired
    assert lease.holder() == holder
    # Taking it again from the same process is fine.
    assert lease.acquire().pid == os.getpid()
    lease.release()
    assert not path.exists()
    assert lease.holder() is None
    lease.release()  # releasing a free lease is a no-op


def test_context_manager(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    with OwnerLease(path) as holder:
        assert holder.pid == os.getpid()
        assert path.exists()
    assert not path.exists()


def test_live_foreign_holder_fences(tmp_path: Path, holders: list[Holder]) -> None:
    path = tmp_path / "s.lock"
    holder = Holder("lease", path)
    holders.append(holder)
    before = path.read_bytes()
    assert lease_doc(path)["pid"] == holder.pid
    with pytest.raises(Fenced) as info:
        OwnerLease(path, what="session s").acquire()
    assert info.value.status == 4
    assert str(holder.pid) in info.value.message
    assert "session s" in info.value.message
    assert str(holder.pid) in (info.value.hint or "")
    # Refused acquire wrote nothing; our release leaves the other's lease alone.
    assert path.read_bytes() == before
    OwnerLease(path).release()
    assert path.read_bytes() == before
    # When the holder releases, the lease is free.
    holder.finish()
    assert not path.exists()
    assert OwnerLease(path).acquire().pid == os.getpid()


def test_dead_holder_lease_is_replaced(tmp_path: Path, holders: list[Holder]) -> None:
    path = tmp_path / "s.lock"
    holder = Holder("lease", path, ending="crash")
    holders.append(holder)
    holder.finish()  # exits without releasing, and is reaped
    assert lease_doc(path)["pid"] == holder.pid
    mine = OwnerLease(path).acquire()
    assert mine.pid == os.getpid()
    assert lease_doc(path)["pid"] == os.getpid()


def test_release_leaves_a_dead_foreign_lease_alone(tmp_path: Path, holders: list[Holder]) -> None:
    path = tmp_path / "s.lock"
    holder = Holder("lease", path, ending="crash")
    holders.append(holder)
    holder.finish()
    before = path.read_bytes()
    OwnerLease(path).release()
    assert path.read_bytes() == before


def test_recycled_pid_is_stale(tmp_path: Path) -> None:
    """A live process whose start time differs from the lease's is not the owner."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        start = process_start_time(sleeper.pid)
        assert start is not None
        path = tmp_path / "s.lock"
        path.write_bytes(
            orjson.dumps({"pid": sleeper.pid, "startTime": start + 1, "acquired": "then"})
        )
        stale = OwnerLease(path).holder()
        assert stale == LeaseHolder(sleeper.pid, start + 1, "then")
        assert not stale.is_alive()
        assert OwnerLease(path).acquire().pid == os.getpid()
        # The same pid with its true start time is a live owner.
        path.write_bytes(orjson.dumps({"pid": sleeper.pid, "startTime": start, "acquired": "x"}))
        with pytest.raises(Fenced, match=str(sleeper.pid)):
            OwnerLease(path).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_own_pid_with_other_start_time_is_not_me(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    start = process_start_time(os.getpid())
    assert start is not None
    path.write_bytes(orjson.dumps({"pid": os.getpid(), "startTime": start - 1, "acquired": "x"}))
    before = path.read_bytes()
    OwnerLease(path).release()  # not mine: left alone
    assert path.read_bytes() == before
    assert OwnerLease(path).acquire().start_time == start


@pytest.mark.parametrize(
    "content",
    [
        b"{torn",
        b"",
        b"[]",
        b'"pid"',
        b'{"pid": 1}',
        b'{"startTime": 1, "acquired": "x"}',
        b'{"pid": "abc", "startTime": 1, "acquired": "x"}',
    ],
    ids=["garbage", "empty", "list", "string", "no-start", "no-pid", "pid-not-int"],
)
def test_corrupt_lease_raises(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.lock"
    path.write_bytes(content)
    with pytest.raises(CorruptStore) as info:
        OwnerLease(path).acquire()
    assert str(path) in info.value.message
    assert path.read_bytes() == content  # never silently rewritten
    with pytest.raises(CorruptStore):
        OwnerLease(path).release()
    assert path.read_bytes() == content


def test_second_process_is_fenced_by_the_first(tmp_path: Path, holders: list[Holder]) -> None:
    path = tmp_path / "s.lock"
    first = Holder("lease", path)
    holders.append(first)
    second = subprocess.run(
        [sys.executable, "-c", HOLDER, "lease", str(path), "release"],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode != 0
    assert "held" not in second.stdout
    assert "Fenced" in second.stderr
    assert f"live process {first.pid}" in second.stderr
    assert lease_doc(path)["pid"] == first.pid


def _state_of(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_zombie_holder_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "lease", str(path), "crash-now"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("held")
        deadline = time.monotonic() + 10
        while _state_of(proc.pid) != "Z":  # exited, not reaped
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert OwnerLease(path).acquire().pid == os.getpid()
    finally:
        proc.wait()
