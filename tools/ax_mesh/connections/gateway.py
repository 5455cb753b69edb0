"""``connections.invoke`` and ``operations.get``: every call recorded, ``unknown`` never repeated.

The order of one call: validate (grant, operation, params) → ``ledger.begin`` (a pending
record with its id, or the record this idempotency key already has) → the connection's
``invoke`` with the marker ``ax-mesh-op:<id>`` → ``ledger.finish``. When the response is
lost, the gateway reads the effect back by its marker: found is ``succeeded``, not found
is ``unknown``. A key that names a recorded operation returns it instead of repeating
it; a key whose operation is ``unknown`` is refused, and says to check with
``operations.get``. A pending record whose caller died (its lease ran out) is settled
the same way, by read-back, never by calling again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from typing import Any, Literal

from pydantic import ValidationError

from libcommon.errors import OperationFailed, UsageError

from .base import Call, Connection, LostResponse, Rejected, marker_for
from .ledger import Ledger, Operation, Status

# How long a caller's claim on a pending operation holds: longer than any connection
# call may take, so a live call is never settled behind its back.
PENDING_LEASE_S = 300.0
IDEMPOTENCY_KEY_MAX_CHARS = 128
# What an error message from a service may take in the ledger.
ERROR_MAX_CHARS = 2000

ErrorCode = Literal["forbidden", "not_found", "conflict", "unknown_outcome", "invalid"]


class OperationError(OperationFailed):
    """A refused call (exit 1), with a code a program can branch on and the operation's id
    when there is one. The catalogue turns it into its tool error."""

    def __init__(
        self, code: ErrorCode, message: str, hint: str | None = None, **details: Any
    ) -> None:
        super().__init__(message, hint)
        self.code = code
        self.details = details


def request_digest(operation: str, params: dict[str, Any]) -> str:
    """The identity of a request: a key reused for another request is a conflict."""
    import json

    canonical = json.dumps(
        {"operation": operation, "params": params}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def view(record: Operation) -> dict[str, Any]:
    """One operation as ``operations.get`` and ``connections.invoke`` return it."""
    return {
        "id": record.id,
        "connection": record.connection,
        "operation": record.operation,
        "status": record.status,
        "receipt": record.receipt,
        "result": record.result,
        "error": record.error,
        "idempotency_key": record.idempotency_key,
        "confirmed_by": record.confirmed_by,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def invoke(
    ledger: Ledger,
    connection: Connection,
    *,
    seat: str,
    granted: Collection[str],
    operation: str,
    params: Any,
    idempotency_key: str | None,
    now: float,
    ts: str,
) -> dict[str, Any]:
    """Run one granted operation on ``connection`` for ``seat``, recorded in ``ledger``.

    ``granted`` is the operations the seat's manifest grants on this connection (a
    person's grant; nothing here widens it). Returns the operation's view with
    ``replayed`` true when the key named an operation already recorded.
    """
    from libcommon.cliapp import describe_validation_error
    from libcommon.redact import redact_value

    spec = connection.operations().get(operation)
    if spec is None or operation not in granted:
        # The same words for "no such operation" and "not granted": grants are not a directory.
        raise OperationError(
            "forbidden",
            f"operation {operation!r} on connection {connection.name!r} is not granted to "
            f"this seat",
            hint="connections.list shows the granted operations",
        )
    if idempotency_key is not None and not 0 < len(idempotency_key) <= IDEMPOTENCY_KEY_MAX_CHARS:
        raise UsageError(
            f"argument field 'idempotency_key': 1-{IDEMPOTENCY_KEY_MAX_CHARS} characters"
        )
    if not isinstance(params, dict):
        raise UsageError("argument field 'params': a JSON object")
    try:
        parsed = spec.params.model_validate(params)
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "argument 'params'")) from None
    digest = request_digest(operation, params)
    record, created = ledger.begin(
        seat,
        connection.name,
        operation,
        redact_value(params),
        digest,
        idempotency_key,
        ts,
        now + PENDING_LEASE_S,
    )
    if not created:
        return _replay(ledger, connection, record, digest, now, ts)
    call = Call(seat, record.id, marker_for(record.id))
    status: Status
    try:
        receipt = connection.invoke(operation, parsed, call)
    except Rejected as exc:
        record = ledger.finish(record.id, "failed", None, None, _clip(exc.message), None, ts)
        return {**view(record), "replayed": False}
    except Exception as exc:  # a lost response: any failure but a rejection
        if not spec.mutating:
            status, error = "failed", f"no response: {_describe(exc)}"
            record = ledger.finish(record.id, status, None, None, _clip(error), None, ts)
            return {**view(record), "replayed": False}
        record = _settle_by_read_back(ledger, connection, record, parsed, call, exc, ts)
        return {**view(record), "replayed": False}
    record = ledger.finish(
        record.id, "succeeded", receipt.external_id, receipt.result, None, "response", ts
    )
    return {**view(record), "replayed": False}


def _replay(
    ledger: Ledger, connection: Connection, record: Operation, digest: str, now: float, ts: str
) -> dict[str, Any]:
    if record.request_digest != digest:
        raise OperationError(
            "conflict",
            f"the idempotency key {record.idempotency_key!r} belongs to operation {record.id} "
            f"({record.operation} with other params); nothing was sent",
            hint="use a new key for a new request",
            operation_id=record.id,
        )
    if record.status == "pending":
        taken = ledger.reclaim(record.id, now, now + PENDING_LEASE_S)
        if taken is None:
            raise OperationError(
                "conflict",
                f"operation {record.id} with this key is still in progress; nothing was sent",
                hint=f"operations.get {record.id} shows its outcome when it ends",
                operation_id=record.id,
            )
        # Its caller died mid-call: the effect may exist, so read it back, never resend.
        spec = connection.operations()[record.operation]
        parsed = spec.params.model_validate(record.params)
        call = Call(record.seat, record.id, marker_for(record.id))
        if spec.mutating:
            lost = LostResponse("the caller stopped before the response was recorded")
            record = _settle_by_read_back(ledger, connection, taken, parsed, call, lost, ts)
        else:
            error = "the caller stopped before the response was recorded"
            record = ledger.finish(record.id, "failed", None, None, error, None, ts)
    if record.status == "unknown":
        raise OperationError(
            "unknown_outcome",
            f"operation {record.id} ({record.operation} on {record.connection}) may have been "
            "applied, and its outcome is unknown; it is never repeated automatically",
            hint=f"check the tracker itself, and operations.get {record.id} for what is known",
            operation_id=record.id,
        )
    return {**view(record), "replayed": True}


def _settle_by_read_back(
    ledger: Ledger,
    connection: Connection,
    record: Operation,
    parsed: Any,
    call: Call,
    cause: BaseException,
    ts: str,
) -> Operation:
    try:
        found = connection.read_back(record.operation, parsed, call)
    except Exception as exc:
        found = None
        cause = exc
    if found is not None:
        return ledger.finish(
            record.id, "succeeded", found.external_id, found.result, None, "read_back", ts
        )
    error = f"the response was lost ({_describe(cause)}) and {call.marker} was not found"
    return ledger.finish(record.id, "unknown", None, None, _clip(error), None, ts)


def get(ledger: Ledger, seat: str, operation_id: str) -> dict[str, Any]:
    """``operations.get``: one of the seat's own operations (another's is not found)."""
    record = ledger.get(operation_id)
    if record is None or record.seat != seat:
        raise OperationError(
            "not_found", f"operation {operation_id} not found (or not this seat's)"
        )
    return view(record)


def recover(
    ledger: Ledger, connections: Mapping[str, Connection], seat: str, now: float, ts: str
) -> list[dict[str, Any]]:
    """Settle the seat's pending operations whose caller died, by read-back; then list what
    is still ``unknown`` (for the seat's recovery context after a restart)."""
    for record in ledger.unsettled(seat):
        connection = connections.get(record.connection)
        if record.status != "pending" or connection is None:
            continue
        try:
            _replay(ledger, connection, record, record.request_digest, now, ts)
        except OperationError:
            continue  # still in progress elsewhere, or now unknown: listed below
    return [view(r) for r in ledger.unsettled(seat)]


def _describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {message}"


def _clip(text: str) -> str:
    from libcommon.redact import redact

    text = redact(text)
    return text if len(text) <= ERROR_MAX_CHARS else text[: ERROR_MAX_CHARS - 1] + "…"
