"""Where the report's events come from: a session's log, read leniently.

Events on stdin are read by ``intake.read_jsonl``; this module reads a log
through ax-log's public reader. A line the reader skips arrives here as an
InvalidLine in stream order, so the report shows it instead of losing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ax_report.intake import Event, InvalidLine
from libcommon.paths import StateLayout

if TYPE_CHECKING:
    from ax_log import Problem


def session_events(layout: StateLayout, session_id: str) -> Iterator[Event | InvalidLine]:
    """The events of one session's log, with each unreadable line as an InvalidLine.

    A missing log is an error (OperationFailed), never an empty session; a log
    from a newer schema is refused by the reader (Unsupported).
    """
    import ax_log

    path = ax_log.require_log(layout, session_id)
    problems: list[ax_log.Problem] = []
    for record in ax_log.read_events(path, session_id, lenient=True, problems=problems):
        yield from _drain(problems)
        yield record
    yield from _drain(problems)


def _drain(problems: list[Problem]) -> Iterator[InvalidLine]:
    for problem in problems:
        yield InvalidLine(problem.line, problem.problem)
    problems.clear()
