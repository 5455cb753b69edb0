"""Honest readiness: the port the server announced as its own, answering, held by its tree.

A port is a candidate only when the server's own output announces it as the
address it listens on (after ANSI escapes are stripped, since dev servers colour
their URLs). A line that complains about a port ("Port 5173 is in use, trying
another one...", "EADDRINUSE", "failed", "error"...) announces nothing and
withdraws the ports it names; a line about somewhere else (a proxy target, an
upstream, a database it connects to) is not the server's address either. The
latest announcement wins: candidates are probed newest first.

Each candidate is probed on 127.0.0.1 and on ::1 with a short ``GET /``; any
HTTP status line counts as an answer (a 404 still means something is serving).
Only loopback is ever probed, whatever host the output named. An answer counts
only when the listening socket behind it belongs to the server's process tree:
the socket's inode comes from /proc/net/tcp or tcp6, and a process holds it when
one of its /proc/<pid>/fd entries links to ``socket:[inode]``. A socket held by a
process outside the tree is never ready; where /proc cannot tell, the answer
counts and the result says why ownership was not verified.
"""

from __future__ import annotations

import http.client
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ax_preview.models import Ownership
from libcommon import procfs
from libcommon.ansi import strip_ansi

PROBE_TIMEOUT_S = 0.5
PROBE_HOSTS = ("127.0.0.1", "::1")
MAX_CANDIDATE_PORTS = 8

_PORT_PATTERNS = (
    # http://localhost:5173/, http://127.0.0.1:8000, http://[::1]:3000, http://0.0.0.0:8080
    re.compile(r"\bhttps?://(?:\[[0-9a-fA-F:.]*\]|[A-Za-z0-9.-]+):(\d{1,5})\b"),
    # "listening on port 3000", "Serving HTTP on :: port 8000", "PORT=4000"
    re.compile(r"\bport\b\s*[:=]?\s*(\d{1,5})\b", re.IGNORECASE),
    # "listening on 127.0.0.1:3000", "bound to [::]:8080", "on :4000"
    re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[[0-9a-fA-F:]*\]|\s)[:](\d{2,5})\b"),
)
# A complaint also names ports as "address already in use :::3000".
_COMPLAINT_PORT_PATTERNS = (*_PORT_PATTERNS, re.compile(r":(\d{2,5})\b"))
# A line with one of these complains about a port; it never announces one.
_COMPLAINT = re.compile(
    r"in use|eaddrinuse|eaddrnotavail|eacces|already|trying another|\bfail|\berror|unable"
    r"|cannot|can't|could not|couldn't|refused|not available|unavailable|\bbusy\b|\btaken\b"
    r"|conflict|denied",
    re.IGNORECASE,
)
# A line with one of these names somewhere else than the server's own address.
_ELSEWHERE = re.compile(
    r"prox(?:y|ied|ying)|upstream|connect(?:ing|ed) to|forward(?:ing|ed)? to",
    re.IGNORECASE,
)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _ports_in(line: str, patterns: Iterable[re.Pattern[str]]) -> list[int]:
    """Ports in ``line`` in order of mention, deduplicated, in range."""
    hits = sorted(
        (match.start(), int(match.group(1)))
        for pattern in patterns
        for match in pattern.finditer(line)
    )
    ports: list[int] = []
    for _, port in hits:
        if 0 < port < 65536 and port not in ports:
            ports.append(port)
    return ports


def announced_ports(text: str) -> list[int]:
    """Ports ``text`` (whole lines, ANSI stripped) announces as the server's own, latest first.

    A complaint withdraws the ports it names from what was announced before it.
    Within one line the first mention comes first.
    """
    latest: dict[int, tuple[int, int]] = {}
    for number, line in enumerate(_LINE_BREAK.split(strip_ansi(text))):
        if _COMPLAINT.search(line):
            for port in _ports_in(line, _COMPLAINT_PORT_PATTERNS):
                latest.pop(port, None)
            continue
        if _ELSEWHERE.search(line):
            continue
        for position, port in enumerate(_ports_in(line, _PORT_PATTERNS)):
            latest[port] = (number, position)
    return sorted(latest, key=lambda port: (-latest[port][0], latest[port][1]))


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


def _rank(listener: procfs.Listener, host: str) -> int | None:
    """How specifically ``listener`` takes connections to ``host`` (higher wins), None if not.

    The kernel hands a connection to the most specific bound address, and an
    IPv4 socket before a dual-stack IPv6 one.
    """
    if host == "127.0.0.1":
        if listener.address in ("127.0.0.1", "::ffff:127.0.0.1"):
            return 2
        if listener.address == "0.0.0.0":
            return 1
        return 0 if listener.address == "::" else None
    if listener.address == host:
        return 2
    return 1 if listener.address == "::" and listener.family == socket.AF_INET6 else None


def _command(pid: int) -> str | None:
    """A process's command line as ax may show and record it: redacted."""
    from libcommon.redact import redact

    command = procfs.command_of(pid)
    return None if command is None else redact(command)


def _foreign_holder(inodes: set[int], tree: set[int]) -> tuple[int | None, str | None]:
    held, _ = procfs.socket_holders(inodes, (pid for pid in procfs.all_pids() if pid not in tree))
    if not held:
        return None, None
    pid = min(held.values())
    return pid, _command(pid)


def ownership(host: str, port: int, tree: Iterable[int]) -> Ownership:
    """Who holds the listening socket that takes connections to ``host:port``."""
    members = set(tree)
    try:
        listeners = procfs.tcp_listeners(port)
    except OSError as exc:
        return Ownership(
            status="not-verified",
            host=host,
            port=port,
            reason=f"the socket tables could not be read ({exc})",
        )
    ranked = [(rank, item) for item in listeners if (rank := _rank(item, host)) is not None]
    if not ranked:
        return Ownership(
            status="not-verified",
            host=host,
            port=port,
            reason=f"no listening socket for port {port} in this network namespace",
        )
    best = max(rank for rank, _ in ranked)
    inodes = {item.inode for rank, item in ranked if rank == best}
    held, unreadable = procfs.socket_holders(inodes, sorted(members))
    if held and set(held) == inodes:
        holder = min(held.values())
        return Ownership(
            status="verified", host=host, port=port, pid=holder, command=_command(holder)
        )
    pid, command = _foreign_holder(inodes - set(held), members)
    if pid is None and unreadable:
        return Ownership(
            status="not-verified",
            host=host,
            port=port,
            reason=f"the open files of pid {unreadable[0]} of the server's tree cannot be read",
        )
    return Ownership(status="other-owner", host=host, port=port, pid=pid, command=command)


@dataclass(frozen=True)
class Assessment:
    """One probing round: the first answer the server's tree owns, and the last foreign one."""

    url: str | None
    owner: Ownership | None
    foreign: Ownership | None


def assess(ports: Iterable[int], tree: Callable[[], Iterable[int]]) -> Assessment:
    """Probe ``ports`` in order on every loopback host; stop at the first answer not foreign."""
    foreign = None
    for port in ports:
        for host in PROBE_HOSTS:
            if not probe(host, port):
                continue
            owner = ownership(host, port, tree())
            if owner.status != "other-owner":
                return Assessment(url_for(host, port), owner, foreign)
            foreign = owner
    return Assessment(None, None, foreign)
