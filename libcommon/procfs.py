"""Reading processes from /proc, and signalling one without hitting a recycled pid.

ax-exec (tree kill), ax-preview (the crash sweep) and owner leases all need to
tell a live process from a gone one and to be sure a pid still names the process
they mean; the start time (clock ticks since boot) is what makes that sure.

ax-preview also needs to know which process listens on a port: the listening
sockets of this network namespace come from /proc/net/tcp and tcp6 (by inode),
and a process holds a socket when one of its /proc/<pid>/fd entries links to
``socket:[inode]``.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass

ENVIRON_READ_MAX_BYTES = 1024 * 1024
# One line per socket, about 150 bytes: room for some 100,000 sockets per table.
NET_TABLE_READ_MAX_BYTES = 16 * 1024 * 1024
NET_TABLE_CHUNK_BYTES = 64 * 1024
CMDLINE_READ_MAX_BYTES = 4096
TCP_LISTEN_STATE = "0A"
NET_TABLES = (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6))


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


@dataclass(frozen=True)
class Listener:
    """A TCP socket in the LISTEN state, as /proc/net/tcp or tcp6 shows it."""

    family: int  # socket.AF_INET or socket.AF_INET6
    address: str  # "0.0.0.0", "127.0.0.1", "::", "::1", "::ffff:127.0.0.1"
    port: int
    inode: int


def _address(hex_address: str, family: int) -> str:
    # The kernel prints each 32-bit word of the address in host byte order.
    words = [int(hex_address[i : i + 8], 16) for i in range(0, len(hex_address), 8)]
    return socket.inet_ntop(family, b"".join(struct.pack("=I", word) for word in words))


def _table_lines(path: str) -> list[str]:
    # In chunks: one read of the whole bound would allocate all of it up front.
    chunks: list[bytes] = []
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(NET_TABLE_CHUNK_BYTES):
            size += len(chunk)
            if size > NET_TABLE_READ_MAX_BYTES:
                raise OSError(
                    errno.EFBIG, f"more than {NET_TABLE_READ_MAX_BYTES} bytes of sockets", path
                )
            chunks.append(chunk)
    return b"".join(chunks).decode("ascii", "replace").splitlines()[1:]


def tcp_listeners(port: int | None = None) -> list[Listener]:
    """Listening TCP sockets of this network namespace (on ``port`` only, when given).

    Raises OSError when a table cannot be read (no /proc, a hidden /proc/net, a
    table over the read bound); a missing tcp6 table (no IPv6) is not an error.
    """
    found: list[Listener] = []
    for path, family in NET_TABLES:
        try:
            lines = _table_lines(path)
        except FileNotFoundError:
            if family == socket.AF_INET6:
                continue
            raise
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != TCP_LISTEN_STATE:
                continue
            hex_address, _, hex_port = fields[1].partition(":")
            local_port = int(hex_port, 16)
            if port is not None and local_port != port:
                continue
            address = _address(hex_address, family)
            found.append(Listener(family, address, local_port, int(fields[9])))
    return found


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets ``pid`` holds open. Raises OSError when its fds cannot be read."""
    inodes: set[int] = set()
    with os.scandir(f"/proc/{pid}/fd") as entries:
        for entry in entries:
            try:
                target = os.readlink(entry.path)
            except OSError:
                continue  # closed since the listing
            if target.startswith("socket:[") and target.endswith("]"):
                inodes.add(int(target[8:-1]))
    return inodes


def socket_holders(inodes: set[int], pids: Iterable[int]) -> tuple[dict[int, int], list[int]]:
    """Which of ``pids`` hold which of ``inodes`` (inode -> pid), and the pids not readable.

    A process that exited meanwhile holds nothing and is not "unreadable".
    """
    held: dict[int, int] = {}
    unreadable: list[int] = []
    for pid in pids:
        try:
            mine = socket_inodes(pid)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable.append(pid)
            continue
        for inode in mine & inodes:
            held.setdefault(inode, pid)
    return held, unreadable


def all_pids() -> list[int]:
    return [int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()]


def command_of(pid: int) -> str | None:
    """The process's command line (arguments joined by spaces, bounded), else its name."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(CMDLINE_READ_MAX_BYTES)
        if raw:
            return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().strip().decode("utf-8", "replace") or None
    except OSError:
        return None
