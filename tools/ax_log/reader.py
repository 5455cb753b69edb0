"""Reading a session log: line by line, streamed, strict or lenient.

The strict reader stops at the first bad line with its number; the lenient
reader (for reports and listings) skips bad lines and reports each one. Both
refuse a log written with a newer schema version, and both leave a trailing
line without its newline alone: it is either a write in progress or the
remains of a killed writer, which the next append moves aside.

A line longer than ``LINE_MAX_BYTES`` (which the writer never writes) is a bad
line like any other: it is read in ``READ_CHUNK_BYTES`` pieces and counted,
never held whole, so a planted 200 MB line costs the reader about the cap in
memory, not the line. A symbolic link in a log's place is refused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, AnyStr

import orjson

from ax_log.envelope import SCHEMA_VERSION
from libcommon.errors import CorruptStore, Unsupported
from libcommon.safeopen import open_state_file

FOLLOW_POLL_S = 0.2
# The longest line (its newline included) the writer writes and a reader parses: the
# largest request an ax tool accepts. Events are kilobytes; the largest a session writes
# (a write_file of at most 10 MiB, recorded as its request) fits with room for escapes.
LINE_MAX_BYTES = 16 * 1024 * 1024
READ_CHUNK_BYTES = 1024 * 1024

Record = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One unreadable or out-of-place line (1-based line number)."""

    line: int
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "problem": self.problem}


@dataclass(frozen=True)
class LogLine:
    """One line of a log: where it starts, how long it is, and what it holds."""

    number: int
    offset: int
    size: int
    complete: bool
    record: Record | None
    problem: str | None = None
    newer: bool = False

    @property
    def partial(self) -> bool:
        return not self.complete

    @property
    def end(self) -> int:
        return self.offset + self.size


