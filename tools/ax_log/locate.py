"""Finding a project's session logs without reading them whole."""

from __future__ import annotations

from pathlib import Path

from ax_log.reader import first_record
from libcommon.errors import OperationFailed
from libcommon.paths import SESSION_ID_PATTERN, StateLayout


def session_logs(layout: StateLayout) -> dict[str, Path]:
    """Every session id with a log in this project, and its path."""
    directory = layout.sessions_dir
    if not directory.is_dir():
        return {}
    found = {}
    for path in directory.glob("*.jsonl"):
        if SESSION_ID_PATTERN.fullmatch(path.stem) and path.is_file():
            found[path.stem] = path
    return found


def latest_session(layout: StateLayout) -> str | None:
    """The person's session that started last: newest first event, ties broken by id.

    Only each log's first line is read, so the lookup does not grow with log length.
    A delegated task's own session (its ``session.started`` names a ``parent``) is
    never the one to continue: its parent is.
    """
    best: tuple[str, str] | None = None
    for session_id, path in session_logs(layout).items():
        first = first_record(path)
        if first and first.get("parent"):
            continue
        started = first.get("ts") if first else None
        key = (started if isinstance(started, str) else "", session_id)
        if best is None or key > best:
            best = key
    return None if best is None else best[1]


def require_log(layout: StateLayout, session_id: str) -> Path:
    """The session's log path; a session without a log is an error, not an empty log."""
    path = layout.session_log(session_id)
    if not path.is_file():
        raise OperationFailed(
            f"no event log for session {session_id} in this project",
            hint="list the project's sessions with `ax-log sessions`",
        )
    return path
