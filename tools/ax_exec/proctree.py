"""Finding every process a run started, and killing all of them, verified.

The harness makes itself a child subreaper, so a descendant whose parent dies
(a double fork, ``setsid``, a backgrounded ``&``) is re-parented to us instead
of to init and stays findable. A run's processes are found in ``/proc`` as the
descendants (by parent links) of the run's roots: the direct child, anything in
its session or process group, anything seen as a descendant earlier in the run,
orphans re-parented to us or to init that carry the run's environment marker,
and (in the kill's first and last scans) any process holding the run's output
pipes. A descendant that clears its environment, leaves the session, detaches
and closes its output before any scan sees it can escape; the kill report then still verifies only
what it found, which is why it says "verified" and not "complete".

Killing is TERM to every process, a grace period, KILL to whatever is left
(repeated for a few rounds, to catch processes forked meanwhile), and a last
scan that decides ``verified``. Signals go through pidfds opened after checking
the process start time, so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ax_exec.environment import RUN_MARKER
from libcommon.procfs import ProcInfo, all_processes, environ_has, read_proc, send_signal

KILL_GRACE_S = 2.0
KILL_ROUNDS = 5
KILL_POLL_S = 0.02
PR_SET_CHILD_SUBREAPER = 36

_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper (once); False when the kernel refuses."""
    global _subreaper
    if _subreaper is None:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def _holds_pipe(pid: int, links: set[str]) -> bool:
    try:
        entries = list(os.scandir(f"/proc/{pid}/fd"))
    except OSError:
        return False
    for entry in entries:
        try:
            if str(Path(entry.path).readlink()) in links:
                return True
        except OSError:
            continue
    return False


@dataclass
class RunTree:
    """One run's process tree, rooted at its direct child (a session leader).

    The caller reaps the root only after the kill: until then its zombie keeps
    its pid, and so the session and group ids matched here, from being reused.
    """

    root_pid: int
    run_id: str
    # Inodes of the run's stdout/stderr pipes: whoever still holds one is the run's.
    pipe_inodes: tuple[int, ...] = ()
    root_start_time: int | None = None
    # (pid, start time) of every process ever seen in the tree.
    known: set[tuple[int, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        info = read_proc(self.root_pid)
        if info is not None:
            self.root_start_time = info.start_time
            self.known.add((info.pid, info.start_time))

    def scan(self, deep: bool = False) -> list[ProcInfo]:
        """Every process of this run that exists now (zombies included), root first.

        ``deep`` also looks through every process's open files for the run's
        pipes; it costs a few milliseconds, so the kill uses it at its first and
        last scan only.
        """
        me = os.getpid()
        marker = f"{RUN_MARKER}={self.run_id}".encode()
        links = {f"pipe:[{inode}]" for inode in self.pipe_inodes} if deep else set()
        procs = {info.pid: info for info in all_processes()}
        children: dict[int, list[int]] = {}
        for info in procs.values():
            children.setdefault(info.ppid, []).append(info.pid)
        roots: list[int] = []
        for info in procs.values():
            if info.pid == me:
                continue
            if (
                (info.pid == self.root_pid and info.start_time == self.root_start_time)
                or info.session == self.root_pid
                or info.pgrp == self.root_pid
                or (info.pid, info.start_time) in self.known
                or (info.ppid in (me, 1) and environ_has(info.pid, marker))
                or (links and info.alive and _holds_pipe(info.pid, links))
            ):
                roots.append(info.pid)
        tree: dict[int, ProcInfo] = {}
        pending = roots
        while pending:
            pid = pending.pop()
            if pid in tree or pid == me or pid not in procs:
                continue
            tree[pid] = procs[pid]
            pending.extend(children.get(pid, ()))
        self.known.update((info.pid, info.start_time) for info in tree.values())
        return sorted(tree.values(), key=lambda info: (info.pid != self.root_pid, info.pid))

    def alive(self, exclude_root: bool = False, deep: bool = False) -> list[ProcInfo]:
        return _alive(self.scan(deep), self, exclude_root)


def _signal_all(processes: Iterable[ProcInfo], signum: int) -> None:
    for info in processes:
        send_signal(info, signum)
        if signum == signal.SIGTERM:
            # A stopped process would hold TERM pending forever.
            send_signal(info, signal.SIGCONT)


@dataclass(frozen=True)
class KillResult:
    leftovers: int
    survivors: list[int]

    @property
    def verified(self) -> bool:
        return not self.survivors


def kill_tree(
    tree: RunTree, exclude_root: bool = False, deep: bool = True, grace_s: float = KILL_GRACE_S
) -> KillResult:
    """TERM, grace, KILL, verify. ``exclude_root`` leaves an exited root to its Popen.

    ``deep=False`` skips the pipe-holder search in the first scan; the caller
    passes it when the run's pipes already reached end-of-file, which proves no
    process holds them.
    """
    scanned = tree.scan(deep)
    found = _alive(scanned, tree, exclude_root)
    leftovers = len(found)
    if found:
        _signal_all(found, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while found and time.monotonic() < deadline:
            time.sleep(KILL_POLL_S)
            found = tree.alive(exclude_root)
        for _ in range(KILL_ROUNDS):
            if not found:
                # Confirm with the deep scan before calling the tree gone.
                found = tree.alive(exclude_root, deep=True)
                if not found:
                    break
            _signal_all(found, signal.SIGKILL)
            time.sleep(KILL_POLL_S)
            found = tree.alive(exclude_root)
        else:
            found = tree.alive(exclude_root, deep=True)
        scanned = tree.scan()
    _reap_orphans(tree, scanned)
    return KillResult(leftovers=leftovers, survivors=[info.pid for info in found])


def _alive(processes: list[ProcInfo], tree: RunTree, exclude_root: bool) -> list[ProcInfo]:
    return [
        info
        for info in processes
        if info.alive and not (exclude_root and info.pid == tree.root_pid)
    ]


def _reap_orphans(tree: RunTree, processes: list[ProcInfo]) -> None:
    """Collect the exit status of this run's zombies that were re-parented to us.

    Only processes identified as this run's are waited for: another thread's
    subprocess is never reaped behind its back. The root is left to its Popen.
    """
    me = os.getpid()
    for info in processes:
        if info.ppid == me and info.pid != tree.root_pid and not info.alive:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)
