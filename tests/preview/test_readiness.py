"""Port parsing from server output, and the HTTP probe against real loopback sockets."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ax_preview import readiness
from libcommon import procfs
from libcommon.ansi import strip_ansi


def test_strip_ansi_removes_colour_inside_a_url() -> None:
    text = "\x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m"
    assert strip_ansi(text) == "http://localhost:5173/"


@pytest.mark.parametrize(
    ("line", "ports"),
    [
        ("  ➜  Local:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m", [5173]),
        ("Serving HTTP on :: port 8000 (http://[::]:8000/) ...", [8000]),
        ("Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ...", [41234]),
        ("listening on 0.0.0.0:3000", [3000]),
        ("Server running at http://[::1]:4000/", [4000]),
        ("PORT=4321", [4321]),
        ("ready - started server on :3001", [3001]),
        ("compiled in 12:30:45, 99 modules", []),
        ("no address here at all", []),
        ("http://localhost:70000/ is not a port", []),
        # The latest announcement wins.
        ("Local: http://localhost:5173/\nNetwork: http://192.168.1.4:5174/", [5174, 5173]),
        ("Accepting connections at http://localhost:3000", [3000]),
        # Vite, when its default port is taken.
        (
            "Port 5173 is in use, trying another one...\n\n  VITE v5.0.0  ready in 312 ms\n\n"
            "  ➜  Local:   http://localhost:5174/\n  ➜  Network: use --host to expose\n",
            [5174],
        ),
        # A complaint withdraws what was announced before it.
        (
            "Local: http://localhost:3000/\n"
            "Error: listen EADDRINUSE: address already in use :::3000",
            [],
        ),
        ("will listen on port 8000\nport 8000 already taken, trying 8001\nport 8001", [8001]),
        ("Something is already running on port 3000.", []),
        ("Failed to bind 127.0.0.1:8080", []),
        ("OSError: [Errno 98] Address in use: ('127.0.0.1', 8000)", []),
        # Addresses the server talks to are not its own.
        (
            "[HPM] Proxy created: /api  -> http://localhost:8000\nLocal: http://localhost:5173/",
            [5173],
        ),
        ("Local: http://localhost:5173/\nconnecting to redis at localhost:6379", [5173]),
        ("Local:\r http://localhost:4000/\rpress h for help", [4000]),
    ],
)
def test_announced_ports(line: str, ports: list[int]) -> None:
    assert readiness.announced_ports(line) == ports


def test_a_line_still_being_written_is_read_once_it_stays_the_same(tmp_path: Path) -> None:
    from ax_preview.supervisor import LogScanner

    log = tmp_path / "server.log"
    log.write_text("Local: http://localhost:3000/\nPort 5173 is in u")
    scanner = LogScanner(log)
    # The cut line could still turn into a complaint: not read yet.
    assert scanner.ports() == [3000]
    with log.open("a") as handle:
        handle.write("se, trying another one...")
    assert scanner.ports() == [3000]
    # Unchanged since the last scan: whatever it is, it is complete as far as anyone knows.
    assert scanner.ports() == [3000]
    with log.open("a") as handle:
        handle.write("\nlistening on port 5174")
    assert scanner.ports() == [3000]
    assert scanner.ports() == [5174, 3000]


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


class _V6(http.server.HTTPServer):
    address_family = socket.AF_INET6


def _serve(server: http.server.HTTPServer) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def v4_server() -> Iterator[int]:
    yield from _serve(http.server.HTTPServer(("127.0.0.1", 0), _Quiet))


@pytest.fixture
def v6_server() -> Iterator[int]:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    try:
        server = _V6(("::1", 0), _Quiet)
    except OSError as exc:
        pytest.skip(f"::1 is not available here: {exc}")
    yield from _serve(server)


def test_probe_counts_any_http_status_as_an_answer(v4_server: int) -> None:
    assert readiness.probe("127.0.0.1", v4_server)
    found = readiness.assess([v4_server], lambda: [os.getpid()])
    assert found.url == f"http://127.0.0.1:{v4_server}/"


def test_probe_reaches_a_server_on_ipv6_loopback_only(v6_server: int) -> None:
    assert not readiness.probe("127.0.0.1", v6_server)
    assert readiness.assess([v6_server], lambda: [os.getpid()]).url == f"http://[::1]:{v6_server}/"


def test_probe_fails_on_a_closed_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert not readiness.probe("127.0.0.1", port)
    assert readiness.assess([port], lambda: [os.getpid()]) == readiness.Assessment(None, None, None)


def test_probe_fails_on_a_socket_that_does_not_speak_http() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def garbage() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.sendall(b"SSH-2.0-not-http\r\n")

    thread = threading.Thread(target=garbage, daemon=True)
    thread.start()
    try:
        assert not readiness.probe("127.0.0.1", port)
    finally:
        thread.join(timeout=5)
        listener.close()


# --- who holds the socket: real listeners, here and in another process ------------


def _listener(host: str, family: int = socket.AF_INET, reuse_port: bool = False) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


@pytest.fixture
def other_process() -> Iterator[tuple[int, int]]:
    """A listener on 127.0.0.1 held by another process: (its port, its pid)."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True); time.sleep(60)",
            # A secret on a command line must not reach what ax shows or records.
            "API_TOKEN=supersecretvalue123",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield int(child.stdout.readline()), child.pid
    finally:
        child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


