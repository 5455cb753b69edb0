"""Verifying a log line by line, reporting every problem instead of stopping."""

from __future__ import annotations

from ax_log.events import parse_stored
from ax_log.locate import require_log
from ax_log.models import VerifyProblem, VerifyResult
from ax_log.reader import iter_lines
from libcommon.errors import AxError
from libcommon.paths import StateLayout


def verify_session(layout: StateLayout, session_id: str) -> VerifyResult:
    """Check every line: JSON, envelope, gapless seq, schema version and the type's fields.

    A type this build does not know is reported too: it cannot vouch for it.
    """
    path = require_log(layout, session_id)
    problems: list[VerifyProblem] = []
    events = 0
    last_seq = 0
    for line in iter_lines(path, session_id):
        if line.record is None:
            problems.append(VerifyProblem(line=line.number, problem=line.problem or "unreadable"))
            continue
        events += 1
        seq = line.record["seq"]
        if seq != last_seq + 1:
            problem = f"seq {seq} follows seq {last_seq}"
            problems.append(VerifyProblem(line=line.number, problem=problem))
        last_seq = seq
        try:
            parse_stored(line.record)
        except AxError as exc:
            problems.append(VerifyProblem(line=line.number, problem=exc.message))
    return VerifyResult(ok=not problems, events=events, problems=problems)
