"""ax-log: the append-only session event log, content-addressed snapshots and undo.

This module is the public face: other tools import only what it names, e.g.
``from ax_log import append_events, read_events, snapshot_paths``. Names are
loaded on first use so that importing the package (which every ``ax-log``
invocation does, ``--help`` included) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_log.envelope import SCHEMA_VERSION
    from ax_log.events import (
        REGISTRY,
        ApprovalResolved,
        AssistantMessage,
        CheckCompleted,
        CheckStarted,
        CommandEnded,
        CommandStarted,
        Custom,
        EventBody,
        FileMutated,
        LogRecovered,
        PolicyDecision,
        PreviewFailed,
        PreviewReady,
        PreviewStarted,
        PreviewStopped,
        SessionEnded,
        SessionStarted,
        SnapshotStored,
        ToolCompleted,
        ToolRequested,
        UndoApplied,
        UndoRefusal,
        Unrecorded,
        UserMessage,
        body_fields,
        parse_body,
        parse_stored,
        register,
    )
    from ax_log.locate import latest_session, require_log, session_logs
    from ax_log.models import SessionRow, VerifyProblem, VerifyResult
    from ax_log.reader import (
        Overlong,
        Problem,
        Record,
        capped_lines,
        follow_events,
        read_events,
        type_matches,
    )
    from ax_log.revert import UndoOutcome, pending_mutations, undo
    from ax_log.sessions import list_sessions
    from ax_log.snapshots import (
        hash_recorded,
        latest_snapshots,
        load_object,
        mutation_events,
        object_path,
        record_mutations,
        snapshot_events,
        snapshot_paths,
        store_file,
        workspace_path,
    )
    from ax_log.verify import verify_session
    from ax_log.writer import append_events, log_path

_EXPORTS = {
    "ax_log.envelope": ["SCHEMA_VERSION"],
    "ax_log.events": [
        "REGISTRY",
        "ApprovalResolved",
        "AssistantMessage",
        "CheckCompleted",
        "CheckStarted",
        "CommandEnded",
        "CommandStarted",
        "Custom",
        "EventBody",
        "FileMutated",
        "LogRecovered",
        "PolicyDecision",
        "PreviewFailed",
        "PreviewReady",
        "PreviewStarted",
        "PreviewStopped",
        "SessionEnded",
        "SessionStarted",
        "SnapshotStored",
        "ToolCompleted",
        "ToolRequested",
        "UndoApplied",
        "UndoRefusal",
        "Unrecorded",
        "UserMessage",
        "body_fields",
        "parse_body",
        "parse_stored",
        "register",
    ],
    "ax_log.models": ["SessionRow", "VerifyProblem", "VerifyResult"],
    "ax_log.reader": [
        "Overlong",
        "Problem",
        "Record",
        "capped_lines",
        "follow_events",
        "read_events",
        "type_matches",
    ],
    "ax_log.locate": ["latest_session", "require_log", "session_logs"],
    "ax_log.sessions": ["list_sessions"],
    "ax_log.verify": ["verify_session"],
    "ax_log.snapshots": [
        "hash_recorded",
        "latest_snapshots",
        "load_object",
        "mutation_events",
        "object_path",
        "record_mutations",
        "snapshot_events",
        "snapshot_paths",
        "store_file",
        "workspace_path",
    ],
    "ax_log.revert": ["UndoOutcome", "pending_mutations", "undo"],
    "ax_log.writer": ["append_events", "log_path"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "REGISTRY",
    "SCHEMA_VERSION",
    "ApprovalResolved",
    "AssistantMessage",
    "CheckCompleted",
    "CheckStarted",
    "CommandEnded",
    "CommandStarted",
    "Custom",
    "EventBody",
    "FileMutated",
    "LogRecovered",
    "Overlong",
    "PolicyDecision",
    "PreviewFailed",
    "PreviewReady",
    "PreviewStarted",
    "PreviewStopped",
    "Problem",
    "Record",
    "SessionEnded",
    "SessionRow",
    "SessionStarted",
    "SnapshotStored",
    "ToolCompleted",
    "ToolRequested",
    "UndoApplied",
    "UndoOutcome",
    "UndoRefusal",
    "Unrecorded",
    "UserMessage",
    "VerifyProblem",
    "VerifyResult",
    "append_events",
    "body_fields",
    "capped_lines",
    "follow_events",
    "hash_recorded",
    "latest_session",
    "latest_snapshots",
    "list_sessions",
    "load_object",
    "log_path",
    "mutation_events",
    "object_path",
    "parse_body",
    "parse_stored",
    "pending_mutations",
    "read_events",
    "record_mutations",
    "register",
    "require_log",
    "session_logs",
    "snapshot_events",
    "snapshot_paths",
    "store_file",
    "type_matches",
    "undo",
    "verify_session",
    "workspace_path",
]


__getattr__ = lazy_getattr(__name__, _MODULE_OF)
