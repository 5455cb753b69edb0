"""Reading processes from /proc, and signalling one without hitting a recycled pid.

ax-exec (tree kill), ax-preview (the crash sweep) and owner leases all need to
tell a live process from a gone one and to be sure a pid still names the process
they mean; the start time (clock ticks since boot) is what makes that sure.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

ENVIRON_READ_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgrp: int
    session: int
    state: str
    start_time: int

    @property
    def alive(self) -> bool:
        # A zombie has exited; only its exit status is left to collect.
        return self.state not in ("Z", "X")


def read_proc(pid: int) -> ProcInfo | None:
    """The process ``pid`` as /proc shows it now, or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return ProcInfo(
        pid=pid,
        ppid=int(fields[1]),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        state=fields[0],
        start_time=int(fields[19]),
    )


def all_processes() -> list[ProcInfo]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            info = read_proc(int(entry.name))
            if info is not None:
                found.append(info)
    return found


def environ_has(pid: int, entry: bytes) -> bool:
    """True when ``NAME=value`` (``entry``) is in the process's environment."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return entry in handle.read(ENVIRON_READ_MAX_BYTES).split(b"\0")
    except OSError:
        return False


def send_signal(info: ProcInfo, signum: int) -> bool:
    """Signal ``info`` only if its pid still names the same process (same start time)."""
    try:
        pidfd = os.pidfd_open(info.pid)
    except OSError:
        return False
    try:
        current = read_proc(info.pid)
        if current is None or current.start_time != info.start_time:
            return False
        signal.pidfd_send_signal(pidfd, signum)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)
