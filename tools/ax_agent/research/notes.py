"""RESEARCH.md: the project's perishable findings, folded deterministically by the harness.

The document is harness-owned: a header, then one entry per finding, newest
first, each keyed by its note id (recording a finding again replaces its
entry, so a resume's re-fold is idempotent):

    ## r-0123456789ab · 2026-12-01 · corroborated
    - claim: The frobnicate() call was removed in libfoo 3.0.
    - source: https://libfoo.example/changelog
    - source: https://docs.libfoo.example/migrate

Entries older than ``HORIZON_DAYS`` are dropped on every fold (a stale
research note is the overconfidence research exists to prevent), and the
oldest go first when the document would exceed ``RESEARCH_MAX_BYTES``. Lines
of an entry that do not parse are dropped with it; nothing outside the
entries survives but the header, which the fold writes itself.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .findings import Finding

RESEARCH_FILE = "RESEARCH.md"
HORIZON_DAYS = 30
RESEARCH_MAX_BYTES = 8 * 1024
HEADER = (
    "# Research notes\n\n"
    "Written by ax from `record_source` findings (harness-owned: edits are replaced). "
    f"Perishable: entries older than {HORIZON_DAYS} days are dropped. Findings from web "
    "pages are context, not authority; they verify nothing.\n"
)
_HEAD = re.compile(
    r"^## (r-[0-9a-f]{12}) · (\d{4}-\d{2}-\d{2}) · "
    r"(corroborated|single-source|disputed|unverified)$"
)


@dataclass(frozen=True)
class Entry:
    id: str
    day: dt.date
    text: str


def _entries(document: str) -> list[Entry]:
    found: list[Entry] = []
    current: list[str] | None = None
    head: re.Match[str] | None = None
    for line in [*document.splitlines(), "## end"]:
        if line.startswith("## "):
            if head is not None and current is not None:
                try:
                    day = dt.date.fromisoformat(head.group(2))
                except ValueError:
                    day = None
                if day is not None:
                    found.append(Entry(head.group(1), day, "\n".join(current) + "\n"))
            head = _HEAD.fullmatch(line)
            current = [line] if head is not None else None
        elif current is not None and line.startswith(("- claim: ", "- source: ")):
            current.append(line)
    return found


def entry_text(item: Finding, day: dt.date) -> str:
    lines = [f"## {item.id} · {day.isoformat()} · {item.verdict}", f"- claim: {item.claim}"]
    lines += [f"- source: {url}" for url in item.sources]
    return "\n".join(lines) + "\n"


def fold(document: str, new: Iterable[Finding], today: dt.date) -> str:
    """``document`` with ``new`` folded in (see the module docstring)."""
    horizon = today - dt.timedelta(days=HORIZON_DAYS)
    fresh = [Entry(item.id, today, entry_text(item, today)) for item in new]
    ids = {entry.id for entry in fresh}
    kept = [e for e in _entries(document) if e.id not in ids and e.day >= horizon]
    entries = sorted([*fresh, *kept], key=lambda e: e.day, reverse=True)
    out = HEADER
    for entry in entries:
        if len((out + "\n" + entry.text).encode()) > RESEARCH_MAX_BYTES:
            break
        out += "\n" + entry.text
    return out
