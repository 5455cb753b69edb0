"""Walking a folder the way ripgrep does, and glob patterns as regular expressions.

The walk never follows a symlink (a link inside the workspace may lead out of
it), visits the entries of each folder sorted by name and depth first (the
order of ``rg --sort path``), and skips hidden entries below the root unless
asked for them. It stops after ``WALK_MAX_ENTRIES`` entries, so a huge tree
cannot stall a call.

It works on open folders: it starts from a descriptor the caller opened (by
libcommon.safeopen's walk) and opens each subfolder relative to its parent
with ``O_DIRECTORY|O_NOFOLLOW``, so a folder swapped for a link while the walk
runs is skipped, never entered; an entry is looked at (``open_entry``, lstat,
readlink) relative to its folder's descriptor, never by its path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

WALK_MAX_ENTRIES = 200_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted under a file's name must not block the open.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Folders that hold installed or generated files; a walk does not descend into them.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})


@dataclass
class WalkState:
    visited: int = 0
    exhausted: bool = False


@dataclass(frozen=True)
class Entry:
    path: Path  # for showing; the entry is reached through ``folder`` and ``path.name``
    rel: str  # relative to the walk's root, with '/'
    is_dir: bool
    is_link: bool
    depth: int  # 1 for the root's own entries
    folder: int  # the descriptor of the folder holding it, open while the entry is handled


def walk(
    root: Path,
    folder: int,
    state: WalkState,
    *,
    hidden: bool = False,
    max_depth: int | None = None,
    descend: Callable[[Entry], bool] | None = None,
) -> Iterator[Entry]:
    """Every entry below the open folder ``folder`` (``root``, not itself), depth first,
    sorted by name."""
    yield from _walk(folder, root, "", 1, state, hidden, max_depth, descend)


def _walk(
    folder: int,
    folder_path: Path,
    prefix: str,
    depth: int,
    state: WalkState,
    hidden: bool,
    max_depth: int | None,
    descend: Callable[[Entry], bool] | None,
) -> Iterator[Entry]:
    try:
        with os.scandir(folder) as scan:
            found = sorted(scan, key=lambda item: item.name)
    except OSError:
        return
    for item in found:
        if state.visited >= WALK_MAX_ENTRIES:
            state.exhausted = True
            return
        if not hidden and item.name.startswith("."):
            continue
        state.visited += 1
        is_link = item.is_symlink()
        is_dir = not is_link and item.is_dir(follow_symlinks=False)
        path = folder_path / item.name
        entry = Entry(path, prefix + item.name, is_dir, is_link, depth, folder)
        yield entry
        if not is_dir or (max_depth is not None and depth >= max_depth):
            continue
        if item.name in SKIPPED_FOLDERS:
            continue
        if descend is not None and not descend(entry):
            continue
        try:
            child = os.open(item.name, _DIR_FLAGS, dir_fd=folder)
        except OSError:
            continue  # replaced (by a link, say) or removed since it was listed: not entered
        try:
            yield from _walk(
                child, path, entry.rel + "/", depth + 1, state, hidden, max_depth, descend
            )
        finally:
            os.close(child)


def open_entry(entry: Entry) -> int | None:
    """The entry opened read-only without following a link; None when it cannot be
    (a link, gone, unreadable).

    What was a file when listed may have been replaced since: the caller checks
    the kind (``fstat``) before reading.
    """
    try:
        return os.open(entry.path.name, _FILE_FLAGS, dir_fd=entry.folder)
    except OSError:
        return None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over '/'-separated relative paths: ``**`` spans folders, ``*`` and ``?``
    stay within one name, ``[abc]`` and ``{a,b}`` work; ``*`` never matches a leading
    dot, so hidden names match only when the pattern spells the dot."""
    segments = [part for part in pattern.strip("/").split("/") if part not in ("", ".")]
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(r"(?:(?!\.)[^/]+/)*" if not last else r"(?:(?!\.)[^/]+/)*(?!\.)[^/]+")
            continue
        guard = "" if segment.startswith(".") else r"(?!\.)"
        parts.append(guard + _segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif char == "{":
            end = segment.find("}", i)
            if end == -1:
                out.append(re.escape(char))
            else:
                options = segment[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_segment_regex(option) for option in options) + ")")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def pattern_depth(pattern: str) -> int | None:
    """How many folders deep a pattern can reach; None when it holds ``**``."""
    segments = [part for part in pattern.strip("/").split("/") if part not in ("", ".")]
    return None if "**" in segments else len(segments)


def names_hidden(pattern: str) -> bool:
    """Does the pattern spell out a hidden name (a segment starting with a dot)?"""
    return any(part.startswith(".") and part not in (".", "..") for part in pattern.split("/"))
