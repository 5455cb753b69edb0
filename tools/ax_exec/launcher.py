"""The sandbox launcher: confine this process, then exec the real command.

Run as ``python -I -S launcher.py CONFIG_JSON CMD [ARG...]``. It is the child
that ``run_managed`` spawns for a sandboxed command, so the confinement is set
up in a fresh single-threaded process instead of a ``preexec_fn`` inside the
(threaded) harness. Steps, each of which fails closed:

1. find every ``.git`` and ``.ax`` in the workspace (a bounded walk);
2. unshare a network namespace (no TCP or UDP outside it) and/or a mount
   namespace, in which every mount is made read-only, the writable roots are
   bound back read-write and every ``.git``/``.ax`` found is bound read-only
   on top (so metadata changes outside the roots fail too: Landlock has no
   right for chmod, chown, utime or setxattr);
3. ``no_new_privs`` and a Landlock ruleset handling every filesystem right the
   running ABI knows, granting reads everywhere and writes only beneath the
   writable roots (device nodes excepted);
4. drop every capability (bounding, ambient, effective, permitted,
   inheritable) with securebits locked so an exec as uid 0 regains none;
5. a seccomp filter refusing opens by file handle, device nodes, new user
   namespaces and the calls that change the host;
6. ``execvpe`` the command.

A failure before the exec is written as one JSON object to the status file
descriptor (close-on-exec, so a successful exec leaves it empty) and the
launcher exits 126 (setup) or 127 (exec). This file imports only the standard
library: it runs without ``site`` and without the ax packages on the path, and
the parent imports it for the same constants, the ABI query and the tables.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import platform
import socket
import stat
import struct
import sys
from collections.abc import Iterator
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
# Never granted, not even beneath a writable root: a device node made there would
# open the device it names (/dev/kmsg, a disk) past every path rule.
DEVICE_NODE_RIGHTS = FS_MAKE_CHAR | FS_MAKE_BLOCK

# The workspace walk that finds every .git and .ax to protect: at most this many
# directory entries are looked at, and at most this many are bound read-only.
MAX_SCAN_ENTRIES = 1_000_000
MAX_PROTECTED_PATHS = 1024
# A .git file (a worktree's or submodule's gitfile) is read up to this size.
MAX_GITFILE_BYTES = 4096

PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
# mount_setattr(2): the same number on both architectures we know (kernel >= 5.12,
# older than any kernel with Landlock ABI 3).
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NODEV = 0x4
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

# Capabilities.
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_SETPCAP = 8
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# Root gets no capabilities on exec nor keeps them on a uid change, no ambient
# capability can be raised, and each of those is locked so it cannot be undone.
SECUREBITS_LOCKED_DOWN = (
    (1 << 0)  # SECBIT_NOROOT
    | (1 << 1)  # SECBIT_NOROOT_LOCKED
    | (1 << 2)  # SECBIT_NO_SETUID_FIXUP
    | (1 << 3)  # SECBIT_NO_SETUID_FIXUP_LOCKED
    | (1 << 5)  # SECBIT_KEEP_CAPS_LOCKED (with KEEP_CAPS off)
    | (1 << 6)  # SECBIT_NO_CAP_AMBIENT_RAISE
    | (1 << 7)  # SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED
)

# Seccomp.
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
X32_SYSCALL_BIT = 0x40000000
S_IFMT = 0o170000
_BPF_LD_W_ABS = 0x20
_BPF_ALU_AND_K = 0x54
_BPF_JEQ_K = 0x15
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06
_SECCOMP_DATA_ARCH = 4
_SECCOMP_DATA_ARGS = 16


class SyscallTable:
    """One architecture's numbers for the calls the seccomp filter refuses."""

    def __init__(
        self,
        audit_arch: int,
        denied: dict[str, int],
        mknod: dict[str, tuple[int, int]],
        namespaces: dict[str, int],
        clone3: int,
        refuses_x32: bool,
    ) -> None:
        self.audit_arch = audit_arch
        # Refused outright with EPERM.
        self.denied = denied
        # Refused with EPERM when the mode argument (number, argument index) makes a device.
        self.mknod = mknod
        # Refused with EPERM when the flags (argument 0) ask for a new user namespace.
        self.namespaces = namespaces
        # Its flags sit in memory a filter cannot read: ENOSYS makes libc fall back to clone.
        self.clone3 = clone3
        self.refuses_x32 = refuses_x32


