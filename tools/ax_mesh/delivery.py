"""Turns for a runner: the next delivered message with its envelope, and its outcome.

A runner (``ax-mesh run SEAT``, not built yet) loops: ``next_turn`` claims the seat's
oldest deliverable message under a delivery lease (in order within a conversation) and
hands over the messages queued with ``wake: false`` beside it; the turn runs; then
``finish_turn`` completes it, or ``fail_turn`` puts it back with back-off (after
DELIVERY_MAX_ATTEMPTS it is dead-lettered). A runner that dies mid-turn leaves the
lease to expire, and the message is offered again; completing needs the lease, so a
message is never completed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from .limits import (
    DELIVERY_BACKOFF_BASE_S,
    DELIVERY_BACKOFF_MAX_S,
    DELIVERY_LEASE_S,
    DELIVERY_MAX_ATTEMPTS,
    PASSIVE_PER_TURN_MAX,
)
from .mesh import Mesh, epoch
from .message_tools import view
from .store import Message


def backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1`` after attempt ``attempt`` (1-based) failed."""
    return float(min(DELIVERY_BACKOFF_BASE_S * 2 ** (attempt - 1), DELIVERY_BACKOFF_MAX_S))


@dataclass(frozen=True)
class Turn:
    message: Message
    passive: list[Message]
    envelope: dict[str, Any]


def next_turn(mesh: Mesh, seat: str) -> Turn | None:
    now = epoch()
    message = mesh.store.claim_delivery(seat, now, DELIVERY_LEASE_S, DELIVERY_MAX_ATTEMPTS)
    if message is None:
        return None
    passive = mesh.store.take_passive(seat, now, PASSIVE_PER_TURN_MAX)
    record = mesh.store.get_seat(seat)
    zone = ZoneInfo((record.manifest.get("timezone") if record else None) or "UTC")
    envelope = {
        **view(message),
        "attempt": message.attempts,
        "current_time": datetime.fromtimestamp(now, UTC)
        .astimezone(zone)
        .isoformat(timespec="seconds"),
        "passive": [view(m) for m in passive],
    }
    return Turn(message, passive, envelope)


def finish_turn(mesh: Mesh, turn: Turn) -> None:
    mesh.store.complete_delivery(turn.message.id, str(turn.message.lease_token), epoch())


def fail_turn(mesh: Mesh, turn: Turn, error: str) -> Message:
    return mesh.store.fail_delivery(
        turn.message.id,
        str(turn.message.lease_token),
        epoch(),
        error,
        DELIVERY_MAX_ATTEMPTS,
        backoff,
    )
