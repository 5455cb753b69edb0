"""The ``Store`` interface: what the tool catalogue asks of a backend.

Two backends implement it over one SQL core (``ax_mesh.sqlcore``): SQLite in the state
root (the default) and PostgreSQL when ``AX_MESH_DSN`` names one. The catalogue
(``ax_mesh.tools``) holds every rule about authority, revisions and ownership; a backend
holds none, and guarantees three things only:

- **Atomic read-modify-write per record.** ``mutate_record`` runs its ``change``
  callback on the current row inside one write transaction in which no other writer
  can change that record (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped
  advisory lock on the store and path). Whatever the callback raises rolls back.
- **Fencing in every write transaction.** Every write takes an ``Actor`` (seat and
  execution-lease generation) and checks, inside the same transaction, that the
  generation is still the seat's current one and unexpired; otherwise ``Fenced``
  (exit 4) and nothing is written.
- **Exactly-one delivery.** ``claim_delivery`` hands a message to one runner under a
  delivery lease (PostgreSQL: ``FOR UPDATE SKIP LOCKED``); completing needs that lease.

A second engineer adding automations or the runner adds methods here and to the SQL
core together, with a contract test in tests/mesh/test_store_contract.py that runs on
both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .connections.ledger import Operation

# A record's kind: a free note, or a work item under work/ (changed only by work.*).
NOTE = "note"
WORK = "work"


@dataclass(frozen=True)
class Actor:
    """Who is writing: a seat under one execution-lease generation."""

    seat: str
    generation: int


@dataclass(frozen=True)
class Seat:
    name: str
    role: str
    manifest: dict[str, Any]
    token_sha256: str
    created_at: str
    lease_generation: int
    lease_holder: str | None
    lease_expires_at: float | None
    handoff: dict[str, Any] | None
    retired: bool


@dataclass(frozen=True)
class StoreInfo:
    name: str
    kind: str  # "shared" or "personal"
    owner: str | None
    created_at: str


@dataclass(frozen=True)
class Record:
    id: int
    store: str
    path: str
    kind: str
    revision: int
    author: str
    lease_generation: int
    created_at: str
    updated_at: str
    archived: bool
    text: str
    tags: list[str]
    source_refs: list[str]
    provenance: dict[str, Any] | None
    data: dict[str, Any] | None
    size: int


@dataclass(frozen=True)
class Revision:
    record_id: int
    revision: int
    op: str
    author: str
    lease_generation: int
    ts: str
    text: str


@dataclass
class Change:
    """What ``mutate_record``'s callback wants written (a new revision of the record)."""

    op: str
    text: str
    kind: str = NOTE
    tags: list[str] = field(default_factory=list)
    source_refs: list[str] = field(default_factory=list)
    provenance: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    archived: bool = False


@dataclass(frozen=True)
class SearchHit:
    record: Record
    snippet: str
    score: float


@dataclass(frozen=True)
class SearchPage:
    """A page of ranked hits; ``bounded`` when more records matched than were ranked."""

    hits: list[SearchHit]
    bounded: bool


@dataclass(frozen=True)
class Message:
    id: int
    conversation_id: str
    sender: str
    recipient: str
    body: str
    correlation_id: str | None
    reply_to: int | None
    wake: bool
    state: str  # queued, leased, done, dead, handed
    attempts: int
    not_before: float
    lease_until: float | None
    lease_token: str | None
    created_at: str
    last_error: str | None


@dataclass(frozen=True)
class Automation:
    """An automation as the store keeps it: ``schedule`` is ``Schedule.to_json()``, times
    of the run state are epoch seconds (``ax_mesh.automation_tools`` turns it into a
    ``schedule.RunState``)."""

    id: int
    seat: str
    name: str
    instruction: str
    schedule: dict[str, Any]
    status: str  # active, paused, completed, deleted
    next_run: float | None
    runs_queued: int
    skipped_runs: int
    missed_runs: int
    last_key_at: float | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class AutomationRun:
    """One queued run of an automation: a turn for its seat, delivered like a message."""

    id: int
    automation_id: int
    seat: str
    key: str  # occurrence_key: unique, so an occurrence is queued at most once
    name: str
    instruction: str
    scheduled_at: float
    missed: int
    state: str  # queued, leased, done, dead
    attempts: int
    not_before: float
    lease_until: float | None
    lease_token: str | None
    created_at: str
    last_error: str | None


@dataclass(frozen=True)
class DueRun:
    """A run the scheduler wants queued: its occurrence key, instant and missed count."""

    key: str
    scheduled_at: float
    missed: int


@dataclass(frozen=True)
class ConnectionInfo:
    name: str
    kind: str
    config: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class Lease:
    seat: str
    generation: int
    holder: str
    expires_at: float


# The callback of mutate_automation: the automation (None for a new one) returns the new one
# (its id ignored for a new one); raising rolls the transaction back.
AutomationFn = Callable[[Automation | None], Automation]

# The scheduler's callback for one due automation and whether its last run is still open:
# the automation's new state and the run to queue (None: none).
TickFn = Callable[[Automation, bool], tuple[Automation, DueRun | None]]

# The callback of mutate_record: the live record at the path (or None), returns the change,
# or None to write nothing (an idempotent no-op); raising rolls the transaction back.
ChangeFn = Callable[[Record | None], Change | None]