# The calls that change the host or the kernel, open files by handle, or (mount
# family) could undo the mount namespace, plus io_uring, whose operations seccomp
# never sees. Numbers from the kernel's unistd tables; 424 and up are shared.
_COMMON_NEW = {
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "open_tree_attr": 467,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
}
SYSCALL_TABLES = {
    "x86_64": SyscallTable(
        audit_arch=0xC000003E,
        denied={
            "open_by_handle_at": 304,
            "name_to_handle_at": 303,
            "sethostname": 170,
            "setdomainname": 171,
            "reboot": 169,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "swapon": 167,
            "swapoff": 168,
            "settimeofday": 164,
            "clock_settime": 227,
            "clock_adjtime": 305,
            "adjtimex": 159,
            "acct": 163,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "setns": 308,
            "bpf": 321,
            "perf_event_open": 298,
            "ioperm": 173,
            "iopl": 172,
            "syslog": 103,
            "quotactl": 179,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            **_COMMON_NEW,
        },
        mknod={"mknod": (133, 1), "mknodat": (259, 2)},
        namespaces={"unshare": 272, "clone": 56},
        clone3=435,
        refuses_x32=True,
    ),
    "aarch64": SyscallTable(
        audit_arch=0xC00000B7,
        denied={
            "open_by_handle_at": 265,
            "name_to_handle_at": 264,
            "sethostname": 161,
            "setdomainname": 162,
            "reboot": 142,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "swapon": 224,
            "swapoff": 225,
            "settimeofday": 170,
            "clock_settime": 112,
            "clock_adjtime": 266,
            "adjtimex": 171,
            "acct": 89,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "setns": 268,
            "bpf": 280,
            "perf_event_open": 241,
            "syslog": 116,
            "quotactl": 60,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            **_COMMON_NEW,
        },
        mknod={"mknodat": (33, 2)},
        namespaces={"unshare": 97, "clone": 220},
        clone3=435,
        refuses_x32=False,
    ),
}
SYSCALL_TABLES["arm64"] = SYSCALL_TABLES["aarch64"]

EXIT_SETUP_FAILED = 126
EXIT_EXEC_FAILED = 127


class SetupError(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, stage: str, step: str | None = None) -> int:
    if result < 0:
        number = ctypes.get_errno()
        reason = f"{os.strerror(number)} (errno {number})"
        raise SetupError(stage, f"{step}: {reason}" if step else reason)
    return result


def _syscall_numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(platform.machine())


def syscall_table() -> SyscallTable | None:
    """This machine's seccomp table, or None when the filter cannot be built here."""
    return SYSCALL_TABLES.get(platform.machine())


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
        number = ctypes.get_errno()
        return 0, f"landlock_create_ruleset refused: {os.strerror(number)} (errno {number})"
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
            _add_path_rule(libc, add_rule, ruleset, path, handled & ~DEVICE_NODE_RIGHTS)
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


