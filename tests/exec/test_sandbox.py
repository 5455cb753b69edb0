"""The sandbox with real confined children. Skipped, with the probe's reason, where
Landlock is not enforced on this machine; never passed without it."""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axtest import NOBODY, nobody_runner

from ax_exec import (
    ExecSpec,
    SandboxProbe,
    SandboxProfile,
    SandboxStatus,
    probe_sandbox,
    run_managed,
)
from ax_exec import launcher as launcher_module
from ax_exec import sandbox as sandbox_module
from ax_exec.launcher import landlock_abi

PY = sys.executable
PROFILES: list[SandboxProfile] = ["read-only", "workspace-write"]


def _require(profile: SandboxProfile) -> None:
    for backend in probe_sandbox().backends:
        for status in backend.profiles:
            if status.profile == profile and status.enforced:
                return
    reasons = [b.reason for b in probe_sandbox().backends if b.backend == "landlock"]
    if any(reason and "not confined as expected" in reason for reason in reasons):
        # Not a missing kernel feature: the sandbox was set up and did not hold.
        pytest.fail(f"the {profile} sandbox was set up but did not confine: {reasons}")
    pytest.skip(f"Landlock {profile} is not enforced here: {reasons}")


def _write(path: Path | str) -> list[str]:
    return [PY, "-c", f"open({str(path)!r}, 'w').write('x')"]


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / ".ax").mkdir()
    (workspace / "src.txt").write_text("original\n")
    return workspace


@pytest.mark.parametrize("profile", PROFILES)
def test_write_outside_the_roots_fails(profile: SandboxProfile, repo: Path, tmp_path: Path) -> None:
    _require(profile)
    outside = tmp_path / "outside"
    outside.mkdir()
    outcome = run_managed(
        ExecSpec(argv=_write(outside / "f"), sandbox=profile, cwd=str(repo), workspace=str(repo))
    )
    assert outcome.termination == "exited" and outcome.exit_code != 0
    stderr = outcome.stderr.head + outcome.stderr.tail
    # Refused by the read-only mount (EROFS) before Landlock (EACCES) is asked.
    assert "Read-only file system" in stderr or "Permission denied" in stderr
    assert not (outside / "f").exists()
    assert outcome.sandbox.enforced and outcome.sandbox.backend == "landlock"
    assert outcome.sandbox.profile == profile


@pytest.mark.parametrize("profile", PROFILES)
def test_dev_null_and_the_scratch_dir_stay_writable(profile: SandboxProfile, repo: Path) -> None:
    _require(profile)
    script = (
        "import os, tempfile\n"
        "open('/dev/null', 'w').write('x')\n"
        "with tempfile.NamedTemporaryFile(dir=os.environ['TMPDIR']) as f: f.write(b'x')\n"
        "print(os.environ['TMPDIR'])\n"
    )
    outcome = run_managed(
        ExecSpec(argv=[PY, "-c", script], sandbox=profile, cwd=str(repo), workspace=str(repo))
    )
    assert outcome.exit_code == 0, outcome.stderr.head
    scratch = outcome.stdout.head.strip()
    assert scratch.startswith(str(Path(scratch).parent)) and "ax-exec-" in scratch
    assert not Path(scratch).exists()  # removed after the run


def test_read_only_refuses_the_workspace_too(repo: Path) -> None:
    _require("read-only")
    outcome = run_managed(
        ExecSpec(argv=_write(repo / "src.txt"), sandbox="read-only", cwd=str(repo))
    )
    assert outcome.exit_code != 0
    assert (repo / "src.txt").read_text() == "original\n"


def test_workspace_write_allows_the_workspace_but_not_git_or_ax(repo: Path) -> None:
    _require("workspace-write")
    spec = {"sandbox": "workspace-write", "cwd": str(repo), "workspace": str(repo)}
    ok = run_managed(
        ExecSpec(shell="echo new > src.txt && mkdir -p pkg && echo y > pkg/m.py", **spec)
    )
    assert ok.exit_code == 0, ok.stderr.head
    assert (repo / "src.txt").read_text() == "new\n"
    for target in (".git/config", ".git/hooks-pre-commit", ".ax/state.json"):
        outcome = run_managed(ExecSpec(argv=_write(repo / target), **spec))
        assert outcome.exit_code != 0, target
        assert "Read-only file system" in outcome.stderr.head + outcome.stderr.tail
    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert not (repo / ".git" / "hooks-pre-commit").exists()
    removal = run_managed(ExecSpec(shell="rm -rf .git", **spec))
    assert removal.exit_code != 0
    assert (repo / ".git" / "config").exists()
    assert any(".git and .ax" in line for line in ok.sandbox.confines)


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host loopback that records what each client sends."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                received.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    server.close()


