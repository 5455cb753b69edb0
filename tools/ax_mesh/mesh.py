"""Opening a mesh, seats and their tokens, authentication and execution leases.

The library API the CLI, the HTTP server and ax-mcp share: ``open_mesh`` picks the
backend (``AX_MESH_DSN`` names PostgreSQL; otherwise ``<state root>/mesh/mesh.db``),
``add_seat`` and ``grant`` are a person's, ``authenticate`` turns a token and a lease
generation into a ``Caller``, and ``ax_mesh.catalog.call_tool`` runs a tool for it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libcommon import clock
from libcommon.errors import UsageError

from .context import Caller
from .errors import ToolError
from .limits import EXECUTION_LEASE_MAX_S
from .models import PERSONAL_PREFIX, Manifest, check_seat_name
from .store import Actor, ConnectionInfo, Lease, Seat, Store

DSN_VARIABLE = "AX_MESH_DSN"
TOKEN_VARIABLE = "AX_MESH_TOKEN"
SEAT_VARIABLE = "AX_MESH_SEAT"
LEASE_VARIABLE = "AX_MESH_LEASE"
TOKEN_BYTES = 32


@dataclass
class Mesh:
    store: Store
    root: Path  # <state root>/mesh: the SQLite database and the seats' token files

    def token_file(self, seat: str) -> Path:
        return self.root / "seats" / f"{seat_name(seat)}.token"

    def close(self) -> None:
        self.store.close()


def seat_name(value: str) -> str:
    try:
        return check_seat_name(value)
    except ValueError as exc:
        raise UsageError(f"seat name {value!r}: {exc}") from None


def mesh_root(environ: Mapping[str, str] | None = None) -> Path:
    from libcommon.paths import state_root

    return state_root(environ) / "mesh"


def open_mesh(environ: Mapping[str, str] | None = None) -> Mesh:
    env = os.environ if environ is None else environ
    root = mesh_root(env)
    dsn = env.get(DSN_VARIABLE)
    store: Store
    if dsn:
        from .pg_store import PgStore

        store = PgStore(dsn)
    else:
        from .sqlite_store import DB_NAME, SqliteStore

        store = SqliteStore(root / DB_NAME)
    return Mesh(store, root)


def epoch() -> float:
    return clock.now().timestamp()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _write_token(mesh: Mesh, seat: str) -> str:
    from libcommon.atomic import atomic_write_bytes

    token = "axm_" + os.urandom(TOKEN_BYTES).hex()
    path = mesh.token_file(seat)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write_bytes(path, (token + "\n").encode(), mode=0o600)
    return token


def check_manifest(mesh: Mesh, seat: str, manifest: Manifest) -> None:
    """A manifest may name only stores and seats that exist (a typo grants nothing silently)."""
    for name in manifest.stores:
        if name.startswith(PERSONAL_PREFIX):
            raise UsageError(
                f"store {name!r} is a personal store; only its own seat may use it",
                hint="grant a shared store (ax-mesh store add NAME)",
            )
        if mesh.store.get_store(name) is None:
            raise UsageError(
                f"store {name!r} does not exist", hint=f"create it: ax-mesh store add {name}"
            )
    for target in manifest.message:
        if target == seat:
            raise UsageError("a seat does not message itself; drop it from --message")
    for name, operations in manifest.connections.items():
        info = mesh.store.get_connection(name)
        if info is None:
            raise UsageError(
                f"connection {name!r} does not exist",
                hint=f"configure it first: ax-mesh connection add {name} --kind … ",
            )
        from .connection_tools import build

        known = build(info).operations()
        for operation in operations:
            if operation not in known:
                raise UsageError(
                    f"connection {name!r} ({info.kind}) has no operation {operation!r}",
                    hint=f"its operations: {', '.join(sorted(known))}",
                )


def add_connection(mesh: Mesh, name: str, kind: str, config: dict[str, Any]) -> ConnectionInfo:
    """A person configures a connection; seats use it only where a manifest grants it."""
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    from .connections import KINDS

    seat_name(name)  # connection names follow the seat-name rule
    factory = KINDS.get(kind)
    if factory is None:
        raise UsageError(
            f"--kind {kind!r} is not a connection kind", hint=f"kinds: {', '.join(sorted(KINDS))}"
        )
    if mesh.store.get_connection(name) is not None:
        raise UsageError(f"connection {name!r} already exists")
    try:
        factory.from_config(name, {"kind": kind, **config})
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "connection")) from None
    info = ConnectionInfo(name, kind, {"kind": kind, **config}, clock.timestamp())
    mesh.store.add_connection(info)
    return info


def unknown_routes(mesh: Mesh, manifest: Manifest) -> list[str]:
    """Routes to seats not added yet: allowed (two seats that message each other are added
    one after the other), and shown to the person, since a typo here routes nowhere."""
    return [name for name in manifest.message if mesh.store.get_seat(name) is None]


def add_seat(mesh: Mesh, name: str, role: str, manifest: Manifest) -> tuple[Seat, str]:
    """A new seat, its personal store ``@name`` and its token (written 0600)."""
    seat_name(name)
    check_manifest(mesh, name, manifest)
    if mesh.store.get_seat(name) is not None:
        raise UsageError(f"seat {name!r} already exists", hint="change it with ax-mesh seat grant")
    token = _write_token(mesh, name)
    seat = Seat(
        name=name,
        role=role,
        manifest=manifest.model_dump(),
        token_sha256=token_hash(token),
        created_at=clock.timestamp(),
        lease_generation=0,
        lease_holder=None,
        lease_expires_at=None,
        handoff=None,
        retired=False,
    )
    mesh.store.add_seat(seat)
    if mesh.store.get_store(PERSONAL_PREFIX + name) is None:
        mesh.store.add_store(PERSONAL_PREFIX + name, "personal", name, clock.timestamp())
    return seat, token


def grant(mesh: Mesh, name: str, manifest: Manifest, role: str | None = None) -> Seat:
    check_manifest(mesh, name, manifest)
    mesh.store.set_manifest(name, role, manifest.model_dump())
    seat = mesh.store.get_seat(name)
    assert seat is not None
    return seat


def rotate_token(mesh: Mesh, name: str) -> str:
    if mesh.store.get_seat(name) is None:
        raise UsageError(f"seat {name!r} does not exist")
    token = _write_token(mesh, name)
    mesh.store.set_token(name, token_hash(token))
    return token


def read_token_file(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise UsageError(f"cannot read the token file {path}: {exc.strerror}") from None


def authenticate(
    mesh: Mesh, token: str, generation: int, claimed_seat: str | None = None
) -> Caller:
    """The seat a token belongs to, under a live execution lease of this generation.

    A token of another seat than the one claimed, an unknown token and a retired seat
    are refused; a generation that is not the seat's current, live one is ``Fenced``.
    """
    seat = mesh.store.seat_by_token(token_hash(token)) if token else None
    if seat is None or not hmac.compare_digest(seat.token_sha256, token_hash(token)):
        raise ToolError(
            "unauthenticated",
            "the seat token is not valid",
            hint=f"{TOKEN_VARIABLE} must hold the token a person gave this seat",
        )
    if claimed_seat is not None and claimed_seat != seat.name:
        raise ToolError(
            "unauthenticated",
            f"the token is not seat {claimed_seat!r}'s",
            hint="each seat calls with its own token only",
        )
    actor = Actor(seat.name, generation)
    mesh.store.check_lease(actor, epoch())
    return Caller(seat, Manifest.model_validate(seat.manifest), actor)


def caller_from_env(mesh: Mesh, environ: Mapping[str, str]) -> Caller:
    token = environ.get(TOKEN_VARIABLE, "")
    if not token:
        raise UsageError(
            f"no seat token: {TOKEN_VARIABLE} is not set",
            hint="the runner sets it for a seat's own process; a person adds seats with "
            "ax-mesh seat add",
        )
    raw = environ.get(LEASE_VARIABLE, "")
    try:
        generation = int(raw)
    except ValueError:
        raise UsageError(
            f"{LEASE_VARIABLE} must hold the execution lease generation (an integer), not {raw!r}",
            hint="the runner sets it; a person acquires one with ax-mesh lease acquire SEAT",
        ) from None
    return authenticate(mesh, token, generation, environ.get(SEAT_VARIABLE) or None)


def acquire_lease(mesh: Mesh, seat: str, holder: str, ttl: float) -> Lease:
    if not 0 < ttl <= EXECUTION_LEASE_MAX_S:
        raise UsageError(f"a lease lasts more than 0 and at most {EXECUTION_LEASE_MAX_S:.0f} s")
    return mesh.store.acquire_lease(seat, holder, ttl, epoch())


def renew_lease(mesh: Mesh, seat: str, generation: int, ttl: float) -> Lease:
    if not 0 < ttl <= EXECUTION_LEASE_MAX_S:
        raise UsageError(f"a lease lasts more than 0 and at most {EXECUTION_LEASE_MAX_S:.0f} s")
    return mesh.store.renew_lease(Actor(seat, generation), ttl, epoch())


def seat_view(seat: Seat, now: float | None = None) -> dict[str, Any]:
    """A seat as a person sees it (never its token or the token's hash)."""
    moment = epoch() if now is None else now
    live = seat.lease_expires_at is not None and seat.lease_expires_at > moment
    return {
        "name": seat.name,
        "role": seat.role,
        "manifest": seat.manifest,
        "created_at": seat.created_at,
        "retired": seat.retired,
        "lease": {
            "generation": seat.lease_generation,
            "holder": seat.lease_holder if live else None,
            "live": live,
            "expires_in_s": (
                round(seat.lease_expires_at - moment, 1)
                if live and seat.lease_expires_at is not None
                else None
            ),
        },
    }
