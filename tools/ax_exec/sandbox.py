"""Sandbox backends: what a profile asks the launcher for, and the probe that proves it.

Only Landlock (with the launcher's mount namespace, capability drop and seccomp
filter around it) is an enforcing backend. A profile is reported as enforced
only after a real child, confined by that profile, was refused everything the
sandbox must refuse (writes outside its roots and into every ``.git``/``.ax``,
device nodes, opening a protected file by handle, /dev/kmsg, every
host-changing call, any capability) while writes into its roots and to
``/dev/null`` succeeded. What else it claims (metadata changes outside the roots,
ptrace, signals, abstract sockets, the network) it claims only when that same
child was refused it; everything else is listed under ``doesNotConfine``. The
probe runs once per process, as whoever runs it, and says so.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_exec.launcher import (
    AT_FDCWD,
    CLONE_NEWUSER,
    KNOWN_ABI,
    MIN_ENFORCED_ABI,
    X32_SYSCALL_BIT,
    SyscallTable,
    fs_rights,
    landlock_abi,
    syscall_table,
)
from ax_exec.models import (
    BackendReport,
    NetworkMethod,
    SandboxProbe,
    SandboxProfile,
    SandboxStatus,
)

PROBE_TIMEOUT_S = 10.0
PROTECTED_NAMES = (".git", ".ax")
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SCRATCH_PREFIX = "ax-exec-"
LAUNCHER = Path(__file__).with_name("launcher.py")
PROBE_CHILD = Path(__file__).with_name("probe_child.py")
ENFORCING_PROFILES: tuple[SandboxProfile, ...] = ("read-only", "workspace-write")

_probe_lock = threading.Lock()
_cached_probe: SandboxProbe | None = None


def launcher_command(config: dict[str, Any], argv: list[str]) -> list[str]:
    """The child's argv: the launcher, its config, then the command it execs."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), *argv]


def launch_config(
    profile: SandboxProfile,
    scratch: Path,
    workspace: Path | None,
    network: NetworkMethod,
    status_fd: int,
    read_only_mounts: bool | None = None,
) -> dict[str, Any]:
    """The launcher's configuration for one run of ``profile``.

    ``read_only_mounts`` (every mount read-only but the writable roots) defaults
    to what the probe found this system can do for the profile.
    """
    if read_only_mounts is None:
        read_only_mounts = profile_status(profile, allow_net=False).read_only_mounts
    write_paths = [os.path.realpath(scratch)]
    protect_root = None
    if profile == "workspace-write" and workspace is not None:
        protect_root = os.path.realpath(workspace)
        write_paths.append(protect_root)
    return {
        "statusFd": status_fd,
        "network": None if network == "none" else network,
        "readPaths": ["/"],
        "writePaths": write_paths,
        "writeFiles": list(DEVICE_FILES),
        "readOnlyMounts": read_only_mounts,
        # The launcher walks it for every .git and .ax present when the command starts.
        "protectRoot": protect_root,
        "protectNames": list(PROTECTED_NAMES),
    }


# --- the host-changing calls, as the probe child tries them ---------------------------------

