"""The JSON contracts of ax-preview: the registry record and what verbs print."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from libcommon.contracts import Contract

RecordState = Literal["starting", "ready", "failed", "stopped"]
# Why a server stopped. "not-ready" is the supervisor stopping a server that did
# not become ready in time; the rest are the list.
StopReason = Literal["ttl", "log-cap", "stopped", "exited", "crashed", "session-end", "not-ready"]
LiveState = Literal["starting", "ready", "unresponsive", "orphaned", "failed", "stopped", "lost"]
SweepAction = Literal["dropped", "skipped", "killed", "kill-unverified"]
# Who holds the listening socket that answered: a process of the server's tree
# ("verified"), one outside it ("other-owner", never ready), or /proc could not
# tell ("not-verified", with the reason).
OwnershipStatus = Literal["verified", "not-verified", "other-owner"]


class Identity(Contract):
    """A process named by pid *and* start time (clock ticks since boot)."""

    pid: int = Field(gt=0)
    start_time: int = Field(ge=0)


class Ownership(Contract):
    """Who holds the listening socket behind the answer on ``host:port``."""

    status: OwnershipStatus
    host: str
    port: int
    # The holder: of the server's tree when verified, the other process when not ours.
    pid: int | None = None
    command: str | None = None
    reason: str | None = None

    @property
    def note(self) -> str:
        """The fact in one sentence, for people and the session log."""
        where = f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        holder = f"pid {self.pid} ({self.command or 'command unknown'})" if self.pid else None
        if self.status == "verified":
            return f"socket ownership verified: {holder} of the server's tree listens on {where}"
        if self.status == "not-verified":
            return f"socket ownership not verified: {self.reason}"
        who = holder or "a process ax cannot inspect"
        return (
            f"{where} is answered by a socket of {who}, which is not part of the server's "
            "process tree"
        )


class PreviewRecord(Contract):
    """One registry entry: ``<state>/projects/<slug>/previews/<id>.json``."""

    id: str
    workspace: str
    project: str
    script: str
    source: str
    command: list[str]
    cwd: str
    # A random value put in the server's environment; with the start time it
    # is the positive identity the sweep needs before it kills anything.
    command_token: str
    session: str | None = None
    ttl_s: float
    log_cap_bytes: int
    ready_timeout_s: float
    log_path: str
    # ``--port N``: a port to probe besides the announced ones (the server also gets PORT=N).
    port_hint: int | None = None
    # The project environment put first on the server's PATH (a venv folder), if any.
    environment: str | None = None
    state: RecordState
    reason: str | None = None
    # What to do about a failure, in words (None when there is nothing to add).
    hint: str | None = None
    stop_reason: StopReason | None = None
    url: str | None = None
    ownership: Ownership | None = None
    # The ``start`` process owns the record until the supervisor stamps itself.
    launcher: Identity | None = None
    supervisor: Identity | None = None
    server: Identity | None = None
    exit_code: int | None = None
    kill_verified: bool | None = None
    started_at: str
    expires_at: str
    ready_at: str | None = None
    stopped_at: str | None = None


class StartResult(Contract):
    id: str
    pid: int | None
    url: str | None
    state: Literal["ready", "failed"]
    reason: str | None
    log_path: str
    ttl: float
    started_at: str
    note: str | None = None
    ownership: Ownership | None = None
    hint: str | None = None
    environment: str | None = None
    log_tail: str | None = None


class PreviewRow(Contract):
    """One line of ``list``: the registry record checked against the live system."""

    id: str
    script: str
    project: str
    state: LiveState
    url: str | None
    answering: bool | None
    pid: int | None
    reason: str | None
    log_path: str
    started_at: str
    expires_at: str
    note: str | None = None
    ownership: Ownership | None = None


class StopResult(Contract):
    id: str
    state: RecordState
    stop_reason: StopReason | None
    kill_verified: bool | None
    survivors: list[int] = Field(default_factory=list)


class SweepItem(Contract):
    id: str
    action: SweepAction
    why: str
    pids: list[int] = Field(default_factory=list)


class SweepReport(Contract):
    items: list[SweepItem]
