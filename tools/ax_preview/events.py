"""Preview events for a session's ax-log: started, ready, failed, stopped.

The types are registered in ax_log's registry when this module is imported
(unless ax_log already defines them), so ``append_events`` validates them like
any other type. A process that never imports ax_preview (``ax-log verify``)
knows them only once they are added to ax_log's own schema module.
"""

from __future__ import annotations

from typing import Literal

from ax_log import REGISTRY, EventBody, append_events, register
from ax_preview.models import StopReason
from libcommon.paths import StateLayout


class PreviewStarted(EventBody):
    type: Literal["preview.started"] = "preview.started"
    preview_id: str
    script: str
    command: list[str]
    cwd: str
    pid: int
    log_path: str
    ttl_s: float


class PreviewReady(EventBody):
    type: Literal["preview.ready"] = "preview.ready"
    preview_id: str
    url: str
    pid: int
    note: str


class PreviewFailed(EventBody):
    type: Literal["preview.failed"] = "preview.failed"
    preview_id: str
    reason: str
    exit_code: int | None = None
    log_tail: str | None = None


class PreviewStopped(EventBody):
    type: Literal["preview.stopped"] = "preview.stopped"
    preview_id: str
    reason: StopReason
    exit_code: int | None = None
    kill_verified: bool | None = None


for _model in (PreviewStarted, PreviewReady, PreviewFailed, PreviewStopped):
    if _model.model_fields["type"].default not in REGISTRY:
        register(_model)


def record_event(layout: StateLayout, session_id: str, event: EventBody) -> None:
    append_events(layout, session_id, [event])
