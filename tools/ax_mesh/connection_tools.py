"""``connections.list``, ``connections.invoke`` and ``operations.get``.

A person configures a connection (``ax-mesh connection add``) and grants a seat some of
its operations in the seat's manifest; ``connections.gateway`` runs every call and
writes the operation ledger, which the store keeps (``SeatLedger`` below adapts it for
one seat, fencing the record of a new call by the seat's lease).
"""

from __future__ import annotations

from typing import Any, Literal

from .connections import KINDS
from .connections.base import Connection
from .connections.gateway import OperationError, get, invoke, recover
from .connections.ledger import Ledger, Operation, Status
from .context import Ctx
from .errors import ToolError
from .models import ConnectionInvokeArgs, NoArgs, OperationGetArgs
from .store import Actor, ConnectionInfo, Store


class SeatLedger:
    """The store's operation ledger as ``Ledger``, for one seat's calls."""

    def __init__(self, store: Store, actor: Actor, now: float) -> None:
        self.store = store
        self.actor = actor
        self.now = now

    def begin(
        self,
        seat: str,
        connection: str,
        operation: str,
        params: dict[str, Any],
        request_digest: str,
        idempotency_key: str | None,
        ts: str,
        lease_until: float,
    ) -> tuple[Operation, bool]:
        assert seat == self.actor.seat
        # Fenced like every write: a fenced seat's call is never recorded, so never sent.
        return self.store.ledger_begin(
            self.actor,
            self.now,
            connection,
            operation,
            params,
            request_digest,
            idempotency_key,
            ts,
            lease_until,
        )

    def reclaim(self, operation_id: str, now: float, lease_until: float) -> Operation | None:
        return self.store.ledger_reclaim(operation_id, now, lease_until)

    def finish(
        self,
        operation_id: str,
        status: Status,
        receipt: str | None,
        result: dict[str, Any] | None,
        error: str | None,
        confirmed_by: Literal["response", "read_back"] | None,
        ts: str,
    ) -> Operation:
        # Not fenced: the call went out, and its outcome is recorded whoever holds the seat now.
        return self.store.ledger_finish(
            operation_id, status, receipt, result, error, confirmed_by, ts
        )

    def get(self, operation_id: str) -> Operation | None:
        return self.store.ledger_get(operation_id)

    def unsettled(self, seat: str) -> list[Operation]:
        return self.store.ledger_unsettled(seat)


def _conforms(ledger: SeatLedger) -> Ledger:
    return ledger  # mypy checks that SeatLedger meets the protocol


def build(info: ConnectionInfo) -> Connection:
    """The connection a person configured (its kind's ``from_config``)."""
    kind = KINDS.get(info.kind)
    if kind is None:
        raise ToolError("invalid", f"connection {info.name!r} has an unknown kind {info.kind!r}")
    connection: Connection = kind.from_config(info.name, info.config)
    return connection


def _tool_error(exc: OperationError) -> ToolError:
    return ToolError(exc.code, exc.message, exc.hint, **exc.details)


def _granted(ctx: Ctx, name: str) -> tuple[Connection, list[str]]:
    granted = ctx.caller.manifest.connections.get(name)
    info = ctx.store.get_connection(name) if granted is not None else None
    if granted is None or info is None:
        # The same words for "no such connection" and "not granted": not a directory.
        raise ToolError(
            "forbidden",
            f"connection {name!r} is not granted to this seat",
            hint="connections.list shows the granted connections",
        )
    return build(info), granted


def list_(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    out = []
    for name, granted in sorted(ctx.caller.manifest.connections.items()):
        info = ctx.store.get_connection(name)
        if info is None:
            continue
        specs = build(info).operations()
        out.append(
            {
                "connection": name,
                "kind": info.kind,
                "operations": [
                    {"name": op, "description": specs[op].description, "writes": specs[op].mutating}
                    for op in sorted(granted)
                    if op in specs
                ],
            }
        )
    return {"connections": out}


def invoke_(ctx: Ctx, args: ConnectionInvokeArgs) -> dict[str, Any]:
    connection, granted = _granted(ctx, args.connection)
    try:
        return invoke(
            SeatLedger(ctx.store, ctx.caller.actor, ctx.now),
            connection,
            seat=ctx.caller.name,
            granted=granted,
            operation=args.operation,
            params=args.params,
            idempotency_key=args.idempotency_key,
            now=ctx.now,
            ts=ctx.ts,
        )
    except OperationError as exc:
        raise _tool_error(exc) from None


def get_(ctx: Ctx, args: OperationGetArgs) -> dict[str, Any]:
    try:
        return get(SeatLedger(ctx.store, ctx.caller.actor, ctx.now), ctx.caller.name, args.id)
    except OperationError as exc:
        raise _tool_error(exc) from None


def recover_seat(store: Store, actor: Actor, now: float, ts: str) -> list[dict[str, Any]]:
    """At a runner's start: settle by read-back the seat's operations a dead runner left
    ``pending`` (their caller's lease over), over the connections its manifest still
    grants; returns what stays ``pending`` or ``unknown``, for the seat's next turn."""
    seat = store.get_seat(actor.seat)
    granted = dict(seat.manifest.get("connections") or {}) if seat is not None else {}
    connections: dict[str, Connection] = {}
    for name in granted:
        info = store.get_connection(name)
        if info is not None:
            connections[name] = build(info)
    return recover(SeatLedger(store, actor, now), connections, actor.seat, now, ts)