class Store(Protocol):
    """The backend interface. Times are epoch seconds (floats) for leases and queues, and
    RFC 3339 strings (libcommon.clock.timestamp) for what people read."""

    backend: str  # "sqlite" or "postgresql"

    def close(self) -> None: ...

    # ---- administration (a person, no token) ----
    def add_store(self, name: str, kind: str, owner: str | None, now: str) -> StoreInfo: ...
    def get_store(self, name: str) -> StoreInfo | None: ...
    def list_stores(self) -> list[StoreInfo]: ...
    def add_seat(self, seat: Seat) -> None: ...
    def set_manifest(self, name: str, role: str | None, manifest: Mapping[str, Any]) -> None: ...
    def set_token(self, name: str, token_sha256: str) -> None: ...
    def retire_seat(self, name: str) -> None: ...
    def get_seat(self, name: str) -> Seat | None: ...
    def seat_by_token(self, token_sha256: str) -> Seat | None: ...
    def list_seats(self) -> list[Seat]: ...

    # ---- execution leases ----
    def acquire_lease(self, seat: str, holder: str, ttl: float, now: float) -> Lease: ...
    def renew_lease(self, actor: Actor, ttl: float, now: float) -> Lease: ...
    def release_lease(self, actor: Actor) -> None: ...
    def check_lease(self, actor: Actor, now: float) -> None: ...
    def set_handoff(self, actor: Actor, now: float, handoff: Mapping[str, Any]) -> None: ...

    # ---- records ----
    def get_record(
        self, store: str, path: str | None = None, record_id: int | None = None
    ) -> Record | None: ...
    def record_store(self, record_id: int) -> str | None: ...
    def last_record_at(self, store: str, path: str) -> Record | None: ...
    def get_revision(self, record_id: int, revision: int) -> Revision | None: ...
    def list_records(
        self,
        stores: list[str],
        prefix: str,
        order_by: str,
        descending: bool,
        limit: int,
        offset: int,
        kind: str | None = None,
    ) -> list[Record]: ...
    def mutate_record(
        self,
        actor: Actor,
        now: float,
        ts: str,
        store: str,
        path: str,
        change: ChangeFn,
    ) -> Record | None: ...
    def history(self, record_id: int, limit: int, offset: int) -> list[Revision]: ...
    def search(
        self,
        stores: list[str],
        query: str,
        prefix: str,
        tags: list[str],
        limit: int,
        offset: int,
        candidates: int,
    ) -> SearchPage: ...
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
    ) -> list[Record]: ...
    def next_work_number(self, actor: Actor, now: float, store: str) -> int: ...

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
    ) -> Message: ...
    def get_message(self, message_id: int) -> Message | None: ...
    def waiting_count(self, recipient: str) -> int: ...
    def claim_delivery(
        self, recipient: str, now: float, lease_s: float, max_attempts: int
    ) -> Message | None: ...
    def complete_delivery(self, message_id: int, lease_token: str, now: float) -> None: ...
    def fail_delivery(
        self,
        message_id: int,
        lease_token: str,
        now: float,
        error: str,
        max_attempts: int,
        backoff: Callable[[int], float],
    ) -> Message: ...
    def take_passive(self, recipient: str, now: float, limit: int) -> list[Message]: ...
    def conversations(self, seat: str, limit: int, offset: int) -> list[dict[str, Any]]: ...
    def conversation(
        self, seat: str, conversation_id: str, limit: int, offset: int
    ) -> list[Message]: ...
    def queue_counts(self, seat: str, now: float) -> dict[str, int]: ...

    # ---- automations ----
    def mutate_automation(
        self,
        actor: Actor,
        now: float,
        automation_id: int | None,
        change: AutomationFn,
        live_max: int,
    ) -> Automation:
        """Create (``automation_id`` None) or change one of the actor's automations in one
        write transaction: a live (active or paused) automation of the seat with the
        same name is a conflict naming its id, and more than ``live_max`` live ones is
        refused; another seat's or a deleted automation is not found."""
        ...

    def get_automation(self, seat: str, automation_id: int) -> Automation | None: ...
    def list_automations(self, seat: str, include_completed: bool) -> list[Automation]: ...
    def last_run(self, automation_id: int) -> AutomationRun | None: ...
    def schedule_due(self, actor: Actor, now: float, ts: str, tick: TickFn) -> list[AutomationRun]:
        """The scheduler step for the actor's seat: each active automation whose next run
        is at or before ``now`` is ticked, and its new state and queued run are written in
        one transaction; a run whose key is already queued is not queued again."""
        ...

    def next_due(self, seat: str) -> float | None:
        """When the seat's earliest active automation next falls due (epoch), or None."""
        ...

    def claim_run(
        self, seat: str, now: float, lease_s: float, max_attempts: int
    ) -> AutomationRun | None: ...
    def complete_run(self, run_id: int, lease_token: str, now: float) -> None: ...
    def fail_run(
        self,
        run_id: int,
        lease_token: str,
        now: float,
        error: str,
        max_attempts: int,
        backoff: Callable[[int], float],
    ) -> AutomationRun: ...

    # ---- connections and the operation ledger (ax_mesh.connections.ledger.Ledger) ----
    def add_connection(self, info: ConnectionInfo) -> None: ...
    def get_connection(self, name: str) -> ConnectionInfo | None: ...
    def list_connections(self) -> list[ConnectionInfo]: ...
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
    ) -> tuple[Operation, bool]: ...
    def ledger_reclaim(
        self, operation_id: str, now: float, lease_until: float
    ) -> Operation | None: ...
    def ledger_finish(
        self,
        operation_id: str,
        status: str,
        receipt: str | None,
        result: dict[str, Any] | None,
        error: str | None,
        confirmed_by: str | None,
        ts: str,
    ) -> Operation: ...
    def ledger_get(self, operation_id: str) -> Operation | None: ...
    def ledger_unsettled(self, seat: str) -> list[Operation]: ...
