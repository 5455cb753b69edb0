"""Appending events: one lock, one write, one fdatasync per batch.

How an append finds the next seq without rescanning the log: next to each log
lives a hidden index file ``.<id>.index``. It is the append lock (flock) and
holds one small record ``{ino, size, ctimeNs, seq}`` describing the log as the
last append left it. Under the lock the writer compares that record with
``fstat`` of the log and reads back the log's last line; when all agree, the
last seq is known at a cost independent of the log's length. When anything
disagrees (a writer died between its write and the index update, someone
edited the file, the index is missing or torn), the writer falls back to one
full validating scan, which is also where a partial trailing line is found
and moved aside and where mid-file corruption is refused. The index is a
cache: it is never trusted over the log, so it needs no fsync.

Durability: the batch is written with a single ``write(2)`` and then
``fdatasync``-ed before the lock is released, so an event the call returned
survives a process kill and a power loss (docs/ax-log.md).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ax_log.envelope import SCHEMA_VERSION
from ax_log.events import EventBody, LogRecovered, body_fields, parse_body
from ax_log.reader import LINE_MAX_BYTES, Record, iter_lines, parse_line, refuse_newer
from libcommon import clock, jsonio
from libcommon.atomic import fsync_dir
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout
from libcommon.redact import redact_value
from libcommon.safeopen import open_state_file

APPEND_LOCK_TIMEOUT_S = 30.0
INDEX_RECORD_BYTES = 160
TAIL_READ_CHUNK = 64 * 1024
TAIL_FIRST_READ = 4 * 1024
BATCH_MAX_EVENTS = 10_000
# A seq and a timestamp as wide as a log can ever write: line sizes are measured with them
# (without reading the clock, which tests step deterministically).
WIDEST_SEQ = 10**18
WIDEST_TS = "0000-00-00T00:00:00.000Z"
# Types only the log itself may write: a forged one would misreport a recovery.
WRITTEN_BY_THE_LOG = frozenset({"log.recovered"})


def log_path(layout: StateLayout, session_id: str) -> Path:
    return layout.session_log(session_id)


def index_path(layout: StateLayout, session_id: str) -> Path:
    return _index_of(log_path(layout, session_id))


def _index_of(log: Path) -> Path:
    # The leading dot keeps it apart from every session's files: ids start with a letter or digit.
    return log.with_name(f".{log.stem}.index")


def partial_path(log: Path) -> Path:
    return log.with_name(log.name + ".partial")


def coerce_body(event: EventBody | Mapping[str, Any], where: str) -> EventBody:
    if isinstance(event, EventBody):
        # Re-validate: a model built with model_construct or mutated after creation is not trusted.
        body = parse_body(body_fields(event), where)
    else:
        body = parse_body(event, where)
    if body.type in WRITTEN_BY_THE_LOG:
        raise UsageError(f"{where}: {body.type} events are written by the log itself")
    return body


def append_events(
    layout: StateLayout,
    session_id: str,
    events: Iterable[EventBody | Mapping[str, Any]],
) -> list[Record]:
    """Validate every event, then append them all as one batch; return them as stored.

    Nothing is written unless every event is valid (UsageError names the first
    bad one). The returned records are the caller's events with their envelope;
    when the append first had to move a partial trailing line aside, the
    ``log.recovered`` event it wrote precedes them in the log but is not returned.
    """
    bodies = [coerce_body(event, f"event {number}") for number, event in enumerate(events, 1)]
    if not bodies:
        return []
    if len(bodies) > BATCH_MAX_EVENTS:
        raise UsageError(f"a batch holds at most {BATCH_MAX_EVENTS} events, not {len(bodies)}")
    fields = [_redacted(body) for body in bodies]
    for number, item in enumerate(fields, 1):
        _check_line_size(session_id, item, number)
    log = log_path(layout, session_id)
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with append_lock(_index_of(log)) as index_fd:
        created = not os.path.lexists(log)
        fd = open_state_file(log, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            if created:
                fsync_dir(log.parent)
            last_seq, recovered = _prepare(log, fd, index_fd, session_id)
            first = [] if recovered is None else [_envelope(session_id, last_seq + 1, recovered)]
            records = [
                _envelope(session_id, last_seq + len(first) + offset, body)
                for offset, body in enumerate(fields, 1)
            ]
            last_seq = _write_batch(fd, [*first, *records])
            _write_index(index_fd, os.fstat(fd), last_seq)
        finally:
            os.close(fd)
    return records


def _check_line_size(session_id: str, fields: Mapping[str, Any], number: int) -> None:
    """Refuse an event whose line would be longer than any reader parses.

    Measured with the widest seq a log can reach, so the line actually written
    (same fields, same timestamp width) is never longer than the one measured.
    """
    widest = {
        "v": SCHEMA_VERSION,
        "seq": WIDEST_SEQ,
        "ts": WIDEST_TS,
        "session": session_id,
        **fields,
    }
    size = len(jsonio.dumps_line(widest))
    if size > LINE_MAX_BYTES:
        raise UsageError(
            f"event {number} would be a log line of about {size} bytes; a line holds at most "
            f"{LINE_MAX_BYTES}",
            hint="keep large payloads out of events (store a file and log its path or hash)",
        )


def _redacted(body: EventBody) -> dict[str, Any]:
    fields = body_fields(body)
    return {key: value if key == "type" else redact_value(value) for key, value in fields.items()}


def _envelope(session_id: str, seq: int, fields: Mapping[str, Any]) -> Record:
    return {
        "v": SCHEMA_VERSION,
        "seq": seq,
        "ts": clock.timestamp(),
        "session": session_id,
        **fields,
    }


def _write_batch(fd: int, records: list[Record]) -> int:
    """Write all lines at once and fdatasync; on failure cut the log back. Returns the last seq."""
    data = b"".join(jsonio.dumps_line(record) for record in records)
    before = os.fstat(fd).st_size
    try:
        _write_all(fd, data)
        os.fdatasync(fd)
    except OSError as exc:
        # Leave no half batch behind: the log ends where it ended before this call.
        os.ftruncate(fd, before)
        raise OperationFailed(f"could not append to the log: {exc}") from None
    return int(records[-1]["seq"])


@contextmanager
def append_lock(path: Path, timeout: float = APPEND_LOCK_TIMEOUT_S) -> Iterator[int]:
    """Hold the session's append lock (a flock on ``path``); yields its fd (the index lives there).

    libcommon's flock helper polls with a short exponential backoff, so many writers
    taking turns do not idle; a holder that never lets go (a stopped process) is
    reported as Fenced after ``timeout``.
    """
    with flock_lock(
        path,
        timeout,
        what="append lock",
        hint="another process holds it; if it is stopped, resume or end it",
    ) as fd:
        yield fd


@dataclass(frozen=True)
class _Index:
    ino: int
    size: int
    ctime_ns: int
    seq: int

    def matches(self, stat: os.stat_result) -> bool:
        return (self.ino, self.size, self.ctime_ns) == (
            stat.st_ino,
            stat.st_size,
            stat.st_ctime_ns,
        )


def _read_index(fd: int) -> _Index | None:
    raw = os.pread(fd, INDEX_RECORD_BYTES, 0)
    try:
        data = orjson.loads(raw.rstrip(b" \n"))
        return _Index(int(data["ino"]), int(data["size"]), int(data["ctimeNs"]), int(data["seq"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _write_index(fd: int, stat: os.stat_result, seq: int) -> None:
    record = jsonio.dumps(
        {"ino": stat.st_ino, "size": stat.st_size, "ctimeNs": stat.st_ctime_ns, "seq": seq}
    )
    # Fixed width, one pwrite inside one page: a reader sees the old record or the new one.
    os.pwrite(fd, record.ljust(INDEX_RECORD_BYTES - 1) + b"\n", 0)


def _prepare(
    log: Path, fd: int, index_fd: int, session_id: str
) -> tuple[int, dict[str, Any] | None]:
    """The last seq, and the fields of a ``log.recovered`` event if a fragment was moved aside."""
    stat = os.fstat(fd)
    index = _read_index(index_fd)
    if (
        index is not None
        and index.matches(stat)
        and _last_line_seq(fd, stat.st_size, session_id) == index.seq
    ):
        return index.seq, None
    last_seq, clean_end = _scan(log, session_id)
    if index is not None and index.ino == stat.st_ino and last_seq < index.seq:
        # Appends only grow a log, so fewer events than the last append left means
        # lines were cut away behind the log's back; continuing would reuse seqs.
        raise CorruptStore(
            str(log),
            f"the log ends at seq {last_seq} but the last append left seq {index.seq}; "
            "appends are refused so no seq is reused",
        )
    if clean_end == stat.st_size:
        return last_seq, None
    return last_seq, _move_fragment_aside(log, fd, clean_end, stat.st_size)


def _last_line_seq(fd: int, size: int, session_id: str) -> int | None:
    """The seq of the log's last line, read backwards from the end; None if it is not sound."""
    end = size
    tail = b""
    # Most lines are short: a first small read usually holds the whole last line.
    chunk = TAIL_FIRST_READ
    while end > 0:
        start = max(0, end - chunk)
        chunk = TAIL_READ_CHUNK
        tail = os.pread(fd, end - start, start) + tail
        end = start
        # Searched from the end: the cost is the last line's length, not the chunk's.
        if start == 0 or tail.rfind(b"\n", 0, len(tail) - 1) >= 0:
            break
        if len(tail) > LINE_MAX_BYTES:
            # No sound line is this long: let the full scan name the problem.
            return None
    if not tail.endswith(b"\n"):
        return None
    line = tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1 :]
    parsed = parse_line(line, 0, 0, session_id)
    return None if parsed.record is None else int(parsed.record["seq"])


