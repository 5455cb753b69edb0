"""The SQL both backends share; each backend supplies its transactions, locks and search.

Statements are written with ``?`` placeholders (PostgreSQL's backend turns them into
``%s``), no ``%`` in literals, and only functions both engines have, so one text
serves both. JSON columns are TEXT in both, read and written here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from libcommon.errors import Fenced

from .errors import ToolError
from .store import (
    Actor,
    Automation,
    AutomationFn,
    AutomationRun,
    Change,
    ChangeFn,
    ConnectionInfo,
    Lease,
    Message,
    Record,
    Revision,
    SearchPage,
    Seat,
    StoreInfo,
    TickFn,
)

if TYPE_CHECKING:
    from .connections.ledger import Operation

SCHEMA_VERSION = 1

RECORD_COLUMNS = (
    "id, store, path, kind, revision, author, lease_generation, created_at, updated_at, "
    "archived, text, tags, source_refs, provenance, data, size"
)
SEAT_COLUMNS = (
    "name, role, manifest, token_sha256, created_at, lease_generation, lease_holder, "
    "lease_expires_at, handoff, retired"
)
MESSAGE_COLUMNS = (
    "id, conversation_id, sender, recipient, body, correlation_id, reply_to, wake, state, "
    "attempts, not_before, lease_until, lease_token, created_at, last_error"
)
AUTOMATION_COLUMNS = (
    "id, seat, name, instruction, schedule, status, next_run, runs_queued, skipped_runs, "
    "missed_runs, last_key_at, created_at, updated_at"
)
RUN_COLUMNS = (
    "id, automation_id, seat, key, name, instruction, scheduled_at, missed, state, attempts, "
    "not_before, lease_until, lease_token, created_at, last_error"
)
OPERATION_COLUMNS = (
    "id, seat, connection, operation, params, request_digest, idempotency_key, status, "
    "receipt, result, error, created_at, updated_at, lease_until, confirmed_by"
)
# Automations a seat still has (the cap and the name rule count these).
LIVE_AUTOMATION = "status IN ('active', 'paused')"
ORDER_COLUMNS = {"name": "path", "created_at": "created_at", "updated_at": "updated_at"}


class Tx(Protocol):
    """One transaction's statements."""

    def all(self, sql: str, *params: Any) -> list[tuple[Any, ...]]: ...
    def one(self, sql: str, *params: Any) -> tuple[Any, ...] | None: ...
    def run(self, sql: str, *params: Any) -> int: ...


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _unjson(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def record_of(row: tuple[Any, ...]) -> Record:
    return Record(
        id=int(row[0]),
        store=row[1],
        path=row[2],
        kind=row[3],
        revision=int(row[4]),
        author=row[5],
        lease_generation=int(row[6]),
        created_at=row[7],
        updated_at=row[8],
        archived=bool(row[9]),
        text=row[10],
        tags=_unjson(row[11]) or [],
        source_refs=_unjson(row[12]) or [],
        provenance=_unjson(row[13]),
        data=_unjson(row[14]),
        size=int(row[15]),
    )


def seat_of(row: tuple[Any, ...]) -> Seat:
    return Seat(
        name=row[0],
        role=row[1],
        manifest=_unjson(row[2]),
        token_sha256=row[3],
        created_at=row[4],
        lease_generation=int(row[5]),
        lease_holder=row[6],
        lease_expires_at=None if row[7] is None else float(row[7]),
        handoff=_unjson(row[8]),
        retired=bool(row[9]),
    )


def _delivery_columns(row: tuple[Any, ...], first: int) -> dict[str, Any]:
    """The delivery columns messages and automation runs share (they are delivered alike),
    from ``row[first]`` on: state, attempts, not_before, lease_until, lease_token,
    created_at, last_error."""
    state, attempts, not_before, lease_until, lease_token, created_at, last_error = row[
        first : first + 7
    ]
    return {
        "state": state,
        "attempts": int(attempts),
        "not_before": float(not_before),
        "lease_until": None if lease_until is None else float(lease_until),
        "lease_token": lease_token,
        "created_at": created_at,
        "last_error": last_error,
    }


def message_of(row: tuple[Any, ...]) -> Message:
    return Message(
        id=int(row[0]),
        conversation_id=row[1],
        sender=row[2],
        recipient=row[3],
        body=row[4],
        correlation_id=row[5],
        reply_to=None if row[6] is None else int(row[6]),
        wake=bool(row[7]),
        **_delivery_columns(row, 8),
    )


def automation_of(row: tuple[Any, ...]) -> Automation:
    return Automation(
        id=int(row[0]),
        seat=row[1],
        name=row[2],
        instruction=row[3],
        schedule=_unjson(row[4]),
        status=row[5],
        next_run=None if row[6] is None else float(row[6]),
        runs_queued=int(row[7]),
        skipped_runs=int(row[8]),
        missed_runs=int(row[9]),
        last_key_at=None if row[10] is None else float(row[10]),
        created_at=row[11],
        updated_at=row[12],
    )


def run_of(row: tuple[Any, ...]) -> AutomationRun:
    return AutomationRun(
        id=int(row[0]),
        automation_id=int(row[1]),
        seat=row[2],
        key=row[3],
        name=row[4],
        instruction=row[5],
        scheduled_at=float(row[6]),
        missed=int(row[7]),
        **_delivery_columns(row, 8),
    )


def operation_of(row: tuple[Any, ...]) -> Operation:
    from .connections.ledger import Operation

    return Operation(
        id=f"O-{row[0]}",
        seat=row[1],
        connection=row[2],
        operation=row[3],
        params=_unjson(row[4]),
        request_digest=row[5],
        idempotency_key=row[6],
        status=row[7],
        receipt=row[8],
        result=_unjson(row[9]),
        error=row[10],
        created_at=row[11],
        updated_at=row[12],
        lease_until=float(row[13]),
        confirmed_by=row[14],
    )


def _operation_number(operation_id: str) -> int | None:
    number = operation_id.removeprefix("O-")
    return int(number) if operation_id.startswith("O-") and number.isdigit() else None


def _placeholders(values: list[Any]) -> str:
    return ", ".join("?" for _ in values)


class SqlCore:
    """Everything but transactions, locks and search, written once for both engines."""

    backend = "sql"
    # Appended to a SELECT of a seat row in a write transaction (PostgreSQL: FOR SHARE).
    share_lock = ""
    update_lock = ""
    skip_locked = ""
    instr = "instr"

    # ---- what a backend supplies ----
    def read(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def lock(self, tx: Tx, key: str) -> None:
        """Serialise writers of ``key`` until the transaction ends (no-op where a write
        transaction already excludes every other writer)."""

    def index_record(self, tx: Tx, record_id: int, path: str, text: str, live: bool) -> None:
        """Keep the full-text index in step with a record's new revision."""

    def search(
        self,
        stores: list[str],
        query: str,
        prefix: str,
        tags: list[str],
        limit: int,
        offset: int,
        candidates: int,
    ) -> SearchPage:
        """Rank the ``candidates`` newest matching records in the readable scope (all of
        them when fewer match) and return the page ``offset``/``limit`` of that ranking."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # ---- administration ----
    def add_store(self, name: str, kind: str, owner: str | None, now: str) -> StoreInfo:
        with self.write() as tx:
            if tx.one("SELECT name FROM stores WHERE name = ?", name):
                raise ToolError("conflict", f"store {name!r} already exists")
            tx.run(
                "INSERT INTO stores (name, kind, owner, created_at, work_counter) "
                "VALUES (?, ?, ?, ?, 0)",
                name,
                kind,
                owner,
                now,
            )
        return StoreInfo(name, kind, owner, now)

    def get_store(self, name: str) -> StoreInfo | None:
        with self.read() as tx:
            row = tx.one("SELECT name, kind, owner, created_at FROM stores WHERE name = ?", name)
        return None if row is None else StoreInfo(*row)

    def list_stores(self) -> list[StoreInfo]:
        with self.read() as tx:
            rows = tx.all("SELECT name, kind, owner, created_at FROM stores ORDER BY name")
        return [StoreInfo(*row) for row in rows]

    def add_seat(self, seat: Seat) -> None:
        with self.write() as tx:
            if tx.one("SELECT name FROM seats WHERE name = ?", seat.name):
                raise ToolError("conflict", f"seat {seat.name!r} already exists")
            tx.run(
                f"INSERT INTO seats ({SEAT_COLUMNS}) VALUES (?, ?, ?, ?, ?, 0, NULL, NULL, "
                "NULL, 0)",
                seat.name,
                seat.role,
                _json(seat.manifest),
                seat.token_sha256,
                seat.created_at,
            )

    def set_manifest(self, name: str, role: str | None, manifest: Mapping[str, Any]) -> None:
        with self.write() as tx:
            if role is None:
                count = tx.run(
                    "UPDATE seats SET manifest = ? WHERE name = ?", _json(manifest), name
                )
            else:
                count = tx.run(
                    "UPDATE seats SET manifest = ?, role = ? WHERE name = ?",
                    _json(manifest),
                    role,
                    name,
                )
            if count != 1:
                raise ToolError("not_found", f"seat {name!r} not found")

    def set_token(self, name: str, token_sha256: str) -> None:
        with self.write() as tx:
            if tx.run("UPDATE seats SET token_sha256 = ? WHERE name = ?", token_sha256, name) != 1:
                raise ToolError("not_found", f"seat {name!r} not found")

    def retire_seat(self, name: str) -> None:
        with self.write() as tx:
            # Retiring also fences whatever lease is live: its next write exits 4.
            count = tx.run(
                "UPDATE seats SET retired = 1, lease_generation = lease_generation + 1, "
                "lease_holder = NULL, lease_expires_at = NULL WHERE name = ?",
                name,
            )
            if count != 1:
                raise ToolError("not_found", f"seat {name!r} not found")

    def get_seat(self, name: str) -> Seat | None:
        with self.read() as tx:
            row = tx.one(f"SELECT {SEAT_COLUMNS} FROM seats WHERE name = ?", name)
        return None if row is None else seat_of(row)

    def seat_by_token(self, token_sha256: str) -> Seat | None:
        with self.read() as tx:
            row = tx.one(f"SELECT {SEAT_COLUMNS} FROM seats WHERE token_sha256 = ?", token_sha256)
        return None if row is None else seat_of(row)

    def list_seats(self) -> list[Seat]:
        with self.read() as tx:
            rows = tx.all(f"SELECT {SEAT_COLUMNS} FROM seats ORDER BY name")
        return [seat_of(row) for row in rows]

    # ---- execution leases ----
    def acquire_lease(self, seat: str, holder: str, ttl: float, now: float) -> Lease:
        with self.write() as tx:
            row = tx.one(
                "SELECT lease_generation, lease_holder, lease_expires_at, retired FROM seats "
                f"WHERE name = ?{self.update_lock}",
                seat,
            )
            if row is None:
                raise ToolError("not_found", f"seat {seat!r} not found")
            generation, current, expires, retired = row
            if retired:
                raise Fenced(f"seat {seat!r} is retired")
            if current is not None and current != holder and expires is not None and expires > now:
                raise Fenced(
                    f"seat {seat!r} has a live execution lease held by {current!r} "
                    f"(generation {generation}) for {expires - now:.0f} s more",
                    hint="wait for it to expire, or stop that runner",
                )
            generation = int(generation) + 1
            tx.run(
                "UPDATE seats SET lease_generation = ?, lease_holder = ?, lease_expires_at = ? "
                "WHERE name = ?",
                generation,
                holder,
                now + ttl,
                seat,
            )
        return Lease(seat, generation, holder, now + ttl)

    def _fence(self, tx: Tx, actor: Actor, now: float) -> tuple[Any, ...]:
        row = tx.one(
            "SELECT lease_generation, lease_expires_at, retired, lease_holder FROM seats "
            f"WHERE name = ?{self.share_lock}",
            actor.seat,
        )
        if row is None:
            raise ToolError("unauthenticated", f"seat {actor.seat!r} no longer exists")
        generation, expires, retired, _holder = row
        if retired:
            raise Fenced(f"seat {actor.seat!r} is retired")
        if int(generation) != actor.generation:
            raise Fenced(
                f"execution lease generation {actor.generation} of seat {actor.seat!r} was "
                f"fenced by generation {generation}",
                hint="a newer runner holds this seat; this process must stop",
            )
        if expires is None or float(expires) <= now:
            raise Fenced(
                f"execution lease generation {actor.generation} of seat {actor.seat!r} expired",
                hint="the runner must renew its lease before the seat acts again",
            )
        return row

    def check_lease(self, actor: Actor, now: float) -> None:
        with self.read() as tx:
            self._fence(tx, actor, now)

    def renew_lease(self, actor: Actor, ttl: float, now: float) -> Lease:
        with self.write() as tx:
            row = self._fence(tx, actor, now)
            tx.run(
                "UPDATE seats SET lease_expires_at = ? WHERE name = ? AND lease_generation = ?",
                now + ttl,
                actor.seat,
                actor.generation,
            )
        return Lease(actor.seat, actor.generation, row[3], now + ttl)

    def release_lease(self, actor: Actor) -> None:
        with self.write() as tx:
            tx.run(
                "UPDATE seats SET lease_holder = NULL, lease_expires_at = NULL "
                "WHERE name = ? AND lease_generation = ?",
                actor.seat,
                actor.generation,
            )

    def set_handoff(self, actor: Actor, now: float, handoff: Mapping[str, Any]) -> None:
        with self.write() as tx:
            self._fence(tx, actor, now)
            tx.run("UPDATE seats SET handoff = ? WHERE name = ?", _json(handoff), actor.seat)

    # ---- records ----
    def get_record(
        self, store: str, path: str | None = None, record_id: int | None = None
    ) -> Record | None:
        with self.read() as tx:
            if record_id is not None:
                row = tx.one(
                    f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ? AND store = ?",
                    record_id,
                    store,
                )
            else:
                row = tx.one(
                    f"SELECT {RECORD_COLUMNS} FROM records "
                    "WHERE store = ? AND path = ? AND archived = 0",
                    store,
                    path,
                )
        return None if row is None else record_of(row)

    def record_store(self, record_id: int) -> str | None:
        """The store a record id lives in (the caller then checks it may read it)."""
        with self.read() as tx:
            row = tx.one("SELECT store FROM records WHERE id = ?", record_id)
        return None if row is None else str(row[0])

    def last_record_at(self, store: str, path: str) -> Record | None:
        with self.read() as tx:
            row = tx.one(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE store = ? AND path = ? "
                "ORDER BY archived ASC, id DESC LIMIT 1",
                store,
                path,
            )
        return None if row is None else record_of(row)

    def get_revision(self, record_id: int, revision: int) -> Revision | None:
        with self.read() as tx:
            row = tx.one(
                "SELECT record_id, revision, op, author, lease_generation, ts, text "
                "FROM revisions WHERE record_id = ? AND revision = ?",
                record_id,
                revision,
            )
        return None if row is None else Revision(*row)

    def list_records(
        self,
        stores: list[str],
        prefix: str,
        order_by: str,
        descending: bool,
        limit: int,
        offset: int,
        kind: str | None = None,
    ) -> list[Record]:
        if not stores:
            return []
        column = ORDER_COLUMNS[order_by]
        direction = "DESC" if descending else "ASC"
        where, params = self._scope(stores, prefix, [])
        if kind is not None:
            where += " AND kind = ?"
            params.append(kind)
        with self.read() as tx:
            rows = tx.all(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE {where} "
                f"ORDER BY {column} {direction}, store {direction}, id {direction} "
                "LIMIT ? OFFSET ?",
                *params,
                limit,
                offset,
            )
        return [record_of(row) for row in rows]

    def _scope(
        self, stores: list[str], prefix: str, tags: list[str], table: str = ""
    ) -> tuple[str, list[Any]]:
        """The WHERE clause that confines a query to readable stores, live records, a
        prefix and tags: authorisation is part of the query, never a filter afterwards."""
        t = f"{table}." if table else ""
        where = f"{t}store IN ({_placeholders(stores)}) AND {t}archived = 0"
        params: list[Any] = list(stores)
        if prefix:
            where += f" AND substr({t}path, 1, ?) = ?"
            params += [len(prefix), prefix]
        for tag in tags:
            where += f" AND {self.instr}({t}tags, ?) > 0"
            params.append(_json(tag))
        return where, params

    def mutate_record(
        self,
        actor: Actor,
        now: float,
        ts: str,
        store: str,
        path: str,
        change: ChangeFn,
    ) -> Record | None:
        with self.write() as tx:
            self._fence(tx, actor, now)
            self.lock(tx, f"record:{store}/{path}")
            row = tx.one(
                f"SELECT {RECORD_COLUMNS} FROM records "
                f"WHERE store = ? AND path = ? AND archived = 0{self.update_lock}",
                store,
                path,
            )
            current = None if row is None else record_of(row)
            wanted = change(current)
            if wanted is None:
                return current
            return self._apply(tx, actor, ts, store, path, current, wanted)

    def _apply(
        self,
        tx: Tx,
        actor: Actor,
        ts: str,
        store: str,
        path: str,
        current: Record | None,
        wanted: Change,
    ) -> Record:
        size = len(wanted.text.encode("utf-8", "surrogatepass"))
        values = (
            wanted.kind,
            actor.seat,
            actor.generation,
            ts,
            1 if wanted.archived else 0,
            wanted.text,
            _json(wanted.tags),
            _json(wanted.source_refs),
            None if wanted.provenance is None else _json(wanted.provenance),
            None if wanted.data is None else _json(wanted.data),
            size,
        )
        if current is None:
            row = tx.one(
                "INSERT INTO records (store, path, revision, created_at, kind, author, "
                "lease_generation, updated_at, archived, text, tags, source_refs, provenance, "
                "data, size) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                f"RETURNING {RECORD_COLUMNS}",
                store,
                path,
                ts,
                *values,
            )
        else:
            row = tx.one(
                "UPDATE records SET revision = revision + 1, kind = ?, author = ?, "
                "lease_generation = ?, updated_at = ?, archived = ?, text = ?, tags = ?, "
                "source_refs = ?, provenance = ?, data = ? , size = ? "
                f"WHERE id = ? RETURNING {RECORD_COLUMNS}",
                *values,
                current.id,
            )
        assert row is not None
        record = record_of(row)
        tx.run(
            "INSERT INTO revisions (record_id, revision, op, author, lease_generation, ts, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            record.id,
            record.revision,
            wanted.op,
            actor.seat,
            actor.generation,
            ts,
            record.text,
        )
        self.index_record(tx, record.id, record.path, record.text, not record.archived)
        return record

    def history(self, record_id: int, limit: int, offset: int) -> list[Revision]:
        with self.read() as tx:
            rows = tx.all(
                "SELECT record_id, revision, op, author, lease_generation, ts, text "
                "FROM revisions WHERE record_id = ? ORDER BY revision DESC LIMIT ? OFFSET ?",
                record_id,
                limit,
                offset,
            )
        return [Revision(*row) for row in rows]

    def literal_candidates(
        self,
        stores: list[str],
        needles: list[str],
        require_all: bool,
        case_sensitive: bool,
        prefix: str,
        tags: list[str],
        after_id: int,
        limit: int,
    ) -> list[Record]:
        if not stores:
            return []
        where, params = self._scope(stores, prefix, tags)
        tests: list[str] = []
        for needle in needles:
            if case_sensitive:
                tests.append(f"{self.instr}(text, ?) > 0")
                params.append(needle)
            elif needle.isascii():
                tests.append(f"{self.instr}(lower(text), ?) > 0")
                params.append(needle.lower())
            elif not require_all:
                # The engines fold non-ASCII case differently: no pre-filter, Python decides.
                tests = []
                break
        if tests:
            where += " AND (" + (" AND " if require_all else " OR ").join(tests) + ")"
        with self.read() as tx:
            rows = tx.all(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE {where} AND id > ? "
                "ORDER BY id LIMIT ?",
                *params,
                after_id,
                limit,
            )
        return [record_of(row) for row in rows]

    def next_work_number(self, actor: Actor, now: float, store: str) -> int:
        with self.write() as tx:
            self._fence(tx, actor, now)
            row = tx.one(
                "UPDATE stores SET work_counter = work_counter + 1 WHERE name = ? "
                "RETURNING work_counter",
                store,
            )
        if row is None:
            raise ToolError("not_found", f"store {store!r} not found")
        return int(row[0])

    # ---- messages ----
    def enqueue_message(
        self,
        actor: Actor,
        now: float,
        ts: str,
        recipient: str,
        body: str,
        conversation_id: str | None,
        correlation_id: str | None,
        reply_to: int | None,
        wake: bool,
        inbox_max: int,
    ) -> Message:
        with self.write() as tx:
            self._fence(tx, actor, now)
            self.lock(tx, f"inbox:{recipient}")
            waiting = tx.one(
                "SELECT count(*) FROM messages WHERE recipient = ? "
                "AND state IN ('queued', 'leased')",
                recipient,
            )
            if waiting is not None and int(waiting[0]) >= inbox_max:
                raise ToolError(
                    "inbox_full",
                    f"seat {recipient!r} has {inbox_max} messages waiting; nothing was sent",
                    hint="try again later, or ask a person why the seat is not taking turns",
                )
            conversation = conversation_id or f"C-{os.urandom(6).hex()}"
            row = tx.one(
                "INSERT INTO messages (conversation_id, sender, recipient, body, correlation_id, "
                "reply_to, wake, state, attempts, not_before, created_at) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?) RETURNING {MESSAGE_COLUMNS}",
                conversation,
                actor.seat,
                recipient,
                body,
                correlation_id,
                reply_to,
                1 if wake else 0,
                now,
                ts,
            )
            assert row is not None
            self.notify(tx, recipient)
        return message_of(row)

    def notify(self, tx: Tx, recipient: str) -> None:
        """A wake-up hint for the recipient's runner (never the message itself)."""

    def get_message(self, message_id: int) -> Message | None:
        with self.read() as tx:
            row = tx.one(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", message_id)
        return None if row is None else message_of(row)

    def waiting_count(self, recipient: str) -> int:
        with self.read() as tx:
            row = tx.one(
                "SELECT count(*) FROM messages WHERE recipient = ? "
                "AND state IN ('queued', 'leased')",
                recipient,
            )
        return 0 if row is None else int(row[0])

    def claim_delivery(
        self, recipient: str, now: float, lease_s: float, max_attempts: int
    ) -> Message | None:
        with self.write() as tx:
            # A lease that ran out after the last attempt ends in the dead letters.
            tx.run(
                "UPDATE messages SET state = 'dead', lease_token = NULL, "
                "last_error = 'the delivery lease expired on the last attempt' "
                "WHERE recipient = ? AND state = 'leased' AND lease_until <= ? "
                "AND attempts >= ?",
                recipient,
                now,
                max_attempts,
            )
            row = tx.one(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.recipient = ? AND m.wake = 1 "
                "AND (m.state = 'queued' OR (m.state = 'leased' AND m.lease_until <= ?)) "
                "AND m.not_before <= ? AND NOT EXISTS (SELECT 1 FROM messages e "
                "WHERE e.recipient = m.recipient AND e.conversation_id = m.conversation_id "
                "AND e.id < m.id AND e.wake = 1 AND e.state IN ('queued', 'leased')) "
                f"ORDER BY m.id LIMIT 1{self.skip_locked}",
                recipient,
                now,
                now,
            )
            if row is None:
                return None
            token = os.urandom(12).hex()
            claimed = tx.one(
                "UPDATE messages SET state = 'leased', attempts = attempts + 1, "
                f"lease_until = ?, lease_token = ? WHERE id = ? RETURNING {MESSAGE_COLUMNS}",
                now + lease_s,
                token,
                int(row[0]),
            )
        return None if claimed is None else message_of(claimed)

    def _leased(self, tx: Tx, message_id: int, lease_token: str, now: float) -> None:
        row = tx.one(
            f"SELECT state, lease_token, lease_until FROM messages WHERE id = ?{self.update_lock}",
            message_id,
        )
        if row is None:
            raise ToolError("not_found", f"message M-{message_id} not found")
        state, token, until = row
        if state != "leased" or token != lease_token or float(until) <= now:
            raise Fenced(
                f"the delivery lease on message M-{message_id} is no longer this runner's "
                f"(the message is {state})",
                hint="the message was, or will be, offered again; this turn's outcome is dropped",
            )

    def complete_delivery(self, message_id: int, lease_token: str, now: float) -> None:
        with self.write() as tx:
            self._leased(tx, message_id, lease_token, now)
            tx.run(
                "UPDATE messages SET state = 'done', lease_token = NULL, done_at = ? WHERE id = ?",
                now,
                message_id,
            )

    def fail_delivery(
        self,
        message_id: int,
        lease_token: str,
        now: float,
        error: str,
        max_attempts: int,
        backoff: Callable[[int], float],
    ) -> Message:
        with self.write() as tx:
            self._leased(tx, message_id, lease_token, now)
            attempts_row = tx.one("SELECT attempts FROM messages WHERE id = ?", message_id)
            assert attempts_row is not None
            attempts = int(attempts_row[0])
            if attempts >= max_attempts:
                row = tx.one(
                    "UPDATE messages SET state = 'dead', lease_token = NULL, last_error = ? "
                    f"WHERE id = ? RETURNING {MESSAGE_COLUMNS}",
                    error,
                    message_id,
                )
            else:
                row = tx.one(
                    "UPDATE messages SET state = 'queued', lease_token = NULL, "
                    "lease_until = NULL, not_before = ?, last_error = ? "
                    f"WHERE id = ? RETURNING {MESSAGE_COLUMNS}",
                    now + backoff(attempts),
                    error,
                    message_id,
                )
        assert row is not None
        return message_of(row)

    def take_passive(self, recipient: str, now: float, limit: int) -> list[Message]:
        with self.write() as tx:
            rows = tx.all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE recipient = ? AND wake = 0 "
                f"AND state = 'queued' ORDER BY id LIMIT ?{self.skip_locked}",
                recipient,
                limit,
            )
            ids = [int(row[0]) for row in rows]
            if ids:
                tx.run(
                    f"UPDATE messages SET state = 'handed', done_at = ? "
                    f"WHERE id IN ({_placeholders(ids)})",
                    now,
                    *ids,
                )
        return [message_of(row) for row in rows]

    def conversations(self, seat: str, limit: int, offset: int) -> list[dict[str, Any]]:
        with self.read() as tx:
            rows = tx.all(
                "SELECT conversation_id, count(*), min(created_at), max(created_at), max(id) "
                "FROM messages WHERE sender = ? OR recipient = ? GROUP BY conversation_id "
                "ORDER BY max(id) DESC LIMIT ? OFFSET ?",
                seat,
                seat,
                limit,
                offset,
            )
        return [
            {
                "conversation_id": row[0],
                "messages": int(row[1]),
                "started_at": row[2],
                "last_at": row[3],
                "last_message_id": f"M-{row[4]}",
            }
            for row in rows
        ]

    def conversation(
        self, seat: str, conversation_id: str, limit: int, offset: int
    ) -> list[Message]:
        with self.read() as tx:
            rows = tx.all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? "
                "AND (sender = ? OR recipient = ?) ORDER BY id LIMIT ? OFFSET ?",
                conversation_id,
                seat,
                seat,
                limit,
                offset,
            )
        return [message_of(row) for row in rows]

    def queue_counts(self, seat: str, now: float) -> dict[str, int]:
        with self.read() as tx:
            rows = tx.all(
                "SELECT state, wake, count(*) FROM messages WHERE recipient = ? "
                "AND state IN ('queued', 'leased', 'dead') GROUP BY state, wake",
                seat,
            )
        counts = {"queued": 0, "passive": 0, "in_delivery": 0, "dead": 0}
        for state, wake, count in rows:
            if state == "queued":
                counts["queued" if wake else "passive"] += int(count)
            elif state == "leased":
                counts["in_delivery"] += int(count)
            else:
                counts["dead"] += int(count)
        return counts

    # ---- automations ----
    def mutate_automation(
        self,
        actor: Actor,
        now: float,
        automation_id: int | None,
        change: AutomationFn,
        live_max: int,
    ) -> Automation:
        with self.write() as tx:
            self._fence(tx, actor, now)
            # One seat's automations change one at a time: the name rule and the cap hold.
            self.lock(tx, f"automations:{actor.seat}")
            current: Automation | None = None
            if automation_id is not None:
                row = tx.one(
                    f"SELECT {AUTOMATION_COLUMNS} FROM automations WHERE id = ? AND seat = ? "
                    f"AND status <> 'deleted'{self.update_lock}",
                    automation_id,
                    actor.seat,
                )
                if row is None:
                    raise ToolError("not_found", f"automation A-{automation_id} not found")
                current = automation_of(row)
            wanted = change(current)
            live = wanted.status in ("active", "paused")
            if live:
                same = tx.one(
                    f"SELECT id FROM automations WHERE seat = ? AND name = ? AND {LIVE_AUTOMATION} "
                    "AND id <> ?",
                    actor.seat,
                    wanted.name,
                    -1 if current is None else current.id,
                )
                if same is not None:
                    raise ToolError(
                        "conflict",
                        f"this seat already has an automation named {wanted.name!r}: A-{same[0]}",
                        hint=f"change it with automations.update (id A-{same[0]})",
                        automation_id=f"A-{same[0]}",
                    )
                was_live = current is not None and current.status in ("active", "paused")
                count = tx.one(
                    f"SELECT count(*) FROM automations WHERE seat = ? AND {LIVE_AUTOMATION}",
                    actor.seat,
                )
                if not was_live and count is not None and int(count[0]) >= live_max:
                    raise ToolError(
                        "invalid",
                        f"this seat has {live_max} active or paused automations, the most "
                        "it may have; nothing was saved",
                        hint="delete one it no longer needs (automations.delete)",
                    )
            values = (
                wanted.name,
                wanted.instruction,
                _json(wanted.schedule),
                wanted.status,
                wanted.next_run,
                wanted.runs_queued,
                wanted.skipped_runs,
                wanted.missed_runs,
                wanted.last_key_at,
                wanted.updated_at,
            )
            if current is None:
                row = tx.one(
                    "INSERT INTO automations (name, instruction, schedule, status, next_run, "
                    "runs_queued, skipped_runs, missed_runs, last_key_at, updated_at, seat, "
                    f"created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    f"RETURNING {AUTOMATION_COLUMNS}",
                    *values,
                    actor.seat,
                    wanted.created_at,
                )
            else:
                row = tx.one(
                    "UPDATE automations SET name = ?, instruction = ?, schedule = ?, status = ?, "
                    "next_run = ?, runs_queued = ?, skipped_runs = ?, missed_runs = ?, "
                    f"last_key_at = ?, updated_at = ? WHERE id = ? RETURNING {AUTOMATION_COLUMNS}",
                    *values,
                    current.id,
                )
        assert row is not None
        return automation_of(row)

    def get_automation(self, seat: str, automation_id: int) -> Automation | None:
        with self.read() as tx:
            row = tx.one(
                f"SELECT {AUTOMATION_COLUMNS} FROM automations WHERE id = ? AND seat = ? "
                "AND status <> 'deleted'",
                automation_id,
                seat,
            )
        return None if row is None else automation_of(row)

    def list_automations(self, seat: str, include_completed: bool) -> list[Automation]:
        states = (
            "('active', 'paused', 'completed')" if include_completed else "('active', 'paused')"
        )
        with self.read() as tx:
            rows = tx.all(
                f"SELECT {AUTOMATION_COLUMNS} FROM automations WHERE seat = ? "
                f"AND status IN {states} ORDER BY id",
                seat,
            )
        return [automation_of(row) for row in rows]

    def last_run(self, automation_id: int) -> AutomationRun | None:
        with self.read() as tx:
            row = tx.one(
                f"SELECT {RUN_COLUMNS} FROM automation_runs WHERE automation_id = ? "
                "ORDER BY id DESC LIMIT 1",
                automation_id,
            )
        return None if row is None else run_of(row)

    def schedule_due(self, actor: Actor, now: float, ts: str, tick: TickFn) -> list[AutomationRun]:
        queued: list[AutomationRun] = []
        with self.write() as tx:
            self._fence(tx, actor, now)
            self.lock(tx, f"automations:{actor.seat}")
            rows = tx.all(
                f"SELECT {AUTOMATION_COLUMNS} FROM automations WHERE seat = ? "
                f"AND status = 'active' AND next_run <= ? ORDER BY next_run, id{self.update_lock}",
                actor.seat,
                now,
            )
            for row in rows:
                automation = automation_of(row)
                open_row = tx.one(
                    "SELECT id FROM automation_runs WHERE automation_id = ? "
                    "AND state IN ('queued', 'leased') LIMIT 1",
                    automation.id,
                )
                after, run = tick(automation, open_row is not None)
                tx.run(
                    "UPDATE automations SET status = ?, next_run = ?, runs_queued = ?, "
                    "skipped_runs = ?, missed_runs = ?, last_key_at = ?, updated_at = ? "
                    "WHERE id = ?",
                    after.status,
                    after.next_run,
                    after.runs_queued,
                    after.skipped_runs,
                    after.missed_runs,
                    after.last_key_at,
                    ts,
                    automation.id,
                )
                if run is None:
                    continue
                # The key is unique: an occurrence already queued (a retried tick) is not again.
                inserted = tx.one(
                    "INSERT INTO automation_runs (automation_id, seat, key, name, instruction, "
                    "scheduled_at, missed, state, attempts, not_before, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?) "
                    f"ON CONFLICT (key) DO NOTHING RETURNING {RUN_COLUMNS}",
                    automation.id,
                    actor.seat,
                    run.key,
                    automation.name,
                    automation.instruction,
                    run.scheduled_at,
                    run.missed,
                    now,
                    ts,
                )
                if inserted is not None:
                    queued.append(run_of(inserted))
            if queued:
                self.notify(tx, actor.seat)
        return queued

    def next_due(self, seat: str) -> float | None:
        with self.read() as tx:
            row = tx.one(
                "SELECT min(next_run) FROM automations WHERE seat = ? AND status = 'active'",
                seat,
            )
        return None if row is None or row[0] is None else float(row[0])

    def claim_run(
        self, seat: str, now: float, lease_s: float, max_attempts: int
    ) -> AutomationRun | None:
        with self.write() as tx:
            tx.run(
                "UPDATE automation_runs SET state = 'dead', lease_token = NULL, "
                "last_error = 'the delivery lease expired on the last attempt' "
                "WHERE seat = ? AND state = 'leased' AND lease_until <= ? AND attempts >= ?",
                seat,
                now,
                max_attempts,
            )
            row = tx.one(
                "SELECT id FROM automation_runs WHERE seat = ? "
                "AND (state = 'queued' OR (state = 'leased' AND lease_until <= ?)) "
                f"AND not_before <= ? ORDER BY id LIMIT 1{self.skip_locked}",
                seat,
                now,
                now,
            )
            if row is None:
                return None
            claimed = tx.one(
                "UPDATE automation_runs SET state = 'leased', attempts = attempts + 1, "
                f"lease_until = ?, lease_token = ? WHERE id = ? RETURNING {RUN_COLUMNS}",
                now + lease_s,
                os.urandom(12).hex(),
                int(row[0]),
            )
        return None if claimed is None else run_of(claimed)

    def _run_leased(self, tx: Tx, run_id: int, lease_token: str, now: float) -> int:
        row = tx.one(
            "SELECT state, lease_token, lease_until, attempts FROM automation_runs "
            f"WHERE id = ?{self.update_lock}",
            run_id,
        )
        if row is None:
            raise ToolError("not_found", f"automation run {run_id} not found")
        state, token, until, attempts = row
        if state != "leased" or token != lease_token or float(until) <= now:
            raise Fenced(
                f"the delivery lease on automation run {run_id} is no longer this runner's "
                f"(the run is {state})",
                hint="the run was, or will be, offered again; this turn's outcome is dropped",
            )
        return int(attempts)

    def complete_run(self, run_id: int, lease_token: str, now: float) -> None:
        with self.write() as tx:
            self._run_leased(tx, run_id, lease_token, now)
            tx.run(
                "UPDATE automation_runs SET state = 'done', lease_token = NULL, done_at = ? "
                "WHERE id = ?",
                now,
                run_id,
            )

    def fail_run(
        self,
        run_id: int,
        lease_token: str,
        now: float,
        error: str,
        max_attempts: int,
        backoff: Callable[[int], float],
    ) -> AutomationRun:
        with self.write() as tx:
            attempts = self._run_leased(tx, run_id, lease_token, now)
            if attempts >= max_attempts:
                row = tx.one(
                    "UPDATE automation_runs SET state = 'dead', lease_token = NULL, "
                    f"last_error = ? WHERE id = ? RETURNING {RUN_COLUMNS}",
                    error,
                    run_id,
                )
            else:
                row = tx.one(
                    "UPDATE automation_runs SET state = 'queued', lease_token = NULL, "
                    "lease_until = NULL, not_before = ?, last_error = ? "
                    f"WHERE id = ? RETURNING {RUN_COLUMNS}",
                    now + backoff(attempts),
                    error,
                    run_id,
                )
        assert row is not None
        return run_of(row)

    # ---- connections and the operation ledger ----
    def add_connection(self, info: ConnectionInfo) -> None:
        with self.write() as tx:
            if tx.one("SELECT name FROM connections WHERE name = ?", info.name):
                raise ToolError("conflict", f"connection {info.name!r} already exists")
            tx.run(
                "INSERT INTO connections (name, kind, config, created_at) VALUES (?, ?, ?, ?)",
                info.name,
                info.kind,
                _json(info.config),
                info.created_at,
            )

    def get_connection(self, name: str) -> ConnectionInfo | None:
        with self.read() as tx:
            row = tx.one(
                "SELECT name, kind, config, created_at FROM connections WHERE name = ?", name
            )
        return None if row is None else ConnectionInfo(row[0], row[1], _unjson(row[2]), row[3])

    def list_connections(self) -> list[ConnectionInfo]:
        with self.read() as tx:
            rows = tx.all("SELECT name, kind, config, created_at FROM connections ORDER BY name")
        return [ConnectionInfo(r[0], r[1], _unjson(r[2]), r[3]) for r in rows]

    def ledger_begin(
        self,
        actor: Actor,
        now: float,
        connection: str,
        operation: str,
        params: dict[str, Any],
        request_digest: str,
        idempotency_key: str | None,
        ts: str,
        lease_until: float,
    ) -> tuple[Operation, bool]:
        with self.write() as tx:
            self._fence(tx, actor, now)
            row = tx.one(
                "INSERT INTO operations (seat, connection, operation, params, request_digest, "
                "idempotency_key, status, created_at, updated_at, lease_until) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?) "
                "ON CONFLICT (seat, connection, idempotency_key) DO NOTHING "
                f"RETURNING {OPERATION_COLUMNS}",
                actor.seat,
                connection,
                operation,
                _json(params),
                request_digest,
                idempotency_key,
                ts,
                ts,
                lease_until,
            )
            if row is not None:
                return operation_of(row), True
            existing = tx.one(
                f"SELECT {OPERATION_COLUMNS} FROM operations WHERE seat = ? AND connection = ? "
                "AND idempotency_key = ?",
                actor.seat,
                connection,
                idempotency_key,
            )
        assert existing is not None
        return operation_of(existing), False

    def ledger_reclaim(self, operation_id: str, now: float, lease_until: float) -> Operation | None:
        number = _operation_number(operation_id)
        if number is None:
            return None
        with self.write() as tx:
            row = tx.one(
                "UPDATE operations SET lease_until = ? WHERE id = ? AND status = 'pending' "
                f"AND lease_until < ? RETURNING {OPERATION_COLUMNS}",
                lease_until,
                number,
                now,
            )
        return None if row is None else operation_of(row)

    def ledger_finish(
        self,
        operation_id: str,
        status: str,
        receipt: str | None,
        result: dict[str, Any] | None,
        error: str | None,
        confirmed_by: str | None,
        ts: str,
    ) -> Operation:
        number = _operation_number(operation_id)
        with self.write() as tx:
            # First outcome wins: a settled record is returned as it is.
            tx.run(
                "UPDATE operations SET status = ?, receipt = ?, result = ?, error = ?, "
                "confirmed_by = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
                status,
                receipt,
                None if result is None else _json(result),
                error,
                confirmed_by,
                ts,
                number,
            )
            row = tx.one(f"SELECT {OPERATION_COLUMNS} FROM operations WHERE id = ?", number)
        if row is None:
            raise ToolError("not_found", f"operation {operation_id} not found")
        return operation_of(row)

    def ledger_get(self, operation_id: str) -> Operation | None:
        number = _operation_number(operation_id)
        if number is None:
            return None
        with self.read() as tx:
            row = tx.one(f"SELECT {OPERATION_COLUMNS} FROM operations WHERE id = ?", number)
        return None if row is None else operation_of(row)

    def ledger_unsettled(self, seat: str) -> list[Operation]:
        with self.read() as tx:
            rows = tx.all(
                f"SELECT {OPERATION_COLUMNS} FROM operations WHERE seat = ? "
                "AND status IN ('pending', 'unknown') ORDER BY id",
                seat,
            )
        return [operation_of(row) for row in rows]