# Arguments that make each call fail harmlessly wherever it is not refused (a bad
# flag, a NULL pointer, a bad descriptor): the probe must not change the host if
# the filter is missing. ``unshare`` is real and tried last (it only moves the
# child into a namespace of its own).
_CALL_ARGS: dict[str, tuple[int, ...]] = {
    "open_by_handle_at": (-1, 0, 0),
    "name_to_handle_at": (-1, 0, 0, 0, 0),
    "sethostname": (0, -1),
    "setdomainname": (0, -1),
    "reboot": (0, 0, 0, 0),
    "kexec_load": (0, 0xFFFFFFFF, 0, 0x80000000),
    "kexec_file_load": (-1, -1, 0, 0, 0x80000000),
    "init_module": (0, 0, 0),
    "finit_module": (-1, 0, 0),
    "delete_module": (0, 0),
    "swapon": (0, 0),
    "swapoff": (0,),
    "settimeofday": (0, 0),
    "clock_settime": (-1, 0),
    "clock_adjtime": (-1, 0),
    "adjtimex": (0,),
    "acct": (1,),
    "mount": (0, 0, 0, 0, 0),
    "umount2": (0, 0),
    "pivot_root": (0, 0),
    "setns": (-1, 0),
    "bpf": (-1, 0, 0),
    "perf_event_open": (0, 0, -1, -1, 0),
    "ioperm": (0x10000, 1, 0),
    "iopl": (4,),
    "syslog": (-1, 0, 0),
    "quotactl": (0xFFFFFFFF, 0, 0, 0),
    "quotactl_fd": (-1, 0xFFFFFFFF, 0, 0),
    "keyctl": (-1, 0, 0, 0, 0),
    "add_key": (0, 0, 0, 0, 0),
    "request_key": (0, 0, 0, 0),
    "open_tree": (-1, 0, 0xFFFFFFFF),
    "move_mount": (-1, 0, -1, 0, 0xFFFFFFFF),
    "fsopen": (0, 0xFFFFFFFF),
    "fsconfig": (-1, 0xFFFFFFFF, 0, 0, 0),
    "fsmount": (-1, 0xFFFFFFFF, 0),
    "fspick": (-1, 0, 0xFFFFFFFF),
    "mount_setattr": (-1, 0, 0xFFFFFFFF, 0, 0),
    "open_tree_attr": (-1, 0, 0xFFFFFFFF, 0, 0),
    "io_uring_setup": (0, 0),
    "io_uring_enter": (-1, 0, 0, 0, 0, 0),
    "io_uring_register": (-1, 0, 0, 0),
    "mknod": (0, stat.S_IFCHR | 0o600, 0),
    "mknodat": (AT_FDCWD, 0, stat.S_IFCHR | 0o600, 0),
    # CLONE_FS with CLONE_NEWUSER is invalid: a clone that is let through fails.
    "clone": (CLONE_NEWUSER | 0x200 | 0x10000, 0, 0, 0, 0),
    "clone3": (0, 0),
    "unshare": (CLONE_NEWUSER,),
}
# What each refused call is, in words, for the claims.
_CALL_GROUPS = {
    "opening files by handle, the way around a read-only mount": (
        "open_by_handle_at",
        "name_to_handle_at",
    ),
    "making device nodes (character or block), even in the writable roots": ("mknod", "mknodat"),
    "new user namespaces, which would hand back a full set of capabilities": (
        "unshare",
        "clone",
        "clone3",
        "setns",
    ),
    "mount changes": (
        "mount",
        "umount2",
        "pivot_root",
        "open_tree",
        "open_tree_attr",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
    ),
    "changing the host name, domain name or clock": (
        "sethostname",
        "setdomainname",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
    ),
    "changing the kernel: modules, kexec, reboot, swap, accounting, quotas, BPF, perf "
    "events, the kernel log, keyrings, I/O ports": (
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "quotactl_fd",
        "bpf",
        "perf_event_open",
        "syslog",
        "keyctl",
        "add_key",
        "request_key",
        "ioperm",
        "iopl",
    ),
    "io_uring, whose operations a seccomp filter cannot see": (
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
    ),
    "system calls of another ABI (x32, 32-bit)": ("x32",),
}
# x32's getpid: an x32 call that would be harmless if let through.
_X32_GETPID = X32_SYSCALL_BIT | 39


def probe_calls(table: SyscallTable) -> list[tuple[str, int, tuple[int, ...], str]]:
    """(name, number, harmless arguments, the errno a refusal answers) for every call
    the filter refuses on this architecture; ``unshare`` last."""
    calls = [(name, number, _CALL_ARGS[name], "EPERM") for name, number in table.denied.items()]
    calls += [
        (name, number, _CALL_ARGS[name], "EPERM") for name, (number, _) in table.mknod.items()
    ]
    calls.append(("clone3", table.clone3, _CALL_ARGS["clone3"], "ENOSYS"))
    if table.refuses_x32:
        calls.append(("x32", _X32_GETPID, (), "EPERM"))
    calls.append(("clone", table.namespaces["clone"], _CALL_ARGS["clone"], "EPERM"))
    calls.append(("unshare", table.namespaces["unshare"], _CALL_ARGS["unshare"], "EPERM"))
    return calls


# --- what each profile confines, in words --------------------------------------------------

