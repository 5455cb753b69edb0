"""The JSON shapes ax-log prints besides events themselves."""

from __future__ import annotations

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