def _connect(port: int) -> list[str]:
    return [
        PY,
        "-c",
        f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); "
        "s.sendall(b'hello'); s.close()",
    ]


@pytest.mark.parametrize("profile", PROFILES)
def test_tcp_to_a_loopback_server_fails_without_allow_net(
    profile: SandboxProfile, repo: Path, tcp_server: tuple[int, list[bytes]]
) -> None:
    _require(profile)
    port, received = tcp_server
    denied = run_managed(ExecSpec(argv=_connect(port), sandbox=profile, workspace=str(repo)))
    assert denied.exit_code != 0
    assert received == []
    assert denied.sandbox.network != "none"
    allowed = run_managed(
        ExecSpec(argv=_connect(port), sandbox=profile, workspace=str(repo), allow_net=True)
    )
    assert allowed.exit_code == 0, allowed.stderr.head
    assert received == [b"hello"]
    assert allowed.sandbox.network == "none"
    assert any("--allow-net" in line for line in allowed.sandbox.does_not_confine)


def test_udp_does_not_leave_a_network_namespace_sandbox(repo: Path) -> None:
    _require("read-only")
    status = sandbox_module.profile_status("read-only", allow_net=False)
    if status.network != "netns":
        pytest.skip(f"network confinement here is {status.network}, which does not cover UDP")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(0.3)
        port = udp.getsockname()[1]
        send = (
            "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
            f".sendto(b'x', ('127.0.0.1', {port}))"
        )
        run_managed(ExecSpec(argv=[PY, "-c", send], sandbox="read-only"))
        with pytest.raises(TimeoutError):
            udp.recv(10)
        run_managed(ExecSpec(argv=[PY, "-c", send], sandbox="read-only", allow_net=True))
        assert udp.recv(10) == b"x"


def test_a_missing_binary_under_the_sandbox_is_a_spawn_error(repo: Path) -> None:
    _require("read-only")
    outcome = run_managed(ExecSpec(argv=["ax-no-such-binary-xyz"], sandbox="read-only"))
    assert outcome.termination == "spawn-error"
    assert outcome.error is not None and "ax-no-such-binary-xyz" in outcome.error


def test_the_probe_reports_what_it_verified() -> None:
    probe = probe_sandbox()
    names = [backend.backend for backend in probe.backends]
    assert names == ["landlock", "none"]
    landlock, none = probe.backends
    assert none.available and not none.enforced
    if not landlock.enforced:
        assert probe.selected == "none"
        pytest.skip(f"Landlock is not enforced here: {landlock.reason}")
    assert probe.selected == "landlock"
    assert landlock.abi is not None and landlock.abi >= 3
    for status in landlock.profiles:
        assert status.enforced
        assert status.confines and status.does_not_confine
        assert any(line.startswith("reads") for line in status.does_not_confine)
        if status.network == "landlock-tcp":
            assert any("UDP" in line for line in status.does_not_confine)
    # Round trip through the JSON contract.
    assert SandboxProbe.model_validate(probe.to_json()) == probe


def test_no_enforced_backend_fails_closed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Simulated: this machine has Landlock, so a probe that found none is injected
    # to check that a sandboxed run is then refused rather than run unconfined.
    unavailable = SandboxProbe(
        selected="none",
        backends=[
            {"backend": "landlock", "available": False, "enforced": False, "reason": "simulated"},
            {"backend": "none", "available": True, "enforced": False},
        ],
    )
    monkeypatch.setattr(sandbox_module, "_cached_probe", unavailable)
    target = tmp_path / "must-not-exist"
    outcome = run_managed(ExecSpec(argv=["touch", str(target)], sandbox="read-only"))
    assert outcome.termination == "spawn-error"
    assert outcome.error is not None and "simulated" in outcome.error
    assert outcome.sandbox.enforced is False and outcome.sandbox.backend == "none"
    assert not target.exists()


