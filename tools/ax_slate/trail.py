"""The Trail: one harness-written line per executed tool call, append-only.

Recording a step costs the same at step 20,000 as at step 1: under the trail's
lock the step number comes from the last line of the file (read from its end,
not from the start; see jsonl.py) and the new entry is one appended line.
Nothing rewrites trail.jsonl. There is no entry cap; readers that need only the newest lines
(the frame, ``trail --count``) read the file backwards.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_bytes
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout
from libcommon.redact import redact, redact_value

from .jsonl import append_line, last_line, lines_newest_first
from .models import RecordRequest, TrailEntry
from .session import SessionFiles, started_files

ARGS_DIGEST_MAX_CHARS = 240
OUTCOME_MAX_CHARS = 240
OUTPUT_PATH_MAX_CHARS = 4_096
TRAIL_DEFAULT_COUNT = 20
ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def args_digest(args: dict[str, Any]) -> str:
    """A short, redacted, human-readable rendering of a call's arguments.

    ``key=value`` pairs (values as compact JSON) rather than one JSON object,
    so the redactor's assignment rule sees ``password="…"`` and strikes it.
    """
    text = " ".join(
        f"{key}={jsonio.dumps(redact_value(value)).decode()}" for key, value in args.items()
    )
    return clip(redact(text), ARGS_DIGEST_MAX_CHARS)


def record(layout: StateLayout, session_id: str, request: RecordRequest) -> TrailEntry:
    """Append one step to the session's trail and return the stored entry."""
    files = started_files(layout, session_id)
    output = request.output
    if output is not None:
        if len(output) > OUTPUT_PATH_MAX_CHARS:
            raise UsageError(f"output path is longer than {OUTPUT_PATH_MAX_CHARS} characters")
        output = os.path.abspath(output)
    with flock_lock(files.trail_lock):
        step = _last_step(files) + 1
        entry = TrailEntry(
            step=step,
            ts=clock.timestamp(),
            tool=redact(request.tool),
            args_digest=args_digest(request.args),
            outcome=clip(redact(request.outcome), OUTCOME_MAX_CHARS),
            output=output,
        )
        append_line(files.trail, jsonio.dumps_line(entry.to_json()))
    return entry


def _last_step(files: SessionFiles) -> int:
    """The step number on the trail's last line (0 for an empty trail)."""
    line = last_line(files.trail)
    if line is None:
        return 0
    try:
        step = jsonio.loads(line)["step"]
    except (jsonio.JSONDecodeError, KeyError, TypeError):
        raise CorruptStore(str(files.trail), "its last line is not a trail entry") from None
    if not isinstance(step, int):
        raise CorruptStore(str(files.trail), "its last line has no integer step")
    return step


def iter_newest(files: SessionFiles) -> Iterator[TrailEntry]:
    """Trail entries newest first, read from the end of the file."""
    for raw in lines_newest_first(files.trail):
        yield _parse_entry(files, raw)


def _parse_entry(files: SessionFiles, raw: bytes) -> TrailEntry:
    from pydantic import ValidationError

    try:
        return TrailEntry.model_validate(jsonio.loads(raw))
    except (jsonio.JSONDecodeError, ValidationError):
        raise CorruptStore(str(files.trail), f"not a trail entry: {raw[:80]!r}") from None


def read_trail(
    layout: StateLayout,
    session_id: str,
    *,
    count: int | None = TRAIL_DEFAULT_COUNT,
    tool: str | None = None,
    file: str | None = None,
    from_step: int | None = None,
    to_step: int | None = None,
) -> list[TrailEntry]:
    """The newest ``count`` entries that pass the filters, oldest first."""
    if count is not None and count < 1:
        raise UsageError("--count must be at least 1")
    files = started_files(layout, session_id)
    found: list[TrailEntry] = []
    for entry in iter_newest(files):
        if from_step is not None and entry.step < from_step:
            break
        if to_step is not None and entry.step > to_step:
            continue
        if tool is not None and entry.tool != tool:
            continue
        if file is not None and file not in entry.args_digest:
            continue
        found.append(entry)
        if count is not None and len(found) >= count:
            break
    found.reverse()
    return found


def find_step(files: SessionFiles, step: int) -> TrailEntry:
    for entry in iter_newest(files):
        if entry.step == step:
            return entry
        if entry.step < step:
            break
    raise OperationFailed(f"session {files.session_id} has no step {step} in its trail")


def save_output(layout: StateLayout, session_id: str, text: str) -> Path:
    """Keep a step's full output (redacted) under ``outputs/``; the path goes in the trail."""
    files = started_files(layout, session_id)
    data = redact(text).encode("utf-8", "surrogateescape")
    path = files.outputs / f"{hashlib.sha256(data).hexdigest()}.txt"
    if not path.exists():
        atomic_write_bytes(path, data)
    return path
