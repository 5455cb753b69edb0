"""Process identity and tree kill, read from /proc.

A preview's server outlives the command that started it, so every later
action (list, stop, sweep) must first prove that a pid still names the process
that was recorded: same pid, same start time (clock ticks since boot), not a
zombie, and for the server also the preview's random token in its
environment. Signals go through a pidfd opened after that check, so a pid
recycled in between is never signalled.

Reading /proc and the pidfd signal are libcommon.procfs's, shared with ax-exec;
what is here is the preview's own notion of its server's tree and its kill.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from libcommon.procfs import ProcInfo, all_processes, environ_has, read_proc, send_signal

__all__ = ["ProcInfo", "all_processes", "read_proc", "send_signal"]

KILL_GRACE_S = 2.0
KILL_ROUNDS = 5
KILL_POLL_S = 0.02
TOKEN_VARIABLE = "AX_PREVIEW_TOKEN"


def is_alive(pid: int | None, start_time: int | None) -> bool:
    """True only when ``pid`` is a live (non-zombie) process started at ``start_time``."""
    if pid is None or start_time is None:
        return False
    info = read_proc(pid)
    return info is not None and info.alive and info.start_time == start_time


def has_token(pid: int, token: str) -> bool:
    """True when the process's environment carries this preview's token."""
    return environ_has(pid, f"{TOKEN_VARIABLE}={token}".encode())


def server_tree(root_pid: int, root_start: int, token: str) -> list[ProcInfo]:
    """The server and everything it started, as found now (zombies included).

    Members are the verified root's descendants by parent link, plus processes
    in the root's session that carry the token (children of a dead intermediate
    are re-parented away from the root but stay in its session). The root
    counts only when its start time matches; otherwise nothing is returned.
    """
    procs = {info.pid: info for info in all_processes()}
    root = procs.get(root_pid)
    if root is None or root.start_time != root_start:
        return []
    children: dict[int, list[int]] = {}
    for info in procs.values():
        children.setdefault(info.ppid, []).append(info.pid)
    pending = [root_pid]
    pending.extend(
        info.pid
        for info in procs.values()
        if info.session == root_pid and info.pid != root_pid and has_token(info.pid, token)
    )
    me = os.getpid()
    tree: dict[int, ProcInfo] = {}
    while pending:
        pid = pending.pop()
        if pid in tree or pid == me or pid not in procs:
            continue
        tree[pid] = procs[pid]
        pending.extend(children.get(pid, ()))
    return sorted(tree.values(), key=lambda info: (info.pid != root_pid, info.pid))


@dataclass(frozen=True)
class KillResult:
    found: int
    survivors: list[int]

    @property
    def verified(self) -> bool:
        return not self.survivors


def _still_alive(known: list[ProcInfo]) -> list[ProcInfo]:
    return [info for info in known if is_alive(info.pid, info.start_time)]


def descendants(pid: int) -> list[ProcInfo]:
    """Every process below ``pid`` by parent links (``pid`` itself excluded)."""
    procs = all_processes()
    children: dict[int, list[ProcInfo]] = {}
    for info in procs:
        children.setdefault(info.ppid, []).append(info)
    found: list[ProcInfo] = []
    pending = list(children.get(pid, ()))
    while pending:
        info = pending.pop()
        found.append(info)
        pending.extend(children.get(info.pid, ()))
    return found


Scan = Callable[[], list[ProcInfo]]


def kill_tree(scan: Scan, grace_s: float = KILL_GRACE_S) -> KillResult:
    """TERM every process ``scan`` finds, wait ``grace_s``, KILL what is left, verify.

    Each round rescans, so a process forked during the grace period is caught;
    a process seen once stays on the list (by pid and start time) even when a
    later scan no longer reaches it.
    """
    known = {info.pid: info for info in scan() if info.alive}
    found = len(known)
    for info in known.values():
        send_signal(info, signal.SIGTERM)
        # A stopped process would hold TERM pending forever.
        send_signal(info, signal.SIGCONT)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        for info in scan():
            if info.alive and info.pid not in known:
                known[info.pid] = info
                send_signal(info, signal.SIGTERM)
        if not _still_alive(list(known.values())):
            break
        time.sleep(KILL_POLL_S)
    for _ in range(KILL_ROUNDS):
        for info in scan():
            known.setdefault(info.pid, info)
        left = _still_alive(list(known.values()))
        if not left:
            break
        for info in left:
            send_signal(info, signal.SIGKILL)
        time.sleep(KILL_POLL_S)
    survivors = [info.pid for info in _still_alive(list(known.values()))]
    return KillResult(found=found, survivors=survivors)
