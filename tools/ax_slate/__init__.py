"""ax-slate: working memory: trail, notes, frame, recall, external slates, the review gate
and project memory.

This module is the public face: other tools import only what it names, e.g.
``from ax_slate import HANDLERS, ExternalContext`` (ax-mcp serves the external
slate handlers from that table) or ``from ax_slate import record, build_frame``
(ax-agent). Names load on first use so that importing the package stays cheap.

Project memory (JOURNAL.md, CODEBASE.md, LESSONS.md): ``write_journal_entry``,
``evidence_from_report``, ``write_codebase``, ``codebase_staleness``,
``propose_lesson``, ``render_memory`` and ``describe_memory``; the API and its
rules are described in ``ax_slate.memory``'s docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_slate.budget import CHARS_PER_TOKEN, estimate_tokens
    from ax_slate.codebase import codebase_staleness, read_codebase, write_codebase
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
    from ax_slate.journal import evidence_from_report, write_journal_entry
    from ax_slate.lessons import propose_lesson
    from ax_slate.memory import (
        MEMORY_INJECTION_MAX_BYTES,
        describe_memory,
        memory_path,
        read_memory_text,
        render_memory,
    )
    from ax_slate.models import (
        CloseRequest,
        CloseResult,
        CodebaseDigests,
        CodebaseRequest,
        CodebaseStamp,
        CodebaseWriteResult,
        ExternalSlate,
        Frame,
        InjectedDoc,
        JournalEntryRequest,
        JournalEvidence,
        JournalNarrative,
        JournalWriteResult,
        KnowledgeEntry,
        LessonInput,
        LessonResult,
        MemoryDocInfo,
        MemoryInjection,
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
        Staleness,
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
    "ax_slate.codebase": ["codebase_staleness", "read_codebase", "write_codebase"],
    "ax_slate.journal": ["evidence_from_report", "write_journal_entry"],
    "ax_slate.lessons": ["propose_lesson"],
    "ax_slate.memory": [
        "MEMORY_INJECTION_MAX_BYTES",
        "describe_memory",
        "memory_path",
        "read_memory_text",
        "render_memory",
    ],
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
        "CodebaseDigests",
        "CodebaseRequest",
        "CodebaseStamp",
        "CodebaseWriteResult",
        "ExternalSlate",
        "Frame",
        "InjectedDoc",
        "JournalEntryRequest",
        "JournalEvidence",
        "JournalNarrative",
        "JournalWriteResult",
        "KnowledgeEntry",
        "LessonInput",
        "LessonResult",
        "MemoryDocInfo",
        "MemoryInjection",
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
        "Staleness",
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
    "MEMORY_INJECTION_MAX_BYTES",
    "CloseRequest",
    "CloseResult",
    "CodebaseDigests",
    "CodebaseRequest",
    "CodebaseStamp",
    "CodebaseWriteResult",
    "ExternalContext",
    "ExternalSlate",
    "Frame",
    "FrameKeeper",
    "Handler",
    "InjectedDoc",
    "JournalEntryRequest",
    "JournalEvidence",
    "JournalNarrative",
    "JournalWriteResult",
    "KnowledgeEntry",
    "LessonInput",
    "LessonResult",
    "MemoryDocInfo",
    "MemoryInjection",
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
    "Staleness",
    "TrailEntry",
    "WriteSeedRequest",
    "archive_message",
    "build_frame",
    "check_external_id",
    "close_slate",
    "close_stale",
    "codebase_staleness",
    "delete_note",
    "describe_memory",
    "estimate_tokens",
    "evidence_from_report",
    "list_notes",
    "list_proposals",
    "memory_path",
    "open_session",
    "open_slate",
    "propose_lesson",
    "read_codebase",
    "read_knowledge",
    "read_memory_text",
    "read_slate",
    "read_trail",
    "recall_step",
    "record",
    "render_memory",
    "review",
    "save_output",
    "search",
    "session_files",
    "set_course",
    "set_note",
    "show_proposal",
    "write_codebase",
    "write_journal_entry",
    "write_seed",
]


__getattr__ = lazy_getattr(__name__, _MODULE_OF)
