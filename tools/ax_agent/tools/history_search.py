"""history_search: find or read back earlier messages of the live session (read-only).

The archive keeps every message whole (a tool's output as its own row), so
what left the request can be read back: ``{"query": TEXT}`` finds it,
``{"row": N}`` reads one archived message, ``{"call": ID}`` reads the output
of one tool call exactly as it was sent (the call an elided result names).
Every answer is a page of at most 6,000 characters and names the next call.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ax_policy import ToolFacts
from ax_slate import SearchResult
from libcommon import jsonio
from libcommon.errors import AxError

from ..seam.models import SearchRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded

# A call id is looked up by text; its row is on one of the first pages of hits.
CALL_LOOKUP_MAX_PAGES = 50
TOOL_ROLE = "tool"


class HistorySearchInput(ToolInput):
    query: str = Field(default="", description="Text to find in earlier messages.")
    row: int = Field(
        default=0,
        ge=0,
        description="Read this archived message whole (with call: where that output is).",
    )
    call: str = Field(
        default="", description="Read back the output of this tool call (its call id)."
    )
    page: int = Field(default=1, ge=1, description="The page to read (1-based).")

    @model_validator(mode="after")
    def _exactly_one(self) -> HistorySearchInput:
        given = [name for name in ("query", "row", "call") if getattr(self, name)]
        if given != ["row", "call"] and len(given) != 1:
            raise ValueError("give exactly one of query, row or call (call may name its row)")
        return self


def _next(request: HistorySearchInput, page: int) -> str:
    arguments = {key: getattr(request, key) for key in ("query", "call", "row")}
    given = {key: value for key, value in arguments.items() if value}
    return f"history_search {jsonio.dumps({**given, 'page': page}).decode()}"


def call_row(ctx: ToolContext, call_id: str) -> int | None:
    """The archive row holding the output of ``call_id``, or None."""
    page, pages = 1, 1
    while page <= min(pages, CALL_LOOKUP_MAX_PAGES):
        found: SearchResult = ctx.seam.call("slate.search", SearchRequest(query=call_id, page=page))
        for hit in found.hits:
            # The row's text starts with the call id (and is only that for an empty output).
            snippet = hit.snippet
            if hit.role == TOOL_ROLE and (snippet == call_id or snippet.startswith(call_id + "\n")):
                return hit.row
        pages = found.pages
        page += 1
    return None


def _head(row: int, call_id: str) -> str:
    # An archived output reads "[row N, tool]", the call id, then the output.
    return f"[row {row}, {TOOL_ROLE}]\n{call_id}\n"


def read_call(
    ctx: ToolContext, call_id: str, page: int, row: int | None = None
) -> tuple[str, int, int]:
    """Page ``page`` of a call's output as sent: (text, page, pages).

    ``row`` is where the output should be (markers name it); when that row does
    not hold this call's output, the archive is searched for it instead.
    """
    found: SearchResult | None = None
    if row is not None:
        try:
            first: SearchResult = ctx.seam.call("slate.search", SearchRequest(row=row, page=1))
        except AxError:
            first = SearchResult(page=1, pages=1)
        text = first.text or ""
        if text.startswith(_head(row, call_id)) or text == _head(row, call_id)[:-1]:
            found = first
        else:
            row = None
    if row is None:
        row = call_row(ctx, call_id)
    if row is None:
        raise Refused(f"no archived output for call {call_id!r} in this session")
    if found is None or page != 1:
        found = ctx.seam.call("slate.search", SearchRequest(row=row, page=page))
    text = found.text or ""
    if page == 1:
        head = _head(row, call_id)
        if text.startswith(head):
            text = text[len(head) :]
        elif text == head[:-1]:
            text = ""  # an empty output: the archive's text ends at the call id
    return text, found.page, found.pages


@guarded
def run(request: HistorySearchInput, ctx: ToolContext) -> ToolResult:
    if request.call:
        text, page, pages = read_call(ctx, request.call, request.page, request.row or None)
        where = f"output of call {request.call}, page {page} of {pages}"
        follow = f"; next: {_next(request, page + 1)}" if page < pages else ": the end"
        return ToolResult(content=f"{text}\n[{where}{follow}]", summary=f"read back {where}")
    found: SearchResult = ctx.seam.call(
        "slate.search",
        SearchRequest(query=request.query or None, row=request.row or None, page=request.page),
    )
    where = f"page {found.page} of {found.pages}"
    follow = f"; next: {_next(request, found.page + 1)}" if found.page < found.pages else ""
    if found.text is not None:
        return ToolResult(
            content=f"{found.text}\n[{where}{follow}]", summary=f"read row {request.row}, {where}"
        )
    if not found.hits:
        return ToolResult(
            content=f"No earlier message contains {request.query!r}.", summary="no hits"
        )
    lines = []
    for hit in found.hits:
        who = ", ".join(part for part in (hit.role, hit.ts) if part)
        lines.append(f"row {hit.row} ({who}): {hit.snippet}")
    lines.append(f'[{where}{follow}; read a whole row with history_search {{"row": N}}]')
    return ToolResult(content="\n".join(lines), summary=f"{len(found.hits)} hits, {where}")


TOOL = ModelTool(
    name="history_search",
    description=(
        "Find or read back earlier messages of this session, including those no longer in "
        'the conversation: {"query": TEXT} finds text, {"row": N} reads one archived message, '
        '{"call": ID} reads a tool call\'s output as it was sent (an elided result names this '
        "call). One page of at most 6,000 characters per call."
    ),
    input_model=HistorySearchInput,
    facts=ToolFacts(name="history_search", internal=True),
    run=run,
)
