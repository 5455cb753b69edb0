"""The JSON shapes ax-map prints: the build summary and the index statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from libcommon.contracts import Contract

if TYPE_CHECKING:
    from .build import BuildResult
    from .index import IndexStats
    from .model import Coverage


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


class BuildSummary(Contract):
    """What ``ax-map build`` did, printed as one JSON object."""

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
            ),
            symbols=stats.symbols,
            references=stats.references,
            import_edges=stats.import_edges,
            notes=stats.notes,
        )
