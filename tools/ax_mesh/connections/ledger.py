"""The operation ledger: one record per connection call, and the protocol a store implements.

``Operation.status`` is ``pending`` while a call is in flight, then ``succeeded``
(applied, with a receipt), ``failed`` (rejected, not applied) or ``unknown`` (it may
have been applied; the read-back could not confirm it). Only the gateway changes a
record, and ``unknown`` is final for the gateway: it is never repeated automatically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

Status = Literal["pending", "succeeded", "failed", "unknown"]
OUTCOMES: tuple[Status, ...] = ("succeeded", "failed", "unknown")


@dataclass(frozen=True)
class Operation:
    id: str  # O-<n>, assigned by the ledger
    seat: str
    connection: str
    operation: str
    params: dict[str, Any]  # redacted: what the ledger shows, not what was sent
    request_digest: str  # sha256 of the operation and its params as sent
    idempotency_key: str | None
    status: Status
    receipt: str | None  # the external id (issue identifier, project id)
    result: dict[str, Any] | None
    error: str | None
    created_at: str
    updated_at: str
    # While pending: until when the caller's claim on the call holds (epoch seconds).
    # A pending record past it belongs to a caller that died mid-call.
    lease_until: float
    confirmed_by: Literal["response", "read_back"] | None = None


class Ledger(Protocol):
    """What the store implements (SQLite and PostgreSQL alike), each method atomic.

    Keys are unique per (seat, connection, idempotency_key); a ``None`` key never matches.
    """

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
        """A new pending record, or the existing one with this key: (record, created)."""
        ...

    def reclaim(self, operation_id: str, now: float, lease_until: float) -> Operation | None:
        """Take over a pending record whose lease ended before ``now`` (compare-and-swap on
        the lease): the record with the new lease, or None when it is not such a record."""
        ...

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
        """Settle a pending record (a settled one is returned unchanged: first outcome wins)."""
        ...

    def get(self, operation_id: str) -> Operation | None: ...

    def unsettled(self, seat: str) -> list[Operation]:
        """The seat's ``unknown`` and ``pending`` records, oldest first (its recovery context)."""
        ...
