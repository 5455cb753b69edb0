"""The sandbox launcher: confine this process, then exec the real command.

Run as ``python -I -S launcher.py CONFIG_JSON CMD [ARG...]``. It is the child
that ``run_managed`` spawns for a sandboxed command, so the confinement is set
up in a fresh single-threaded process instead of a ``preexec_fn`` inside the
(threaded) harness. Steps, each of which fails closed:

1. unshare a network namespace (no TCP or UDP outside it) and/or a mount
   namespace (read-only bind mounts over ``.git`` and ``.ax``);
2. ``no_new_privs``;
3. a Landlock ruleset handling every filesystem right the running ABI knows,
   granting reads everywhere and writes only beneath the configured roots;
4. ``execvpe`` the command.

A failure before the exec is written as one JSON object to the status file
descriptor (close-on-exec, so a successful exec leaves it empty) and the
launcher exits 126 (setup) or 127 (exec). This file imports only the standard
library: it runs without ``site`` and without the ax packages on the path, and
the parent imports it for the same constants and the ABI query.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import platform
import socket
import stat
import struct
import sys
from typing import Any

# Syscall numbers of the Landlock calls; the same on every architecture that uses
# the generic syscall table, which includes both we list.
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
MIN_ENFORCED_ABI = 3
# The newest ABI whose rights this file knows; a newer kernel's extra rights go unhandled.
KNOWN_ABI = 7

# Filesystem rights by the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# The rights Landlock accepts on a rule whose object is a file rather than a directory.
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
# statvfs f_flag bits that a remount inside a user namespace must repeat, or it is refused.
_LOCKED_MOUNT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

EXIT_SETUP_FAILED = 126
EXIT_EXEC_FAILED = 127


class SetupError(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, stage: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise SetupError(stage, f"{os.strerror(errno)} (errno {errno})")
    return result


def _syscall_numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(platform.machine())


def landlock_abi() -> tuple[int, str | None]:
    """The running kernel's Landlock ABI version, or 0 and the reason it is absent."""
    numbers = _syscall_numbers()
    if numbers is None:
        return 0, f"no Landlock syscall numbers known for {platform.machine()}"
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(
        ctypes.c_long(numbers[0]),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    if version < 0:
        errno = ctypes.get_errno()
        return 0, f"landlock_create_ruleset refused: {os.strerror(errno)} (errno {errno})"
    return int(version), None


def fs_rights(abi: int) -> int:
    """Every filesystem right the given ABI supports."""
    known = [level for level in _FS_BY_ABI if level <= abi]
    return _FS_BY_ABI[max(known)] if known else 0


def _ruleset_attr(abi: int, fs: int, net: int, scoped: int) -> bytes:
    # The struct grew a field at ABI 4 (net) and ABI 6 (scoped); an older kernel
    # refuses a larger struct, so send exactly the size this ABI knows.
    if abi >= 6:
        return struct.pack("=QQQ", fs, net, scoped)
    if abi >= 4:
        return struct.pack("=QQ", fs, net)
    return struct.pack("=Q", fs)


def apply_landlock(config: dict[str, Any], abi: int) -> None:
    create, add_rule, restrict = _syscall_numbers() or (0, 0, 0)
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = fs_rights(abi)
    net = NET_BIND_TCP | NET_CONNECT_TCP if config.get("network") == "landlock-tcp" else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = ctypes.create_string_buffer(_ruleset_attr(abi, handled, net, scoped))
    ruleset = _check(
        libc.syscall(
            ctypes.c_long(create), attr, ctypes.c_size_t(len(attr.raw)), ctypes.c_uint32(0)
        ),
        "landlock_create_ruleset",
    )
    try:
        for path in config.get("readPaths", []):
            _add_path_rule(libc, add_rule, ruleset, path, READ_RIGHTS & handled)
        for path in config.get("writePaths", []):
            _add_path_rule(libc, add_rule, ruleset, path, handled)
        device_rights = (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled
        for path in config.get("writeFiles", []):
            # A device file this system lacks needs no rule.
            _add_path_rule(libc, add_rule, ruleset, path, device_rights, optional=True)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(
            libc.syscall(ctypes.c_long(restrict), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)


def _add_path_rule(
    libc: ctypes.CDLL, number: int, ruleset: int, path: str, rights: int, optional: bool = False
) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        if optional:
            return
        raise SetupError("landlock_add_rule", f"{path} does not exist") from None
    except OSError as exc:
        raise SetupError("landlock_add_rule", f"cannot open {path}: {exc.strerror}") from None
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd))
        _check(
            libc.syscall(
                ctypes.c_long(number),
                ctypes.c_int(ruleset),
                ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                rule,
                ctypes.c_uint32(0),
            ),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


def _unshare(libc: ctypes.CDLL, flags: int) -> None:
    """Enter new namespaces, through a user namespace when we lack the privilege."""
    if libc.unshare(flags) == 0:
        return
    first = ctypes.get_errno()
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(flags | CLONE_NEWUSER) != 0:
        second = ctypes.get_errno()
        raise SetupError(
            "unshare",
            f"{os.strerror(first)} without a user namespace, {os.strerror(second)} with one",
        )
    # Map ourselves to the same ids, so files keep their owners inside.
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")


def _loopback_up() -> None:
    # A fresh network namespace has only a down loopback; bringing it up lets
    # tests inside the sandbox talk to their own servers, and nothing else.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", IFF_UP, b"")
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, request)


def _read_only_binds(libc: ctypes.CDLL, paths: list[str]) -> None:
    # Private propagation first, so none of these mounts leaks into the host.
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    for path in paths:
        target = os.fsencode(path)
        _check(libc.mount(target, target, None, MS_BIND | MS_REC, None), f"bind {path}")
        locked = 0
        flags = os.statvfs(path).f_flag
        for st_flag, ms_flag in _LOCKED_MOUNT_FLAGS.items():
            if flags & st_flag:
                locked |= ms_flag
        _check(
            libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, None),
            f"remount read-only {path}",
        )


