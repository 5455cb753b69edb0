"""retrieve: the files that answer a query best, from the repository map (read-only).

ax-map's index ranks the files whose paths or definitions match the query;
each hit comes back with its score, why it ranks (signals, in words), its
matching definitions with their line numbers and a few lines read from the
file as it is now. It goes through the composition seam (``map.retrieve``, so
``AX_COMPOSE=process`` runs ``ax-map retrieve --json``). A workspace with no
index (the session's start could not build one) is said so, with grep and glob
as the way to search instead; a query ax-map refuses is an error result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ax_policy import ToolFacts
from libcommon.errors import AxError, UsageError

from ..seam.models import MapRetrieveRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, count, guarded

if TYPE_CHECKING:
    from ax_map.models import HitOut, Retrieved

RETRIEVE_DEFAULT_LIMIT = 10
# ax-map answers at most this many hits (its RETRIEVE_LIMIT_MAX); more would read as
# an empty tail, so the model is refused the request instead.
RETRIEVE_LIMIT_MAX = 100
# ax-map reads at most this much of a query (its QUERY_MAX_CHARS).
RETRIEVE_QUERY_MAX_CHARS = 1_000


class RetrieveInput(ToolInput):
    query: str = Field(
        min_length=1,
        max_length=RETRIEVE_QUERY_MAX_CHARS,
        description="A symbol name, a path fragment or a few words, e.g. 'parse_config' or "
        "'session lease'.",
    )
    limit: int = Field(
        default=RETRIEVE_DEFAULT_LIMIT,
        ge=1,
        le=RETRIEVE_LIMIT_MAX,
        description="The most files to return, best first.",
    )


@guarded
def run(request: RetrieveInput, ctx: ToolContext) -> ToolResult:
    try:
        found: Retrieved = ctx.seam.call(
            "map.retrieve",
            MapRetrieveRequest(query=request.query, limit=request.limit),
            abort=ctx.abort,
        )
    except UsageError:
        raise
    except AxError as exc:
        # Most often there is no index (the start could not build one); the message says.
        return ToolResult(
            content=f"The repository map could not be searched: {exc.message}. Search with "
            "grep (text in files) or glob (file names) instead.",
            summary="retrieve: no map index",
        )
    label = f"retrieve {request.query!r}"
    if not found.hits:
        return ToolResult(
            content=f"No file's path or definitions match {request.query!r}. Try another "
            "name, or grep for the text.",
            summary=f"{label}: no hits",
        )
    blocks = [_hit(number, hit) for number, hit in enumerate(found.hits, 1)]
    return ToolResult(
        content="\n\n".join(blocks),
        summary=f"{label}: {count(len(found.hits), 'file', 'files')}",
    )


def _hit(number: int, hit: HitOut) -> str:
    lines = [f"{number}. {hit.path} (score {hit.score:.3f})"]
    if hit.signals:
        lines.append(f"   signals: {'; '.join(hit.signals)}")
    if hit.symbols:
        names = ", ".join(f"{s.kind} {s.name} (line {s.line})" for s in hit.symbols)
        lines.append(f"   definitions: {names}")
    lines += [f"   | {line}" for line in hit.excerpt]
    return "\n".join(lines)


TOOL = ModelTool(
    name="retrieve",
    description=(
        "Find the files that answer a query best, from the repository map's index: give a "
        "symbol name, a path fragment or a few words. Each hit has its path, a score, why it "
        "ranks, its matching definitions with line numbers and a few lines read from the "
        "file now. Faster and better ranked than grep for 'where is X defined'; grep finds "
        "any text."
    ),
    input_model=RetrieveInput,
    facts=ToolFacts(name="retrieve", reads=lambda request: ["."]),
    run=run,
)