_ALWAYS_UNCONFINED = [
    "reads: every file the user can read stays readable, credentials under $HOME included",
    "connecting to existing pathname unix sockets (a local daemon such as docker.sock "
    "stays reachable)",
    "writes through file descriptors opened before the sandbox (the inherited stdout and "
    "stderr pipes)",
    "System V IPC",
    "CPU time, memory, disk space and process count (no resource limits)",
]
_METADATA = {
    "chmod": "permissions (chmod)",
    "chown": "owners (chown)",
    "utime": "timestamps (utime)",
    "setxattr": "extended attributes (setxattr)",
}
# Refused by the child as any of these, the attempt counts as refused.
_REFUSALS = frozenset({"EPERM", "EACCES", "EROFS"})


@dataclass(frozen=True)
class Verified:
    """What the probe child was refused (check names), and how it was set up."""

    refused: frozenset[str]
    read_only_mounts: bool
    bounding_set_empty: bool
    securebits_locked: bool


def network_lines(network: NetworkMethod, allow_net: bool) -> tuple[list[str], list[str]]:
    """(confines, doesNotConfine) lines about the network."""
    if allow_net:
        return [], ["network: allowed for this command (--allow-net)"]
    if network == "netns":
        return [
            "TCP, UDP and every other IP traffic to anything outside the sandbox (a private "
            "network namespace whose only interface is its own loopback)"
        ], []
    if network == "landlock-tcp":
        return ["TCP bind and connect on every port (Landlock network rules)"], [
            "UDP, ICMP and all other non-TCP network traffic"
        ]
    return [], ["network: no network confinement could be set up on this system"]


def describe(
    profile: SandboxProfile, abi: int, network: NetworkMethod, verified: Verified
) -> tuple[list[str], list[str]]:
    """(confines, doesNotConfine) for an enforced profile, from what its child was refused."""
    handled = bin(fs_rights(abi)).count("1")
    roots = "the private scratch directory (TMPDIR)"
    if profile == "workspace-write":
        roots = "the workspace and " + roots
    confines = [
        f"filesystem writes, creations, removals and renames everywhere except {roots} and "
        f"{', '.join(DEVICE_FILES)} (Landlock ABI {abi}, {handled} filesystem rights handled)",
    ]
    unconfined = list(_ALWAYS_UNCONFINED)
    if profile == "workspace-write":
        confines.append(
            "writes to every .git and .ax in the workspace when the command starts, nested "
            "repositories and .git files (and the git directory one names) included "
            "(read-only bind mounts in a private mount namespace)"
        )
        unconfined.append(
            ".git and .ax created during the run, including one made where a nested "
            "repository's folder was renamed away (only those present at the start are "
            "protected)"
        )
        unconfined.append(
            "files outside the workspace that were hard-linked into it before the run "
            "(they change through the link)"
        )
    refused_meta = [words for name, words in _METADATA.items() if name in verified.refused]
    open_meta = [words for name, words in _METADATA.items() if name not in verified.refused]
    if refused_meta:
        confines.append(
            f"changes to the {', '.join(refused_meta)} of files outside {roots} (every other "
            "mount is read-only in a private mount namespace)"
        )
    if open_meta:
        why = (
            "the probe child was not refused them"
            if verified.read_only_mounts
            else "no private mount namespace could be made here, and Landlock has no right for them"
        )
        unconfined.append(
            f"changes to the {', '.join(open_meta)} of files the user owns outside {roots}: {why}"
        )
    if verified.bounding_set_empty:
        sets = "effective, permitted, inheritable, ambient and bounding sets all empty"
    else:
        sets = (
            "effective, permitted, inheritable and ambient sets empty; the bounding set is "
            "not, but with no_new_privs nothing is raised from it"
        )
    regain = "no_new_privs" + (", securebits locked" if verified.securebits_locked else "")
    confines.append(
        f"capabilities: the command holds none ({sets}) and an exec, of a setuid file or "
        f"as uid 0, gives none back ({regain})"
    )
    for words, names in _CALL_GROUPS.items():
        refused = [name for name in names if name in verified.refused]
        if refused:
            confines.append(f"{words}: {', '.join(refused)} refused (seccomp filter)")
    confines.append(
        f"opening /dev/kmsg, or any device but {', '.join(DEVICE_FILES)}, for writing (Landlock)"
    )
    for name, words in (
        ("ptrace", "ptrace of processes outside the sandbox"),
        ("signal", "signals to processes outside the sandbox"),
        ("abstract", "abstract unix sockets outside the sandbox"),
    ):
        (confines if name in verified.refused else unconfined).append(words)
    if abi > KNOWN_ABI:
        unconfined.append(f"filesystem rights added after Landlock ABI {KNOWN_ABI}")
    net_confines, net_unconfined = network_lines(network, allow_net=False)
    return confines + net_confines, net_unconfined + unconfined


