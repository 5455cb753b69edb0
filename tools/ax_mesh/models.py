"""The JSON contracts of ax-mesh: seats' manifests and every tool's arguments.

Tool arguments keep the reference catalogue's snake_case names (``expected_revision``,
``record_id``), not the camelCase of the other tools' contracts: harness scripts and
prompts written for the reference catalogue then work unchanged. Arguments are strict
(``"3"`` is not a revision) and unknown keys are refused, so every refusal names its field.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from .limits import (
    CONTEXT_LINES_MAX,
    HANDOFF_ITEMS_MAX,
    LIST_MAX_RESULTS,
    MESSAGE_BODY_MAX_BYTES,
    NOTE_MAX_CHARS,
    PATH_MAX_CHARS,
    QUERY_MAX_CHARS,
    RECORD_TEXT_MAX_BYTES,
    SEARCH_QUERIES_MAX,
    STATUS_SEATS_MAX,
    TAGS_MAX,
    WORK_LIST_ITEMS_MAX,
)

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
# A seat's own store is "@<seat>": nobody else may read it, and work items are refused there.
PERSONAL_PREFIX = "@"
_STORE = re.compile(r"^@?[a-z0-9][a-z0-9_-]{0,63}$")
WORK_PREFIX = "work/"
_WORK_ID = re.compile(r"^(@?[a-z0-9][a-z0-9_-]{0,63})/W-([1-9][0-9]{0,9})$")
_RECORD_ID = re.compile(r"^R-([1-9][0-9]{0,17})$")


class Args(BaseModel):
    """The base of every tool's arguments."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


def check_seat_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(
            "a seat name is 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter "
            "or digit"
        )
    return value


def check_store_name(value: str) -> str:
    if not _STORE.match(value):
        raise ValueError(
            "a store name is 1-64 characters of a-z, 0-9, '_' and '-' (a seat's own store "
            "is '@' and its seat name)"
        )
    return value


def check_path(value: str) -> str:
    """A record path: relative, '/'-separated, no empty, '.' or '..' segment."""
    if not value or len(value) > PATH_MAX_CHARS:
        raise ValueError(f"a path is 1-{PATH_MAX_CHARS} characters")
    if value.startswith("/") or value.endswith("/"):
        raise ValueError("a path neither starts nor ends with '/' (e.g. notes/plan.md)")
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError("a path has no empty, '.' or '..' segment")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("a path has no control characters")
    return value


def check_prefix(value: str) -> str:
    if len(value) > PATH_MAX_CHARS or any(ord(ch) < 32 for ch in value):
        raise ValueError(f"a prefix is at most {PATH_MAX_CHARS} printable characters")
    return value


def _utf8_at_most(limit: int) -> AfterValidator:
    def check(value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > limit:
            raise ValueError(f"at most {limit} bytes of UTF-8")
        return value

    return AfterValidator(check)


def parse_record_id(value: str) -> int | None:
    match = _RECORD_ID.match(value)
    return int(match.group(1)) if match else None


def parse_work_id(value: str) -> tuple[str, int]:
    match = _WORK_ID.match(value)
    if not match:
        raise ValueError("a work id is <store>/W-<n>, e.g. team/W-3")
    return match.group(1), int(match.group(2))


def check_locator(value: str) -> str:
    """``R-<n>`` (a record id) or ``<store>/<path>``."""
    if parse_record_id(value) is not None:
        return value
    store, _, path = value.partition("/")
    check_store_name(store)
    check_path(path)
    return value


def check_work_id(value: str) -> str:
    parse_work_id(value)
    return value


SeatName = Annotated[str, AfterValidator(check_seat_name)]
StoreName = Annotated[str, AfterValidator(check_store_name)]
RecordPath = Annotated[str, AfterValidator(check_path)]
PathPrefix = Annotated[str, AfterValidator(check_prefix)]
Locator = Annotated[str, AfterValidator(check_locator)]
WorkId = Annotated[str, AfterValidator(check_work_id)]
RecordText = Annotated[str, _utf8_at_most(RECORD_TEXT_MAX_BYTES)]
Note = Annotated[str, Field(max_length=NOTE_MAX_CHARS)]
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\s,]+$")]
Ref = Annotated[str, Field(min_length=1, max_length=512)]
Revision = Annotated[int, Field(ge=0)]
Cursor = Annotated[str, Field(min_length=1, max_length=256)]
Line = Annotated[int, Field(ge=-(10**9), le=10**9)]


# ---- seats ---------------------------------------------------------------------