# --- the .git and .ax to protect ----------------------------------------------------------


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def find_protected(root: str, names: list[str], limit: int = MAX_SCAN_ENTRIES) -> list[str]:
    """Every ``.git``/``.ax`` beneath ``root`` now, as the real paths to bind read-only.

    Names match case-insensitively (as ax-policy's protected segments do); symlinks
    are never followed while walking, and a protected folder is not descended into.
    A symlink so named protects its target when that lies inside ``root``; a ``.git``
    file protects itself and the git directory it names inside ``root``. Looking at
    more than ``limit`` entries, or finding more than ``MAX_PROTECTED_PATHS``, is a
    SetupError: an unfinished walk could miss a repository.
    """
    wanted = {name.casefold() for name in names}
    found: list[str] = []
    scanned = 0
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        except PermissionError:
            if not os.access(folder, os.X_OK):
                continue  # nothing below it is reachable by the command either
            raise SetupError(
                "protect",
                f"cannot list {folder} to look for .git and .ax to protect, but the command "
                "could reach inside it; make it readable or run outside the sandbox",
            ) from None
        scanned += len(entries)
        if scanned > limit:
            raise SetupError(
                "protect",
                f"the workspace {root} has more than {limit} files and folders "
                f"(launcher.MAX_SCAN_ENTRIES), too many to find every .git and .ax in it "
                "before the command starts; run in a smaller workspace (move large "
                "generated trees such as node_modules out of it) or without the sandbox",
            )
        for entry in entries:
            if entry.name.casefold() in wanted:
                found.extend(_protected_targets(entry, root))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    # Parents first, and nothing inside what is already bound (a submodule's git
    # directory under .git/modules is covered by .git).
    unique: list[str] = []
    kept: set[str] = set()
    for path in sorted(set(found)):
        if any(parent in kept for parent in _parents(path, root)):
            continue
        if len(unique) == MAX_PROTECTED_PATHS:
            raise SetupError(
                "protect",
                f"the workspace {root} holds more than {MAX_PROTECTED_PATHS} .git and .ax, "
                "more than the sandbox binds read-only (launcher.MAX_PROTECTED_PATHS); run "
                "in a smaller workspace or without the sandbox",
            )
        unique.append(path)
        kept.add(path)
    return unique


def _parents(path: str, root: str) -> Iterator[str]:
    """``path`` and every folder above it up to ``root``."""
    while _within(path, root) and path != root:
        yield path
        path = os.path.dirname(path)


def _protected_targets(entry: os.DirEntry[str], root: str) -> list[str]:
    real = os.path.realpath(entry.path)
    # One that resolves outside the workspace is already read-only there.
    if not _within(real, root) or not os.path.exists(real):
        return []
    targets = [real]
    if os.path.isfile(real):
        gitdir = _gitfile_target(real)
        if gitdir is not None and _within(gitdir, root) and os.path.isdir(gitdir):
            targets.append(gitdir)
    return targets