def test_a_socket_this_tree_holds_is_verified() -> None:
    with _listener("127.0.0.1") as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        owner = readiness.ownership("127.0.0.1", port, [os.getpid()])
    assert owner.status == "verified"
    assert owner.pid == os.getpid()
    assert owner.command is not None and "pytest" in owner.command
    assert owner.note.startswith(f"socket ownership verified: pid {os.getpid()} (")


def test_a_socket_another_process_holds_is_named(other_process: tuple[int, int]) -> None:
    port, pid = other_process
    owner = readiness.ownership("127.0.0.1", port, [os.getpid()])
    assert owner.status == "other-owner"
    assert owner.pid == pid
    assert owner.command is not None and "socket" in owner.command
    assert "supersecretvalue123" not in owner.command
    assert "API_TOKEN=[REDACTED" in owner.command
    assert f"pid {pid} (" in owner.note and "not part of the server's process tree" in owner.note


def test_a_port_shared_with_another_process_is_not_ours() -> None:
    # SO_REUSEPORT lets two processes listen on one port, and the kernel spreads
    # connections between them: an answer there may come from either.
    with _listener("127.0.0.1", reuse_port=True) as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        port = mine.getsockname()[1]
        assert readiness.ownership("127.0.0.1", port, [os.getpid()]).status == "verified"
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import socket, time\n"
                "s = socket.socket()\n"
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
                f"s.bind(('127.0.0.1', {port})); s.listen()\n"
                "print('ok', flush=True); time.sleep(60)",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None and child.stdout.readline() == "ok\n"
            owner = readiness.ownership("127.0.0.1", port, [os.getpid()])
            assert (owner.status, owner.pid) == ("other-owner", child.pid)
        finally:
            child.kill()
            child.wait(timeout=10)
            if child.stdout is not None:
                child.stdout.close()


def test_the_most_specific_address_takes_the_connection() -> None:
    # Ours on 127.0.0.1, an IPv6-only wildcard on the same port: a probe of 127.0.0.1
    # reaches ours, a probe of ::1 reaches the wildcard.
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    with _listener("127.0.0.1") as v4:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        port = v4.getsockname()[1]
        with _listener("::", socket.AF_INET6) as v6:
            try:
                v6.bind(("::", port))
            except OSError as exc:
                pytest.skip(f"cannot bind [::]:{port} here: {exc}")
            v6.listen()
            found = procfs.tcp_listeners(port)
            assert {(item.address, item.family) for item in found} == {
                ("127.0.0.1", socket.AF_INET),
                ("::", socket.AF_INET6),
            }
            assert readiness.ownership("127.0.0.1", port, [os.getpid()]).status == "verified"
            assert readiness.ownership("::1", port, [os.getpid()]).status == "verified"
            # Not in the tree: the ::1 probe names this process as the other owner.
            other = readiness.ownership("::1", port, [])
            assert (other.status, other.pid) == ("other-owner", os.getpid())


def test_no_listener_and_unreadable_tables_are_not_verified_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        owner = readiness.ownership("127.0.0.1", port, [os.getpid()])
    assert owner.status == "not-verified"
    assert owner.note == (
        f"socket ownership not verified: no listening socket for port {port} "
        "in this network namespace"
    )
    # Where /proc/net is hidden (or absent), a real read fails: not verified, and why.
    monkeypatch.setattr(procfs, "NET_TABLES", ((str(tmp_path / "tcp"), socket.AF_INET),))
    owner = readiness.ownership("127.0.0.1", port, [os.getpid()])
    assert owner.status == "not-verified"
    assert owner.reason is not None and "socket tables could not be read" in owner.reason
