"""The sandbox probe's child: try every action the sandbox claims to refuse.

Run confined, by the launcher, as ``python -I -S probe_child.py PLAN_JSON``. It
prints one JSON object: for each attempt "ok" or the errno name it failed with,
plus the capability, no_new_privs and seccomp state of this process as the
kernel reports it. It judges nothing; ``sandbox._probe_profile`` does. Every
attempt is harmless if it succeeds (same names, same modes, same owners,
invalid arguments for the host-changing calls), so a broken sandbox is found
without damage. Standard library only, like the launcher.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import signal
import socket
import stat
import sys
from collections.abc import Callable
from typing import Any

PTRACE_SEIZE = 0x4206
PR_GET_SECUREBITS = 27
STATUS_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")


def _attempt(results: dict[str, Any], name: str, action: Callable[[], object]) -> None:
    try:
        action()
        results[name] = "ok"
    except OSError as exc:
        results[name] = errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _call(result: int) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result


def _syscall(libc: ctypes.CDLL, number: int, args: list[int]) -> int:
    return _call(libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args)))


def _write(path: str) -> None:
    with open(path, "w") as handle:
        handle.write("probe")


def _open_by_handle(libc: ctypes.CDLL, plan: dict[str, Any]) -> None:
    # The handle of a protected file, opened for writing through a writable mount:
    # the way around a read-only bind mount that needs no path at all.
    handle = bytes.fromhex(plan["handle"]) if plan["handle"] else bytes(8)
    buffer = ctypes.create_string_buffer(handle, len(handle))
    mount_fd = os.open(plan["handleMount"], os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(_call(libc.open_by_handle_at(mount_fd, buffer, os.O_RDWR)))
    finally:
        os.close(mount_fd)


def _tcp(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _udp(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"probe", ("127.0.0.1", port))


def _abstract(name: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect("\0" + name)


def _status() -> dict[str, int]:
    found: dict[str, int] = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in STATUS_FIELDS:
                found[key] = int(value.strip(), 16 if key.startswith("Cap") else 10)
    return found


def main(plan: dict[str, Any]) -> dict[str, Any]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    results: dict[str, Any] = {}
    for name, path in plan["writes"].items():
        _attempt(results, name, functools.partial(_write, path))
    meta = plan["metadata"]
    _attempt(results, "chmod", lambda: os.chmod(meta["path"], meta["mode"]))
    _attempt(results, "utime", lambda: os.utime(meta["path"], ns=(meta["ns"], meta["ns"])))
    _attempt(results, "setxattr", lambda: os.setxattr(meta["path"], "user.ax-probe", b"1"))
    _attempt(results, "chown", lambda: os.chown(meta["path"], meta["uid"], meta["gid"]))
    node = os.path.join(plan["scratch"], "null")
    _attempt(results, "mknodChar", lambda: os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3)))
    _attempt(results, "kmsg", lambda: os.close(os.open("/dev/kmsg", os.O_WRONLY)))
    _attempt(results, "handle", lambda: _open_by_handle(libc, plan))
    _attempt(results, "signal", lambda: os.kill(plan["sleeper"], signal.SIGCONT))
    _attempt(results, "ptrace", lambda: _call(libc.ptrace(PTRACE_SEIZE, plan["sleeper"], 0, 0)))
    _attempt(results, "abstract", lambda: _abstract(plan["abstract"]))
    _attempt(results, "tcp", lambda: _tcp(plan["tcpPort"]))
    _attempt(results, "udp", lambda: _udp(plan["udpPort"]))
    results["status"] = _status()
    results["securebits"] = libc.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0)
    # Last: one of these (unshare) would move this process into a new namespace.
    for name, number, args in plan["calls"]:
        _attempt(results, name, functools.partial(_syscall, libc, number, args))
    return results


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(json.loads(sys.argv[1]))) + "\n")
