"""Bounded output capture: the head and the tail of a stream, and an optional spill.

However much a child prints, a stream holds at most ``head_cap + tail_cap`` bytes
in memory: the head fills once, the tail is a ring overwritten in place. When the
run is over the bytes are decoded either whole, once (``decode``, for an in-process
caller's ExecOutcome), or a slice at a time (``head_text``/``tail_text``, for the
outcome JSON ``ax-exec run`` writes), which never holds a stream's text. The spill
keeps the combined output (both streams, in arrival order) in a file, redacted on
its way there, up to ``SPILL_MAX_BYTES``; it is kept only when a stream was
truncated: otherwise the head already holds everything.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from libcommon.atomic import fsync_dir
from libcommon.redact import StreamRedactor

DEFAULT_MAX_OUTPUT_BYTES = 128 * 1024
MIN_MAX_OUTPUT_BYTES = 1024
MAX_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
SPILL_MAX_BYTES = 64 * 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024
# head_text and tail_text decode this many bytes at a time (at most 256 KiB of text).
DECODE_SLICE_BYTES = 64 * 1024
# The documented bound on what ``ax-exec run`` holds beyond the interpreter's own
# memory, per stream, as a multiple of its cap, whatever the output: the bytes are
# held once and the text only a slice at a time (a Python string would take 4 bytes a
# character once it held one emoji). tests/exec/test_output_memory.py measures it.
MEMORY_PER_STREAM = 2

StreamName = Literal["stdout", "stderr"]


@dataclass
class HeadTail:
    """The first ``head_cap`` and the last ``tail_cap`` bytes, and the total count."""

    head_cap: int
    tail_cap: int
    head: bytearray = field(default_factory=bytearray)
    # The last bytes, in order until the ring is full; then ``start`` is the oldest.
    ring: bytearray = field(default_factory=bytearray)
    start: int = 0
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        view = memoryview(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += view[:room]
            view = view[room:]
        if not view or self.tail_cap == 0:
            return
        if len(view) >= self.tail_cap:
            self.ring[:] = view[-self.tail_cap :]
            self.start = 0
            return
        room = self.tail_cap - len(self.ring)
        if room > 0:
            self.ring += view[:room]
            view = view[room:]
        if not view:
            return
        # Full: overwrite the oldest bytes, wrapping around the end.
        first = min(len(view), self.tail_cap - self.start)
        self.ring[self.start : self.start + first] = view[:first]
        self.ring[: len(view) - first] = view[first:]
        self.start = (self.start + len(view)) % self.tail_cap

    @property
    def truncated(self) -> bool:
        return self.total > self.head_cap + self.tail_cap

    def tail_bytes(self) -> bytes:
        """The kept end of the stream, oldest byte first."""
        with memoryview(self.ring) as view:
            return b"".join((view[self.start :], view[: self.start]))

    def decode(self) -> tuple[str, str]:
        """The head and the tail as text, decoded once; the bytes are let go as it goes."""
        head = self.head.decode("utf-8", "replace")
        self.head = bytearray()
        tail = self.tail_bytes()
        self.ring = bytearray()
        self.start = 0
        skip = _partial_character(tail) if self.truncated else 0
        with memoryview(tail) as view:
            return head, str(view[skip:], "utf-8", "replace")

    def head_text(self) -> Iterator[str]:
        """The head as ``decode`` gives it, a slice at a time; the bytes are kept."""
        with memoryview(self.head) as view:
            yield from _decode_slices((view,))

    def tail_text(self) -> Iterator[str]:
        """The tail as ``decode`` gives it, a slice at a time; the bytes are kept."""
        with memoryview(self.ring) as view:
            older, newer = view[self.start :], view[: self.start]
            # The same opening bytes decode() skips, read across the ring's wrap.
            opening = (bytes(older[:3]) + bytes(newer[:3]))[:3]
            skip = _partial_character(opening) if self.truncated else 0
            cut = min(skip, len(older))
            yield from _decode_slices((older[cut:], newer[skip - cut :]))


def _partial_character(data: bytes) -> int:
    """How many UTF-8 continuation bytes, cut off from their lead, open the tail."""
    start = 0
    while start < min(len(data), 3) and data[start] & 0xC0 == 0x80:
        start += 1
    return start


def _decode_slices(parts: Iterable[memoryview]) -> Iterator[str]:
    """The text of ``parts`` read as one byte string, as ``bytes.decode("utf-8", "replace")``
    would give it, in slices of at most ``DECODE_SLICE_BYTES`` bytes' worth."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for part in parts:
        for start in range(0, len(part), DECODE_SLICE_BYTES):
            text = decoder.decode(part[start : start + DECODE_SLICE_BYTES])
            if text:
                yield text
    text = decoder.decode(b"", final=True)
    if text:
        yield text


def split_caps(max_bytes: int, keep_end: bool) -> tuple[int, int]:
    """Head and tail caps for one stream; stderr gives most of its room to the end."""
    head = max_bytes // 4 if keep_end else max_bytes // 2
    return head, max_bytes - head


class _RedactedStream:
    """One stream's bytes, redacted: text round-trips, undecodable bytes included."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._redactor = StreamRedactor()

    def feed(self, chunk: bytes) -> bytes:
        return _encode(self._redactor.feed(self._decoder.decode(chunk)))

    def finish(self) -> bytes:
        text = self._redactor.feed(self._decoder.decode(b"", final=True))
        return _encode(text + self._redactor.finish())


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class Spill:
    """The combined output on disk, redacted, named by the sha256 of what it holds.

    Each stream is redacted on its own, so a secret split across reads is whole again
    before it is judged; the two streams are interleaved as their lines are released.
    """

    def __init__(self, directory: Path, limit: int = SPILL_MAX_BYTES) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.limit = limit
        fd, name = tempfile.mkstemp(prefix=".spill.", suffix=".tmp", dir=directory)
        self._file = os.fdopen(fd, "wb")
        self._tmp = Path(name)
        self._hash = hashlib.sha256()
        self._streams: dict[StreamName, _RedactedStream] = {
            "stdout": _RedactedStream(),
            "stderr": _RedactedStream(),
        }
        self.written = 0
        self.complete = True

    def feed(self, stream: StreamName, chunk: bytes) -> None:
        if self.written >= self.limit:
            # Full: what is left is not redacted, for it is not kept.
            self.complete = self.complete and not chunk
            return
        self._write(self._streams[stream].feed(chunk))

    def _write(self, data: bytes) -> None:
        room = self.limit - self.written
        if len(data) > room:
            data = data[:room]
            self.complete = False
        self._file.write(data)
        self._hash.update(data)
        self.written += len(data)

    def keep(self) -> Path:
        """Publish the spill as ``<directory>/<sha256>`` (atomically) and return its path."""
        for stream in self._streams.values():
            self._write(stream.finish())
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
