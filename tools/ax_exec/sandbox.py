"""Sandbox backends: what a profile asks the launcher for, and the probe that proves it.

Only Landlock is an enforcing backend. It is reported as enforced for a profile
only after a real child, confined by that profile, was refused a write outside
its roots (and, for workspace-write, a write into ``.git`` and ``.ax``) while a
write into its roots and to ``/dev/null`` succeeded. Network confinement is
claimed only when the same child failed to reach a TCP and a UDP socket that
the probe itself listens on at the host's loopback. Everything not verified is
listed under ``doesNotConfine``. The probe runs once per process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_exec.launcher import KNOWN_ABI, MIN_ENFORCED_ABI, fs_rights, landlock_abi
from ax_exec.models import (
    BackendReport,
    NetworkMethod,
    SandboxProbe,
    SandboxProfile,
    SandboxStatus,
)
from libcommon.paths import is_within

PROBE_TIMEOUT_S = 10.0
PROTECTED_NAMES = (".git", ".ax")
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SCRATCH_PREFIX = "ax-exec-"
LAUNCHER = Path(__file__).with_name("launcher.py")
ENFORCING_PROFILES: tuple[SandboxProfile, ...] = ("read-only", "workspace-write")

_probe_lock = threading.Lock()
_cached_probe: SandboxProbe | None = None


def launcher_command(config: dict[str, Any], argv: list[str]) -> list[str]:
    """The child's argv: the launcher, its config, then the command it execs."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), *argv]


def protected_paths(workspace: Path) -> list[str]:
    """``.git`` and ``.ax`` of the workspace that exist now and resolve inside it."""
    found = []
    for name in PROTECTED_NAMES:
        candidate = workspace / name
        if os.path.lexists(candidate):
            real = Path(os.path.realpath(candidate))
            # One that resolves outside the workspace is already read-only under Landlock.
            if is_within(real, workspace) and real.exists():
                found.append(str(real))
    return found


def launch_config(
    profile: SandboxProfile,
    scratch: Path,
    workspace: Path | None,
    network: NetworkMethod,
    status_fd: int,
) -> dict[str, Any]:
    write_paths = [str(scratch)]
    binds: list[str] = []
    if profile == "workspace-write" and workspace is not None:
        write_paths.append(str(workspace))
        binds = protected_paths(workspace)
    return {
        "statusFd": status_fd,
        "landlock": True,
        "network": None if network == "none" else network,
        "readPaths": ["/"],
        "writePaths": write_paths,
        "writeFiles": list(DEVICE_FILES),
        "readOnlyBinds": binds,
    }


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


def describe(
    profile: SandboxProfile, abi: int, network: NetworkMethod, allow_net: bool
) -> tuple[list[str], list[str]]:
    """(confines, doesNotConfine) for an enforced Landlock profile."""
    handled = bin(fs_rights(abi)).count("1")
    roots = "the private scratch directory (TMPDIR)"
    if profile == "workspace-write":
        roots = "the workspace and " + roots
    confines = [
        f"filesystem writes, creations, removals and renames everywhere except {roots} and "
        f"{', '.join(DEVICE_FILES)} (Landlock ABI {abi}, {handled} filesystem rights handled)",
    ]
    if profile == "workspace-write":
        confines.append(
            "writes to .git and .ax inside the workspace (read-only bind mounts in a private "
            "mount namespace; only those that exist when the command starts)"
        )
    confines += [
        "privilege gain through setuid or setgid executables (no_new_privs)",
        "ptrace of processes outside the sandbox (Landlock)",
    ]
    unconfined = list(_ALWAYS_UNCONFINED)
    if abi > KNOWN_ABI:
        unconfined.append(f"filesystem rights added after Landlock ABI {KNOWN_ABI}")
    if abi >= 6:
        confines.append("signals to processes outside the sandbox (Landlock scope)")
        confines.append("abstract unix sockets outside the sandbox (Landlock scope)")
    else:
        unconfined.append(f"signals and abstract unix sockets (Landlock ABI {abi} has no scopes)")
    if allow_net:
        unconfined.insert(0, "network: allowed for this command (--allow-net)")
    elif network == "netns":
        confines.append(
            "TCP, UDP and every other IP traffic to anything outside the sandbox (a private "
            "network namespace whose only interface is its own loopback)"
        )
    elif network == "landlock-tcp":
        confines.append("TCP bind and connect on every port (Landlock network rules)")
        unconfined.insert(0, "UDP, ICMP and all other non-TCP network traffic")
    else:
        unconfined.insert(0, "network: no network confinement could be set up on this system")
    return confines, unconfined


def none_status(profile: SandboxProfile = "none", reason: str | None = None) -> SandboxStatus:
    return SandboxStatus(
        backend="none",
        profile=profile,
        enforced=False,
        does_not_confine=["everything: the command runs with the user's full authority"],
        reason=reason,
    )


# --- the probe -------------------------------------------------------------------------------

