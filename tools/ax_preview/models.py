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


class Identity(Contract):
    """A process named by pid *and* start time (clock ticks since boot)."""

    pid: int = Field(gt=0)
    start_time: int = Field(ge=0)


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
    state: RecordState
    reason: str | None = None
    stop_reason: StopReason | None = None
    url: str | None = None
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