def none_status(profile: SandboxProfile = "none", reason: str | None = None) -> SandboxStatus:
    return SandboxStatus(
        backend="none",
        profile=profile,
        enforced=False,
        does_not_confine=["everything: the command runs with the user's full authority"],
        reason=reason,
    )


# --- the probe -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ProbeRun:
    results: dict[str, Any]
    setup_error: str | None
    setup_stage: str | None


def _run_probe_child(config: dict[str, Any], plan: dict[str, Any], status_r: int) -> _ProbeRun:
    argv = [sys.executable, "-I", "-S", str(PROBE_CHILD), json.dumps(plan)]
    try:
        done = subprocess.run(
            launcher_command(config, argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            pass_fds=[config["statusFd"]],
            start_new_session=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _ProbeRun({}, f"probe child did not finish in {PROBE_TIMEOUT_S:g}s", "timeout")
    finally:
        os.close(config["statusFd"])
    status = _read_all(status_r)
    if status:
        report = json.loads(status)
        return _ProbeRun({}, f"{report['stage']}: {report['error']}", str(report["stage"]))
    try:
        results = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return _ProbeRun({}, f"probe child exited {done.returncode} without a report", "child")
    return _ProbeRun(results, None, None)


def _read_all(fd: int) -> bytes:
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _file_handle(path: Path) -> str | None:
    """``struct file_handle`` of ``path`` as hex, or None where the filesystem has none."""
    libc = ctypes.CDLL(None, use_errno=True)
    max_handle = 128
    buffer = ctypes.create_string_buffer(8 + max_handle)
    ctypes.memmove(buffer, max_handle.to_bytes(4, sys.byteorder), 4)
    mount_id = ctypes.c_int()
    result = libc.name_to_handle_at(AT_FDCWD, os.fsencode(path), buffer, ctypes.byref(mount_id), 0)
    if result != 0:
        return None
    size = int.from_bytes(buffer.raw[:4], sys.byteorder)
    return buffer.raw[: 8 + size].hex()


def _probe_tree(profile: SandboxProfile, base: Path) -> dict[str, Path]:
    root = base / profile
    paths = {
        "workspace": root / "ws",
        "scratch": root / "scratch",
        "outside": root / "outside",
    }
    ws = paths["workspace"]
    for folder in (
        ws / ".git",
        ws / ".ax",
        ws / "vendor" / "lib" / ".git",
        ws / "wt",
        ws / "modules" / "wt",
    ):
        folder.mkdir(parents=True)
    paths["scratch"].mkdir()
    paths["outside"].mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "vendor" / "lib" / ".git" / "config").write_text("[core]\n")
    # A gitfile naming a git directory elsewhere in the workspace, as a submodule's does.
    (ws / "modules" / "wt" / "config").write_text("[core]\n")
    (ws / "wt" / ".git").write_text("gitdir: ../modules/wt\n")
    meta = paths["outside"] / "meta"
    meta.write_text("probe")
    meta.chmod(0o644)
    return paths


def _plan(profile: SandboxProfile, paths: dict[str, Path], sleeper: int) -> dict[str, Any]:
    ws, scratch, outside = paths["workspace"], paths["scratch"], paths["outside"]
    meta = outside / "meta"
    info = meta.stat()
    table = syscall_table()
    assert table is not None  # the caller checked
    return {
        "writes": {
            "outside": str(outside / "f"),
            "scratch": str(scratch / "f"),
            "devnull": "/dev/null",
            "workspace": str(ws / "f"),
            "gitConfig": str(ws / ".git" / "config"),
            "gitNew": str(ws / ".git" / "hooks-new"),
            "axNew": str(ws / ".ax" / "f"),
            "nestedGit": str(ws / "vendor" / "lib" / ".git" / "config"),
            "gitFile": str(ws / "wt" / ".git"),
            "gitFileDir": str(ws / "modules" / "wt" / "config"),
        },
        "metadata": {
            "path": str(meta),
            "mode": stat.S_IMODE(info.st_mode),
            "uid": info.st_uid,
            "gid": info.st_gid,
            "ns": info.st_mtime_ns,
        },
        "scratch": str(scratch),
        "handle": _file_handle(ws / ".git" / "config"),
        # Through the mount the command may write, the handle is the escape to test.
        "handleMount": str(ws if profile == "workspace-write" else scratch),
        "sleeper": sleeper,
        "calls": [[name, number, list(args)] for name, number, args, _ in probe_calls(table)],
    }


def _judge(
    profile: SandboxProfile, results: dict[str, Any], plan: dict[str, Any]
) -> tuple[list[str], frozenset[str]]:
    """(what went wrong that must not, the checks the child was refused)."""
    table = syscall_table()
    assert table is not None
    expected_ok = {"scratch", "devnull"} | (
        {"workspace"} if profile == "workspace-write" else set()
    )
    wrong = []
    for name in plan["writes"]:
        outcome = results.get(name, "missing")
        if (outcome == "ok") != (name in expected_ok) or (
            outcome != "ok" and outcome not in _REFUSALS
        ):
            wrong.append(f"{name} ({outcome})")
    refused = {name for name, outcome in results.items() if str(outcome) in _REFUSALS}
    for name, _, _, answer in probe_calls(table):
        outcome = results.get(name, "missing")
        if outcome == answer:
            refused.add(name)
        else:
            wrong.append(f"{name} ({outcome})")
    for name in ("mknodChar", "kmsg", "handle"):
        if name not in refused:
            wrong.append(f"{name} ({results.get(name, 'missing')})")
    status = results.get("status", {})
    held = [key for key in ("CapInh", "CapPrm", "CapEff", "CapAmb") if status.get(key, 1) != 0]
    if held:
        wrong.append(f"capabilities still held ({', '.join(held)})")
    if status.get("NoNewPrivs") != 1:
        wrong.append("no_new_privs not set")
    if status.get("Seccomp") != 2:
        wrong.append("no seccomp filter")
    return sorted(wrong), frozenset(refused)


def _probe_profile(profile: SandboxProfile, abi: int, base: Path, sleeper: int) -> SandboxStatus:
    paths = _probe_tree(profile, base)
    plan = _plan(profile, paths, sleeper)
    methods: list[NetworkMethod] = (
        ["netns", "landlock-tcp", "none"] if abi >= 4 else ["netns", "none"]
    )
    # With a mount namespace first; read-only can do without one (metadata changes
    # outside are then reported as not confined), workspace-write cannot (.git).
    attempts = [(method, True) for method in methods]
    if profile == "read-only":
        attempts += [(method, False) for method in methods if method != "netns"]
    with _loopback_listeners() as (tcp, udp, abstract):
        plan |= {
            "tcpPort": tcp.getsockname()[1],
            "udpPort": udp.getsockname()[1],
            "abstract": abstract,
        }
        run: _ProbeRun | None = None
        method: NetworkMethod = "none"
        mounts = True
        for method, mounts in attempts:
            status_r, status_w = os.pipe()
            config = launch_config(
                profile, paths["scratch"], paths["workspace"], method, status_w, mounts
            )
            run = _run_probe_child(config, plan, status_r)
            # Only a namespace that cannot be made is worth a weaker attempt.
            if run.setup_stage not in ("unshare", "loopback", "mounts"):
                break
        assert run is not None
        udp_arrived = _datagram_waiting(udp)
    if run.setup_error is not None:
        return none_status(profile, f"Landlock {profile} could not be set up: {run.setup_error}")
    wrong, refused = _judge(profile, run.results, plan)
    if wrong:
        return none_status(
            profile, f"the {profile} probe child was not confined as expected: {', '.join(wrong)}"
        )
    if method == "netns" and (run.results.get("tcp") == "ok" or udp_arrived):
        method = "none"
    if method == "landlock-tcp" and run.results.get("tcp") == "ok":
        method = "none"
    # Reaching a listener that is there, in any way, is what a connection test refutes.
    if run.results.get("abstract") != "ok":
        refused |= {"abstract"}
    status = run.results.get("status", {})
    verified = Verified(
        refused=refused,
        read_only_mounts=mounts,
        bounding_set_empty=status.get("CapBnd") == 0,
        securebits_locked=run.results.get("securebits", 0) > 0,
    )
    confines, unconfined = describe(profile, abi, method, verified)
    return SandboxStatus(
        backend="landlock",
        profile=profile,
        enforced=True,
        abi=abi,
        network=method,
        read_only_mounts=mounts,
        confines=confines,
        does_not_confine=unconfined,
    )


@contextmanager
def _loopback_listeners() -> Iterator[tuple[socket.socket, socket.socket, str]]:
    """A TCP, a UDP and an abstract unix socket on the host, for the child to try to reach."""
    abstract = f"ax-exec-probe-{secrets.token_hex(8)}"
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix,
    ):
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        unix.bind("\0" + abstract)
        unix.listen()
        yield tcp, udp, abstract


