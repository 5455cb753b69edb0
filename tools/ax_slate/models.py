"""The JSON contracts of ax-slate: what goes in and out of its verbs and files."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from libcommon.contracts import Contract

SeedKind = Literal[
    "decision", "wiki-update", "memory-entry", "follow-up", "contract-change", "risk"
]
SEED_KINDS: tuple[SeedKind, ...] = get_args(SeedKind)
# What an untagged seed counts as when a person reviews it.
DEFAULT_SEED_KIND: SeedKind = "follow-up"
EXTERNAL_TRUST = "external-unverified"
EXTERNAL_HARNESS = "mcp-external"


# ---- a session's slate -------------------------------------------------------


class TrailEntry(Contract):
    """One executed tool call, written by the harness."""

    step: int
    ts: str
    tool: str
    args_digest: str
    outcome: str
    output: str | None = None


class RecordRequest(Contract):
    """What a harness sends to ``ax-slate record``."""

    tool: str = Field(min_length=1, max_length=128)
    args: dict[str, Any] = Field(default_factory=dict)
    outcome: str
    output: str | None = None


class Note(Contract):
    key: str
    text: str
    updated_at: str


class SessionSeed(Contract):
    id: str
    text: str
    ts: str
    kind: SeedKind | None = None


class SessionSlate(Contract):
    """``sessions/<id>/slate.json``."""

    version: Literal[1] = 1
    session_id: str
    created_at: str
    continues: str | None = None
    anchors: dict[str, Any]
    course: str | None = None
    seeds: list[SessionSeed] = Field(default_factory=list)
    notes: dict[str, Note] = Field(default_factory=dict)


class Frame(Contract):
    """The rebuilt block that stands in for rounds that left the request."""

    session_id: str
    text: str
    tokens: int
    trail_from: int | None
    trail_to: int | None
    trail_total: int
    notes: int


class RecallPage(Contract):
    step: int
    page: int
    pages: int
    text: str
    next: str | None


class SearchHit(Contract):
    row: int
    role: str | None
    ts: str | None
    snippet: str


class SearchResult(Contract):
    query: str | None = None
    row: int | None = None
    page: int
    pages: int
    hits: list[SearchHit] = Field(default_factory=list)
    text: str | None = None
    next: str | None = None


# ---- external slates (served by ax-slate and ax-mcp) -------------------------


class SeedOrigin(Contract):
    harness: str
    external_session_id: str


class SlateSeed(Contract):
    id: str
    text: str
    ts: str
    kind: SeedKind | None = None
    origin: SeedOrigin
    trust: str


class CloseOutcome(Contract):
    """Where a closed slate's seeds went."""

    bound_workspace_id: str | None
    proposal_id: str | None
    candidate_id: str | None
    reason: str
    stale: bool = False


class ExternalSlate(Contract):
    """``external-slates/<id>.json``."""

    version: Literal[1] = 1
    external_session_id: str
    workspace_id: str | None = None
    anchors: dict[str, Any]
    seeds: list[SlateSeed] = Field(default_factory=list)
    created_at: str
    last_write_at: str
    closed_at: str | None = None
    close_outcome: CloseOutcome | None = None


class OpenRequest(Contract):
    external_session_id: str
    anchors: dict[str, Any] = Field(default_factory=dict)
    workspace_id: str | None = None


class WriteSeedRequest(Contract):
    external_session_id: str
    text: str
    kind: SeedKind | None = None
    # Accepted so a caller that sends them is not refused, and then ignored:
    # the handler alone writes origin and trust.
    origin: Any = Field(default=None, description="Ignored: the server writes the origin.")
    trust: Any = Field(default=None, description="Ignored: the server writes the trust label.")


class CloseRequest(Contract):
    external_session_id: str


class CloseResult(Contract):
    external_session_id: str
    closed: bool
    already_closed: bool
    outcome: CloseOutcome


# ---- the review gate ---------------------------------------------------------


class Proposal(Contract):
    """A closed slate's seeds awaiting review (``proposals/`` or ``candidates/``)."""

    version: Literal[1] = 1
    id: str
    kind: Literal["proposal", "unbound-candidate"]
    status: Literal["pending", "reviewed"] = "pending"
    workspace_id: str | None
    external_session_id: str
    origin: SeedOrigin
    trust: str
    anchors: dict[str, Any]
    seeds: list[SlateSeed]
    created_at: str
    reviewed_at: str | None = None
    decisions: dict[str, Literal["accepted", "rejected"]] = Field(default_factory=dict)


class ProposalSummary(Contract):
    id: str
    kind: Literal["proposal", "unbound-candidate"]
    workspace_id: str | None
    external_session_id: str
    origin: SeedOrigin
    trust: str
    seeds: int
    created_at: str


class KnowledgeProvenance(Contract):
    proposal_id: str
    seed_id: str
    seed_ts: str
    origin: SeedOrigin
    trust: str
    reviewed_at: str


class KnowledgeEntry(Contract):
    """One accepted seed in ``memory/knowledge.jsonl``."""

    id: str
    kind: SeedKind
    text: str
    accepted_at: str
    provenance: KnowledgeProvenance


class ReviewResult(Contract):
    proposal_id: str
    accepted: list[str]
    rejected: list[str]
    knowledge_file: str
