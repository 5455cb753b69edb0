"""Append-only JSON Lines files read from their end.

The trail and the archive only ever grow. Appending needs the last record
(for its step or row number), and the frame needs the newest records, so both
are read backwards from the end of the file in fixed chunks: the cost depends
on the size of the last lines, never on how many lines came before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from libcommon.safeopen import open_state_file

TAIL_CHUNK_BYTES = 8_192


def append_line(path: Path, line: bytes) -> None:
    """Append one complete line (the caller holds the file's lock); a link there is refused."""
    fd = open_state_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def last_line(path: Path) -> bytes | None:
    """The last complete line, or None for a missing or empty file.

    A partial last line (a writer died mid-append) is moved to
    ``<name>.partial`` and cut off, so the next append follows the last whole
    line and nothing is dropped. The caller holds the file's lock.
    """
    try:
        fd = open_state_file(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    with open(fd, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return None
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            size = _set_aside_partial(path, handle, size)
            if size == 0:
                return None
        return _line_ending_at(handle, size)


def _line_ending_at(handle: BinaryIO, end: int) -> bytes:
    """The line whose newline is the byte at ``end - 1``."""
    collected = b""
    position = end - 1
    while position > 0:
        start = max(0, position - TAIL_CHUNK_BYTES)
        handle.seek(start)
        collected = handle.read(position - start) + collected
        position = start
        cut = collected.rfind(b"\n")
        if cut >= 0:
            return collected[cut + 1 :]
    return collected


def _set_aside_partial(path: Path, handle: BinaryIO, size: int) -> int:
    """Move the bytes after the last newline aside; return the new file size."""
    keep = 0
    position = size
    while position > 0:
        start = max(0, position - TAIL_CHUNK_BYTES)
        handle.seek(start)
        cut = handle.read(position - start).rfind(b"\n")
        if cut >= 0:
            keep = start + cut + 1
            break
        position = start
    handle.seek(keep)
    partial = handle.read(size - keep)
    fd = open_state_file(
        path.with_name(path.name + ".partial"), os.O_WRONLY | os.O_APPEND | os.O_CREAT
    )
    try:
        os.write(fd, partial + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    handle.truncate(keep)
    handle.flush()
    os.fsync(handle.fileno())
    return keep


def lines_newest_first(path: Path) -> Iterator[bytes]:
    """Every non-blank line of the file, last line first."""
    try:
        fd = open_state_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    with open(fd, "rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        carry = b""
        while position > 0:
            start = max(0, position - TAIL_CHUNK_BYTES)
            handle.seek(start)
            chunk = handle.read(position - start) + carry
            position = start
            lines = chunk.split(b"\n")
            # The first piece may be the tail of a line that starts in an earlier chunk.
            carry = lines.pop(0) if position > 0 else b""
            for raw in reversed(lines):
                if raw.strip():
                    yield raw
