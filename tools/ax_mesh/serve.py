"""``ax-mesh serve``: the catalogue over HTTP on loopback.

``GET /v1/tools`` lists the caller's tools, ``POST /v1/tools/{name}`` calls one with a
JSON object body. The seat's token is the bearer token and its lease generation the
``X-Ax-Mesh-Lease`` header; every request is authenticated and run through
``call_tool``, exactly as ``ax-mesh call`` runs it. Requests are served one at a time
(the store's connection is not shared between threads).
"""

from __future__ import annotations

import ipaddress
import json
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from libcommon.errors import AxError, Fenced, UsageError

from .catalog import call_tool, describe_tools
from .context import Caller
from .errors import ToolError
from .mesh import Mesh, authenticate

LEASE_HEADER = "X-Ax-Mesh-Lease"
# A request body: a record's text (256 KiB) and its JSON escaping fit with room to spare.
HTTP_BODY_MAX_BYTES = 1024 * 1024
# How long one request may take to arrive before its connection is dropped.
HTTP_READ_TIMEOUT_S = 30.0
_STATUS = {"unauthenticated": 401, "not_found": 404, "conflict": 409, "forbidden": 403}


def check_loopback(host: str) -> str:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise UsageError(
            f"--host {host!r} is not a loopback address",
            hint="ax-mesh serve listens on 127.0.0.1 or ::1 only; put a proxy in front for more",
        )
    return host


def make_server(mesh: Mesh, host: str, port: int) -> HTTPServer:
    check_loopback(host)

    class Handler(BaseHTTPRequestHandler):
        timeout = HTTP_READ_TIMEOUT_S

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a request line may carry what a person should not see in a log."""

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _caller(self) -> Caller:
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                raise ToolError("unauthenticated", "no bearer token (Authorization: Bearer …)")
            try:
                generation = int(self.headers.get(LEASE_HEADER, ""))
            except ValueError:
                raise UsageError(
                    f"the {LEASE_HEADER} header must hold the lease generation"
                ) from None
            return authenticate(mesh, auth[len("Bearer ") :].strip(), generation)

        def _guarded(self, work: Any) -> None:
            try:
                self._send(200, work())
            except ToolError as exc:
                self._send(_STATUS.get(exc.code, 422), exc.to_json())
            except Fenced as exc:
                self._send(409, {"error": {"code": "fenced", "message": exc.message}})
            except UsageError as exc:
                self._send(400, {"error": {"code": "usage", "message": exc.message}})
            except AxError as exc:
                self._send(500, {"error": {"code": "failed", "message": exc.message}})

        def do_GET(self) -> None:
            if self.path != "/v1/tools":
                self._send(404, {"error": {"code": "not_found", "message": "no such endpoint"}})
                return
            self._guarded(lambda: {"tools": describe_tools(self._caller())})

        def do_POST(self) -> None:
            prefix = "/v1/tools/"
            if not self.path.startswith(prefix):
                self._send(404, {"error": {"code": "not_found", "message": "no such endpoint"}})
                return
            name = self.path[len(prefix) :]

            def work() -> dict[str, Any]:
                caller = self._caller()
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= HTTP_BODY_MAX_BYTES:
                    raise UsageError(f"the body is larger than {HTTP_BODY_MAX_BYTES} bytes")
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    arguments = json.loads(raw)
                except (ValueError, UnicodeDecodeError) as exc:
                    raise UsageError(f"the body is not valid JSON: {exc}") from None
                return call_tool(mesh, caller, name, arguments)

            self._guarded(work)

    return HTTPServer((host, port), Handler)
