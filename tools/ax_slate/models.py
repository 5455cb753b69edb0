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
# ax-mcp publishes these as its slate tools' schemas, and a model reads every
# field's description there: each says what the field holds, briefly and truly.

_EXTERNAL_ID = "Your external session id: 1-128 letters, digits, '_' or '-'."
_TIMESTAMP = "RFC 3339 UTC time with milliseconds"


class SeedOrigin(Contract):
    """Who wrote a Seed, as recorded by the server."""

    harness: str = Field(description="The writer's harness; 'mcp-external' for MCP clients.")
    external_session_id: str = Field(description="The external session id that wrote it.")


class SlateSeed(Contract):
    """A draft Seed: never used until a person accepts it in review."""

    id: str = Field(description="The Seed's id, assigned by the server.")
    text: str = Field(description="The Seed's text, redacted of secret-shaped strings.")
    ts: str = Field(description=f"When it was written ({_TIMESTAMP}).")
    kind: SeedKind | None = Field(
        default=None, description="Its kind; null is reviewed as 'follow-up'."
    )
    origin: SeedOrigin = Field(description="Who wrote it (set by the server).")
    trust: str = Field(description="Trust label set by the server: 'external-unverified'.")


class CloseOutcome(Contract):
    """Where a closed slate's seeds went."""

    bound_workspace_id: str | None = Field(
        description="The trusted workspace the Seeds were proposed to, or null if none."
    )
    proposal_id: str | None = Field(
        description="The proposal awaiting review in that workspace, or null."
    )
    candidate_id: str | None = Field(
        description="The unbound candidate kept when no trusted workspace matched, or null."
    )
    reason: str = Field(description="Why the slate was bound (or not), in words.")
    stale: bool = Field(
        default=False,
        description="True when the server closed it for lying idle past the stale window "
        "(30 minutes unless the server was started with another).",
    )


class ExternalSlate(Contract):
    """One external session's private slate (``external-slates/<id>.json``)."""

    version: Literal[1] = Field(default=1, description="The slate file's format version.")
    external_session_id: str = Field(description="The external session id that owns it.")
    workspace_id: str | None = Field(
        default=None, description="The workspace id given at open, or null."
    )
    anchors: dict[str, Any] = Field(description="The anchors given at open, stored as sent.")
    seeds: list[SlateSeed] = Field(
        default_factory=list, description="The Seeds written so far, oldest first."
    )
    created_at: str = Field(description=f"When it was opened ({_TIMESTAMP}).")
    last_write_at: str = Field(description=f"When it last changed ({_TIMESTAMP}).")
    closed_at: str | None = Field(
        default=None, description=f"When it was closed ({_TIMESTAMP}), or null while open."
    )
    close_outcome: CloseOutcome | None = Field(
        default=None, description="Where its Seeds went, once closed; null while open."
    )


class OpenRequest(Contract):
    """Open (or fetch) the private slate of one external session id."""

    external_session_id: str = Field(description=_EXTERNAL_ID)
    anchors: dict[str, Any] = Field(
        default_factory=dict,
        description="What the work is rooted in, stored as sent (at most 64 KiB of JSON); "
        "a string 'root' (a folder, relative to the server's workspace) chooses the "
        "workspace the Seeds are proposed to.",
    )
    workspace_id: str | None = Field(
        default=None,
        description="A trusted workspace's id (its project slug) to propose the Seeds to.",
    )


class WriteSeedRequest(Contract):
    """Add one draft Seed to an open slate."""

    external_session_id: str = Field(description=_EXTERNAL_ID)
    text: str = Field(description="The Seed's text, 1-4,000 characters; secrets are redacted.")
    kind: SeedKind | None = Field(
        default=None, description="What kind of knowledge it is; omitted: reviewed as 'follow-up'."
    )
    # Accepted so a caller that sends them is not refused, and then ignored:
    # the handler alone writes origin and trust.
    origin: Any = Field(default=None, description="Ignored: the server writes the origin.")
    trust: Any = Field(default=None, description="Ignored: the server writes the trust label.")


class CloseRequest(Contract):
    """Close a slate: its Seeds go to a person's review."""

    external_session_id: str = Field(description=_EXTERNAL_ID)


class CloseResult(Contract):
    """What closing did."""

    external_session_id: str = Field(description="The external session id that was closed.")
    closed: bool = Field(description="True: the slate is closed.")
    already_closed: bool = Field(
        description="True when it was closed before this call: by an earlier close, or "
        "for lying idle past the stale window."
    )
    outcome: CloseOutcome = Field(description="Where the Seeds went.")


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
