"""The JSON shapes ax-log prints besides events themselves."""

from __future__ import annotations

from ax_log.events import CheckpointRefusal, CheckpointSkip
from libcommon.contracts import Contract


class SessionRow(Contract):
    """One session in ``ax-log sessions``; ``problems`` counts lines the lenient read skipped."""

    id: str
    started: str | None
    ended: str | None
    events: int
    last_type: str | None
    problems: int


class VerifyProblem(Contract):
    line: int
    problem: str


class VerifyResult(Contract):
    ok: bool
    events: int
    problems: list[VerifyProblem]


class CheckpointView(Contract):
    """One live checkpoint (``ax-log checkpoint list``, and ``create``'s answer)."""

    session: str
    n: int
    ref: str
    commit: str
    parent: str | None
    kind: str
    label: str | None
    created: str | None
    skipped: list[CheckpointSkip]
    submodules: list[str]


class CreatedView(CheckpointView):
    """``ax-log checkpoint create``: the checkpoint, its tree and what is worth saying."""

    tree: str
    notes: list[str]


class RestoreView(Contract):
    """``ax-log checkpoint restore``: ``left`` are paths it leaves alone, with why."""

    ref: str
    commit: str
    call_id: str
    restored: list[str]
    removed: list[str]
    refused: list[CheckpointRefusal]
    left: list[CheckpointRefusal]


class PruneView(Contract):
    deleted: list[str]
    kept: list[str]
    failed: list[str]
