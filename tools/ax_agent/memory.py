"""Project memory in a session: what a new session is given, and what ``/memory`` shows.

ax-slate keeps the documents (JOURNAL.md, CODEBASE.md, LESSONS.md in the
project's state folder) and renders them; this module asks it through the
composition seam, so ``AX_COMPOSE=process`` runs ``ax-slate memory render``.

At start the system prompt carries, after the instruction files, the journal's
newest entries, the codebase summary (labelled fresh, STALE or of unknown
staleness) and the lessons, each within its cap, in ax-slate's labelled
regions under ``libcommon.delimiters.CONTEXT_NOT_AUTHORITY`` (the instruction
files are labelled with the same sentence). One row per document joins the
start's ``memory.loaded``. Being in the system prompt, the section is fixed
overhead for bounded context, like the instruction files of the start: it is
never elided and never a reason to elide. A document that cannot be read never
stops a session: its row says ``skipped`` and why.

The codebase summary's staleness is computed from the repository map's
digests, which ``codebase_digests`` supplies: the one place they come in.

The session's end writes the journal (``ax_agent.narrative``).
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ax_slate import MEMORY_INJECTION_MAX_BYTES
from libcommon.errors import AxError

from .instructions import PROJECT_MAX_BYTES, USER_MAX_BYTES
from .seam.models import MemoryRequest

if TYPE_CHECKING:
    from ax_slate import CodebaseDigests, MemoryDocInfo
    from libcommon.paths import StateLayout

    from .seam import Seam

# What the instruction files' own words may add beside their two ceilings: the system
# prompt's introduction to them, the separators between files and the one notice that
# the budget is spent.
INSTRUCTION_FRAMING_MAX_BYTES = 2 * 1024
# The worst case a session is given unasked, instruction files and project memory (the
# memory section's own ceiling: its four caps and their framing) together: one
# ceiling, pinned in tests/test_limits.py, that a new document must trip.
INJECTION_MAX_BYTES = (
    USER_MAX_BYTES + PROJECT_MAX_BYTES + INSTRUCTION_FRAMING_MAX_BYTES + MEMORY_INJECTION_MAX_BYTES
)
MEMORY_DOCS = ("journal", "codebase", "lessons", "research")


def codebase_digests(layout: StateLayout) -> CodebaseDigests | None:
    """The repository map's current file-set and content digests of the workspace.

    They are ax-map's (``workspace_digests`` of the index as it is now; the
    session's start refreshes the index before memory is loaded), and this is
    the one place they plug in: both the staleness label a new session is given
    and the stamp of a codebase summary written at a session's end read them
    here, from the snapshot the start's map already loaded (``current_snapshot``
    reads the index again only when it was replaced). None only when there is no
    index to read (never built, or unreadable):
    staleness is then ``unknown`` and no summary is asked for or written (a
    summary without digests could never be called stale).
    """
    from ax_map import IndexUnavailable, current_snapshot, workspace_digests
    from ax_slate import CodebaseDigests

    try:
        snapshot = current_snapshot(layout)
    except IndexUnavailable:
        return None
    file_set, content = workspace_digests(snapshot)
    return CodebaseDigests(file_set=file_set, content=content)


@dataclass
class Memory:
    """The memory section a session was given at its start, and one row per document."""

    text: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)


def load_memory(seam: Seam, layout: StateLayout) -> Memory:
    """The memory section for a new session, rendered by ax-slate; never raises for memory.

    When ax-slate cannot be reached at all, nothing is given and each
    document's row is ``skipped`` with the reason.
    """
    from ax_slate import memory_path

    from .webresearch import fold_findings

    # Past the horizon, a research note leaves before it can be given; when that fails,
    # the notes stay as the last fold left them and the render still runs.
    with suppress(AxError, OSError):
        fold_findings(layout, [])
    try:
        request = MemoryRequest(digests=codebase_digests(layout))
        injection = seam.call("slate.memory_render", request)
    except AxError as exc:
        rows = [
            {
                "scope": "memory",
                "doc": doc,
                "path": str(memory_path(layout, doc)),
                "status": "skipped",
                "reason": exc.message,
            }
            for doc in MEMORY_DOCS
        ]
        return Memory("", rows)
    return Memory(
        injection.text,
        [{"scope": "memory", **row.to_json()} for row in injection.documents],
    )


def describe(seam: Seam, layout: StateLayout) -> list[MemoryDocInfo]:
    """Each memory document as it is on disk now (``ax-slate memory list``)."""
    found: list[MemoryDocInfo] = seam.call(
        "slate.memory_describe", MemoryRequest(digests=codebase_digests(layout))
    )
    return found


def loaded_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What each memory document gave the session at its start (``/memory``)."""
    lines = []
    for row in rows:
        where = f"{row['doc']:<9} {row['path']}"
        status = row.get("status")
        if status == "missing":
            lines.append(f"  {where}: missing (nothing given)")
        elif status != "loaded":
            lines.append(f"  {where}: skipped: {row.get('reason')}")
        else:
            shown = f"{row['bytes']:,} bytes given of a {row['fileBytes']:,}-byte file"
            if row.get("truncated"):
                shown += f", CUT: {row['omittedBytes']:,} bytes not shown"
            staleness = row.get("staleness")
            if isinstance(staleness, dict):
                shown += f", staleness {_staleness(staleness)}"
            lines.append(f"  {where}: {shown}")
    return lines


def now_lines(rows: list[MemoryDocInfo]) -> list[str]:
    """Each memory document as it is on disk now: size and cap, entries, staleness."""
    lines = []
    for row in rows:
        where = f"{row.doc:<9} {row.path}"
        if row.status == "missing":
            lines.append(f"  {where}: missing (cap {row.cap:,} bytes)")
            continue
        if row.status == "corrupt":
            lines.append(f"  {where}: CORRUPT, not given to sessions: {row.problem}")
            continue
        parts = [f"{row.bytes:,} of {row.cap:,} bytes" + (" (OVER CAP)" if row.over_cap else "")]
        if row.entries is not None:
            stubs = f", {row.stubs} compressed" if row.stubs else ""
            parts.append(f"{row.entries} entries{stubs}")
        if row.staleness is not None:
            parts.append(f"staleness {_staleness(row.staleness.to_json())}")
        lines.append(f"  {where}: {', '.join(parts)}")
    return lines


def _staleness(staleness: dict[str, Any]) -> str:
    reasons = "; ".join(str(reason) for reason in staleness.get("reasons") or [])
    return f"{staleness.get('state')}" + (f" ({reasons})" if reasons else "")
