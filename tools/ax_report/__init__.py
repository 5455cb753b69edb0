"""ax-report: the session report: a pure function from events to JSON and Markdown.

This module is the public face: other tools import only what it names, e.g.
``from ax_report import build_report``. Names load on first use so that
``ax-report --help`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_report.build import build_report, render_json, section_names
    from ax_report.diff import FileDiff, session_diff, unified_diff
    from ax_report.intake import InvalidLine, read_jsonl
    from ax_report.sections import SECTIONS, Section
    from ax_report.sources import session_events

_EXPORTS = {
    "ax_report.build": ["build_report", "render_json", "section_names"],
    "ax_report.diff": ["FileDiff", "session_diff", "unified_diff"],
    "ax_report.intake": ["InvalidLine", "read_jsonl"],
    "ax_report.sections": ["SECTIONS", "Section"],
    "ax_report.sources": ["session_events"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "SECTIONS",
    "FileDiff",
    "InvalidLine",
    "Section",
    "build_report",
    "read_jsonl",
    "render_json",
    "section_names",
    "session_diff",
    "session_events",
    "unified_diff",
]


__getattr__ = lazy_getattr(__name__, _MODULE_OF)