def envelope_problem(record: Any, session_id: str) -> tuple[str | None, bool]:
    """What is wrong with a parsed line's envelope, and whether it is from a newer schema."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}", False
    version = record.get("v")
    if type(version) is not int:
        return "field 'v' is missing or not an integer", False
    if version > SCHEMA_VERSION:
        return (
            f"written with schema v{version}, newer than this build's v{SCHEMA_VERSION}",
            True,
        )
    if version < 1:
        return f"field 'v' is {version}, not a schema version", False
    seq = record.get("seq")
    if type(seq) is not int or seq < 1:
        return "field 'seq' is missing or not a positive integer", False
    if not isinstance(record.get("ts"), str):
        return "field 'ts' is missing or not a string", False
    if record.get("session") != session_id:
        return f"field 'session' is {record.get('session')!r}, not {session_id!r}", False
    if not isinstance(record.get("type"), str):
        return "field 'type' is missing or not a string", False
    return None, False


def parse_line(raw: bytes, number: int, offset: int, session_id: str) -> LogLine:
    complete = raw.endswith(b"\n")
    if not complete:
        return LogLine(
            number, offset, len(raw), False, None, "incomplete trailing line (no newline)"
        )
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return LogLine(number, offset, len(raw), True, None, f"not valid JSON ({exc})")
    problem, newer = envelope_problem(record, session_id)
    if problem is not None:
        return LogLine(number, offset, len(raw), True, None, problem, newer)
    return LogLine(number, offset, len(raw), True, record)


@dataclass(frozen=True)
class Overlong:
    """A line longer than LINE_MAX_BYTES: its length (newline included), never its text."""

    size: int
    complete: bool

    def problem(self) -> str:
        what = "line" if self.complete else "incomplete trailing line"
        return (
            f"{what} of {self.size} bytes is longer than the {LINE_MAX_BYTES}-byte cap "
            "of a log line"
        )


def capped_lines(handle: IO[AnyStr]) -> Iterator[AnyStr | Overlong]:
    """Each line of ``handle`` (its newline kept), or ``Overlong`` for one over the cap.

    At most ``LINE_MAX_BYTES`` + 1 units of one line are ever held: the rest of
    a longer line is read in ``READ_CHUNK_BYTES`` pieces and only counted.
    """
    while raw := handle.readline(LINE_MAX_BYTES + 1):
        if len(raw) <= LINE_MAX_BYTES:
            yield raw
            continue
        newline = b"\n" if isinstance(raw, bytes) else "\n"
        size, complete = len(raw), raw.endswith(newline)
        del raw
        while not complete and (rest := handle.readline(READ_CHUNK_BYTES)):
            size += len(rest)
            complete = rest.endswith(newline)
        yield Overlong(size, complete)


def iter_lines(
    path: Path, session_id: str, offset: int = 0, first_line: int = 1
) -> Iterator[LogLine]:
    """Every line from ``offset`` on, parsed; blank lines count as problems too.

    Read through ``capped_lines``: a line over the cap is a problem, never held.
    """
    fd = open_state_file(path, os.O_RDONLY)
    with open(fd, "rb") as handle:
        handle.seek(offset)
        number = first_line
        for raw in capped_lines(handle):
            if isinstance(raw, Overlong):
                line = LogLine(number, offset, raw.size, raw.complete, None, raw.problem())
            else:
                line = parse_line(raw, number, offset, session_id)
            yield line
            offset += line.size
            number += 1


def refuse_newer(path: Path, line: LogLine) -> Unsupported:
    return Unsupported(
        f"{path}:{line.number}: {line.problem}",
        reason="newer-log-version",
        hint="read this log with the ax version that wrote it, or a newer one",
    )


@dataclass
class EventReader:
    """Streams the events of one log; ``problems`` collects what lenient mode skipped."""

    path: Path
    session_id: str
    lenient: bool = False
    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.offset = 0
        self.next_line = 1
        self.last_seq = 0
        self.fragment = 0

    def lines(self) -> Iterator[tuple[LogLine, Record]]:
        """Complete, readable lines from where the last call stopped.

        ``fragment`` is then the length of a trailing line without its newline
        (0 when the log ended cleanly); it is not consumed, so a later call
        reads it once its writer has finished it.
        """
        self.fragment = 0
        for line in iter_lines(self.path, self.session_id, self.offset, self.next_line):
            if line.partial:
                self.fragment = line.size
                return
            self.offset = line.end
            self.next_line = line.number + 1
            if line.newer:
                raise refuse_newer(self.path, line)
            if line.record is None:
                self._bad(line.number, line.problem or "unreadable")
                continue
            seq = line.record["seq"]
            if seq != self.last_seq + 1:
                # Lenient mode still serves the event: the line itself is sound.
                self._bad(line.number, f"seq {seq} follows seq {self.last_seq}")
            self.last_seq = seq
            yield line, line.record

    def _bad(self, number: int, problem: str) -> None:
        if not self.lenient:
            raise CorruptStore(str(self.path), problem, line=number)
        self.problems.append(Problem(number, problem))


def read_events(
    path: Path,
    session_id: str,
    *,
    lenient: bool = False,
    since: int = 0,
    problems: list[Problem] | None = None,
) -> Iterator[Record]:
    """The events of a log with ``seq > since``, streamed.

    Strict mode raises CorruptStore at the first bad line; lenient mode skips it
    and appends a Problem to ``problems`` (when given). A newer ``v`` raises
    Unsupported in both modes.
    """
    reader = EventReader(path, session_id, lenient, [] if problems is None else problems)
    for _line, record in reader.lines():
        if record["seq"] > since:
            yield record
    if reader.fragment and lenient:
        reader.problems.append(
            Problem(reader.next_line, f"incomplete trailing line ({reader.fragment} bytes)")
        )


def follow_events(
    path: Path,
    session_id: str,
    *,
    lenient: bool = False,
    since: int = 0,
    problems: list[Problem] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    poll_s: float = FOLLOW_POLL_S,
) -> Iterator[Record | None]:
    """Like ``read_events`` but keeps polling for new lines until ``should_stop()``.

    Yields ``None`` each time it has caught up, so the caller can flush output
    and check its own stop conditions between polls. The log need not exist yet.
    """
    reader = EventReader(path, session_id, lenient, [] if problems is None else problems)
    while not should_stop():
        if path.exists():
            for _line, record in reader.lines():
                if record["seq"] > since:
                    yield record
        yield None
        time.sleep(poll_s)


def type_matches(event_type: str, prefix: str) -> bool:
    """``prefix`` names a type or a branch of the dotted hierarchy: ``tool`` matches
    ``tool.requested`` but not ``toolbox.opened``; a trailing dot is allowed."""
    if prefix.endswith("."):
        return event_type.startswith(prefix)
    return event_type == prefix or event_type.startswith(prefix + ".")


def first_record(path: Path) -> Record | None:
    """The first line of a log, parsed, or None when it is empty, unreadable or over the cap."""
    try:
        fd = open_state_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as handle:
        raw = handle.readline(LINE_MAX_BYTES + 1)
    if len(raw) > LINE_MAX_BYTES:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
