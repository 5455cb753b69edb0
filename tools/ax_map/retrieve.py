"""Ranked answers to a search, with a few lines of each file read live from disk.

The index says where a definition was when it was built; the excerpt says what is
there now. Each hit's file is opened through libcommon.safeopen's walk from the
workspace root, so a link on the way (planted since the index was built) is
refused, never followed out of the workspace. A file that was only listed by the
index (secret-named, binary, too large, ...) is never read; one that is binary
or too large now is not excerpted either; one that is gone or changed is said so
in the hit's signals, and the symbols of a changed file are found again by name
in what is there now. Excerpt lines pass through libcommon's one redactor, are
clipped to EXCERPT_LINE_MAX_CHARS and made printable.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from libcommon.errors import UsageError
from libcommon.redact import redact
from libcommon.safeopen import UnsafePath, open_for_reading

from .model import FileEntry, Snapshot, Symbol
from .printable import printable
from .query import QUERY_MAX_CHARS
from .rank import Ranked, matches
from .structure import structure_of

DEFAULT_RETRIEVE_LIMIT = 10
RETRIEVE_LIMIT_MAX = 100
HIT_SYMBOLS_MAX = 8
EXCERPT_LINES_BEFORE = 2
EXCERPT_LINES_AFTER = 4
EXCERPT_LINE_MAX_CHARS = 160
EXCERPT_TAB_COLUMNS = 4
# The index never reads a file larger than this; neither does an excerpt.
EXCERPT_READ_MAX_BYTES = 1024 * 1024
PRIVATE_KEY_MARKER = "[REDACTED:private-key]"


@dataclass(frozen=True)
class Hit:
    """One answer: the file, why it ranks (``signals``), its matching symbols and an excerpt.

    ``symbols`` are the definitions that matched the query (the file's top ones when
    only its path matched), with line numbers checked against the file as it is now;
    ``excerpt`` holds a few lines around the first of them, each ``"<line>: <text>"``.
    """

    path: str
    score: float
    signals: list[str]
    symbols: list[Symbol]
    excerpt: list[str]


def retrieve(
    snapshot: Snapshot,
    workspace: Path,
    query: str,
    *,
    limit: int = DEFAULT_RETRIEVE_LIMIT,
    touched: Sequence[str] = (),
) -> list[Hit]:
    """The files of ``snapshot`` answering ``query`` best, first; excerpts read in ``workspace``."""
    check_retrieve_request(query, limit)
    found = matches(snapshot, query, touched=touched, limit=limit)
    st = structure_of(snapshot)
    return [_hit(workspace, st.entries[st.index[hit.path]], hit) for hit in found]


def check_retrieve_request(query: str, limit: int) -> None:
    """Refuse a search no index can answer, naming the bound it broke."""
    if not query.strip():
        raise UsageError(
            "retrieve needs a query",
            hint="give a symbol name (parse_args), a path or a few words (percent-encode url)",
        )
    if len(query) > QUERY_MAX_CHARS:
        raise UsageError(
            f"the query is {len(query):,} characters long; at most {QUERY_MAX_CHARS:,} are read",
            hint="search for a name or a few words, not a whole text",
        )
    if not 1 <= limit <= RETRIEVE_LIMIT_MAX:
        raise UsageError(
            f"limit {limit} is out of range",
            hint=f"ask for 1 to {RETRIEVE_LIMIT_MAX} hits",
        )


def _hit(workspace: Path, entry: FileEntry, found: Ranked) -> Hit:
    symbols = list(found.matched or found.symbols)[:HIT_SYMBOLS_MAX]
    signals = list(found.signals)
    excerpt: list[str] = []
    lines, problem = _read(workspace, found.path, entry)
    if lines is None:
        signals.append(problem)
        return Hit(found.path, found.score, signals, symbols, excerpt)
    if problem:
        signals.append(problem)
        symbols, lost = _relocate(lines, symbols)
        signals.extend(f"'{name}' is no longer found in it" for name in lost)
    start = symbols[0].line if symbols else 1
    excerpt = _excerpt(lines, start)
    return Hit(found.path, found.score, signals, symbols, excerpt)


def _read(workspace: Path, path: str, entry: FileEntry) -> tuple[list[str] | None, str]:
    """The file's lines now, or None; and what is wrong, if anything, in words."""
    if entry.status != "indexed":
        return None, f"no excerpt: {printable(entry.skip or 'not indexed yet')}"
    try:
        with open_for_reading(workspace, path) as fd:
            if fd is None:
                return None, "deleted since the index was built; no excerpt"
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None, "no longer a regular file; no excerpt"
            if info.st_size > EXCERPT_READ_MAX_BYTES:
                return None, "larger than 1 MiB now; no excerpt"
            data = _read_fd(fd)
    except UnsafePath as exc:
        return None, f"not read: {printable(exc.reason)}"
    except OSError as exc:
        return None, f"not read: {exc.strerror or exc.__class__.__name__}"
    if len(data) > EXCERPT_READ_MAX_BYTES:
        return None, "larger than 1 MiB now; no excerpt"
    if b"\0" in data:
        return None, "binary now; no excerpt"
    changed = info.st_size != entry.size or info.st_mtime_ns != entry.mtime_ns
    problem = "changed since the index was built; lines found again by name" if changed else ""
    text = data.decode("utf-8", "replace")
    return [line.removesuffix("\r") for line in text.split("\n")], problem


def _read_fd(fd: int) -> bytes:
    chunks = []
    left = EXCERPT_READ_MAX_BYTES + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _relocate(lines: list[str], symbols: list[Symbol]) -> tuple[list[Symbol], list[str]]:
    """Each symbol at the line nearest its old one that names it now; the names not found."""
    found: list[Symbol] = []
    lost: list[str] = []
    for symbol in symbols:
        word = re.compile(rf"(?<![\w]){re.escape(symbol.name)}(?![\w])")
        places = [number for number, line in enumerate(lines, start=1) if word.search(line)]
        if not places:
            lost.append(symbol.name)
            continue
        nearest = min(places, key=lambda number: (abs(number - symbol.line), number))
        found.append(replace(symbol, line=nearest))
    return found, lost


def _excerpt(lines: list[str], line: int) -> list[str]:
    first = max(1, line - EXCERPT_LINES_BEFORE)
    last = min(len(lines), line + EXCERPT_LINES_AFTER)
    hidden = _key_block_lines(lines)
    shown = []
    for number in range(first, last + 1):
        text = PRIVATE_KEY_MARKER if number in hidden else redact(lines[number - 1])
        text = printable(text.expandtabs(EXCERPT_TAB_COLUMNS))
        if len(text) > EXCERPT_LINE_MAX_CHARS:
            text = text[: EXCERPT_LINE_MAX_CHARS - 1] + "…"
        shown.append(f"{number}: {text}")
    return shown


def _key_block_lines(lines: list[str]) -> set[int]:
    """The numbers of the lines inside a private-key block, its markers included.

    The redactor works on one text; an excerpt shows a window of lines, which may
    start inside a block whose BEGIN line it does not show. So blocks are found in
    the whole file (an unterminated one runs to its end), line by line.
    """
    hidden: set[int] = set()
    inside = False
    for number, line in enumerate(lines, start=1):
        marker = "PRIVATE KEY" in line
        if marker and "-----BEGIN" in line:
            inside = True
        if inside:
            hidden.add(number)
        if marker and "-----END" in line:
            inside = False
    return hidden
