"""A real HTTP proxy on loopback that records what it forwarded: CONNECT tunnels and plain HTTP.

``RecordingProxy(credentials=("user", "pw"))`` answers 407 to a request
without those Basic credentials. ``seen`` holds one ``Forwarded`` per request,
in order, with whether it carried a Proxy-Authorization header.
"""

from __future__ import annotations

import base64
import contextlib
import select
import socket
import socketserver
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

# How long a tunnel may stay idle before the proxy drops it.
TUNNEL_IDLE_S = 10.0


@dataclass(frozen=True)
class Forwarded:
    method: str
    target: str  # host:port for CONNECT, the absolute URL for plain HTTP
    authorised: bool


class RecordingProxy:
    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        self.seen: list[Forwarded] = []
        self.credentials = credentials
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                proxy._handle(self.connection, self.rfile)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handle(self, client: socket.socket, rfile: object) -> None:
        head = _read_head(rfile)
        if head is None:
            return
        request_line, headers = head
        method, target, version = request_line.split(" ", 2)
        authorised = self._authorised(headers.get("proxy-authorization", ""))
        self.seen.append(Forwarded(method, target, "proxy-authorization" in headers))
        if not authorised:
            client.sendall(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n'
                b"Connection: close\r\n\r\n"
            )
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            upstream = socket.create_connection((host, int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(client, upstream, b"")
            return
        parts = urlsplit(target)
        upstream = socket.create_connection((parts.hostname or "", parts.port or 80))
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {path or '/'} {version}"]
        lines += [
            f"{name}: {value}"
            for name, value in headers.items()
            if not name.startswith("proxy-") and name != "connection"
        ]
        lines.append("connection: close")
        # The body, if any, follows in rfile's buffer; it is piped as it comes.
        length = int(headers.get("content-length", "0"))
        body = rfile.read(length) if length else b""  # type: ignore[attr-defined]
        _pipe(client, upstream, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def _authorised(self, header: str) -> bool:
        if self.credentials is None:
            return True
        expected = base64.b64encode(":".join(self.credentials).encode()).decode()
        return header.strip() == f"Basic {expected}"


def _read_head(rfile: object) -> tuple[str, dict[str, str]] | None:
    first = rfile.readline()  # type: ignore[attr-defined]
    if not first:
        return None
    headers: dict[str, str] = {}
    while True:
        line = rfile.readline().decode("latin-1").rstrip("\r\n")  # type: ignore[attr-defined]
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return first.decode("latin-1").rstrip("\r\n"), headers


def _pipe(client: socket.socket, upstream: socket.socket, first: bytes) -> None:
    with upstream:
        if first:
            upstream.sendall(first)
        sockets = [client, upstream]
        while True:
            ready, _, _ = select.select(sockets, [], [], TUNNEL_IDLE_S)
            if not ready:
                return
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                other = upstream if sock is client else client
                with contextlib.suppress(OSError):
                    other.sendall(data)
