"""Walking a folder the way ripgrep does, and glob patterns as regular expressions.

The walk never follows a symlink (a link inside the workspace may lead out of
it), visits the entries of each folder sorted by name and depth first (the
order of ``rg --sort path``), and skips hidden entries below the root unless
asked for them. It stops after ``WALK_MAX_ENTRIES`` entries, so a huge tree
cannot stall a call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

WALK_MAX_ENTRIES = 200_000
# Folders that hold installed or generated files; a walk does not descend into them.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})


@dataclass
class WalkState:
    visited: int = 0
    exhausted: bool = False


@dataclass(frozen=True)
class Entry:
    path: Path
    rel: str  # relative to the walk's root, with '/'
    is_dir: bool
    is_link: bool
    depth: int  # 1 for the root's own entries


def walk(
    root: Path,
    state: WalkState,
    *,
    hidden: bool = False,
    max_depth: int | None = None,
    descend: Callable[[Entry], bool] | None = None,
) -> Iterator[Entry]:
    """Every entry below ``root`` (not ``root`` itself), depth first, sorted by name."""
    yield from _walk(root, "", 1, state, hidden, max_depth, descend)


def _walk(
    folder: Path,
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
        entry = Entry(Path(item.path), prefix + item.name, is_dir, is_link, depth)
        yield entry
        if not is_dir or (max_depth is not None and depth >= max_depth):
            continue
        if item.name in SKIPPED_FOLDERS:
            continue
        if descend is not None and not descend(entry):
            continue
        yield from _walk(entry.path, entry.rel + "/", depth + 1, state, hidden, max_depth, descend)


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
