"""Honest readiness: ports the server announced, probed over HTTP on loopback.

A port is a candidate only when the server's own output names it (after ANSI
escapes are stripped, since dev servers colour their URLs). Each candidate is
probed on 127.0.0.1 and on ::1 with a short ``GET /``; any HTTP status line
counts as an answer (a 404 still means something is serving). Only loopback
is ever probed, whatever host the output named. Nothing here checks that the
socket belongs to the server's process, and the result says so.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterable

from libcommon.ansi import strip_ansi

PROBE_TIMEOUT_S = 0.5
PROBE_HOSTS = ("127.0.0.1", "::1")
MAX_CANDIDATE_PORTS = 8
OWNERSHIP_NOTE = "socket ownership not verified"

_PORT_PATTERNS = (
    # http://localhost:5173/, http://127.0.0.1:8000, http://[::1]:3000, http://0.0.0.0:8080
    re.compile(r"\bhttps?://(?:\[[0-9a-fA-F:.]*\]|[A-Za-z0-9.-]+):(\d{1,5})\b"),
    # "listening on port 3000", "Serving HTTP on :: port 8000", "PORT=4000"
    re.compile(r"\bport\b\s*[:=]?\s*(\d{1,5})\b", re.IGNORECASE),
    # "listening on 127.0.0.1:3000", "bound to [::]:8080", "on :4000"
    re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[[0-9a-fA-F:]*\]|\s)[:](\d{2,5})\b"),
)


def announced_ports(text: str) -> list[int]:
    """Ports named in ``text`` (ANSI stripped), in order of first mention, deduplicated."""
    clean = strip_ansi(text)
    hits: list[tuple[int, int]] = []
    for pattern in _PORT_PATTERNS:
        hits.extend((match.start(), int(match.group(1))) for match in pattern.finditer(clean))
    ports: list[int] = []
    for _, port in sorted(hits):
        if 0 < port < 65536 and port not in ports:
            ports.append(port)
    return ports


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def probe(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when an HTTP server answers ``GET /`` on ``host:port`` within ``timeout``."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", "/", headers={"User-Agent": "ax-preview-probe"})
        response = connection.getresponse()
        return response.status > 0
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def first_answer(ports: Iterable[int]) -> str | None:
    """The URL of the first port/host pair that answers, or None."""
    for port in ports:
        for host in PROBE_HOSTS:
            if probe(host, port):
                return url_for(host, port)
    return None
