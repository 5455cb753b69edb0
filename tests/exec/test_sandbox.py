"""The sandbox with real confined children. Skipped, with the probe's reason, where
Landlock is not enforced on this machine; never passed without it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ax_exec import ExecSpec, SandboxProbe, SandboxProfile, probe_sandbox, run_managed
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
    assert "Permission denied" in outcome.stderr.head + outcome.stderr.tail
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
    _, unconfined = sandbox_module.describe("read-only", abi, "landlock-tcp", allow_net=False)
    assert any(line.startswith("UDP") for line in unconfined)


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A folder "nobody" can reach (pytest's tmp_path sits under a root-only folder)."""
    folder = Path(tempfile.mkdtemp(prefix="ax-exec-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_unprivileged_user_gets_the_same_sandbox(world_dir: Path) -> None:
    # As root the launcher unshares namespaces directly; everyone else goes through
    # a user namespace. Run the real code path as "nobody" to cover that branch.
    _require("workspace-write")
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: the other sandbox tests cover this path")
    setpriv = shutil.which("setpriv")
    system_python = shutil.which("python3", path="/usr/bin")
    if setpriv is None or system_python is None:
        pytest.skip("needs setpriv and /usr/bin/python3 to drop privileges")
    version = subprocess.run(
        [system_python, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version}, cannot load this venv's packages")
    ws = world_dir / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    shutil.chown(ws, 65534, 65534)
    shutil.chown(ws / ".git", 65534, 65534)
    shutil.chown(ws / ".git" / "config", 65534, 65534)
    import pydantic

    import ax_exec

    path = os.pathsep.join(
        [
            str(Path(ax_exec.__file__).parent.parent),
            str(Path(pydantic.__file__).parent.parent),
            str(Path(__file__).parents[2]),
        ]
    )
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", system_python]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(world_dir), "PYTHONPATH": path}
    readable = subprocess.run(
        [*drop, "-c", "import ax_exec, pydantic"], capture_output=True, env=env, check=False
    )
    if readable.returncode != 0:
        pytest.skip(f"uid 65534 cannot import the installed packages from {path}")
    script = (
        "from ax_exec import ExecSpec, run_managed\n"
        f"o = run_managed(ExecSpec(shell='echo ok > f; id -u; echo x > .git/config',"
        f" sandbox='workspace-write', cwd={str(ws)!r}))\n"
        "print(o.sandbox.enforced, o.exit_code, o.stdout.head.strip(), o.stderr.head.strip(),"
        " o.error)\n"
    )
    done = subprocess.run(
        [*drop, "-c", script], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    enforced, exit_code, uid, error = done.stdout.strip().split(" ", 3)
    assert (enforced, uid) == ("True", "65534")
    assert exit_code != "0" and "Read-only file system" in error
    assert (ws / "f").read_text() == "ok\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


def test_a_timeout_shorter_than_the_launch_is_a_timeout() -> None:
    _require("read-only")
    outcome = run_managed(ExecSpec(argv=["true"], sandbox="read-only", timeout_s=0.001))
    assert outcome.termination == "timeout"
    assert outcome.exit_code is None
    assert outcome.kill.verified
