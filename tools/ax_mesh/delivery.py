"""Turns for a runner: the next delivered message or due automation run, and its outcome.

The runner (``ax-mesh run SEAT``, ``ax_mesh.runner``) loops: ``next_turn`` claims the
seat's oldest deliverable message under a delivery lease (in order within a
conversation), or else its oldest queued automation run, and hands over the messages
queued with ``wake: false`` beside it; the turn runs; then ``finish_turn`` completes
it, or ``fail_turn`` puts it back with back-off (after DELIVERY_MAX_ATTEMPTS it is
dead-lettered). A runner that dies mid-turn leaves the lease to expire, and the turn is
offered again; completing needs the lease, so a turn is never completed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from libcommon.turn_envelope import Envelope, QueuedMessage, UnsettledOperation, render_turn

from .limits import (
    DELIVERY_BACKOFF_BASE_S,
    DELIVERY_BACKOFF_MAX_S,
    DELIVERY_LEASE_S,
    DELIVERY_MAX_ATTEMPTS,
    PASSIVE_PER_TURN_MAX,
)
from .mesh import Mesh, epoch
from .store import AutomationRun, Message

UNSETTLED_FIELDS = ("id", "connection", "operation", "status", "idempotency_key")


def backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1`` after attempt ``attempt`` (1-based) failed."""
    return float(min(DELIVERY_BACKOFF_BASE_S * 2 ** (attempt - 1), DELIVERY_BACKOFF_MAX_S))


@dataclass(frozen=True)
class Turn:
    """One turn: a message (``message``) or an automation run (``run``), the passive
    messages riding along, and the envelope the harness reads."""

    message: Message | None
    run: AutomationRun | None
    passive: list[Message]
    envelope: Envelope
    body: str
    attempt: int

    @property
    def text(self) -> str:
        """The turn's user message: the envelope's header line, then the body."""
        return render_turn(self.envelope, self.body)

    @property
    def label(self) -> str:
        if self.message is not None:
            return f"M-{self.message.id}"
        assert self.run is not None
        return self.run.key


def _zone(mesh: Mesh, seat: str) -> str:
    record = mesh.store.get_seat(seat)
    return str((record.manifest.get("timezone") if record else None) or "UTC")


def next_turn(
    mesh: Mesh,
    seat: str,
    lease_s: float = DELIVERY_LEASE_S,
    unsettled: list[dict[str, Any]] | None = None,
) -> Turn | None:
    """Claim the seat's next turn under a delivery lease of ``lease_s`` (None: nothing due);
    ``unsettled`` operations (from recovery at the runner's start) join its envelope."""
    now = epoch()
    message = mesh.store.claim_delivery(seat, now, lease_s, DELIVERY_MAX_ATTEMPTS)
    run = None
    if message is None:
        run = mesh.store.claim_run(seat, now, lease_s, DELIVERY_MAX_ATTEMPTS)
        if run is None:
            return None
    passive = mesh.store.take_passive(seat, now, PASSIVE_PER_TURN_MAX)
    zone = _zone(mesh, seat)
    current = datetime.fromtimestamp(now, UTC).astimezone(ZoneInfo(zone))
    queued = [
        QueuedMessage.model_validate({"message_id": f"M-{m.id}", "from": m.sender, "body": m.body})
        for m in passive
    ]
    common = {
        "seat": seat,
        "current_time": current.isoformat(timespec="seconds"),
        "timezone": zone,
        "queued": queued,
        "operations": [
            UnsettledOperation.model_validate({k: op.get(k) for k in UNSETTLED_FIELDS})
            for op in unsettled or []
        ],
    }
    if message is not None:
        envelope = Envelope(
            kind="message",
            message_id=f"M-{message.id}",
            sender=message.sender,
            conversation_id=message.conversation_id,
            correlation_id=message.correlation_id,
            reply_to=None if message.reply_to is None else f"M-{message.reply_to}",
            **common,  # type: ignore[arg-type]
        )
        return Turn(message, None, passive, envelope, message.body, message.attempts)
    assert run is not None
    envelope = Envelope(
        kind="automation",
        automation_id=f"A-{run.automation_id}",
        automation_name=run.name,
        missed=run.missed,
        **common,  # type: ignore[arg-type]
    )
    return Turn(None, run, passive, envelope, run.instruction, run.attempts)


def finish_turn(mesh: Mesh, turn: Turn) -> None:
    if turn.message is not None:
        mesh.store.complete_delivery(turn.message.id, str(turn.message.lease_token), epoch())
    else:
        assert turn.run is not None
        mesh.store.complete_run(turn.run.id, str(turn.run.lease_token), epoch())


def fail_turn(mesh: Mesh, turn: Turn, error: str) -> str:
    """Put the turn back with back-off; returns its state (``queued`` or ``dead``)."""
    if turn.message is not None:
        return mesh.store.fail_delivery(
            turn.message.id,
            str(turn.message.lease_token),
            epoch(),
            error,
            DELIVERY_MAX_ATTEMPTS,
            backoff,
        ).state
    assert turn.run is not None
    return mesh.store.fail_run(
        turn.run.id, str(turn.run.lease_token), epoch(), error, DELIVERY_MAX_ATTEMPTS, backoff
    ).state
