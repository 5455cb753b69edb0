"""The JSON contracts of ax-slate: what goes in and out of its verbs and files."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

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


# ---- project memory (memory/JOURNAL.md, CODEBASE.md, LESSONS.md) -------------
# The harness builds these requests; LessonInput is also the model's propose_lesson
# input, so its fields carry descriptions a model reads.


class JournalNarrative(Contract):
    """The model-written part of a journal entry: four sections, each plain text."""

    summary: str = Field(description="What the session did and why, in a few sentences.")
    decisions: str = Field(default="", description="Decisions made, and the reasons for them.")
    open_issues: str = Field(default="", description="Problems seen and not solved.")
    next_steps: str = Field(default="", description="What the next session should do first.")


class EvidenceFile(Contract):
    """A changed file and whether a covering check or command started after its last change and
    exited 0 (ax-report's CHECKED rule)."""

    path: str
    status: str
    verdict: Literal["CHECKED", "UNCHECKED"]
    why: str


class EvidenceCheck(Contract):
    kind: str
    project: str | None = None
    # None: the check started and never completed.
    verdict: str | None = None
    detail: str = ""


class EvidenceKill(Contract):
    command: str | None = None
    termination: str


class JournalEvidence(Contract):
    """What the event log shows of a session: ``evidence_from_report`` builds it."""

    files: list[EvidenceFile] = Field(default_factory=list)
    checks: list[EvidenceCheck] = Field(default_factory=list)
    killed: list[EvidenceKill] = Field(default_factory=list)
    # Commands and checks that started and never completed.
    never_completed: list[str] = Field(default_factory=list)


class JournalEntryRequest(Contract):
    """One session's journal entry, as the harness hands it over at session end.

    Exactly one of ``narrative`` (the model's account) and ``narrative_unavailable``
    (why it could not be had: the entry becomes a skeleton) is given.
    """

    session_id: str
    narrative: JournalNarrative | None = None
    narrative_unavailable: str | None = None
    evidence: JournalEvidence = Field(default_factory=JournalEvidence)
    unfinished: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_narrative(self) -> JournalEntryRequest:
        if (self.narrative is None) == (self.narrative_unavailable is None):
            raise ValueError("give exactly one of narrative and narrativeUnavailable")
        return self


class JournalWriteResult(Contract):
    path: str
    session_id: str
    narrative: Literal["model-written", "unavailable"]
    replaced: bool
    entries: int
    whole: int
    stubs: int
    dropped: list[str]
    bytes: int
    # Of the whole document as this write left it.
    sha256: str


class CodebaseDigests(Contract):
    """The map's two digests of the repository: which files exist, and what they hold."""

    file_set: str
    content: str


class CodebaseRequest(Contract):
    session_id: str
    text: str
    digests: CodebaseDigests


class CodebaseStamp(Contract):
    file_set: str
    content: str
    session_id: str
    written_at: str


class Staleness(Contract):
    """Computed from digests, never guessed: fresh, stale (with reasons) or unknown (why)."""

    state: Literal["fresh", "stale", "unknown"]
    reasons: list[str]


class CodebaseWriteResult(Contract):
    path: str
    stamp: CodebaseStamp
    bytes: int
    omitted_bytes: int
    # Of the whole document as this write left it.
    sha256: str


class LessonInput(Contract):
    """A durable pitfall of this project, for sessions to come."""

    slug: str = Field(
        description="A short key: lowercase letters and digits in words joined by '-' "
        "(at most 64 characters). Reusing a slug replaces that lesson."
    )
    text: str = Field(
        description="The lesson in plain text, at most 1,024 bytes; Markdown headings are escaped."
    )


class LessonResult(Contract):
    slug: str
    action: Literal["added", "updated"]
    path: str
    bytes: int
    evicted: list[str]
    session_slugs: list[str]
    remaining: int


class LedgerSession(Contract):
    session_id: str
    slugs: list[str]


class LessonsLedger(Contract):
    """``memory/lessons-ledger.json``: which lessons each recent session proposed."""

    version: Literal[1] = 1
    sessions: list[LedgerSession] = Field(default_factory=list)


class MemoryDocInfo(Contract):
    """One memory document as ``ax-slate memory list`` shows it."""

    doc: Literal["journal", "codebase", "lessons", "research"]
    file: str
    path: str
    status: Literal["ok", "missing", "corrupt"]
    bytes: int | None = None
    cap: int
    over_cap: bool = False
    entries: int | None = None
    stubs: int | None = None
    stamp: CodebaseStamp | None = None
    staleness: Staleness | None = None
    problem: str | None = None


class InjectedDoc(Contract):
    """One document's row for the ``memory.loaded`` event."""

    doc: Literal["journal", "codebase", "lessons", "research"]
    path: str
    status: Literal["loaded", "missing", "skipped"]
    file_bytes: int | None = None
    sha256: str | None = None
    bytes: int = 0
    truncated: bool = False
    omitted_bytes: int = 0
    staleness: Staleness | None = None
    reason: str | None = None


class MemoryInjection(Contract):
    """The memory section for a new session's system prompt, and what went into it."""

    text: str
    documents: list[InjectedDoc]
