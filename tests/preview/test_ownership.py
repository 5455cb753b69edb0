"""The port that counts is the one the server announced as its own, held by its own tree.

Real servers through the installed ``ax-preview``: a Vite-like dev server that
complains about its default port (held by a foreign listener this test starts)
and moves to another; a server that announces a port some other process owns;
servers that print no address at all, started with ``--port``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Short: the failing cases wait out the whole ready timeout.
FAIL_TIMEOUT = "2"


@dataclass(frozen=True)
class Foreign:
    """An HTTP server outside any preview's tree, holding a loopback port."""

    port: int
    pid: int


@pytest.fixture
def foreign(projects: Path) -> Iterator[Foreign]:
    server = subprocess.Popen(
        [sys.executable, str(projects / "pyserver.py"), "announce"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"port (\d+)", line)
        assert match, line
        yield Foreign(int(match.group(1)), server.pid)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


@pytest.fixture
def start(
    pv: Any, tool_path: Callable[[str], str]
) -> Callable[..., tuple[int, dict[str, Any], str]]:
    """Run the installed ``ax-preview start`` on a fixture project: (exit code, JSON, stderr)."""

    def run(project: str, *extra: str) -> tuple[int, dict[str, Any], str]:
        argv = [tool_path("preview"), "start", "-C", str(pv.ws), "--project", project]
        done = subprocess.run(
            [*argv, *extra], capture_output=True, text=True, timeout=60, check=False
        )
        return done.returncode, json.loads(done.stdout), done.stderr

    return run


def test_a_port_named_in_a_complaint_is_never_taken_for_the_servers_own(
    pv: Any, start: Any, foreign: Foreign, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As Vite: "Port 5173 is in use, trying another one..." then "Local: http://localhost:5174/".
    # The foreign server answers HTTP on the complained-about port.
    monkeypatch.setenv("AX_FIXTURE_PORT", str(foreign.port))
    code, result, stderr = start("busy")
    assert code == 0, (result, stderr)
    log = Path(result["logPath"]).read_text()
    assert f"Port {foreign.port} is in use" in log
    announced = int(re.findall(r"Local:\s+http://localhost:(\d+)/", log)[-1])
    assert result["url"] == f"http://127.0.0.1:{announced}/"
    assert announced != foreign.port
    owner = result["ownership"]
    assert owner["status"] == "verified"
    assert owner["port"] == announced
    assert owner["pid"] != foreign.pid
    assert "pyserver.py busy" in owner["command"]
    assert result["note"].startswith("socket ownership verified: pid ")
    assert pv.stop(result["id"]).exit_code == 0


def test_a_server_announcing_a_port_another_process_owns_is_not_ready(
    pv: Any, start: Any, foreign: Foreign, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AX_FIXTURE_PORT", str(foreign.port))
    code, result, stderr = start("lie", "--ready-timeout", FAIL_TIMEOUT)
    assert code == 1, result
    assert result["state"] == "failed"
    assert result["url"] is None
    assert result["reason"] == "port-owned-by-another-process"
    owner = result["ownership"]
    assert owner["status"] == "other-owner"
    assert (owner["port"], owner["pid"]) == (foreign.port, foreign.pid)
    assert "pyserver.py announce" in owner["command"]
    assert f"pid {foreign.pid}" in result["hint"]
    assert "hint: port" in stderr
    record = pv.record(result["id"])
    assert record["stopReason"] == "not-ready"
    assert record["ownership"]["pid"] == foreign.pid
    assert pv.tree_gone(record)
    # The foreign server was never touched.
    assert fetch(f"http://127.0.0.1:{foreign.port}/") == b"hello from the fixture\n"


def test_a_server_that_prints_no_address_starts_with_a_port_hint(pv: Any, start: Any) -> None:
    port = free_port()
    code, result, stderr = start("envport", "--port", str(port))
    assert code == 0, (result, stderr)
    assert result["url"] == f"http://127.0.0.1:{port}/"
    assert result["ownership"]["status"] == "verified"
    assert fetch(result["url"]) == b"hello from the fixture\n"
    assert pv.record(result["id"])["portHint"] == port
    rows = pv.rows()
    assert [row["state"] for row in rows] == ["ready"]
    assert rows[0]["ownership"]["status"] == "verified"
    assert pv.stop(result["id"]).exit_code == 0


def test_express_generator_style_npm_start_with_a_port_hint(pv: Any, start: Any) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the package.json fixture")
    # npm -> sh -> node, listening on every address (::) of $PORT, printing nothing.
    port = free_port()
    code, result, stderr = start("node-silent", "--script", "start", "--port", str(port))
    assert code == 0, (result, stderr)
    assert result["url"] == f"http://127.0.0.1:{port}/"
    owner = result["ownership"]
    assert owner["status"] == "verified"
    assert "nodeserver.js silent" in owner["command"]
    assert owner["pid"] != result["pid"]  # node, below npm and sh
    assert pv.stop(result["id"]).exit_code == 0


def test_a_silent_server_without_a_hint_fails_saying_what_to_do(pv: Any, start: Any) -> None:
    code, result, stderr = start("silent", "--ready-timeout", FAIL_TIMEOUT)
    assert code == 1
    assert result["reason"] == "no-port-announced"
    assert "--port N" in result["hint"]
    assert "--port N" in stderr


def test_a_port_hint_held_by_another_process_is_not_ready(
    pv: Any, start: Any, foreign: Foreign
) -> None:
    # The silent server listens elsewhere; the hinted port answers, but not from its tree.
    code, result, _ = start("silent", "--port", str(foreign.port), "--ready-timeout", FAIL_TIMEOUT)
    assert code == 1, result
    assert result["reason"] == "port-owned-by-another-process"
    assert result["ownership"]["pid"] == foreign.pid


def test_a_hint_nobody_serves_says_so(pv: Any, start: Any) -> None:
    port = free_port()
    code, result, _ = start("silent", "--port", str(port), "--ready-timeout", FAIL_TIMEOUT)
    assert code == 1
    assert result["reason"] == "no-answer"
    assert f"port {port} (from --port)" in result["hint"]


@pytest.mark.parametrize("port", ["0", "65536", "-1"])
def test_a_port_out_of_range_is_refused(
    pv: Any, tool_path: Callable[[str], str], state_dir: Path, port: str
) -> None:
    argv = [tool_path("preview"), "start", "-C", str(pv.ws), "--project", "envport"]
    done = subprocess.run(
        [*argv, f"--port={port}"], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2, done.stderr
    assert "--port" in done.stderr
    assert not any(state_dir.rglob("pv-*"))


def test_the_server_gets_port_in_its_environment(pv: Any, tmp_path: Path) -> None:
    from ax_preview.supervisor import server_environment

    env = server_environment({"PATH": "/usr/bin", "HOME": "/h"}, "tok", 4321, None)
    assert env["PORT"] == "4321"
    assert "PORT" not in server_environment({"PATH": "/usr/bin"}, "tok", None, None)
    venv = str(tmp_path / ".venv")
    env = server_environment({"PATH": "/usr/bin", "PYTHONHOME": "/x"}, "tok", None, venv)
    assert env["PATH"] == os.pathsep.join([f"{venv}/bin", "/usr/bin"])
    assert env["VIRTUAL_ENV"] == venv
    assert "PYTHONHOME" not in env


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="ax-preview is not running in a venv")
def test_ax_previews_own_venv_never_reaches_the_servers_path(tmp_path: Path) -> None:
    # Its python or gunicorn would serve the project with ax's packages.
    from ax_preview.supervisor import server_environment

    own_bin = os.path.join(sys.prefix, "bin")
    parent = {"PATH": os.pathsep.join([own_bin, "/usr/bin"]), "VIRTUAL_ENV": sys.prefix}
    env = server_environment(parent, "tok", None, None)
    assert env["PATH"] == "/usr/bin" and "VIRTUAL_ENV" not in env
    venv = str(tmp_path / ".venv")
    env = server_environment(parent, "tok", None, venv)
    assert env["PATH"] == os.pathsep.join([f"{venv}/bin", "/usr/bin"])
    assert env["VIRTUAL_ENV"] == venv
