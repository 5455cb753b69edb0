"""The JSON shapes ax-map prints: the build summary, the index statistics, the map and
the hits of a search."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from libcommon.contracts import Contract

from .pathtext import quote_path
from .printable import printable

if TYPE_CHECKING:
    from .build import BuildResult
    from .index import IndexStats
    from .model import Coverage, Snapshot
    from .retrieve import Hit
    from .views import MapView


class CoverageOut(Contract):
    """How much of the workspace the index covers; ``total`` = indexed + listed + pending
    + capped."""

    total: int = Field(description="Files found (a lower bound when exact is false).")
    indexed: int = Field(description="Files whose symbols are extracted.")
    listed: dict[str, int] = Field(description="Files never read, counted by reason.")
    pending: int = Field(description="Files the wall budget did not reach; the next build does.")
    capped: int = Field(description="Files past the inventory cap, counted, not listed.")
    exact: bool = Field(description="False when the listing was cut and total is a lower bound.")
    languages: dict[str, int] = Field(description="Files per language, 'other' for unknown.")

    @classmethod
    def of(cls, coverage: Coverage, exact: bool) -> CoverageOut:
        return cls(
            total=coverage.total,
            indexed=coverage.indexed,
            listed=coverage.listed,
            pending=coverage.pending,
            capped=coverage.capped,
            exact=exact,
            languages=coverage.languages,
        )


class Tiers(Contract):
    parsed: int = Field(description="Indexed files extracted from a tree-sitter parse.")
    first_tier_only: int = Field(
        description="Indexed files with only the fast first tier; later builds parse them."
    )
    parse_failed: int = Field(
        description="Of firstTierOnly: files tree-sitter gave up or crashed on; parsed "
        "again only once they change."
    )
    references_pending: int = Field(
        description="Of firstTierOnly: files with their definitions but no references or "
        "imports yet (the budget ran out first); a later build extracts them."
    )


class BuildSummary(Contract):
    """What ``ax-map build`` did, printed as one JSON object.

    ``ax-map build`` prints ``BuildResult.to_json()``, which tests/map pins to this
    contract's JSON byte for byte.
    """

    workspace: str
    index: str
    git: bool = Field(description="Listed by git (else walked, honouring .gitignore files).")
    state: Literal["complete", "partial"]
    coverage: CoverageOut
    tiers: Tiers
    extracted: int = Field(description="Files read and extracted by this build.")
    reused: int = Field(description="Files whose extraction was kept (size and mtime unchanged).")
    removed: int = Field(description="Files gone since the last build.")
    written: bool = Field(description="False when nothing changed and the index was left as is.")
    rebuilt: str | None = Field(description="Why the build started from nothing, if it did.")
    notes: list[str]
    duration_ms: int
    timings_ms: dict[str, int]

    @classmethod
    def of(cls, result: BuildResult) -> BuildSummary:
        return cls(
            workspace=result.workspace,
            index=result.index,
            git=result.git,
            state="partial" if result.coverage.partial or not result.exact else "complete",
            coverage=CoverageOut.of(result.coverage, result.exact),
            tiers=Tiers(
                parsed=result.parsed,
                first_tier_only=result.first_tier_only,
                parse_failed=result.parse_failed,
                references_pending=result.references_pending,
            ),
            extracted=result.extracted,
            reused=result.reused,
            removed=result.removed,
            written=result.written,
            rebuilt=result.rebuilt,
            notes=result.notes,
            duration_ms=result.timings_ms.get("total", 0),
            timings_ms=result.timings_ms,
        )


class IndexStatsOut(Contract):
    """What ``ax-map stats --json`` prints."""

    workspace: str
    index: str
    bytes: int
    schema_version: int
    written_at: str | None
    git: bool
    state: Literal["complete", "partial"]
    coverage: CoverageOut
    tiers: Tiers
    symbols: int
    references: int = Field(description="Referenced names, counted once per file.")
    import_edges: int
    notes: list[str]

    @classmethod
    def of(cls, stats: IndexStats) -> IndexStatsOut:
        return cls(
            workspace=stats.workspace,
            index=stats.index,
            bytes=stats.bytes,
            schema_version=stats.schema_version,
            written_at=stats.written_at,
            git=stats.git,
            state="partial" if stats.coverage.partial or not stats.exact else "complete",
            coverage=CoverageOut.of(stats.coverage, stats.exact),
            tiers=Tiers(
                parsed=stats.parsed,
                first_tier_only=stats.first_tier_only,
                parse_failed=stats.parse_failed,
                references_pending=stats.references_pending,
            ),
            symbols=stats.symbols,
            references=stats.references,
            import_edges=stats.import_edges,
            notes=stats.notes,
        )


def _state(snapshot: Snapshot) -> Literal["complete", "partial"]:
    return "partial" if snapshot.coverage.partial or not snapshot.exact else "complete"


class MapShown(Contract):
    """What ``ax-map show --json`` prints: the map and what a reader needs to cite it."""

    text: str = Field(description="The map, exactly as rendered.")
    sha256: str = Field(description="The sha256 of text (UTF-8): cite the map by it.")
    chars: int = Field(description="Characters in text, never more than the budget asked for.")
    files_shown: int = Field(description="Key files the map shows with their symbols.")
    coverage: CoverageOut = Field(description="How much of the workspace the index covers.")
    state: Literal["complete", "partial"] = Field(
        description="partial when files were capped, not reached yet, or the listing was cut."
    )
    git: bool = Field(description="Listed by git (else walked, honouring .gitignore files).")
    query: str | None = Field(
        description="The query the ranking was personalised for (control characters escaped)."
    )
    focus: list[str] = Field(
        description="Focus paths, relative to the workspace root (quoted as git quotes "
        "a name holding a control character or an undecodable byte)."
    )
    focus_unmatched: list[str] = Field(
        description="Focus paths that name no file or folder of the index (they weigh nothing)."
    )

    @classmethod
    def of(
        cls,
        view: MapView,
        snapshot: Snapshot,
        query: str | None,
        focus: list[str],
        unmatched: list[str],
    ) -> MapShown:
        return cls(
            text=view.text,
            sha256=view.sha256,
            chars=view.chars,
            files_shown=view.files_shown,
            coverage=CoverageOut.of(view.coverage, snapshot.exact),
            state=_state(snapshot),
            git=view.git,
            query=None if query is None else printable(query),
            focus=[quote_path(path) for path in focus],
            focus_unmatched=[quote_path(path) for path in unmatched],
        )


class HitSymbol(Contract):
    name: str = Field(description="The definition's name (identifier characters only).")
    kind: str = Field(description="function, class, method, type, variable, ...")
    line: int = Field(description="Its line in the file as it is now (1-based).")


class HitOut(Contract):
    path: str = Field(
        description="The file, relative to the workspace root (quoted as git quotes a name "
        "holding a control character or an undecodable byte)."
    )
    score: float = Field(description="Its rank for this query; higher is better.")
    signals: list[str] = Field(description="Why it ranks, and anything wrong with it, in words.")
    symbols: list[HitSymbol] = Field(
        description="Definitions matching the query (its top ones when only the path matched)."
    )
    excerpt: list[str] = Field(
        description="A few lines around the first symbol, read from disk now: '<line>: <text>'."
    )

    @classmethod
    def of(cls, hit: Hit) -> HitOut:
        return cls(
            path=quote_path(hit.path),
            score=hit.score,
            signals=hit.signals,
            symbols=[HitSymbol(name=s.name, kind=s.kind, line=s.line) for s in hit.symbols],
            excerpt=hit.excerpt,
        )


class Retrieved(Contract):
    """What ``ax-map retrieve --json`` prints: the ranked hits of one query."""

    query: str = Field(description="The query, as given (control characters escaped).")
    hits: list[HitOut] = Field(description="The best files first; empty when nothing matches.")
    state: Literal["complete", "partial"] = Field(
        description="partial when the index does not cover every file: a miss may be there."
    )
    coverage: CoverageOut = Field(description="How much of the workspace the index covers.")

    @classmethod
    def of(cls, query: str, hits: list[Hit], snapshot: Snapshot) -> Retrieved:
        return cls(
            query=printable(query),
            hits=[HitOut.of(hit) for hit in hits],
            state=_state(snapshot),
            coverage=CoverageOut.of(snapshot.coverage, snapshot.exact),
        )
