"""Preview events for a session's ax-log: started, ready, failed, stopped.

The event types themselves live in ax_log's registry, so every reader of a log
(``ax-log verify``, ax-report) knows them without importing ax_preview.
"""

from __future__ import annotations

from ax_log import (
    EventBody,
    PreviewFailed,
    PreviewReady,
    PreviewStarted,
    PreviewStopped,
    append_events,
)
from libcommon.paths import StateLayout

__all__ = ["PreviewFailed", "PreviewReady", "PreviewStarted", "PreviewStopped", "record_event"]


def record_event(layout: StateLayout, session_id: str, event: EventBody) -> None:
    append_events(layout, session_id, [event])
