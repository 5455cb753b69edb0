"""What a session's log says about handoffs, read from its events alone.

A purpose is session-bound: the newest ``handoff.purpose`` whose attempt has no
``handoff.transferred`` is pending (a cancelled, idle-wait or replacement failure
keeps it), and a successor never sees it, since it is in the predecessor's log
only. An entry is successor-bound: only the session whose id it names adopts it,
and a saved ``handoff.state`` wins over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from libcommon.errors import UsageError

Purpose = Literal["track-boundary", "post-check", "context-budget", "user-request"]
PURPOSES: tuple[Purpose, ...] = get_args(Purpose)
PauseReason = Literal["context-budget", "adoption"]
Record = Mapping[str, Any]


@dataclass(frozen=True)
class Request:
    """A ``/handoff`` line parsed: the option given (None: none) and the focus."""

    option: Purpose | None
    focus: str | None


def parse_request(args: Sequence[str]) -> Request:
    """``[--track-boundary | --post-check | --context-budget | --user-request] [FOCUS]``."""
    option: Purpose | None = None
    rest = list(args)
    if rest and rest[0].startswith("--"):
        word = rest.pop(0)[2:]
        if word not in PURPOSES:
            raise UsageError(
                f"unknown handoff option --{word}",
                hint="use " + ", ".join(f"--{purpose}" for purpose in PURPOSES),
            )
        option = word
    for word in rest:
        if word.startswith("--") and word[2:] in PURPOSES:
            raise UsageError(
                f"--{word[2:]} must come first, before the focus",
                hint="/handoff --post-check FOCUS",
            )
    focus = " ".join(rest).strip()
    return Request(option, focus or None)


@dataclass(frozen=True)
class Pending:
    attempt_id: str
    purpose: Purpose


def pending_purpose(events: Iterable[Record]) -> Pending | None:
    """The newest attempt's purpose while that attempt has not transferred."""
    newest: Pending | None = None
    for event in events:
        kind = event.get("type")
        if kind == "handoff.purpose":
            newest = Pending(str(event["attemptId"]), event["purpose"])
        elif (
            kind == "handoff.transferred"
            and newest is not None
            and event.get("attemptId") == newest.attempt_id
        ):
            newest = None
    return newest


def choose_purpose(request: Request, pending: Pending | None) -> tuple[Purpose, bool]:
    """(purpose, retry): an option is the purpose (``--user-request`` replaces a pending
    one); without one a pending purpose is kept, and a bare new request is a user's."""
    if request.option is not None:
        return request.option, False
    if pending is not None:
        return pending.purpose, True
    return "user-request", False


@dataclass(frozen=True)
class Adoption:
    """Where a session stands with its handoff records."""

    entry: Record | None
    state: Record | None
    claimed: str | None
    kickoff_sent: bool
    # A claimed kickoff whose failure is already in the log (said once).
    failure_recorded: bool

    @property
    def pause_reason(self) -> PauseReason | None:
        return self.state.get("pauseReason") if self.state is not None else None

    @property
    def unadopted(self) -> bool:
        """An entry for this session and no saved state yet."""
        return self.entry is not None and self.state is None

    @property
    def kickoff_pending(self) -> bool:
        return bool(self.state and self.state.get("kickoffPending")) and self.claimed is None


def adoption(session_id: str, events: Iterable[Record]) -> Adoption:
    """The entry addressed to ``session_id`` (another id's is never adopted), the newest
    saved state, the claimed kickoff's sha256 and whether a turn began after the claim."""
    entry: Record | None = None
    state: Record | None = None
    claimed: str | None = None
    sent = failed = False
    for event in events:
        kind = event.get("type")
        if kind == "handoff.entry" and event.get("sessionId") == session_id:
            entry = event
        elif kind == "handoff.state":
            state = event
        elif kind == "handoff.kickoff_claimed":
            claimed, sent, failed = str(event["sha256"]), False, False
        elif kind == "handoff.kickoff_failed" and event.get("sha256") == claimed:
            failed = True
        elif kind == "user.message" and claimed is not None:
            sent = True
    return Adoption(entry, state, claimed, sent, failed)
