"""Workspace-relative paths and which region of the workspace a run covers.

All of this is string work on the recorded paths (the report is a pure function
of the events and never looks at the disk). A region is a workspace-relative
POSIX path; ``""`` is the whole workspace. A path that leaves the workspace has
no region, so it covers nothing and nothing covers it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from functools import lru_cache

WHOLE_WORKSPACE = ""
# Distinct (path, workspace) pairs remembered: a session names the same few folders often.
RELATIVE_CACHE_ENTRIES = 4096


@lru_cache(maxsize=RELATIVE_CACHE_ENTRIES)
def relative(raw: str, workspace: str | None) -> str | None:
    """``raw`` as a normalised workspace-relative path, or None when it is outside.

    Relative paths are taken relative to the workspace; an absolute path must
    lie under ``workspace`` (the one session.started recorded).
    """
    if posixpath.isabs(raw):
        if workspace is None:
            return None
        root = posixpath.normpath(workspace)
        path = posixpath.normpath(raw)
        if path == root:
            return WHOLE_WORKSPACE
        prefix = root.rstrip("/") + "/"
        if not path.startswith(prefix):
            return None
        return path[len(prefix) :]
    path = posixpath.normpath(raw) if raw else "."
    if path == ".":
        return WHOLE_WORKSPACE
    if path == ".." or path.startswith("../"):
        return None
    return path


def covers(region: str, path: str) -> bool:
    """True when ``path`` is ``region`` itself or lies below it."""
    return region == WHOLE_WORKSPACE or path == region or path.startswith(region + "/")


def regions_of(path: str) -> Iterator[str]:
    """Every region that covers ``path``: the workspace, each ancestor, the path itself."""
    yield WHOLE_WORKSPACE
    parts = path.split("/")
    for end in range(1, len(parts) + 1):
        yield "/".join(parts[:end])


def check_regions(project: str, scope: str | list[str], workspace: str | None) -> list[str]:
    """The regions a check covers: its project unit, narrowed by its scope paths.

    A scope of ``"."`` or ``""`` (or an empty list) adds no narrowing. A scope
    path that is not inside the project (or the project inside it) covers
    nothing: a check is never credited beyond the unit it ran in.
    """
    unit = relative(project, workspace)
    if unit is None:
        return []
    scopes = [scope] if isinstance(scope, str) else list(scope)
    narrowed = [relative(item, workspace) for item in scopes if item not in ("", ".")]
    if not narrowed:
        return [unit]
    found: set[str] = set()
    for item in narrowed:
        if item is None:
            continue
        if covers(unit, item):
            found.add(item)
        elif covers(item, unit):
            found.add(unit)
    return sorted(found)