def test_landlock_tcp_fallback_denies_tcp_and_says_udp_passes(
    tmp_path: Path, tcp_server: tuple[int, list[bytes]]
) -> None:
    # The fallback used where no network namespace can be made: run it directly
    # through the launcher so it is exercised even on this machine, which has netns.
    _require("read-only")
    abi, _ = landlock_abi()
    if abi < 4:
        pytest.skip(f"Landlock ABI {abi} has no network rules (needs 4)")
    port, received = tcp_server
    script = (
        "import socket, sys\n"
        "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"u.sendto(b'udp', ('127.0.0.1', int(sys.argv[1])))\n"
        f"socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(2)
        status_r, status_w = os.pipe()
        config = sandbox_module.launch_config("read-only", tmp_path, None, "landlock-tcp", status_w)
        argv = [PY, "-c", script, str(udp.getsockname()[1])]
        done = subprocess.run(
            sandbox_module.launcher_command(config, argv),
            capture_output=True,
            text=True,
            pass_fds=[status_w],
            timeout=30,
            check=False,
        )
        os.close(status_w)
        os.close(status_r)
        assert "PermissionError" in done.stderr, done.stderr
        assert received == []
        assert udp.recv(10) == b"udp"
    _, unconfined = sandbox_module.network_lines("landlock-tcp", allow_net=False)
    assert any(line.startswith("UDP") for line in unconfined)


@pytest.fixture
def as_nobody(world_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run Python code as uid/gid 65534 with ax_exec importable, or skip saying why."""
    return nobody_runner(world_dir, ["ax_exec.cli", "ax_exec.sandbox"])


_CAN_UNSHARE_USER = (
    "import ctypes, sys\nsys.exit(ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0)\n"
)


def _nobody_has_user_namespaces(as_nobody: Callable[..., subprocess.CompletedProcess[str]]) -> bool:
    return as_nobody(_CAN_UNSHARE_USER).returncode == 0


def _nobody_owns(*paths: Path) -> None:
    for path in paths:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def test_an_unprivileged_user_gets_the_same_sandbox(
    world_dir: Path, as_nobody: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    # As root the launcher unshares namespaces directly; everyone else goes through
    # a user namespace. Run the real code path as "nobody" to cover that branch.
    _require("workspace-write")
    if not _nobody_has_user_namespaces(as_nobody):
        pytest.skip(f"uid {NOBODY} cannot make a user namespace here (workspace-write needs one)")
    ws = world_dir / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "vendor" / "lib" / ".git").mkdir(parents=True)
    (ws / "vendor" / "lib" / ".git" / "config").write_text("[core]\n")
    outside = world_dir / "outside.txt"
    outside.write_text("outside\n")
    outside.chmod(0o644)
    _nobody_owns(ws, ws / ".git", ws / ".git" / "config", ws / "vendor", ws / "vendor" / "lib")
    _nobody_owns(ws / "vendor" / "lib" / ".git", ws / "vendor" / "lib" / ".git" / "config")
    _nobody_owns(outside)
    shell = (
        "echo ok > f; id -u; echo x > .git/config; echo x > vendor/lib/.git/config; "
        f"chmod 600 {outside}; touch -d 2001-01-01 {outside}; "
        f"python3 -c \"import os; os.setxattr('{outside}', 'user.x', b'1')\"; "
        f"chown {NOBODY}:{NOBODY} {outside}; true"
    )
    script = (
        "from ax_exec import ExecSpec, run_managed\n"
        f"o = run_managed(ExecSpec(shell={shell!r}, sandbox='workspace-write', cwd={str(ws)!r}))\n"
        "print(o.sandbox.enforced, o.exit_code, o.stdout.head.strip(), o.error)\n"
        "print(o.stderr.head)\n"
    )
    done = as_nobody(script)
    assert done.returncode == 0, done.stderr
    first, stderr = done.stdout.split("\n", 1)
    enforced, _, uid, _ = first.split(" ", 3)
    assert (enforced, uid) == ("True", str(NOBODY))
    assert stderr.count("Read-only file system") >= 6, stderr
    assert (ws / "f").read_text() == "ok\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / "vendor" / "lib" / ".git" / "config").read_text() == "[core]\n"
    info = outside.stat()
    assert stat.S_IMODE(info.st_mode) == 0o644 and info.st_mtime > 1e9 + 1e8
    assert os.listxattr(outside) == []


def _probe_json(done: subprocess.CompletedProcess[str]) -> SandboxProbe:
    assert done.returncode == 0, done.stderr
    return SandboxProbe.model_validate_json(done.stdout)


_PROBE_AS_JSON = "import sys\nfrom ax_exec.cli import main\nsys.exit(main(['probe', '--json']))\n"


def _metadata_confined(status: SandboxStatus) -> bool:
    return any(line.startswith("changes to the permissions") for line in status.confines)


def test_the_probe_as_an_unprivileged_user_confines_the_same(
    as_nobody: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    _require("workspace-write")
    if not _nobody_has_user_namespaces(as_nobody):
        pytest.skip(
            f"uid {NOBODY} cannot make a user namespace here; "
            "test_without_user_namespaces_metadata_is_reported_not_confined covers that case"
        )
    probe = _probe_json(as_nobody(_PROBE_AS_JSON))
    assert probe.uid == NOBODY and probe.selected == "landlock"
    (landlock, _) = probe.backends
    for status in landlock.profiles:
        assert status.enforced, status.reason
        assert status.read_only_mounts and _metadata_confined(status)
        assert any(
            line.startswith("capabilities: the command holds none") for line in status.confines
        )
        assert any(line.startswith("opening files by handle") for line in status.confines)


# Refuses every unshare(2), as a system without user namespaces for this user would.
_NO_NAMESPACES = """
import ctypes, os, struct, sys
from ax_exec.launcher import SYSCALL_TABLES
import platform
unshare = SYSCALL_TABLES[platform.machine()].namespaces["unshare"]
program = b"".join(
    struct.pack("=HBBI", *insn)
    for insn in [
        (0x20, 0, 0, 0), (0x15, 0, 1, unshare), (0x06, 0, 0, 0x50001), (0x06, 0, 0, 0x7FFF0000)
    ]
)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(program, len(program))
prog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
assert libc.prctl(38, 1, 0, 0, 0) == 0
filter_mode = (ctypes.c_int(22), ctypes.c_ulong(2), ctypes.byref(prog))
assert libc.prctl(*filter_mode, ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_without_user_namespaces_metadata_is_reported_not_confined(
    as_nobody: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    # No mount namespace can be made: read-only stays enforced (Landlock, no
    # capabilities, seccomp) and says metadata changes are not confined;
    # workspace-write cannot protect .git and is not enforced.
    _require("read-only")
    wrapper = tmp_path / "no_namespaces.py"
    wrapper.write_text(_NO_NAMESPACES)
    wrapper.chmod(0o644)
    tmp_path.chmod(0o755)
    prefix = [PY, str(wrapper)]
    done = as_nobody(_PROBE_AS_JSON, prefix=prefix)
    probe = _probe_json(done)
    read_only, workspace_write = probe.backends[0].profiles
    assert read_only.enforced and not read_only.read_only_mounts
    assert not _metadata_confined(read_only)
    assert any(
        line.startswith("changes to the permissions") and "no private mount namespace" in line
        for line in read_only.does_not_confine
    )
    assert not workspace_write.enforced
    assert workspace_write.reason is not None and "unshare" in workspace_write.reason


def test_a_timeout_shorter_than_the_launch_is_a_timeout() -> None:
    _require("read-only")
    outcome = run_managed(ExecSpec(argv=["true"], sandbox="read-only", timeout_s=0.001))
    assert outcome.termination == "timeout"
    assert outcome.exit_code is None
    assert outcome.kill.verified


# --- root keeps nothing: capabilities, seccomp, devices, handles --------------------------

_ESCAPES = r"""
import ctypes, errno, json, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode[exc.errno]
def call(result):
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result
def by_handle(mount):
    handle = ctypes.create_string_buffer(bytes.fromhex(sys.argv[1]))
    fd = os.open(mount, os.O_RDONLY)
    new = call(libc.open_by_handle_at(fd, handle, os.O_RDWR))
    os.write(new, b"[core]\\n\\tfsmonitor = touch planted\\n")
attempt("handleViaWorkspace", lambda: by_handle(sys.argv[2]))
attempt("handleViaTmpdir", lambda: by_handle(os.environ["TMPDIR"]))
node = os.path.join(os.environ["TMPDIR"], "kmsg")
attempt("mknodChar", lambda: os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 11)))
attempt("mknodBlock", lambda: os.mknod(node + "b", stat.S_IFBLK | 0o600, os.makedev(7, 0)))
attempt("writeNode", lambda: os.close(os.open(node, os.O_WRONLY)))
attempt("kmsg", lambda: os.close(os.open("/dev/kmsg", os.O_WRONLY)))
domain = open("/proc/sys/kernel/domainname", "rb").read().strip()
attempt("setdomainname", lambda: call(libc.setdomainname(domain, len(domain))))
host = os.uname().nodename.encode()
attempt("sethostname", lambda: call(libc.sethostname(host, len(host))))
attempt("userns", lambda: call(libc.unshare(0x10000000)))
status = {}
for line in open("/proc/self/status"):
    key, _, value = line.partition(":")
    if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
        status[key] = value.strip()
out["status"] = status
print(json.dumps(out))
"""


@pytest.mark.parametrize("profile", PROFILES)
def test_root_escapes_are_refused(profile: SandboxProfile, repo: Path) -> None:
    # The reviewer's escapes as root: a write to .git/config through a file handle,
    # device nodes in TMPDIR (and /dev/kmsg through one), changing the host's names.
    _require(profile)
    handle = sandbox_module._file_handle(repo / ".git" / "config")
    if handle is None:
        pytest.skip(f"the filesystem of {repo} has no file handles")
    outcome = run_managed(
        ExecSpec(
            argv=[PY, "-c", _ESCAPES, handle, str(repo)],
            sandbox=profile,
            cwd=str(repo),
            workspace=str(repo),
        )
    )
    assert outcome.exit_code == 0, outcome.stderr.head
    found = json.loads(outcome.stdout.head)
    status = found.pop("status")
    refused = {"EPERM", "EACCES", "EROFS"}
    assert all(result in refused for result in found.values() if result != "ENOENT"), found
    assert found["writeNode"] == "ENOENT"  # never made
    assert found["handleViaWorkspace"] == "EPERM" and found["setdomainname"] == "EPERM"
    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert not (repo / "planted").exists()
    assert {key: value for key, value in status.items() if key.startswith("Cap")} == {
        key: "0000000000000000" for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    }
    assert (status["NoNewPrivs"], status["Seccomp"]) == ("1", "2")


_FILTER_ALONE = r"""
import ctypes, errno, json, os, stat, sys
from ax_exec import launcher, sandbox
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
calls = sandbox.probe_calls(launcher.syscall_table())
def run(number, args):
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]
def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
# unshare(CLONE_NEWUSER) is real: leave it out of the unfiltered round.
before = {name: run(number, args) for name, number, args, _ in calls if name != "unshare"}
assert libc.prctl(38, 1, 0, 0, 0) == 0
launcher.install_seccomp(libc)
after = {name: run(number, args) for name, number, args, _ in calls}
folder = sys.argv[1]
allowed = {
    "fifo": attempt(lambda: os.mkfifo(os.path.join(folder, "fifo"))),
    "regular": attempt(lambda: os.mknod(os.path.join(folder, "reg"), stat.S_IFREG | 0o600)),
    "socket": attempt(lambda: os.mknod(os.path.join(folder, "sock"), stat.S_IFSOCK | 0o600)),
    "unshareFiles": run(launcher.syscall_table().namespaces["unshare"], [0x400]),
    "fork": attempt(lambda: os.waitpid(os.fork() or os._exit(0), 0)),
}
print(json.dumps({"before": before, "after": after, "allowed": allowed}))
"""


def _unconfined_root() -> bool:
    """Root with CAP_SYS_ADMIN and no seccomp filter (not a container's): the kernel
    then answers each call by its arguments, never EPERM, without our filter."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    cap_sys_admin = 21
    return (
        os.geteuid() == 0
        and bool(int(status["CapEff"], 16) & (1 << cap_sys_admin))
        and status["Seccomp"].strip() == "0"
    )


def test_the_seccomp_filter_alone_refuses_each_call(tmp_path: Path) -> None:
    # The filter on its own (no capability drop, no Landlock): each refused call
    # answers EPERM (clone3 ENOSYS), while fifos, sockets, regular nodes, other
    # unshare flags and fork still work. As root the unfiltered round is the control.
    table = launcher_module.syscall_table()
    if table is None:
        pytest.skip(f"no seccomp table for {platform.machine()}")
    done = subprocess.run(
        [PY, "-c", _FILTER_ALONE, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    expected = {name: answer for name, _, _, answer in sandbox_module.probe_calls(table)}
    assert found["after"] == expected
    assert set(found["allowed"].values()) == {"ok"}, found["allowed"]
    if _unconfined_root():
        let_through = {n for n, result in found["before"].items() if result == expected[n]}
        # io_uring may be disabled system-wide (kernel.io_uring_disabled=2 answers EPERM).
        assert let_through <= {"io_uring_setup"}, found["before"]


_I386_GETPID = r"""
import ctypes, mmap, os
from ax_exec import launcher
# mov eax, 20 (getpid in the i386 table); int 0x80; ret
code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
getpid = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
print(getpid() == os.getpid(), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0
launcher.install_seccomp(libc)
print(getpid())
"""


def test_i386_system_calls_are_refused(tmp_path: Path) -> None:
    # The i386 table numbers calls differently (20 is getpid there, mount is 21):
    # the filter refuses every call made through int 0x80.
    if platform.machine() != "x86_64":
        pytest.skip("int 0x80 is an x86_64 question")
    done = subprocess.run([PY, "-c", _I386_GETPID], capture_output=True, text=True, check=False)
    if done.returncode < 0 and not done.stdout:
        pytest.skip(f"this kernel has no i386 emulation (signal {-done.returncode})")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", str(-errno.EPERM)]


def test_an_architecture_without_a_table_is_not_enforced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No syscall numbers, no filter: the launcher refuses to set up, and the probe
    # reports the sandbox as not enforced, so nothing auto-runs.
    with monkeypatch.context() as patched:
        patched.setattr(launcher_module.platform, "machine", lambda: "riscv64")
        with pytest.raises(launcher_module.SetupError, match="riscv64"):
            launcher_module.install_seccomp(launcher_module._libc())
    monkeypatch.setattr(sandbox_module, "syscall_table", lambda: None)
    monkeypatch.setattr(sandbox_module, "_cached_probe", None)
    probe = probe_sandbox(refresh=True)
    landlock = probe.backends[0]
    assert probe.selected == "none" and not landlock.enforced
    assert landlock.reason is not None and "seccomp" in landlock.reason
    outcome = run_managed(ExecSpec(argv=["touch", str(tmp_path / "x")], sandbox="read-only"))
    assert outcome.termination == "spawn-error" and not (tmp_path / "x").exists()


_LANDLOCK_ALONE = r"""
import os, stat, sys
from ax_exec import launcher
abi, _ = launcher.landlock_abi()
launcher.apply_landlock({"readPaths": ["/"], "writePaths": [sys.argv[1]]}, abi)
os.mkfifo(os.path.join(sys.argv[1], "fifo"))
try:
    os.mknod(os.path.join(sys.argv[1], "null"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
except PermissionError:
    print("refused")
"""


def test_landlock_alone_grants_no_device_nodes_even_in_a_writable_root(tmp_path: Path) -> None:
    # Third layer under the seccomp filter and the dropped CAP_MKNOD: as root with
    # every capability, Landlock alone refuses a device node in TMPDIR.
    _require("read-only")
    done = subprocess.run(
        [PY, "-c", _LANDLOCK_ALONE, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
    assert (tmp_path / "fifo").exists() and not (tmp_path / "null").exists()


# --- metadata outside the roots -----------------------------------------------------------

_METADATA = r"""
import errno, json, os, sys
out = {}
for path in sys.argv[1:]:
    for name, action in (
        ("chmod", lambda: os.chmod(path, 0o600)),
        ("utime", lambda: os.utime(path, (0, 0))),
        ("setxattr", lambda: os.setxattr(path, "user.planted", b"1")),
        ("chown", lambda: os.chown(path, os.getuid(), os.getgid())),
    ):
        try:
            action()
            out[f"{name} {path}"] = "ok"
        except OSError as exc:
            out[f"{name} {path}"] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


@pytest.mark.parametrize("profile", PROFILES)
def test_metadata_changes_outside_the_roots_are_refused(
    profile: SandboxProfile, repo: Path, tmp_path: Path
) -> None:
    _require(profile)
    if not sandbox_module.profile_status(profile, allow_net=False).read_only_mounts:
        pytest.skip(
            "no mount namespace here, so metadata changes are reported as not confined "
            "(test_without_user_namespaces_metadata_is_reported_not_confined)"
        )
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    outside.chmod(0o644)
    targets = [outside, repo / ".git" / "config"]
    if profile == "read-only":
        targets.append(repo / "src.txt")
    before = {path: (path.stat().st_mode, path.stat().st_mtime_ns) for path in targets}
    outcome = run_managed(
        ExecSpec(
            argv=[PY, "-c", _METADATA, *map(str, targets)],
            sandbox=profile,
            cwd=str(repo),
            workspace=str(repo),
        )
    )
    assert outcome.exit_code == 0, outcome.stderr.head
    found = json.loads(outcome.stdout.head)
    assert set(found.values()) == {"EROFS"}, found
    for path, (mode, mtime) in before.items():
        assert (path.stat().st_mode, path.stat().st_mtime_ns) == (mode, mtime)
        assert os.listxattr(path) == []
    assert _metadata_confined(outcome.sandbox) and outcome.sandbox.read_only_mounts


# --- every .git and .ax in the workspace ----------------------------------------------------


@pytest.fixture
def nested(repo: Path) -> Path:
    """A workspace holding repositories and ax folders below its top level."""
    (repo / "vendor" / "lib" / ".git").mkdir(parents=True)
    (repo / "vendor" / "lib" / ".git" / "config").write_text("[core]\n")
    (repo / "vendor" / "lib" / "code.py").write_text("code\n")
    # A submodule's gitfile naming a git directory elsewhere in the workspace.
    (repo / "modules" / "sub").mkdir(parents=True)
    (repo / "modules" / "sub" / "config").write_text("[core]\n")
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: ../modules/sub\n")
    # A .git that is a symlink to a folder inside the workspace.
    (repo / "real-gitdir").mkdir()
    (repo / "real-gitdir" / "config").write_text("[core]\n")
    (repo / "linked").mkdir()
    (repo / "linked" / ".git").symlink_to("../real-gitdir")
    # Named the way ax-policy matches protected segments: case-insensitively.
    (repo / "deep" / "er" / ".AX").mkdir(parents=True)
    return repo


_NESTED_TARGETS = (
    "vendor/lib/.git/config",
    "vendor/lib/.git/hooks-new",
    "sub/.git",
    "modules/sub/config",
    "real-gitdir/config",
    "deep/er/.AX/state.json",
    ".ax/state.json",
)


def test_every_git_and_ax_in_the_workspace_is_read_only(nested: Path) -> None:
    _require("workspace-write")
    spec = {"sandbox": "workspace-write", "cwd": str(nested), "workspace": str(nested)}
    before = {
        target: (nested / target).read_bytes() if (nested / target).exists() else None
        for target in _NESTED_TARGETS
    }
    for target in _NESTED_TARGETS:
        outcome = run_managed(ExecSpec(argv=_write(nested / target), **spec))
        assert outcome.exit_code != 0, target
        assert "Read-only file system" in outcome.stderr.head, (target, outcome.stderr.head)
    moved = run_managed(ExecSpec(shell="mv vendor/lib/.git vendor/lib/git-old", **spec))
    assert moved.exit_code != 0
    ok = run_managed(
        ExecSpec(shell="echo new > vendor/lib/code.py && chmod 600 sub/.git || true", **spec)
    )
    assert ok.exit_code == 0, ok.stderr.head
    assert (nested / "vendor" / "lib" / "code.py").read_text() == "new\n"
    after = {
        target: (nested / target).read_bytes() if (nested / target).exists() else None
        for target in _NESTED_TARGETS
    }
    assert after == before
    assert stat.S_IMODE((nested / "sub" / ".git").stat().st_mode) != 0o600


def test_a_working_directory_inside_git_does_not_reach_past_the_bind(repo: Path) -> None:
    _require("workspace-write")
    outcome = run_managed(
        ExecSpec(
            argv=_write("config"),
            sandbox="workspace-write",
            cwd=str(repo / ".git"),
            workspace=str(repo),
        )
    )
    assert outcome.exit_code != 0
    assert (repo / ".git" / "config").read_text() == "[core]\n"


def test_the_walk_finds_protected_folders_and_follows_no_symlink(
    nested: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "inner" / ".git").mkdir(parents=True)
    (nested / "out-link").symlink_to(elsewhere)
    (nested / "out-git").mkdir()
    (nested / "out-git" / ".git").symlink_to(elsewhere / "inner" / ".git")
    found = launcher_module.find_protected(str(nested), [".git", ".ax"])
    assert found == sorted(
        str(nested / rel)
        for rel in (
            ".ax",
            ".git",
            "deep/er/.AX",
            "modules/sub",
            "real-gitdir",
            "sub/.git",
            "vendor/lib/.git",
        )
    )


def test_the_walk_is_bounded_and_fails_closed(tmp_path: Path) -> None:
    for index in range(30):
        (tmp_path / f"f{index}").touch()
    with pytest.raises(launcher_module.SetupError, match="MAX_SCAN_ENTRIES") as raised:
        launcher_module.find_protected(str(tmp_path), [".git"], limit=20)
    assert raised.value.stage == "protect" and "smaller workspace" in raised.value.message
    many = tmp_path / "many"
    for index in range(launcher_module.MAX_PROTECTED_PATHS + 1):
        (many / f"r{index}" / ".git").mkdir(parents=True)
    with pytest.raises(launcher_module.SetupError, match="MAX_PROTECTED_PATHS"):
        launcher_module.find_protected(str(many), [".git"])


# --- a normal workload still works ------------------------------------------------------------


def test_a_normal_workload_runs_under_workspace_write(tmp_path: Path) -> None:
    _require("workspace-write")
    git = shutil.which("git")
    if git is None:
        pytest.skip("needs git for the git status step")
    ws = tmp_path / "proj"
    ws.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ["PATH"]}
    for args in (
        ["init", "-q"],
        [
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ):
        subprocess.run([git, *args], cwd=ws, env=env, check=True)
    (ws / "test_unit.py").write_text(
        "import os, tempfile\n"
        "def test_scratch_and_workspace():\n"
        "    with tempfile.NamedTemporaryFile(dir=os.environ['TMPDIR']) as f:\n"
        "        f.write(b'x')\n"
        "    with open('made-by-test.txt', 'w') as f:\n"
        "        f.write('y')\n"
    )
    shell = (
        "set -e\n"
        f"{PY} -c \"open('gen.txt', 'w').write('x')\"\n"
        "chmod 600 gen.txt\n"
        "echo discard > /dev/null\n"
        "seq 1 5 | sort -r | head -1\n"
        'mkfifo "$TMPDIR/fifo"\n'
        f"{PY} -m pytest -q -p no:cacheprovider test_unit.py\n"
        f"{git} status --porcelain\n"
    )
    outcome = run_managed(
        ExecSpec(shell=shell, sandbox="workspace-write", cwd=str(ws), workspace=str(ws), env=env)
    )
    assert outcome.exit_code == 0, outcome.stdout.head + outcome.stderr.head
    lines = outcome.stdout.head.splitlines()
    assert lines[0] == "5" and "1 passed" in outcome.stdout.head
    assert "?? gen.txt" in lines and "?? made-by-test.txt" in lines
    assert stat.S_IMODE((ws / "gen.txt").stat().st_mode) == 0o600


# --- the probe judges its child ---------------------------------------------------------------

_CRIPPLED = """
import sys
sys.path.insert(0, {folder!r})
import launcher
{patch}
sys.exit(launcher.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ("launcher.drop_capabilities = lambda libc: None", "capabilities still held"),
        ("launcher.install_seccomp = lambda libc: None", "no seccomp filter"),
        (
            "launcher.find_protected = lambda root, names: [root + '/.git', root + '/.ax']",
            "nestedGit (ok)",
        ),
        ("launcher._gitfile_target = lambda path: None", "gitFileDir (ok)"),
        ("launcher.DEVICE_NODE_RIGHTS = 0", None),
    ],
)
def test_the_probe_refuses_a_sandbox_whose_child_was_not_confined(
    patch: str, expected: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A launcher with one step missing: the probe's child must catch it (or, for a
    # layer another one backs up, still see the action refused).
    _require("workspace-write")
    crippled = tmp_path / "launcher.py"
    crippled.write_text(
        _CRIPPLED.format(folder=str(Path(launcher_module.__file__).parent), patch=patch)
    )
    monkeypatch.setattr(sandbox_module, "LAUNCHER", crippled)
    monkeypatch.setattr(sandbox_module, "_cached_probe", None)
    status = sandbox_module.profile_status("workspace-write", allow_net=False)
    if expected is None:
        assert status.enforced, status.reason
        return
    assert not status.enforced
    assert status.reason is not None and expected in status.reason


def test_the_probe_claims_metadata_only_when_its_child_was_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for profile in PROFILES:
        _require(profile)
    crippled = tmp_path / "launcher.py"
    patch = "launcher._read_only_tree = lambda libc, writable: None"
    crippled.write_text(
        _CRIPPLED.format(folder=str(Path(launcher_module.__file__).parent), patch=patch)
    )
    monkeypatch.setattr(sandbox_module, "LAUNCHER", crippled)
    monkeypatch.setattr(sandbox_module, "_cached_probe", None)
    for profile in PROFILES:
        status = sandbox_module.profile_status(profile, allow_net=False)
        assert status.enforced, status.reason
        assert not _metadata_confined(status)
        assert any(
            line.startswith("changes to the permissions") and "not refused" in line
            for line in status.does_not_confine
        )
