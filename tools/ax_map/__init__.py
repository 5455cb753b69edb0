"""ax-map: what is in this repository, ranked, in a bounded number of characters.

This module is the public face: other tools import only what it names, e.g.
``from ax_map import build_index, load_snapshot``. Names are loaded on first use,
so importing the package (which every ``ax-map`` invocation does, ``--help``
included) loads neither SQLite nor a grammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_map.build import DEFAULT_BUDGET_S, BuildResult, build_index
    from ax_map.index import (
        IndexStats,
        IndexUnavailable,
        current_snapshot,
        index_stats,
        load_snapshot,
    )
    from ax_map.model import Coverage, FileEntry, FileStatus, Snapshot, Symbol
    from ax_map.models import BuildSummary, IndexStatsOut, MapShown, Retrieved
    from ax_map.pathtext import quote_path, unquote_path
    from ax_map.rank import Ranked
    from ax_map.rank import rank as rank_files
    from ax_map.render import DEFAULT_MAP_CHARS
    from ax_map.retrieve import DEFAULT_RETRIEVE_LIMIT, Hit, check_retrieve_request
    from ax_map.retrieve import retrieve as retrieve_hits
    from ax_map.views import (
        MapView,
        check_map_request,
        focus_paths,
        map_view,
        unmatched_focus,
        workspace_digests,
    )

_EXPORTS = {
    "ax_map.build": ["DEFAULT_BUDGET_S", "BuildResult", "build_index"],
    "ax_map.index": [
        "IndexStats",
        "IndexUnavailable",
        "current_snapshot",
        "index_stats",
        "load_snapshot",
    ],
    "ax_map.model": ["Coverage", "FileEntry", "FileStatus", "Snapshot", "Symbol"],
    "ax_map.models": ["BuildSummary", "IndexStatsOut", "MapShown", "Retrieved"],
    "ax_map.pathtext": ["quote_path", "unquote_path"],
    "ax_map.rank": ["Ranked"],
    "ax_map.render": ["DEFAULT_MAP_CHARS"],
    "ax_map.retrieve": ["DEFAULT_RETRIEVE_LIMIT", "Hit", "check_retrieve_request"],
    "ax_map.views": [
        "MapView",
        "check_map_request",
        "focus_paths",
        "map_view",
        "unmatched_focus",
        "workspace_digests",
    ],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
# ``rank`` and ``retrieve`` are also their submodules' names, which importing them would
# put in the functions' place; so the functions are public as ``rank_files`` and
# ``retrieve_hits``.
_RENAMED = {
    "rank_files": ("ax_map.rank", "rank"),
    "retrieve_hits": ("ax_map.retrieve", "retrieve"),
}

__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAP_CHARS",
    "DEFAULT_RETRIEVE_LIMIT",
    "BuildResult",
    "BuildSummary",
    "Coverage",
    "FileEntry",
    "FileStatus",
    "Hit",
    "IndexStats",
    "IndexStatsOut",
    "IndexUnavailable",
    "MapShown",
    "MapView",
    "Ranked",
    "Retrieved",
    "Snapshot",
    "Symbol",
    "build_index",
    "check_map_request",
    "check_retrieve_request",
    "current_snapshot",
    "focus_paths",
    "index_stats",
    "load_snapshot",
    "map_view",
    "quote_path",
    "rank_files",
    "retrieve_hits",
    "unmatched_focus",
    "unquote_path",
    "workspace_digests",
]

_lazy = lazy_getattr(__name__, _MODULE_OF)


def __getattr__(name: str) -> object:
    if name in _RENAMED:
        import importlib

        module, attribute = _RENAMED[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    return _lazy(name)