def _gitfile_target(path: str) -> str | None:
    """The git directory a ``gitdir: PATH`` file names, resolved, or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(MAX_GITFILE_BYTES)
    except OSError:
        return None
    line = head.split(b"\n", 1)[0].strip()
    if not line.startswith(b"gitdir:"):
        return None
    target = os.fsdecode(line[len(b"gitdir:") :].strip())
    return os.path.realpath(os.path.join(os.path.dirname(path), target)) if target else None


# --- namespaces and mounts ------------------------------------------------------------------


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


def _mount_setattr(
    libc: ctypes.CDLL, path: str, flags: int, set_attr: int, clear_attr: int, step: str
) -> None:
    # struct mount_attr { u64 attr_set, attr_clr, propagation, userns_fd }
    attr = ctypes.create_string_buffer(struct.pack("=QQQQ", set_attr, clear_attr, 0, 0))
    libc.syscall.restype = ctypes.c_long
    _check(
        libc.syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR),
            ctypes.c_int(AT_FDCWD),
            os.fsencode(path),
            ctypes.c_uint(flags),
            attr,
            ctypes.c_size_t(len(attr.raw)),
        ),
        "mounts",
        step,
    )


def _bind(libc: ctypes.CDLL, path: str) -> None:
    target = os.fsencode(path)
    _check(libc.mount(target, target, None, MS_BIND | MS_REC, None), "mounts", f"bind {path}")


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo", "rb") as handle:
        for line in handle:
            field = line.split(b" ")[4]
            # Spaces, tabs, newlines and backslashes are written as octal escapes.
            points.append(
                os.fsdecode(
                    field.replace(b"\\040", b" ")
                    .replace(b"\\011", b"\t")
                    .replace(b"\\012", b"\n")
                    .replace(b"\\134", b"\\")
                )
            )
    return points


def _read_only_tree(libc: ctypes.CDLL, writable: list[str]) -> None:
    """Every mount read-only, then each writable root (and the mounts beneath it that
    were writable) bound back read-write, without device files."""
    points = _mount_points()
    was_writable: dict[str, list[str]] = {}
    for root in writable:
        beneath = [root, *sorted(p for p in set(points) if p != root and _within(p, root))]
        # Only what was writable before becomes writable again: never widen a
        # read-only mount (a workspace mounted read-only stays read-only).
        was_writable[root] = [p for p in beneath if not os.statvfs(p).f_flag & os.ST_RDONLY]
    _mount_setattr(libc, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0, "make / read-only")
    for root in sorted(writable, key=len):
        _bind(libc, root)
        for path in was_writable[root]:
            _mount_setattr(
                libc, path, 0, MOUNT_ATTR_NODEV, MOUNT_ATTR_RDONLY, f"read-write mount {path}"
            )


def _make_mounts(libc: ctypes.CDLL, config: dict[str, Any], protected: list[str]) -> None:
    # Private propagation first, so none of these mounts leaks into the host.
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mounts", "make / private")
    if config.get("readOnlyMounts"):
        _read_only_tree(libc, [os.path.realpath(p) for p in config.get("writePaths", [])])
    for path in protected:
        _bind(libc, path)
        _mount_setattr(libc, path, AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0, f"read-only mount {path}")
    # The working directory still names the mount it was entered on; enter it again
    # through the new mounts, or relative paths would bypass them both ways.
    os.chdir(os.getcwd())


# --- capabilities ---------------------------------------------------------------------------


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _capget(libc: ctypes.CDLL) -> ctypes.Array[_CapData]:
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capget(ctypes.byref(header), data), "capget")
    return data


def _capset(libc: ctypes.CDLL, data: ctypes.Array[_CapData], stage: str) -> None:
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    _check(libc.capset(ctypes.byref(header), data), stage)


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError) as exc:
        raise SetupError("capabilities", f"cannot read the last capability: {exc}") from None


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """Leave this process, and whatever it execs, with no capability at all.

    Root (or a process with file capabilities, or the owner of a fresh user
    namespace) would otherwise keep every capability inside the sandbox.
    """
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient caps")
    data = _capget(libc)
    if not any(part.effective | part.permitted | part.inheritable for part in data):
        # Nothing held: no_new_privs already stops an exec from gaining any.
        return
    if not data[0].permitted & (1 << CAP_SETPCAP):
        raise SetupError(
            "capabilities",
            "the launcher holds capabilities but not CAP_SETPCAP, so it cannot drop the "
            "bounding set or lock the securebits",
        )
    data[0].effective |= 1 << CAP_SETPCAP
    _capset(libc, data, "raise CAP_SETPCAP")
    _check(libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0), "securebits")
    last = _last_cap()
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop bounding capability {cap}")
    empty = (_CapData * 2)()
    _capset(libc, empty, "capset")
    data = _capget(libc)
    left = [cap for cap in range(last + 1) if libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0]
    if any(part.effective | part.permitted | part.inheritable for part in data) or left:
        raise SetupError("capabilities", f"capabilities remain after the drop (bounding: {left})")


# --- seccomp --------------------------------------------------------------------------------


def _ret(value: int) -> tuple[int, int | str, int | str, int]:
    return (_BPF_RET_K, 0, 0, value)


def seccomp_program(table: SyscallTable) -> bytes:
    """The classic BPF filter, assembled: a list of ``struct sock_filter``."""
    deny, allow = "deny", "allow"
    # (code, jump-if-true, jump-if-false, k); a jump is 0 (next) or a label.
    code: list[tuple[int, int | str, int | str, int] | str] = [
        (_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_ARCH),
        # Another ABI's numbers mean other calls: refuse them all.
        (_BPF_JEQ_K, 0, deny, table.audit_arch),
        (_BPF_LD_W_ABS, 0, 0, 0),
    ]
    if table.refuses_x32:
        code.append((_BPF_JSET_K, deny, 0, X32_SYSCALL_BIT))
    code += [(_BPF_JEQ_K, deny, 0, number) for number in sorted(table.denied.values())]
    code.append((_BPF_JEQ_K, "enosys", 0, table.clone3))
    code += [(_BPF_JEQ_K, f"mknod{arg}", 0, nr) for nr, arg in sorted(table.mknod.values())]
    code += [(_BPF_JEQ_K, "flags", 0, number) for number in sorted(table.namespaces.values())]
    code += [_ret(SECCOMP_RET_ALLOW)]
    for arg in sorted({arg for _, arg in table.mknod.values()}):
        code += [
            f"mknod{arg}",
            # The low word of the argument: the mode is a 16-bit umode_t.
            (_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_ARGS + 8 * arg),
            (_BPF_ALU_AND_K, 0, 0, S_IFMT),
            (_BPF_JEQ_K, deny, 0, stat.S_IFCHR),
            (_BPF_JEQ_K, deny, allow, stat.S_IFBLK),
        ]
    code += [
        "flags",
        (_BPF_LD_W_ABS, 0, 0, _SECCOMP_DATA_ARGS),
        (_BPF_JSET_K, deny, allow, CLONE_NEWUSER),
        allow,
        _ret(SECCOMP_RET_ALLOW),
        deny,
        _ret(SECCOMP_RET_ERRNO | errno.EPERM),
        "enosys",
        _ret(SECCOMP_RET_ERRNO | errno.ENOSYS),
    ]
    labels: dict[str, int] = {}
    instructions: list[tuple[int, int | str, int | str, int]] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    program = b""
    for index, (op, true, false, k) in enumerate(instructions):
        jumps = [labels[j] - index - 1 if isinstance(j, str) else j for j in (true, false)]
        program += struct.pack("=HBBI", op, jumps[0], jumps[1], k)
    return program


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(libc: ctypes.CDLL) -> None:
    """Install this machine's filter on this (single-threaded) process and its children."""
    table = syscall_table()
    if table is None:
        raise SetupError("seccomp", f"no system call table known for {platform.machine()}")
    program = seccomp_program(table)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(
        libc.prctl(
            ctypes.c_int(PR_SET_SECCOMP),
            ctypes.c_ulong(SECCOMP_MODE_FILTER),
            ctypes.byref(fprog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        "seccomp",
    )


# --- the whole set-up -----------------------------------------------------------------------


def set_up(config: dict[str, Any]) -> None:
    """Everything before the exec, in the order the kernel requires."""
    libc = _libc()
    root = config.get("protectRoot")
    protected = find_protected(root, config.get("protectNames", [])) if root else []
    mount_ns = bool(config.get("readOnlyMounts") or protected)
    flags = (CLONE_NEWNET if config.get("network") == "netns" else 0) | (
        CLONE_NEWNS if mount_ns else 0
    )
    if flags:
        _unshare(libc, flags)
    if config.get("network") == "netns":
        try:
            _loopback_up()
        except OSError as exc:
            raise SetupError("loopback", exc.strerror or str(exc)) from None
    if mount_ns:
        _make_mounts(libc, config, protected)
    abi, reason = landlock_abi()
    if abi < MIN_ENFORCED_ABI:
        raise SetupError("landlock", reason or f"ABI {abi} is below {MIN_ENFORCED_ABI}")
    # Landlock opens its rule paths while the capabilities that reach them remain.
    apply_landlock(config, abi)
    drop_capabilities(libc)
    install_seccomp(libc)


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
    except Exception as exc:
        # Anything unforeseen is still a refused launch, reported, never a silent exit.
        _report(status_fd, "setup", f"{type(exc).__name__}: {exc}")
        return EXIT_SETUP_FAILED
    command = argv[1:]
    try:
        os.execvpe(command[0], command, dict(os.environ))
    except OSError as exc:
        _report(status_fd, "exec", f"{exc.strerror}: {command[0]!r}")
    return EXIT_EXEC_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