# Runs inside the confined child: try each action and report "ok" or the errno name.
_PROBE_CHILD = r"""
import errno, json, os, socket, sys
plan = json.loads(sys.argv[1])
results = {}
def attempt(name, action):
    try:
        action()
        results[name] = "ok"
    except OSError as exc:
        results[name] = errno.errorcode.get(exc.errno, str(exc.errno))
def write(path):
    with open(path, "w") as handle:
        handle.write("probe")
for name, path in plan["writes"].items():
    attempt(name, lambda path=path: write(path))
def tcp():
    with socket.create_connection(("127.0.0.1", plan["tcpPort"]), timeout=2):
        pass
attempt("tcp", tcp)
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"probe", ("127.0.0.1", plan["udpPort"]))
attempt("udp", udp)
print(json.dumps(results))
"""


@dataclass(frozen=True)
class _ProbeRun:
    results: dict[str, str]
    setup_error: str | None
    setup_stage: str | None


def _run_probe_child(config: dict[str, Any], plan: dict[str, Any], status_r: int) -> _ProbeRun:
    argv = [sys.executable, "-I", "-S", "-c", _PROBE_CHILD, json.dumps(plan)]
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


def _probe_profile(profile: SandboxProfile, abi: int, base: Path) -> SandboxStatus:
    root = base / profile
    workspace, scratch, outside = root / "ws", root / "scratch", root / "outside"
    for folder in (workspace / ".git", workspace / ".ax", scratch, outside):
        folder.mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    writes = {
        "outside": str(outside / "f"),
        "scratch": str(scratch / "f"),
        "devnull": "/dev/null",
        "workspace": str(workspace / "f"),
        "gitConfig": str(workspace / ".git" / "config"),
        "gitNew": str(workspace / ".git" / "hooks-new"),
        "axNew": str(workspace / ".ax" / "f"),
    }
    expected_ok = {"scratch", "devnull"} | (
        {"workspace"} if profile == "workspace-write" else set()
    )
    methods: list[NetworkMethod] = (
        ["netns", "landlock-tcp", "none"] if abi >= 4 else ["netns", "none"]
    )
    with _loopback_listeners() as (tcp, udp):
        plan = {"writes": writes, "tcpPort": tcp.getsockname()[1], "udpPort": udp.getsockname()[1]}
        run: _ProbeRun | None = None
        method: NetworkMethod = "none"
        for method in methods:
            status_r, status_w = os.pipe()
            config = launch_config(profile, scratch, workspace, method, status_w)
            run = _run_probe_child(config, plan, status_r)
            # Only a failure to set up the network is worth a weaker network method.
            if run.setup_stage not in ("unshare", "loopback") or method == "none":
                break
        assert run is not None
        udp_arrived = _datagram_waiting(udp)
    if run.setup_error is not None:
        return none_status(profile, f"Landlock {profile} could not be set up: {run.setup_error}")
    wrong = sorted(
        f"{name} ({run.results.get(name, 'missing')})"
        for name in writes
        if (run.results.get(name) == "ok") != (name in expected_ok)
    )
    if wrong:
        return none_status(
            profile, f"the {profile} probe child was not confined as expected: {', '.join(wrong)}"
        )
    if method == "netns" and (run.results.get("tcp") == "ok" or udp_arrived):
        method = "none"
    if method == "landlock-tcp" and run.results.get("tcp") == "ok":
        method = "none"
    confines, unconfined = describe(profile, abi, method, allow_net=False)
    return SandboxStatus(
        backend="landlock",
        profile=profile,
        enforced=True,
        abi=abi,
        network=method,
        confines=confines,
        does_not_confine=unconfined,
    )


@contextmanager
def _loopback_listeners() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A TCP and a UDP socket on the host loopback, for the child to try to reach."""
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        yield tcp, udp


def _datagram_waiting(sock: socket.socket) -> bool:
    try:
        sock.recv(64)
    except BlockingIOError:
        return False
    return True


def _probe() -> SandboxProbe:
    none_report = BackendReport(
        backend="none",
        available=True,
        enforced=False,
        reason="runs commands unconfined; every command needs approval",
        profiles=[none_status()],
    )
    abi, reason = landlock_abi()
    if abi < MIN_ENFORCED_ABI:
        landlock = BackendReport(
            backend="landlock",
            available=abi > 0,
            enforced=False,
            abi=abi or None,
            reason=reason or f"Landlock ABI {abi} is below {MIN_ENFORCED_ABI}",
        )
        return SandboxProbe(selected="none", backends=[landlock, none_report])
    with tempfile.TemporaryDirectory(prefix="ax-exec-probe-") as tmp:
        profiles = [_probe_profile(profile, abi, Path(tmp)) for profile in ENFORCING_PROFILES]
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
        selected="landlock" if enforced else "none", backends=[landlock, none_report]
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
                assert status.abi is not None
                confines, unconfined = describe(profile, status.abi, "none", allow_net=True)
                return status.model_copy(
                    update={"network": "none", "confines": confines, "does_not_confine": unconfined}
                )
    reasons = [backend.reason for backend in probe.backends if backend.backend == "landlock"]
    return none_status(profile, reasons[0] if reasons and reasons[0] else "no enforcing backend")