def _datagram_waiting(sock: socket.socket) -> bool:
    try:
        sock.recv(64)
    except BlockingIOError:
        return False
    return True


@contextmanager
def _sleeper() -> Iterator[int]:
    """A process outside the sandbox for the child to signal and ptrace."""
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", "import time; time.sleep(60)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _probe() -> SandboxProbe:
    none_report = BackendReport(
        backend="none",
        available=True,
        enforced=False,
        reason="runs commands unconfined; every command needs approval",
        profiles=[none_status()],
    )
    abi, reason = landlock_abi()
    if abi >= MIN_ENFORCED_ABI and syscall_table() is None:
        # Without the seccomp filter, root in the sandbox keeps what Landlock cannot stop.
        reason = (
            f"no seccomp system call table for {os.uname().machine}: the filter cannot be built"
        )
        landlock = BackendReport(
            backend="landlock", available=True, enforced=False, abi=abi, reason=reason
        )
        return SandboxProbe(selected="none", uid=os.geteuid(), backends=[landlock, none_report])
    if abi < MIN_ENFORCED_ABI:
        landlock = BackendReport(
            backend="landlock",
            available=abi > 0,
            enforced=False,
            abi=abi or None,
            reason=reason or f"Landlock ABI {abi} is below {MIN_ENFORCED_ABI}",
        )
        return SandboxProbe(selected="none", uid=os.geteuid(), backends=[landlock, none_report])
    with tempfile.TemporaryDirectory(prefix="ax-exec-probe-") as tmp, _sleeper() as sleeper:
        profiles = [
            _probe_profile(profile, abi, Path(tmp), sleeper) for profile in ENFORCING_PROFILES
        ]
    enforced = any(status.enforced for status in profiles)
    refused = [status.reason for status in profiles if status.reason]
    landlock = BackendReport(
        backend="landlock",
        available=True,
        enforced=enforced,
        abi=abi,
        reason="; ".join(refused) or None,
        profiles=profiles,
    )
    return SandboxProbe(
        selected="landlock" if enforced else "none",
        uid=os.geteuid(),
        backends=[landlock, none_report],
    )


