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
    from ax_map.index import IndexStats, IndexUnavailable, index_stats, load_snapshot
    from ax_map.model import Coverage, FileEntry, FileStatus, Snapshot, Symbol
    from ax_map.models import BuildSummary, IndexStatsOut
    from ax_map.pathtext import quote_path, unquote_path
    from ax_map.views import MapView, map_view, workspace_digests

_EXPORTS = {
    "ax_map.build": ["DEFAULT_BUDGET_S", "BuildResult", "build_index"],
    "ax_map.index": ["IndexStats", "IndexUnavailable", "index_stats", "load_snapshot"],
    "ax_map.model": ["Coverage", "FileEntry", "FileStatus", "Snapshot", "Symbol"],
    "ax_map.models": ["BuildSummary", "IndexStatsOut"],
    "ax_map.pathtext": ["quote_path", "unquote_path"],
    "ax_map.views": ["MapView", "map_view", "workspace_digests"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "DEFAULT_BUDGET_S",
    "BuildResult",
    "BuildSummary",
    "Coverage",
    "FileEntry",
    "FileStatus",
    "IndexStats",
    "IndexStatsOut",
    "IndexUnavailable",
    "MapView",
    "Snapshot",
    "Symbol",
    "build_index",
    "index_stats",
    "load_snapshot",
    "map_view",
    "quote_path",
    "unquote_path",
    "workspace_digests",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
