"""Summarising a project's sessions for ``ax-log sessions``."""

from __future__ import annotations

from pathlib import Path

from ax_log.locate import session_logs
from ax_log.models import SessionRow
from ax_log.reader import Problem, read_events
from libcommon.errors import Unsupported
from libcommon.paths import StateLayout


def summarise(session_id: str, path: Path) -> SessionRow:
    """A lenient pass over one log: the figures of ``ax-log sessions``."""
    problems: list[Problem] = []
    count = 0
    first_ts = started = ended = last_type = None
    try:
        for record in read_events(path, session_id, lenient=True, problems=problems):
            count += 1
            first_ts = first_ts or record["ts"]
            last_type = record["type"]
            if record["type"] == "session.started":
                started = started or record["ts"]
                # A resumed session is open again until a later end.
                ended = None
            elif record["type"] == "session.ended":
                ended = record["ts"]
    except Unsupported as exc:
        # One log from a newer ax must not hide the others: the row counts it as a
        # problem, and reading that log itself is still refused.
        problems.append(Problem(0, exc.message))
    return SessionRow(
        id=session_id,
        started=started or first_ts,
        ended=ended,
        events=count,
        last_type=last_type,
        problems=len(problems),
    )


def list_sessions(layout: StateLayout) -> list[SessionRow]:
    rows = [summarise(session_id, path) for session_id, path in session_logs(layout).items()]
    return sorted(rows, key=lambda row: (row.started or "", row.id))