def probe_sandbox(refresh: bool = False) -> SandboxProbe:
    """Probe every backend once per process (``refresh`` probes again)."""
    global _cached_probe
    with _probe_lock:
        if _cached_probe is None or refresh:
            _cached_probe = _probe()
        return _cached_probe


def profile_status(profile: SandboxProfile, allow_net: bool) -> SandboxStatus:
    """The probed status of one profile, adjusted for this command's network choice."""
    if profile == "none":
        return none_status()
    probe = probe_sandbox()
    for backend in probe.backends:
        for status in backend.profiles:
            if status.profile == profile and status.enforced:
                if not allow_net:
                    return status
                # Swap the probed network lines for the --allow-net ones.
                old_confines, old_unconfined = network_lines(status.network, allow_net=False)
                new_confines, new_unconfined = network_lines("none", allow_net=True)
                return status.model_copy(
                    update={
                        "network": "none",
                        "confines": [line for line in status.confines if line not in old_confines]
                        + new_confines,
                        "does_not_confine": new_unconfined
                        + [line for line in status.does_not_confine if line not in old_unconfined],
                    }
                )
    reasons = [backend.reason for backend in probe.backends if backend.backend == "landlock"]
    return none_status(profile, reasons[0] if reasons and reasons[0] else "no enforcing backend")
