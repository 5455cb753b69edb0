"""The ax-mesh command line: parse, call the core, print."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from libcommon import cliapp
from libcommon.cliapp import Environment, entry_point, make_app
from libcommon.errors import Fenced, UsageError

if TYPE_CHECKING:
    from .mesh import Mesh
    from .models import Manifest

app = make_app(
    "ax-mesh",
    "Shared memory stores, work items and messages for several agents (seats), on SQLite "
    "in the state root or PostgreSQL (AX_MESH_DSN).",
)
seat_app = typer.Typer(
    help="Seats: named agent identities and what each may do (a person's verbs).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(seat_app, name="seat")
store_app = typer.Typer(
    help="Shared memory stores (a person's verbs).", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(store_app, name="store")
lease_app = typer.Typer(
    help="Execution leases: the generation a seat's calls must carry (for runners).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(lease_app, name="lease")
connection_app = typer.Typer(
    help="Connections to trackers and code hosts (a person's verbs).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(connection_app, name="connection")

SeatArgument = Annotated[str, typer.Argument(metavar="SEAT", help="The seat's name.")]
ReadOption = Annotated[
    list[str] | None, typer.Option("--read", help="A store the seat may read (repeatable).")
]
WriteOption = Annotated[
    list[str] | None,
    typer.Option("--write", help="A store the seat may read and add records to (repeatable)."),
]
ReviseOption = Annotated[
    list[str] | None,
    typer.Option(
        "--revise", help="A store the seat may also replace and archive records in (repeatable)."
    ),
]
MessageOption = Annotated[
    list[str] | None, typer.Option("--message", help="A seat this seat may message (repeatable).")
]
ConnectionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--connection",
        help="CONNECTION=op1,op2: a connection and the operations granted on it (repeatable).",
    ),
]
TimezoneOption = Annotated[
    str, typer.Option("--timezone", help="The seat's time zone (IANA name).")
]


@contextmanager
def _mesh() -> Iterator[Mesh]:
    from .mesh import open_mesh

    mesh = open_mesh(cliapp.env().environ)
    try:
        yield mesh
    finally:
        mesh.close()


def _manifest(
    read: list[str] | None,
    write: list[str] | None,
    revise: list[str] | None,
    message: list[str] | None,
    connection: list[str] | None,
    timezone: str,
) -> Manifest:
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    from .models import Manifest

    stores: dict[str, dict[str, bool]] = {}
    for names, grant in ((read, "read"), (write, "write"), (revise, "revise")):
        for name in names or ():
            stores.setdefault(name, {})[grant] = True
    connections: dict[str, list[str]] = {}
    for item in connection or ():
        name, sep, ops = item.partition("=")
        if not sep or not ops:
            raise UsageError(
                f"--connection {item!r} is not CONNECTION=op1,op2",
                hint="e.g. --connection tracker=task.write,task.read",
            )
        connections.setdefault(name, []).extend(op for op in ops.split(",") if op)
    _check_timezone(timezone)
    try:
        return Manifest.model_validate(
            {
                "stores": stores,
                "message": list(dict.fromkeys(message or ())),
                "connections": connections,
                "timezone": timezone,
            }
        )
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "manifest")) from None


def _check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"--timezone {name!r} is not a time zone", hint="use an IANA name, e.g. Europe/Paris"
        ) from None


def _warn_routes(mesh: Mesh, manifest: Manifest) -> None:
    from .mesh import unknown_routes

    for name in unknown_routes(mesh, manifest):
        cliapp.chrome(f"ax-mesh: note: seat {name!r} (in --message) does not exist yet")


# ---- a person's verbs -----------------------------------------------------------


@store_app.command("add")
def store_add(name: Annotated[str, typer.Argument(metavar="NAME")]) -> None:
    """Create a shared store."""
    from libcommon import clock

    from .models import PERSONAL_PREFIX, check_store_name

    try:
        check_store_name(name)
    except ValueError as exc:
        raise UsageError(f"store name {name!r}: {exc}") from None
    if name.startswith(PERSONAL_PREFIX):
        raise UsageError("a personal store is made with its seat (ax-mesh seat add)")
    with _mesh() as mesh:
        if mesh.store.get_store(name) is not None:
            raise UsageError(f"store {name!r} already exists")
        info = mesh.store.add_store(name, "shared", None, clock.timestamp())
    cliapp.emit_json({"name": info.name, "kind": info.kind, "created_at": info.created_at})


@store_app.command("list")
def store_list() -> None:
    """List every store."""
    with _mesh() as mesh:
        stores = mesh.store.list_stores()
    cliapp.emit_json(
        {"stores": [{"name": s.name, "kind": s.kind, "owner": s.owner} for s in stores]}
    )


@seat_app.command("add")
def seat_add(
    name: SeatArgument,
    role: Annotated[str, typer.Option("--role", help="What the seat is for, e.g. engineer.")],
    read: ReadOption = None,
    write: WriteOption = None,
    revise: ReviseOption = None,
    message: MessageOption = None,
    connection: ConnectionOption = None,
    timezone: TimezoneOption = "UTC",
) -> None:
    """Add a seat with its capability manifest; its token goes to a 0600 file."""
    from .mesh import add_seat, seat_view

    if not role.strip():
        raise UsageError("--role must not be empty")
    manifest = _manifest(read, write, revise, message, connection, timezone)
    with _mesh() as mesh:
        seat, _token = add_seat(mesh, name, role, manifest)
        _warn_routes(mesh, manifest)
        cliapp.emit_json({**seat_view(seat), "token_file": str(mesh.token_file(name))})


@seat_app.command("grant")
def seat_grant(
    name: SeatArgument,
    role: Annotated[str | None, typer.Option("--role", help="A new role.")] = None,
    read: ReadOption = None,
    write: WriteOption = None,
    revise: ReviseOption = None,
    message: MessageOption = None,
    connection: ConnectionOption = None,
    timezone: TimezoneOption = "UTC",
) -> None:
    """Replace a seat's whole manifest with the one these flags describe."""
    from .mesh import grant, seat_view

    manifest = _manifest(read, write, revise, message, connection, timezone)
    with _mesh() as mesh:
        if mesh.store.get_seat(name) is None:
            raise UsageError(f"seat {name!r} does not exist")
        cliapp.emit_json(seat_view(grant(mesh, name, manifest, role)))
        _warn_routes(mesh, manifest)