def _scan(log: Path, session_id: str) -> tuple[int, int]:
    """Validate every complete line; return the last seq and where the complete lines end."""
    last_seq = 0
    clean_end = 0
    for line in iter_lines(log, session_id):
        if line.partial:
            break
        if line.newer:
            raise refuse_newer(log, line)
        if line.record is None:
            raise _corrupt(log, line.number, line.problem or "unreadable")
        seq = line.record["seq"]
        if seq != last_seq + 1:
            raise _corrupt(log, line.number, f"seq {seq} follows seq {last_seq}")
        last_seq = seq
        clean_end = line.end
    return last_seq, clean_end


def _corrupt(log: Path, line: int, problem: str) -> CorruptStore:
    error = CorruptStore(str(log), f"{problem}; appends are refused until it is repaired", line)
    error.hint = f"inspect line {line} with `ax-log verify`; ax will not rewrite the log"
    return error


def _move_fragment_aside(log: Path, fd: int, clean_end: int, size: int) -> dict[str, Any]:
    """Append the bytes after the last complete line to ``<log>.partial``, then cut them off.

    Copied in bounded chunks: a fragment may be as long as anything planted in the log.
    """
    target = partial_path(log)
    created = not os.path.lexists(target)
    out = open_state_file(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    digest = hashlib.sha256()
    try:
        position = clean_end
        while position < size:
            chunk = os.pread(fd, min(TAIL_READ_CHUNK * 16, size - position), position)
            if not chunk:
                break
            digest.update(chunk)
            _write_all(out, chunk)
            position += len(chunk)
        # A newline after each fragment keeps fragments from running together.
        _write_all(out, b"\n")
        os.fsync(out)
    finally:
        os.close(out)
    if created:
        fsync_dir(target.parent)
    # Only once the fragment is durable elsewhere is it cut from the log.
    os.ftruncate(fd, clean_end)
    os.fsync(fd)
    return body_fields(
        LogRecovered(
            partial_file=target.name,
            offset=clean_end,
            bytes=position - clean_end,
            sha256=digest.hexdigest(),
        )
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
