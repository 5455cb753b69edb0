"""A mesh turn's envelope: what starts a seat's turn, as the harness reads it.

The mesh runner (ax_mesh) writes it as the turn's user message and the harness
(ax_agent: a real model, or the fake harness provider) reads it. It lives here because
neither tool may import the other's modules: ax_mesh is below ax_agent, and ax_agent
reaches ax_mesh only through its package root.

The message is one header line, ``[ax-mesh turn] {json}``, then the body as sent. The
header is JSON so a body can hold anything (a line that looks like a header included)
without being mistaken for it; a model reads it as easily as prose.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MARKER = "[ax-mesh turn] "


class _Model(BaseModel):
    # snake_case like the mesh tools' own JSON, so ids read the same on both sides.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class QueuedMessage(_Model):
    """A message sent with ``wake: false`` that rides along with this turn."""

    message_id: str
    sender: str = Field(alias="from")
    body: str


class UnsettledOperation(_Model):
    """A connection operation a dead runner left ``pending`` or ``unknown``: the seat checks
    it (``operations.get``, the service itself) before doing it again."""

    id: str
    connection: str
    operation: str
    status: str
    idempotency_key: str | None = None


class Envelope(_Model):
    kind: Literal["message", "automation"]
    seat: str
    current_time: str  # in the seat's zone, with its offset: the message may have waited
    timezone: str
    # A message turn: the message that started it, as the mesh recorded it.
    message_id: str | None = None
    sender: Annotated[str | None, Field(alias="from")] = None
    conversation_id: str | None = None
    correlation_id: str | None = None
    reply_to: str | None = None  # set when the message answers one this seat sent
    # An automation turn: which one, and how many occurrences this catch-up run stands in for.
    automation_id: str | None = None
    automation_name: str | None = None
    missed: int = 0
    queued: list[QueuedMessage] = Field(default_factory=list)
    # The first turn after a runner's start: operations recovery could not settle.
    operations: list[UnsettledOperation] = Field(default_factory=list)


class EnvelopeError(ValueError):
    """A user message that starts with the marker but whose header is not an envelope."""


def render_turn(envelope: Envelope, body: str) -> str:
    """The user message of one turn: the header line, then the body."""
    header = envelope.model_dump_json(by_alias=True, exclude_defaults=True)
    return f"{MARKER}{header}\n{body}"


def parse_turn(text: str) -> tuple[Envelope | None, str]:
    """(envelope, body) of a turn's user message; (None, text) when it has no envelope."""
    if not text.startswith(MARKER):
        return None, text
    header, _, body = text.partition("\n")
    try:
        return Envelope.model_validate_json(header[len(MARKER) :]), body
    except ValidationError as exc:
        raise EnvelopeError(f"the turn's envelope is malformed: {exc.errors()[0]['msg']}") from None