@seat_app.command("list")
def seat_list() -> None:
    """List the seats, their manifests and leases."""
    from .mesh import seat_view

    with _mesh() as mesh:
        cliapp.emit_json({"seats": [seat_view(s) for s in mesh.store.list_seats()]})


@seat_app.command("retire")
def seat_retire(name: SeatArgument) -> None:
    """Retire a seat for good: its lease is fenced and its token stops working."""
    with _mesh() as mesh:
        if mesh.store.get_seat(name) is None:
            raise UsageError(f"seat {name!r} does not exist")
        mesh.store.retire_seat(name)
    cliapp.emit_json({"seat": name, "retired": True})


@seat_app.command("rotate-token")
def seat_rotate(name: SeatArgument) -> None:
    """Give a seat a new token (the old one stops working at once)."""
    from .mesh import rotate_token

    with _mesh() as mesh:
        rotate_token(mesh, name)
        cliapp.emit_json({"seat": name, "token_file": str(mesh.token_file(name))})


@connection_app.command("add")
def connection_add(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    kind: Annotated[str, typer.Option("--kind", help="The kind: file-tracker.")] = "file-tracker",
    path: Annotated[
        str | None, typer.Option("--path", help="file-tracker: its absolute folder.")
    ] = None,
) -> None:
    """Configure a connection; seats use it where --connection NAME=op,op grants it."""
    import os

    from .mesh import add_connection

    config: dict[str, Any] = {}
    if path is not None:
        config["path"] = os.path.abspath(path)
    with _mesh() as mesh:
        info = add_connection(mesh, name, kind, config)
    cliapp.emit_json({"name": info.name, "kind": info.kind, "config": info.config})


@connection_app.command("list")
def connection_list() -> None:
    """List the configured connections."""
    with _mesh() as mesh:
        found = mesh.store.list_connections()
    cliapp.emit_json(
        {"connections": [{"name": c.name, "kind": c.kind, "config": c.config} for c in found]}
    )


TtlOption = Annotated[
    float | None, typer.Option("--ttl", help="Seconds the lease lasts (default 120).")
]


def _lease_json(lease: Any) -> dict[str, Any]:
    from .mesh import epoch

    return {
        "seat": lease.seat,
        "generation": lease.generation,
        "holder": lease.holder,
        "expires_in_s": round(lease.expires_at - epoch(), 1),
    }


@lease_app.command("acquire")
def lease_acquire(
    seat: SeatArgument,
    holder: Annotated[
        str | None, typer.Option("--holder", help="Who holds it (default: host:pid).")
    ] = None,
    ttl: TtlOption = None,
) -> None:
    """Start a new execution lease: every older generation of the seat is fenced (exit 4)."""
    import os
    import socket

    from .limits import EXECUTION_LEASE_S
    from .mesh import acquire_lease

    who = holder or f"{socket.gethostname()}:{os.getpid()}"
    with _mesh() as mesh:
        lease = acquire_lease(mesh, seat, who, EXECUTION_LEASE_S if ttl is None else ttl)
    cliapp.emit_json(_lease_json(lease))


@lease_app.command("renew")
def lease_renew(
    seat: SeatArgument,
    generation: Annotated[int, typer.Option("--generation", help="The lease's generation.")],
    ttl: TtlOption = None,
) -> None:
    """Extend a live lease; a fenced or expired one exits 4."""
    from .limits import EXECUTION_LEASE_S
    from .mesh import renew_lease

    with _mesh() as mesh:
        lease = renew_lease(mesh, seat, generation, EXECUTION_LEASE_S if ttl is None else ttl)
    cliapp.emit_json(_lease_json(lease))


# ---- a seat's verbs ---------------------------------------------------------------