def set_up(config: dict[str, Any]) -> None:
    """Everything before the exec, in the order the kernel requires."""
    libc = _libc()
    binds = [path for path in config.get("readOnlyBinds", []) if os.path.lexists(path)]
    flags = (CLONE_NEWNET if config.get("network") == "netns" else 0) | (
        CLONE_NEWNS if binds else 0
    )
    if flags:
        _unshare(libc, flags)
    if config.get("network") == "netns":
        try:
            _loopback_up()
        except OSError as exc:
            raise SetupError("loopback", exc.strerror or str(exc)) from None
    if binds:
        _read_only_binds(libc, binds)
    if config.get("landlock"):
        abi, reason = landlock_abi()
        if abi < MIN_ENFORCED_ABI:
            raise SetupError("landlock", reason or f"ABI {abi} is below {MIN_ENFORCED_ABI}")
        apply_landlock(config, abi)
    else:
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _report(status_fd: int, stage: str, message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(status_fd, json.dumps({"stage": stage, "error": message}).encode())


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: launcher.py CONFIG_JSON CMD [ARG...]\n")
        return EXIT_SETUP_FAILED
    config = json.loads(argv[0])
    status_fd = int(config["statusFd"])
    os.set_inheritable(status_fd, False)
    try:
        set_up(config)
    except SetupError as exc:
        _report(status_fd, exc.stage, exc.message)
        return EXIT_SETUP_FAILED
    except OSError as exc:
        _report(status_fd, "setup", str(exc))
        return EXIT_SETUP_FAILED
    command = argv[1:]
    try:
        os.execvpe(command[0], command, dict(os.environ))
    except OSError as exc:
        _report(status_fd, "exec", f"{exc.strerror}: {command[0]!r}")
    return EXIT_EXEC_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
