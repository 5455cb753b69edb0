"""An in-memory operation ledger, for tests only: the store implements the real one.

It keeps ``ax_mesh.connections.ledger.Ledger``'s contract (keys unique per seat and
connection, reclaim only a pending record whose lease ended, first outcome wins) with
a lock instead of a transaction.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Literal

from ax_mesh.connections.ledger import Ledger, Operation, Status


class MemoryLedger:
    def __init__(self) -> None:
        self.records: dict[str, Operation] = {}
        self._lock = threading.Lock()

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
        with self._lock:
            if idempotency_key is not None:
                for record in self.records.values():
                    if (record.seat, record.connection, record.idempotency_key) == (
                        seat,
                        connection,
                        idempotency_key,
                    ):
                        return record, False
            record = Operation(
                id=f"O-{len(self.records) + 1}",
                seat=seat,
                connection=connection,
                operation=operation,
                params=params,
                request_digest=request_digest,
                idempotency_key=idempotency_key,
                status="pending",
                receipt=None,
                result=None,
                error=None,
                created_at=ts,
                updated_at=ts,
                lease_until=lease_until,
            )
            self.records[record.id] = record
            return record, True

    def reclaim(self, operation_id: str, now: float, lease_until: float) -> Operation | None:
        with self._lock:
            record = self.records.get(operation_id)
            if record is None or record.status != "pending" or record.lease_until >= now:
                return None
            record = replace(record, lease_until=lease_until)
            self.records[operation_id] = record
            return record

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
        with self._lock:
            record = self.records[operation_id]
            if record.status != "pending":
                return record
            record = replace(
                record,
                status=status,
                receipt=receipt,
                result=result,
                error=error,
                confirmed_by=confirmed_by,
                updated_at=ts,
            )
            self.records[operation_id] = record
            return record

    def get(self, operation_id: str) -> Operation | None:
        return self.records.get(operation_id)

    def unsettled(self, seat: str) -> list[Operation]:
        return [
            r
            for r in self.records.values()
            if r.seat == seat and r.status in ("pending", "unknown")
        ]


def _conforms(ledger: MemoryLedger) -> Ledger:
    return ledger  # mypy checks that MemoryLedger meets the protocol
