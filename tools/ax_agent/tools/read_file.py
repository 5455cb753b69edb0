"""read_file: a page of a text file, with line numbers, and how to read the next page."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from ax_policy import ToolFacts
from libcommon.errors import AxError

from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, clip_line, guarded, opened, resolve, shown

READ_DEFAULT_LINES = 2_000
READ_MAX_LINES = 2_000
READ_LINE_MAX_CHARS = 2_000
# The page stops early when its text would pass this many characters.
READ_MAX_CHARS = 100_000
# A NUL byte in the first bytes marks a binary file.
READ_SNIFF_BYTES = 8_192
# How much of one line is held in memory; the rest of a longer line is skipped, not kept.
READ_LINE_READ_BYTES = 4 * READ_LINE_MAX_CHARS
# Beyond this size the total line count is not worked out (it would read the whole file).
READ_COUNT_MAX_BYTES = 64 * 1024 * 1024


class ReadFileInput(ToolInput):
    path: str = Field(min_length=1, description="The file to read, relative to the workspace root.")
    offset: int = Field(
        default=1, ge=1, description="The first line to show (1-based). Use it to page on."
    )
    limit: int = Field(
        default=READ_DEFAULT_LINES,
        ge=1,
        le=READ_MAX_LINES,
        description=f"How many lines to show at most (up to {READ_MAX_LINES}).",
    )


@guarded
def run(request: ReadFileInput, ctx: ToolContext) -> ToolResult:
    path = resolve(request.path, ctx)
    name = shown(path, ctx)
    with opened(path, ctx) as fd:
        if fd is None:
            raise Refused(_missing(path, name, ctx))
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused(f"{name} is a folder, not a file; use list_dir or glob to see inside it")
        if not stat.S_ISREG(info.st_mode):
            raise Refused(
                f"{name} is not a regular file (a device, FIFO or socket); read_file reads files"
            )
        size = info.st_size
        with os.fdopen(fd, "rb", closefd=False) as handle:
            if b"\0" in handle.read(READ_SNIFF_BYTES):
                raise Refused(f"{name} is a binary file ({size} bytes); read_file shows text only")
            handle.seek(0)
            page = _read_page(handle, request.offset, request.limit)
            total = page.last + _count_rest(handle) if size <= READ_COUNT_MAX_BYTES else None
    if size == 0:
        return ToolResult(content=f"({name} is empty: 0 bytes)", summary=f"read {name}: empty")
    if not page.lines:
        known = f"the file has {total} lines" if total is not None else "the file is shorter"
        raise Refused(f"offset {request.offset} is past the end of {name}: {known}")
    first = request.offset
    last = first + len(page.lines) - 1
    body = "\n".join(f"{number:>6}\t{text}" for number, text in enumerate(page.lines, first))
    of_total = f" of {total}" if total is not None else ""
    more = page.more if total is None else last < total
    summary = f"read {name}: lines {first}-{last}{of_total}"
    if not more:
        return ToolResult(content=body, summary=summary)
    why = " (the page reached its size cap)" if page.char_capped else ""
    note = (
        f"\n\n[{name}: showing lines {first}-{last}{of_total}{why}. "
        f"To read on: read_file(path={name!r}, offset={last + 1})]"
    )
    return ToolResult(content=body + note, summary=summary + " (more follow)")


@dataclass
class _Page:
    lines: list[str] = field(default_factory=list)
    last: int = 0  # the number of the last line read from the file
    more: bool = False
    char_capped: bool = False


def _read_page(handle: BinaryIO, offset: int, limit: int) -> _Page:
    page = _Page()
    chars = 0
    for raw, length in _lines(handle):
        page.last += 1
        if page.last < offset:
            continue
        if len(page.lines) >= limit:
            page.more = True
            return page
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if length > len(raw.rstrip(b"\n")):
            text = text[:READ_LINE_MAX_CHARS] + f" … [line cut: {length} bytes]"
        else:
            text = clip_line(text, READ_LINE_MAX_CHARS)
        if page.lines and chars + len(text) > READ_MAX_CHARS:
            page.more = True
            page.char_capped = True
            return page
        page.lines.append(text)
        chars += len(text) + 8
    return page


def _lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Each line's first ``READ_LINE_READ_BYTES`` and its length in bytes (without the
    newline); the rest of a longer line is read and dropped, so memory stays bounded."""
    while True:
        head = handle.readline(READ_LINE_READ_BYTES)
        if not head:
            return
        length = len(head.rstrip(b"\n"))
        piece = head
        while not piece.endswith(b"\n") and len(piece) == READ_LINE_READ_BYTES:
            piece = handle.readline(READ_LINE_READ_BYTES)
            length += len(piece.rstrip(b"\n"))
        yield head, length


def _count_rest(handle: BinaryIO) -> int:
    return sum(1 for _ in _lines(handle))


def _missing(path: Path, name: str, ctx: ToolContext) -> str:
    message = f"{name} does not exist"
    try:
        with opened(path.parent, ctx) as fd:
            siblings = os.listdir(fd) if fd is not None else []
    except (OSError, AxError):
        siblings = []
    close = difflib.get_close_matches(path.name, siblings, n=3)
    if close:
        message += f"; similar names in its folder: {', '.join(close)}"
    return message


TOOL = ModelTool(
    name="read_file",
    description=(
        "Read a text file of the workspace. Lines come numbered (number, tab, text); "
        f"at most {READ_MAX_LINES} lines per call, and lines longer than "
        f"{READ_LINE_MAX_CHARS} characters are cut. When more follows, the result ends "
        "with the exact call that reads the next page (offset). Read a file before you "
        "edit it."
    ),
    input_model=ReadFileInput,
    facts=ToolFacts(name="read_file", reads=lambda request: [request.path]),
    run=run,
)
