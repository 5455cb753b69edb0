"""Port parsing from server output, and the HTTP probe against real loopback sockets."""

from __future__ import annotations

import http.server
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from ax_preview import readiness
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
    ],
)
def test_announced_ports(line: str, ports: list[int]) -> None:
    assert readiness.announced_ports(line) == ports


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
