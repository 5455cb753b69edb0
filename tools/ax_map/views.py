"""The map and the repository's digests as the other tools take them from an index.

ax-map's ``show`` verb, ax-agent's session start and ax-mcp's ``workspace_map`` all
come through ``map_view``, so the three render the same text for the same index and
the same request; ``workspace_digests`` is where project memory's codebase summary
gets the two digests it is stamped with and judged stale by.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from libcommon.errors import UsageError

from .model import Coverage, Snapshot
from .query import QUERY_MAX_CHARS
from .rank import ranking
from .render import DEFAULT_MAP_CHARS, render

# The largest map anyone may ask for: ten times the default is already more than a
# model reads with care, and the budget is what makes the map a map.
MAP_CHARS_MAX = 160_000
# A map smaller than this can hold no more than part of its coverage line.
MAP_CHARS_MIN = 200
FOCUS_PATHS_MAX = 64


@dataclass(frozen=True)
class MapView:
    """A rendered map: its text, the sha256 of exactly that text, and what it covers."""

    text: str
    sha256: str
    chars: int
    files_shown: int
    coverage: Coverage
    git: bool


def check_map_request(chars: int, query: str | None, focus: Sequence[str]) -> None:
    """Refuse a request no map can honour, naming the bound it broke."""
    if not MAP_CHARS_MIN <= chars <= MAP_CHARS_MAX:
        raise UsageError(
            f"a map of {chars:,} characters is out of range",
            hint=f"ask for {MAP_CHARS_MIN:,} to {MAP_CHARS_MAX:,} characters "
            f"(default {DEFAULT_MAP_CHARS:,})",
        )
    if query is not None and len(query) > QUERY_MAX_CHARS:
        raise UsageError(
            f"the query is {len(query):,} characters long; at most {QUERY_MAX_CHARS:,} are read",
            hint="rank for a name or a few words, not a whole text",
        )
    _check_focus_count(focus)


def _check_focus_count(focus: Sequence[str]) -> None:
    if len(focus) > FOCUS_PATHS_MAX:
        raise UsageError(
            f"{len(focus)} focus paths given; at most {FOCUS_PATHS_MAX} are taken",
            hint="focus on the folders that hold them instead",
        )


def map_view(
    snapshot: Snapshot,
    *,
    chars: int = DEFAULT_MAP_CHARS,
    query: str | None = None,
    focus: Sequence[str] = (),
    touched: Sequence[str] = (),
) -> MapView:
    """``snapshot`` ranked for the request and rendered within ``chars`` characters."""
    check_map_request(chars, query, focus)
    ranked = ranking(snapshot, query=query or None, focus=focus, touched=touched)
    rendered = render(snapshot, ranked, chars=chars)
    return MapView(
        text=rendered.text,
        sha256=rendered.sha256,
        chars=len(rendered.text),
        files_shown=rendered.files_shown,
        coverage=snapshot.coverage,
        git=snapshot.git,
    )


def focus_paths(workspace: Path, focus: Sequence[str]) -> list[str]:
    """``focus`` as workspace-relative POSIX paths, each once, in the order given.

    A relative path is taken from the workspace root (not the current directory, which
    ``-C`` and an MCP client make meaningless); an absolute one must lie inside it. A
    path that leaves the workspace is refused rather than dropped, so a request never
    reads as focused on something it is not. The check is lexical: the index lists
    paths, and a focus only selects among them, so nothing outside is ever read.
    """
    # Counted as given, before duplicates fold: the bound is on the request.
    _check_focus_count(focus)
    root = os.path.normpath(workspace)
    found: list[str] = []
    for raw in focus:
        if not raw.strip() or "\0" in raw:
            raise UsageError(
                f"focus path {raw!r} is empty or holds a NUL",
                hint="name a file or folder of the workspace, e.g. --focus src/",
            )
        path = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(root, raw))
        if path != root and not path.startswith(root.rstrip("/") + "/"):
            raise UsageError(
                f"focus path {raw!r} is outside the workspace {root}",
                hint="name a file or folder inside the workspace, relative to its root",
            )
        relative = "." if path == root else os.path.relpath(path, root)
        if relative not in found:
            found.append(relative)
    return found


def unmatched_focus(snapshot: Snapshot, focus: Sequence[str]) -> list[str]:
    """The focus paths that name no file of the index and no folder holding one."""
    names = {entry.path for entry in snapshot.files}
    folders = {"."}
    for name in names:
        parts = name.split("/")[:-1]
        folders.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return [path for path in focus if path not in names and path not in folders]


def workspace_digests(snapshot: Snapshot) -> tuple[str, str]:
    """(file set, content): sha256 digests of which files exist and of what they hold.

    The file set is the sorted paths of the inventory; the content adds each file's
    size and modification time, the key the index itself re-extracts by. A file past
    the inventory cap is in neither, so the two digests describe what the map saw.
    """
    file_set = hashlib.sha256()
    content = hashlib.sha256()
    for entry in sorted(snapshot.files, key=lambda entry: entry.path):
        name = entry.path.encode("utf-8", "surrogateescape") + b"\0"
        file_set.update(name)
        content.update(name + f"{entry.size}:{entry.mtime_ns}\0".encode())
    return file_set.hexdigest(), content.hexdigest()
