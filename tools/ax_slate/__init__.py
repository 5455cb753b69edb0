"""ax-slate: working memory: trail, notes, frame, recall, external slates and the review gate.

This module is the public face: other tools import only what it names, e.g.
``from ax_slate import HANDLERS, ExternalContext`` (ax-mcp serves the external
slate handlers from that table) or ``from ax_slate import record, build_frame``
(ax-agent). Names load on first use so that importing the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_slate.budget import CHARS_PER_TOKEN, estimate_tokens
    from ax_slate.external import (
        HANDLERS,
        ExternalContext,
        Handler,
        check_external_id,
        close_slate,
        close_stale,
        open_slate,
        write_seed,
    )
    from ax_slate.frame import FRAME_TRAIL_TOKENS, FrameKeeper, build_frame
    from ax_slate.gate import list_proposals, read_knowledge, review, show_proposal
    from ax_slate.models import (
        CloseRequest,
        CloseResult,
        ExternalSlate,
        Frame,
        KnowledgeEntry,
        Note,
        OpenRequest,
        Proposal,
        ProposalSummary,
        RecallPage,
        RecordRequest,
        ReviewResult,
        SearchResult,
        SessionSlate,
        SlateSeed,
        TrailEntry,
        WriteSeedRequest,
    )
    from ax_slate.recall import archive_message, recall_step, search
    from ax_slate.session import (
        SlateUnavailable,
        delete_note,
        list_notes,
        open_session,
        read_slate,
        session_files,
        set_course,
        set_note,
    )
    from ax_slate.trail import read_trail, record, save_output

_EXPORTS = {
    "ax_slate.budget": ["CHARS_PER_TOKEN", "estimate_tokens"],
    "ax_slate.external": [
        "HANDLERS",
        "ExternalContext",
        "Handler",
        "check_external_id",
        "close_slate",
        "close_stale",
        "open_slate",
        "write_seed",
    ],
    "ax_slate.frame": ["FRAME_TRAIL_TOKENS", "FrameKeeper", "build_frame"],
    "ax_slate.models": [
        "CloseRequest",
        "CloseResult",
        "ExternalSlate",
        "Frame",
        "KnowledgeEntry",
        "Note",
        "OpenRequest",
        "Proposal",
        "ProposalSummary",
        "RecallPage",
        "RecordRequest",
        "ReviewResult",
        "SearchResult",
        "SessionSlate",
        "SlateSeed",
        "TrailEntry",
        "WriteSeedRequest",
    ],
    "ax_slate.recall": ["archive_message", "recall_step", "search"],
    "ax_slate.gate": ["list_proposals", "read_knowledge", "review", "show_proposal"],
    "ax_slate.session": [
        "SlateUnavailable",
        "delete_note",
        "list_notes",
        "open_session",
        "read_slate",
        "session_files",
        "set_course",
        "set_note",
    ],
    "ax_slate.trail": ["read_trail", "record", "save_output"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "CHARS_PER_TOKEN",
    "FRAME_TRAIL_TOKENS",
    "HANDLERS",
    "CloseRequest",
    "CloseResult",
    "ExternalContext",
    "ExternalSlate",
    "Frame",
    "FrameKeeper",
    "Handler",
    "KnowledgeEntry",
    "Note",
    "OpenRequest",
    "Proposal",
    "ProposalSummary",
    "RecallPage",
    "RecordRequest",
    "ReviewResult",
    "SearchResult",
    "SessionSlate",
    "SlateSeed",
    "SlateUnavailable",
    "TrailEntry",
    "WriteSeedRequest",
    "archive_message",
    "build_frame",
    "check_external_id",
    "close_slate",
    "close_stale",
    "delete_note",
    "estimate_tokens",
    "list_notes",
    "list_proposals",
    "open_session",
    "open_slate",
    "read_knowledge",
    "read_slate",
    "read_trail",
    "recall_step",
    "record",
    "review",
    "save_output",
    "search",
    "session_files",
    "set_course",
    "set_note",
    "show_proposal",
    "write_seed",
]


__getattr__ = lazy_getattr(__name__, _MODULE_OF)