def _arguments(text: str) -> Any:
    from libcommon import jsonio

    if text == "-":
        if cliapp.env().stdin_isatty:
            raise UsageError("the arguments are read from stdin, and stdin is a terminal")
        text = cliapp.env().stdin.read(cliapp.REQUEST_MAX_BYTES + 1)
    if len(text) > cliapp.REQUEST_MAX_BYTES:
        raise UsageError(f"the arguments are larger than {cliapp.REQUEST_MAX_BYTES} bytes")
    try:
        return jsonio.loads(text)
    except jsonio.JSONDecodeError as exc:
        raise UsageError(f"the arguments are not valid JSON: {exc}") from None


@app.command("call")
def call(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A tool, e.g. memory.search.")],
    arguments: Annotated[
        str, typer.Argument(metavar="JSON", help="The arguments ('-': read them from stdin).")
    ] = "{}",
) -> None:
    """Call a tool as the seat whose token is in AX_MESH_TOKEN (lease: AX_MESH_LEASE).

    Exit 1 is a tool error (its JSON on stdout says which), 2 bad arguments, 4 a fenced
    lease.
    """
    from .catalog import call_tool
    from .errors import ToolError
    from .mesh import caller_from_env

    args = _arguments(arguments)
    with _mesh() as mesh:
        try:
            caller = caller_from_env(mesh, cliapp.env().environ)
            result = call_tool(mesh, caller, name, args)
        except ToolError as exc:
            cliapp.emit_json(exc.to_json())
            raise
        except Fenced as exc:
            cliapp.emit_json({"error": {"code": "fenced", "message": exc.message}})
            raise
    cliapp.emit_json(result)


@app.command("list")
def list_tools() -> None:
    """The tools the calling seat (AX_MESH_TOKEN) may use, with their argument schemas."""
    from .catalog import describe_tools
    from .mesh import caller_from_env

    with _mesh() as mesh:
        caller = caller_from_env(mesh, cliapp.env().environ)
        cliapp.emit_json({"seat": caller.name, "tools": describe_tools(caller)})


@app.command("run")
def run_seat(
    seat: SeatArgument,
    workspace: Annotated[
        Path, typer.Option("--workspace", "-C", help="The seat's workspace (a trusted folder).")
    ],
    once: Annotated[
        bool, typer.Option("--once", help="Take the turns that are due now, then exit.")
    ] = False,
    provider: Annotated[
        str | None, typer.Option("--provider", help="ax-agent's provider (e.g. mesh-fake).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="ax-agent's model.")] = None,
    delivery_lease: Annotated[
        float | None,
        typer.Option("--delivery-lease", help="Seconds a turn holds its message (default 600)."),
    ] = None,
    lease_ttl: TtlOption = None,
) -> None:
    """Give the seat its turns: one ax-agent turn per delivered message or due automation.

    Holds the seat's execution lease (a second runner of the seat exits 4) and prints one
    JSON line per event (started, turn.started, turn.ended). SIGTERM or Ctrl-C stops it
    (a turn in progress is aborted and put back).
    """
    import signal
    import threading

    from .limits import DELIVERY_LEASE_S, EXECUTION_LEASE_MAX_S, EXECUTION_LEASE_S
    from .runner import Runner, RunnerOptions

    agent_args: list[str] = []
    if provider is not None:
        agent_args += ["--provider", provider]
    if model is not None:
        agent_args += ["--model", model]
    for flag, value in (("--delivery-lease", delivery_lease), ("--ttl", lease_ttl)):
        if value is not None and not 0 < value <= EXECUTION_LEASE_MAX_S:
            raise UsageError(f"{flag} is more than 0 and at most {EXECUTION_LEASE_MAX_S:.0f} s")
    options = RunnerOptions(
        seat=seat,
        workspace=Path(os.path.realpath(workspace)),
        agent_args=agent_args,
        once=once,
        delivery_lease_s=DELIVERY_LEASE_S if delivery_lease is None else delivery_lease,
        lease_ttl_s=EXECUTION_LEASE_S if lease_ttl is None else lease_ttl,
    )
    runner = Runner(options, cliapp.env().environ, cliapp.emit_line)
    if threading.current_thread() is threading.main_thread():

        def stop(signum: int, frame: Any) -> None:
            runner.request_stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    status = runner.run()
    if status:
        raise typer.Exit(status)


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option("--host", help="A loopback address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0: any free one).")] = 8765,
) -> None:
    """Serve the tool catalogue over HTTP on loopback (GET /v1/tools, POST /v1/tools/NAME).

    Prints {"url": ...} on stdout once listening; the seat's token is the bearer token and
    its lease generation the X-Ax-Mesh-Lease header.
    """
    from .serve import make_server

    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number")
    with _mesh() as mesh:
        server = make_server(mesh, host, port)
        bound = server.server_address[1]
        cliapp.emit_line({"url": f"http://{host}:{bound}"})
        try:
            server.serve_forever()
        finally:
            server.server_close()


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return cliapp.run_main(app, argv, env)


def run() -> None:
    entry_point(main)
