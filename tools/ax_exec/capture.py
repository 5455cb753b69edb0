"""Bounded output capture: the head and the tail of a stream, and an optional spill.

However much a child prints, a stream holds at most ``head_cap + 2 * tail_cap``
bytes in memory. The bytes are decoded once, when the run is over. The spill
keeps the combined output (both streams, in arrival order) in a file, up to
``SPILL_MAX_BYTES``, and is kept only when a stream was truncated: otherwise the
head already holds everything.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from libcommon.atomic import fsync_dir

DEFAULT_MAX_OUTPUT_BYTES = 128 * 1024
MIN_MAX_OUTPUT_BYTES = 1024
MAX_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
SPILL_MAX_BYTES = 64 * 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024


@dataclass
class HeadTail:
    """The first ``head_cap`` and the last ``tail_cap`` bytes, and the total count."""

    head_cap: int
    tail_cap: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self.tail_cap == 0:
            return
        self.tail += chunk
        # Trim in batches so a flood of small chunks is not quadratic.
        if len(self.tail) > 2 * self.tail_cap:
            del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(len(self.tail), self.tail_cap)

    def decoded(self) -> tuple[str, str]:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        if self.truncated:
            tail = _skip_partial_character(tail)
        return self.head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")


def _skip_partial_character(data: bytes) -> bytes:
    """Drop UTF-8 continuation bytes cut off at the start of the tail."""
    start = 0
    while start < min(len(data), 3) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def split_caps(max_bytes: int, keep_end: bool) -> tuple[int, int]:
    """Head and tail caps for one stream; stderr gives most of its room to the end."""
    head = max_bytes // 4 if keep_end else max_bytes // 2
    return head, max_bytes - head


class Spill:
    """The combined output on disk, named by its sha256 once complete."""

    def __init__(self, directory: Path, limit: int = SPILL_MAX_BYTES) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.limit = limit
        fd, name = tempfile.mkstemp(prefix=".spill.", suffix=".tmp", dir=directory)
        self._file = os.fdopen(fd, "wb")
        self._tmp = Path(name)
        self._hash = hashlib.sha256()
        self.written = 0
        self.complete = True

    def feed(self, chunk: bytes) -> None:
        room = self.limit - self.written
        if room <= 0:
            self.complete = self.complete and not chunk
            return
        if len(chunk) > room:
            chunk = chunk[:room]
            self.complete = False
        self._file.write(chunk)
        self._hash.update(chunk)
        self.written += len(chunk)

    def keep(self) -> Path:
        """Publish the spill as ``<directory>/<sha256>`` (atomically) and return its path."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        target = self.directory / self._hash.hexdigest()
        self._tmp.chmod(0o600)
        self._tmp.replace(target)
        fsync_dir(self.directory)
        return target

    def discard(self) -> None:
        self._file.close()
        self._tmp.unlink(missing_ok=True)