class StoreGrant(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    read: bool = True
    write: bool = False
    revise: bool = False

    @model_validator(mode="after")
    def _implied(self) -> StoreGrant:
        # Revising is writing over a record, and writing without reading is never useful.
        if self.revise:
            self.write = True
        if self.write:
            self.read = True
        return self


class Manifest(BaseModel):
    """What a seat may do, set by a person (``ax-mesh seat add|grant``), never by a seat."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    stores: dict[StoreName, StoreGrant] = Field(default_factory=dict)
    message: list[SeatName] = Field(default_factory=list)
    connections: dict[SeatName, list[Annotated[str, Field(pattern=r"^[a-z_.]+$")]]] = Field(
        default_factory=dict
    )
    timezone: str = "UTC"


# ---- identity and status -------------------------------------------------------


class NoArgs(Args):
    pass


class StatusArgs(Args):
    seats: list[SeatName] | None = Field(default=None, max_length=STATUS_SEATS_MAX)


class HandoffArgs(Args):
    objective: Note
    unresolved: list[Note] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    record_ids: list[Ref] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    pending_message_ids: list[Ref] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    operation_ids: list[Ref] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    notes: Note = ""


# ---- memory --------------------------------------------------------------------


class ListArgs(Args):
    store: StoreName | None = None
    prefix: PathPrefix = ""
    order_by: Literal["name", "created_at", "updated_at"] = "name"
    order: Literal["asc", "desc"] = "asc"
    max_results: int = Field(default=50, ge=1, le=LIST_MAX_RESULTS)
    cursor: Cursor | None = None


class ReadArgs(Args):
    store: StoreName | None = None
    path: RecordPath | None = None
    record_id: Locator | None = None
    revision: int | None = Field(default=None, ge=1)
    start_line: Line | None = None
    stop_line: Line | None = None

    @model_validator(mode="after")
    def _one_address(self) -> ReadArgs:
        by_path = self.store is not None or self.path is not None
        if self.record_id is not None and by_path:
            raise ValueError("give store + path, or record_id, not both")
        if self.record_id is None and (self.store is None or self.path is None):
            raise ValueError("give store + path, or record_id")
        if self.record_id is not None and parse_record_id(self.record_id) is None:
            raise ValueError("record_id is R-<n> (memory.list and memory.search show it)")
        return self


class SearchArgs(Args):
    query: Annotated[str, Field(min_length=1, max_length=QUERY_MAX_CHARS)] | None = None
    queries: list[Annotated[str, Field(min_length=1, max_length=QUERY_MAX_CHARS)]] | None = Field(
        default=None, min_length=1, max_length=SEARCH_QUERIES_MAX
    )
    match_mode: Literal["any", "all_on_same_line", "all_within_lines"] = "any"
    line_count: int | None = Field(default=None, ge=1, le=1000)
    case_sensitive: bool = False
    context_lines: int = Field(default=0, ge=0, le=CONTEXT_LINES_MAX)
    stores: list[StoreName] | None = Field(default=None, max_length=64)
    path_prefix: PathPrefix = ""
    tags: list[Tag] = Field(default_factory=list, max_length=TAGS_MAX)
    max_results: int = Field(default=20, ge=1, le=LIST_MAX_RESULTS)
    cursor: Cursor | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> SearchArgs:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give query (full text) or queries (literal substrings), one of them")
        literal_only = self.match_mode != "any" or self.case_sensitive or self.context_lines
        if self.query is not None and literal_only:
            raise ValueError(
                "match_mode, case_sensitive and context_lines belong to the literal mode (queries)"
            )
        if self.match_mode == "all_within_lines" and self.line_count is None:
            raise ValueError("match_mode all_within_lines needs line_count")
        if self.match_mode != "all_within_lines" and self.line_count is not None:
            raise ValueError("line_count belongs to match_mode all_within_lines")
        return self


class WriteArgs(Args):
    store: StoreName
    path: RecordPath
    text: RecordText
    tags: list[Tag] | None = Field(default=None, max_length=TAGS_MAX)
    source_refs: list[Ref] | None = Field(default=None, max_length=TAGS_MAX)
    expected_revision: Revision | None = None


class AppendArgs(Args):
    store: StoreName
    path: RecordPath
    text: Annotated[RecordText, Field(min_length=1)]


class ArchiveArgs(Args):
    locator: Locator
    expected_revision: Annotated[int, Field(ge=1)]


class PublishArgs(Args):
    locator: Locator
    destination: StoreName
    destination_path: RecordPath | None = None
    text: RecordText | None = None


class HistoryArgs(Args):
    locator: Locator
    max_results: int = Field(default=20, ge=1, le=LIST_MAX_RESULTS)
    cursor: Cursor | None = None


# ---- work items ----------------------------------------------------------------

WorkStatus = Literal["ready", "in_progress", "in_review", "blocked", "done", "cancelled"]
StepStatus = Literal["pending", "in_progress", "completed"]


class WorkCreateArgs(Args):
    store: StoreName
    objective: Annotated[str, Field(min_length=1, max_length=NOTE_MAX_CHARS)]
    acceptance: list[Note] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    depends_on: list[WorkId] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    links: list[Ref] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    parent: WorkId | None = None
    owner: SeatName | None = None


class WorkGetArgs(Args):
    work_id: WorkId


class WorkListArgs(Args):
    store: StoreName | None = None
    owner: str | None = None
    status: WorkStatus | None = None
    max_results: int = Field(default=50, ge=1, le=WORK_LIST_ITEMS_MAX)
    cursor: Cursor | None = None

    @model_validator(mode="after")
    def _owner(self) -> WorkListArgs:
        if self.owner is not None and self.owner != "me":
            check_seat_name(self.owner)
        return self


class WorkClaimArgs(Args):
    work_id: WorkId
    expected_revision: Annotated[int, Field(ge=1)]
    note: Note | None = None


class PlanStep(Args):
    step: Annotated[str, Field(min_length=1, max_length=NOTE_MAX_CHARS)]
    status: StepStatus


class WorkPlanArgs(Args):
    work_id: WorkId
    expected_revision: Annotated[int, Field(ge=1)]
    plan: list[PlanStep] = Field(max_length=HANDOFF_ITEMS_MAX)
    explanation: Note | None = None

    @model_validator(mode="after")
    def _one_in_progress(self) -> WorkPlanArgs:
        if sum(step.status == "in_progress" for step in self.plan) > 1:
            raise ValueError("at most one step of a plan is in_progress")
        return self


class WorkUpdateArgs(Args):
    work_id: WorkId
    expected_revision: Annotated[int, Field(ge=1)]
    status: WorkStatus | None = None
    note: Note | None = None
    evidence: list[Ref] = Field(default_factory=list, max_length=HANDOFF_ITEMS_MAX)
    blocker: Note | None = None

    @model_validator(mode="after")
    def _something(self) -> WorkUpdateArgs:
        if self.status is None and not self.note and not self.evidence and self.blocker is None:
            raise ValueError("give at least one of status, note, evidence or blocker")
        if self.status == "blocked" and not self.blocker:
            raise ValueError("status blocked needs a blocker (what it waits for)")
        if self.blocker is not None and self.status not in (None, "blocked"):
            raise ValueError("blocker goes with status blocked")
        return self


class WorkReleaseArgs(Args):
    work_id: WorkId
    expected_revision: Annotated[int, Field(ge=1)]
    note: Annotated[str, Field(min_length=1, max_length=NOTE_MAX_CHARS)]


# ---- messages ------------------------------------------------------------------

Body = Annotated[str, Field(min_length=1), _utf8_at_most(MESSAGE_BODY_MAX_BYTES)]
ConversationId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")]


class SendArgs(Args):
    to: SeatName
    body: Body
    conversation_id: ConversationId | None = None
    correlation_id: Ref | None = None
    wake: bool = True


class ReplyArgs(Args):
    message_id: Annotated[str, Field(pattern=r"^M-[1-9][0-9]{0,17}$")]
    body: Body
    wake: bool = True


class InboxArgs(Args):
    max_results: int = Field(default=50, ge=1, le=LIST_MAX_RESULTS)


class MessageHistoryArgs(Args):
    conversation_id: ConversationId | None = None
    limit: int = Field(default=50, ge=1, le=LIST_MAX_RESULTS)
    cursor: Cursor | None = None


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's argument schema as ``ax-mesh list`` and MCP show it (no titles)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


# ---- automations and time ------------------------------------------------------
# automations.create and automations.update take ax_mesh.schedule's models.


def _check_zone(value: str | None) -> str | None:
    if value is not None:
        from .schedule import load_zone

        load_zone(value)
    return value


class AutomationListArgs(Args):
    include_completed: bool = False


class AutomationDeleteArgs(Args):
    id: Annotated[str, Field(min_length=1, max_length=64)]


class ClockArgs(Args):
    timezone: Annotated[str | None, AfterValidator(_check_zone)] = Field(
        default=None, max_length=64
    )


# ---- connections ---------------------------------------------------------------


class ConnectionInvokeArgs(Args):
    connection: SeatName
    operation: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z_.]+$")]
    params: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: Annotated[str, Field(min_length=1, max_length=128)] | None = None


class OperationGetArgs(Args):
    id: Annotated[str, Field(pattern=r"^O-[1-9][0-9]{0,17}$")]
