"""The MCP servers of one session: started, listed, called, watched and stopped.

The official ``mcp`` SDK's ``ClientSession`` speaks the protocol; it runs on an
event loop in one background thread (an anyio blocking portal), so the turn
loop stays synchronous. A stdio server is started through ax-exec's
``start_service`` (its own process group, ax as subreaper, the tree killed at
the end, stderr to a capped log in the session's folder) and its stdout is read
here, one message at a time, each capped: a server that sends more than
``MCP_MESSAGE_MAX_BYTES`` in one message, or more than
``MCP_INBOUND_MAX_BYTES`` in the session, is flooding, and is disabled. A
streamable HTTP server goes through the SDK's transport over one httpx client
(``http_client``, the one place its proxy is chosen).

Nothing a server does ends the session: a server that cannot start, dies, hangs
past ``MCP_CALL_TIMEOUT_S`` or floods is stopped, marked ``failed`` or
``disabled`` with the reason, and reported. Events are queued here and written
by the session's own thread (``drain``), never from the background thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from libcommon.redact import redact

from .config import HttpEntry, ServerSpec, StdioEntry, header_parts
from .tools import McpTool, model_tools, render_result

if TYPE_CHECKING:
    import anyio
    import httpx2
    from anyio.from_thread import BlockingPortal
    from mcp import ClientSession

    from ax_exec import Service

# The first prompt waits at most this long for servers still starting; the rest join
# the next turn once ready.
MCP_STARTUP_BUDGET_S = 5.0
# A server that has not answered initialize and tools/list by then has failed.
MCP_CONNECT_TIMEOUT_S = 30.0
# One tools/call; past it the server is disabled for the session.
MCP_CALL_TIMEOUT_S = 120.0
MCP_MESSAGE_MAX_BYTES = 4 * 1024 * 1024
MCP_INBOUND_MAX_BYTES = 64 * 1024 * 1024
MCP_STDERR_LOG_MAX_BYTES = 1024 * 1024
# Stopping every server at the session's end.
MCP_STOP_TIMEOUT_S = 10.0
MCP_LIST_PAGES_MAX = 8
MCP_READ_BYTES = 64 * 1024
REASON_MAX_CHARS = 300
# What a stdio server gets of ax-agent's environment besides the names its entry lists.
BASE_ENVIRONMENT = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")

MISSING_SDK = "the MCP client is not installed: pip install 'ax-tools[mcp]' (the official mcp SDK)"

State = Literal["starting", "ready", "failed", "disabled", "awaiting-approval", "stopped"]


class McpCallFailed(Exception):
    """A call that got no result: the server is gone, or was disabled by this call."""


@dataclass
class ServerState:
    spec: ServerSpec
    state: State
    reason: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log: Path | None = None
    pid: int | None = None
    session: ClientSession | None = None
    service: Service | None = None
    stopping: anyio.Event | None = None
    scope: anyio.CancelScope | None = None
    inbound: int = 0
    exit_code: int | None = None
    killed: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = " ".join(redact(f"{type(exc).__name__}: {exc}".rstrip(": ")).split())
    return text if len(text) <= REASON_MAX_CHARS else text[: REASON_MAX_CHARS - 1] + "…"


def child_environment(entry: StdioEntry, environ: Mapping[str, str]) -> dict[str, str]:
    """A minimal base and the variables the entry names; nothing else of ours."""
    env = {name: environ[name] for name in BASE_ENVIRONMENT if name in environ}
    for name, source in entry.passed().items():
        if source in environ:
            env[name] = environ[source]
    return env


def resolve_headers(entry: HttpEntry, environ: Mapping[str, str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for header, value in entry.headers.items():
        scheme, variable = header_parts(value)
        if variable not in environ:
            raise McpCallFailed(
                f"the variable {variable} is not set (named for the {header} header)"
            )
        headers[header] = f"{scheme} {environ[variable]}" if scheme else environ[variable]
    return headers


def http_client(
    url: str, headers: Mapping[str, str], environ: Mapping[str, str]
) -> httpx2.AsyncClient:
    """The one place MCP over HTTP builds its client, and so chooses its proxy.

    The route is the providers' (``providers.transport.route``): the proxy from
    ``libcommon.proxy.resolve_proxy`` over the session's environment and the CAs
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` name, so one precedence holds for every network
    path; ``trust_env`` is off so nothing else of the environment steers the client.
    """
    import httpx2

    from ..providers.transport import route

    return httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(MCP_CONNECT_TIMEOUT_S, read=MCP_CALL_TIMEOUT_S),
        follow_redirects=False,
        **route(url, environ).client_options(),
    )


class McpServers:
    """Every server of one session, and the background loop they run on."""

    def __init__(
        self,
        states: list[ServerState],
        *,
        workspace: Path,
        log_dir: Path,
        environ: Mapping[str, str],
        call_timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
    ) -> None:
        self.servers = {state.name: state for state in states}
        self.workspace = workspace
        self.log_dir = log_dir
        self.environ = dict(environ)
        self.call_timeout_s = call_timeout_s or MCP_CALL_TIMEOUT_S
        self.connect_timeout_s = connect_timeout_s or MCP_CONNECT_TIMEOUT_S
        self.started_at = time.monotonic()
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._tasks: list[Any] = []
        self._changed = threading.Condition(self._lock)

    # --- life ---------------------------------------------------------------------

    def start(self) -> None:
        """Start every server that may start, in the background; returns at once."""
        from anyio.from_thread import start_blocking_portal

        starting = [s for s in self.servers.values() if s.state == "starting"]
        if not starting:
            return
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            for server in starting:
                self._set(server, "failed", MISSING_SDK)
            return
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        for server in starting:
            self._tasks.append(self._portal.start_task_soon(self._serve, server))

    def wait_started(self, budget_s: float | None = None) -> None:
        """Wait, up to ``budget_s`` after start, for every server to leave "starting"."""
        deadline = self.started_at + (MCP_STARTUP_BUDGET_S if budget_s is None else budget_s)
        with self._changed:
            while any(s.state == "starting" for s in self.servers.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def close(self) -> None:
        """Stop every server (tree-killed) and the background loop; said once per server."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        for server in self.servers.values():
            if server.stopping is not None:
                portal.call(server.stopping.set)
            if server.state == "starting" and server.scope is not None:
                # Still in its handshake: nothing to say goodbye to.
                portal.call(server.scope.cancel)
        for task in self._tasks:
            with contextlib.suppress(Exception):
                task.result(MCP_STOP_TIMEOUT_S)
        assert self._portal_cm is not None
        with contextlib.suppress(Exception):
            self._portal_cm.__exit__(None, None, None)

    def drain(self) -> list[dict[str, Any]]:
        """The events queued since the last drain, for the session's thread to record."""
        with self._lock:
            events, self._events = self._events, []
        return events

    def snapshot(self) -> list[ServerState]:
        """Copies of the servers' states as they are now (the loop thread changes them)."""
        from dataclasses import replace

        with self._lock:
            return [
                replace(s, tools=list(s.tools), notes=list(s.notes)) for s in self.servers.values()
            ]

    def ready_tools(self) -> list[McpTool]:
        with self._lock:
            return [t for s in self.servers.values() if s.state == "ready" for t in s.tools]

    # --- calls --------------------------------------------------------------------

    def call(self, server_name: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """(fenced text, is_error) of one call; McpCallFailed when there is no result."""
        server = self.servers[server_name]
        portal = self._portal
        if server.state != "ready" or server.session is None or portal is None:
            raise McpCallFailed(
                f"the MCP server {server_name} is {server.state}"
                + (f": {server.reason}" if server.reason else "")
            )
        started = time.monotonic()
        outcome = "error"
        try:
            result = portal.call(self._call, server, tool, arguments)
            outcome = "error" if result.is_error else "ok"
            return render_result(server_name, tool, result), bool(result.is_error)
        except McpCallFailed as exc:
            # The call itself may have ended the server (mypy still sees "ready" here).
            now: str = server.state
            outcome = "disabled" if now == "disabled" else "failed"
            raise McpCallFailed(str(exc)) from None
        finally:
            self._queue(
                {
                    "type": "mcp.call",
                    "server": server_name,
                    "tool": tool,
                    "durationMs": round((time.monotonic() - started) * 1000, 1),
                    "outcome": outcome,
                }
            )

    async def _call(self, server: ServerState, tool: str, arguments: dict[str, Any]) -> Any:
        import anyio

        assert server.session is not None
        try:
            with anyio.fail_after(self.call_timeout_s):
                return await server.session.call_tool(tool, arguments)
        except TimeoutError:
            reason = f"no answer to a call of {tool} in {self.call_timeout_s:g} s"
            self._end(server, "disabled", reason)
            raise McpCallFailed(f"the MCP server {server.name} hung: {reason}; disabled") from None
        except Exception as exc:
            if server.state != "ready":
                raise McpCallFailed(
                    f"the MCP server {server.name} is {server.state}: {server.reason}"
                ) from None
            if _connection_lost(exc):
                self._end(server, "failed", f"the connection was lost: {_one_line(exc)}")
            raise McpCallFailed(f"the call failed: {_one_line(exc)}") from None

    # --- each server's task -------------------------------------------------------

    async def _serve(self, server: ServerState) -> None:
        import anyio

        server.stopping = anyio.Event()
        server.scope = anyio.CancelScope()
        try:
            with server.scope:
                await self._connect(server)
        except TimeoutError:
            why = f"no answer to initialize within {self.connect_timeout_s:g} s"
            self._end(server, "failed", why)
        except Exception as exc:
            self._end(server, "failed", _one_line(exc))
        finally:
            server.session = None
            self._stopped(server)

    async def _connect(self, server: ServerState) -> None:
        import anyio
        from mcp import ClientSession

        assert server.stopping is not None
        async with contextlib.AsyncExitStack() as stack:
            raw = await stack.enter_async_context(self._transport(server))
            read, write = await stack.enter_async_context(self._screened(server, *raw))
            session = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(self.connect_timeout_s):
                info = await session.initialize()
                listed = await self._list(session)
            tools, notes = model_tools(server.name, listed)
            with self._changed:
                server.session = session
                server.tools = tools
                server.notes.extend(notes)
            if server.state == "starting":
                version = getattr(info, "protocol_version", None)
                self._set(server, "ready", None, protocolVersion=version)
            await server.stopping.wait()

    async def _list(self, session: ClientSession) -> list[Any]:
        from mcp import types

        listed: list[Any] = []
        cursor: str | None = None
        for _ in range(MCP_LIST_PAGES_MAX):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return listed

    @asynccontextmanager
    async def _transport(self, server: ServerState) -> AsyncIterator[tuple[Any, Any]]:
        entry = server.spec.entry
        if isinstance(entry, HttpEntry):
            from mcp.client.streamable_http import streamable_http_client

            headers = resolve_headers(entry, self.environ)
            async with (
                http_client(entry.url, headers, self.environ) as client,
                streamable_http_client(
                    entry.url, http_client=client, max_sse_event_size=MCP_MESSAGE_MAX_BYTES
                ) as streams,
            ):
                yield streams[0], streams[1]
        else:
            assert isinstance(entry, StdioEntry)
            async with self._stdio(server, entry) as streams:
                yield streams

    @asynccontextmanager
    async def _screened(
        self, server: ServerState, read: Any, write: Any
    ) -> AsyncIterator[tuple[Any, Any]]:
        """The streams the SDK gets: a tools/list answer has its unusable tools taken out.

        The SDK refuses a whole listing for one tool it cannot parse; ax drops that tool
        with a note and keeps the rest, whatever the transport.
        """
        import anyio
        from mcp import types
        from mcp.shared.message import SessionMessage

        listing: set[Any] = set()
        up_send, up_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        down_send, down_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def upward() -> None:
            async with up_send:
                async for item in read:
                    message = getattr(item, "message", None)
                    if isinstance(message, types.JSONRPCResponse) and message.id in listing:
                        listing.discard(message.id)
                        kept, notes = screen_listing(message.result)
                        server.notes.extend(notes)
                        item = SessionMessage(message.model_copy(update={"result": kept}))
                    await up_send.send(item)

        async def downward() -> None:
            async with down_recv, write:
                async for item in down_recv:
                    message = item.message
                    if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
                        listing.add(message.id)
                    await write.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(upward)
            group.start_soon(downward)
            try:
                yield up_recv, down_send
            finally:
                group.cancel_scope.cancel()

    @asynccontextmanager
    async def _stdio(
        self, server: ServerState, entry: StdioEntry
    ) -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        from anyio import to_thread
        from mcp.shared.message import SessionMessage

        from ax_exec import start_service

        log = self.log_dir / f"{server.name}.stderr.log"
        server.log = log
        service = await to_thread.run_sync(
            lambda: start_service(
                [entry.command, *entry.args],
                env=child_environment(entry, self.environ),
                cwd=self.workspace,
                log_path=log,
                max_log_bytes=MCP_STDERR_LOG_MAX_BYTES,
            )
        )
        server.service = service
        server.pid = service.pid
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read_stdout, server, service, read_send)
                group.start_soon(self._write_stdin, server, service, write_recv)
                try:
                    yield read_recv, write_send
                finally:
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                stopped = await to_thread.run_sync(service.stop)
            server.exit_code, server.killed = stopped.returncode, stopped.killed

    async def _read_stdout(self, server: ServerState, service: Service, send: Any) -> None:
        import anyio
        from mcp import types
        from mcp.shared.message import SessionMessage

        fd = service.stdout_fd
        os.set_blocking(fd, False)
        buffer = bytearray()
        async with send:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, MCP_READ_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    code = await anyio.to_thread.run_sync(service.process.wait)
                    self._end(server, "failed", f"the server exited (status {code})")
                    return
                server.inbound += len(chunk)
                buffer += chunk
                if server.inbound > MCP_INBOUND_MAX_BYTES:
                    self._end(
                        server,
                        "disabled",
                        f"flooding: more than {MCP_INBOUND_MAX_BYTES} bytes sent this session",
                    )
                    return
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if line.strip():
                        try:
                            message: SessionMessage | Exception = SessionMessage(
                                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except ValueError as exc:
                            message = exc
                        await send.send(message)
                if len(buffer) > MCP_MESSAGE_MAX_BYTES:
                    self._end(
                        server,
                        "disabled",
                        f"flooding: one message longer than {MCP_MESSAGE_MAX_BYTES} bytes",
                    )
                    return

    async def _write_stdin(self, server: ServerState, service: Service, receive: Any) -> None:
        import anyio

        fd = service.stdin_fd
        os.set_blocking(fd, False)
        async with receive:
            async for message in receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                view = memoryview((data + "\n").encode())
                while view:
                    await anyio.wait_writable(fd)
                    try:
                        view = view[os.write(fd, view) :]
                    except BlockingIOError:
                        continue
                    except OSError as exc:
                        self._end(server, "failed", f"its stdin closed: {exc.strerror or exc}")
                        return

    # --- state and events ---------------------------------------------------------

    def _end(self, server: ServerState, state: State, reason: str) -> None:
        """Mark the server ended (the first reason stays) and wake its task to stop it."""
        if server.state in ("failed", "disabled", "stopped"):
            return
        self._set(server, state, reason)
        if server.stopping is not None:
            server.stopping.set()

    def _set(self, server: ServerState, state: State, reason: str | None, **extra: Any) -> None:
        with self._changed:
            server.state = state
            server.reason = reason
            event: dict[str, Any] = {
                "type": "mcp.server",
                "server": server.name,
                "source": server.spec.source,
                "state": state,
                "reason": reason,
            }
            if state == "ready":
                event["tools"] = [tool.name for tool in server.tools]
                event["notes"] = list(server.notes)
                event["pid"] = server.pid
            event.update({key: value for key, value in extra.items() if value is not None})
            self._events.append(event)
            self._changed.notify_all()

    def _queue(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.append(event)

    def _stopped(self, server: ServerState) -> None:
        """The one ``stopped`` event of a server whose task ended, after its state is known."""
        extra = {"exitCode": server.exit_code, "killed": server.killed}
        if server.state in ("starting", "ready"):
            self._set(server, "stopped", None, **extra)
            return
        event = {
            "type": "mcp.server",
            "server": server.name,
            "source": server.spec.source,
            "state": "stopped",
            "reason": f"after it was {server.state}: {server.reason}",
        }
        self._queue({**event, **{k: v for k, v in extra.items() if v is not None}})

    def note(self, event: dict[str, Any]) -> None:
        """Queue an event about a server that never started (approval, a bad entry)."""
        self._queue(event)


def screen_listing(result: Any) -> tuple[Any, list[str]]:
    """A raw tools/list result without the tools whose name or input schema is unusable."""
    from .tools import schema_problem

    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        return result, []
    kept: list[Any] = []
    notes: list[str] = []
    for tool in result["tools"]:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not name:
            notes.append("a tool without a name dropped")
            continue
        problem = schema_problem(tool.get("inputSchema"))
        if problem is not None:
            notes.append(f"tool {redact(name)[:80]!r} dropped: its input schema {problem}")
            continue
        kept.append(tool)
    return {**result, "tools": kept}, notes


def _connection_lost(exc: BaseException) -> bool:
    import anyio

    lost = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
    return isinstance(exc, lost) or "closed" in str(exc).lower()
