"""ax-preview: managed dev servers with honest readiness, TTLs and a crash sweep.

This module is the public face: other tools import only what it names, e.g.
``from ax_preview import StartRequest, start_preview``. Names load on first use
so that importing the package (every ``ax-preview`` run, ``--help`` included)
stays cheap. Importing an event name registers the ``preview.*`` event types
with ax_log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_preview.events import PreviewFailed, PreviewReady, PreviewStarted, PreviewStopped
    from ax_preview.launch import StartRequest, start_preview
    from ax_preview.manage import list_previews, read_logs, stop_preview, sweep_previews
    from ax_preview.models import (
        PreviewRecord,
        PreviewRow,
        StartResult,
        StopResult,
        SweepItem,
        SweepReport,
    )
    from ax_preview.scripts import SCRIPT_NAMES, NoSuchScript

_EXPORTS = {
    "ax_preview.events": ["PreviewFailed", "PreviewReady", "PreviewStarted", "PreviewStopped"],
    "ax_preview.launch": ["StartRequest", "start_preview"],
    "ax_preview.manage": ["list_previews", "read_logs", "stop_preview", "sweep_previews"],
    "ax_preview.models": [
        "PreviewRecord",
        "PreviewRow",
        "StartResult",
        "StopResult",
        "SweepItem",
        "SweepReport",
    ],
    "ax_preview.scripts": ["SCRIPT_NAMES", "NoSuchScript"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "SCRIPT_NAMES",
    "NoSuchScript",
    "PreviewFailed",
    "PreviewReady",
    "PreviewRecord",
    "PreviewRow",
    "PreviewStarted",
    "PreviewStopped",
    "StartRequest",
    "StartResult",
    "StopResult",
    "SweepItem",
    "SweepReport",
    "list_previews",
    "read_logs",
    "start_preview",
    "stop_preview",
    "sweep_previews",
]


__getattr__ = lazy_getattr(__name__, _MODULE_OF)
