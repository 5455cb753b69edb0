"""Helpers shared by the project-memory tests (importable as ``memtest``)."""

from __future__ import annotations

from pathlib import Path

from ax_slate import JournalEntryRequest, JournalEvidence, JournalNarrative
from libcommon.paths import StateLayout


def narrative(summary: str = "Did the work.", **parts: str) -> JournalNarrative:
    return JournalNarrative(summary=summary, **parts)


def entry(
    session_id: str,
    summary: str = "Did the work.",
    evidence: JournalEvidence | None = None,
    unfinished: list[str] | None = None,
) -> JournalEntryRequest:
    return JournalEntryRequest(
        session_id=session_id,
        narrative=narrative(summary),
        evidence=evidence or JournalEvidence(),
        unfinished=unfinished or [],
    )


def memory_file(layout: StateLayout, name: str) -> Path:
    return layout.memory_dir / name


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
