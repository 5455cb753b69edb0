"""Project memory: a journal, a codebase summary, lessons and research notes.

Four Markdown documents in ``projects/<slug>/memory/`` under the state root,
each with a hard cap (bytes of UTF-8, pinned in tests/test_limits.py):

=============  =======  ==========================================================
JOURNAL.md     12 KiB   one entry per session, newest first (``ax_slate.journal``)
CODEBASE.md    16 KiB   the model's architecture summary, digest-stamped
                        (``ax_slate.codebase``)
LESSONS.md      8 KiB   durable pitfalls merged by slug (``ax_slate.lessons``)
RESEARCH.md     8 KiB   perishable web findings, folded by ax-agent with their
                        30-day horizon (``ax_agent.research.notes``)
=============  =======  ==========================================================

The API a harness uses, all from ``ax_slate``:

At session end (a clean end that did real work):
    ``write_journal_entry(layout, JournalEntryRequest(...))`` with the model's
    ``JournalNarrative`` or ``narrative_unavailable="<why>"`` (a skeleton entry),
    and ``evidence_from_report(build_report(events)[0])``;
    ``write_codebase(layout, CodebaseRequest(...))`` when the model wrote a summary.
During a session, for the ``propose_lesson`` tool:
    ``propose_lesson(layout, session_id, LessonInput(slug=..., text=...))``
    (publish ``LessonInput``'s schema as the tool's input).
At session start:
    ``render_memory(layout, current_digests)`` gives the text to put in the system
    prompt after the project instructions, and one ``InjectedDoc`` row per
    document for the ``memory.loaded`` event. It never raises for a document: a
    missing one is ``missing``, a corrupt or unreadable one ``skipped`` with the
    reason, an oversize one cut at whole lines with a visible marker. Pass the
    map's current ``CodebaseDigests`` to have the summary labelled fresh or stale
    (``None``: its staleness is labelled unknown).
For ``/memory`` and ``ax-slate memory list``:
    ``describe_memory(layout, current_digests)``.

Writes raise CorruptStore when the document on disk cannot be parsed (it is
kept, never overwritten), Fenced when the memory lock is not had within 30 s,
UsageError for malformed input, OperationFailed for a limit reached.

Context, not authority: the injected section opens with
``libcommon.delimiters.CONTEXT_NOT_AUTHORITY``, and each document sits in a
region ``<<<project-memory file=…>>>`` … ``<<<end project-memory>>>`` whose
text is neutralised by ``libcommon.delimiters`` so no document can close it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from libcommon import delimiters
from libcommon.errors import AxError, CorruptStore, OperationFailed
from libcommon.paths import StateLayout

from .codebase import codebase_staleness, parse_codebase
from .journal import parse_journal
from .lessons import parse_lessons
from .memstore import (
    CODEBASE_MAX_BYTES,
    DOCS,
    JOURNAL_MAX_BYTES,
    LESSONS_MAX_BYTES,
    RESEARCH_MAX_BYTES,
    MemoryDoc,
    check_doc,
    cut_to_bytes,
    decode_doc,
    doc_path,
    read_doc,
)
from .models import CodebaseDigests, InjectedDoc, MemoryDocInfo, MemoryInjection, Staleness

MEMORY_MARKER_WORDS = "project-memory"
# Everything the section adds around the documents: its opening words, the region
# markers and the codebase's staleness line.
MEMORY_FRAMING_MAX_BYTES = 2 * 1024
MEMORY_INJECTION_MAX_BYTES = (
    JOURNAL_MAX_BYTES
    + CODEBASE_MAX_BYTES
    + LESSONS_MAX_BYTES
    + RESEARCH_MAX_BYTES
    + MEMORY_FRAMING_MAX_BYTES
)
MEMORY_INTRO = (
    "Project memory follows: documents ax keeps for this project across sessions. Parts "
    "marked (model-written) were written by a model in an earlier session; the journal's "
    "Evidence and Handoff were derived by ax from that session's event log, as it was then."
)
_MARKERS = delimiters.phrase_pattern([MEMORY_MARKER_WORDS])


def neutralise(text: str) -> str:
    """``text`` made unable to pass for (or close with) the memory regions' markers."""
    return delimiters.neutralise(text, _MARKERS)


def memory_path(layout: StateLayout, name: str) -> Path:
    """The absolute path of the document called ``name`` (journal, codebase or lessons)."""
    return doc_path(layout, check_doc(name))


def read_memory_text(layout: StateLayout, name: str) -> tuple[Path, bytes]:
    """The document's path and bytes as they are on disk; a missing one is OperationFailed."""
    doc = check_doc(name)
    path = doc_path(layout, doc)
    data = read_doc(path)
    if data is None:
        raise OperationFailed(
            f"{doc.file} does not exist yet ({path})",
            hint=_MISSING_HINTS[doc.name],
        )
    return path, data


_MISSING_HINTS = {
    "journal": "ax-agent writes it when a session that did some work ends",
    "codebase": "ax-agent writes it when a model summarises the codebase",
    "lessons": "ax-agent writes it when a model proposes a lesson; or create it with your "
    "editor (`ax-slate memory path lessons`)",
    "research": "ax-agent writes it when a researcher records a finding (record_source)",
}


def _parsed(doc: MemoryDoc, path: Path, data: bytes) -> tuple[str, int | None, int | None]:
    """The text, the entry count and the stub count; CorruptStore when it does not parse."""
    text = decode_doc(path, data)
    if doc.name == "journal":
        entries = parse_journal(path, text)
        return text, len(entries), sum(entry.stub for entry in entries)
    if doc.name == "lessons":
        return text, len(parse_lessons(path, text).entries), None
    if doc.name == "research":
        # ax-agent's fold owns the entries' form; here the document is text under its cap.
        return text, None, None
    parse_codebase(path, text)
    return text, None, None


def describe_memory(
    layout: StateLayout, current: CodebaseDigests | None = None
) -> list[MemoryDocInfo]:
    """Each document: its path, size and cap, entries, staleness, or why it is corrupt."""
    rows = []
    for doc in DOCS.values():
        path = doc_path(layout, doc)
        row = MemoryDocInfo(doc=doc.name, file=doc.file, path=str(path), status="ok", cap=doc.cap)
        try:
            data = read_doc(path)
            if data is None:
                row.status = "missing"
                rows.append(row)
                continue
            row.bytes = len(data)
            row.over_cap = len(data) > doc.cap
            text, row.entries, row.stubs = _parsed(doc, path, data)
            if doc.name == "codebase":
                row.stamp = parse_codebase(path, text)
                row.staleness = codebase_staleness(row.stamp, current)
        except AxError as exc:
            row.status = "corrupt"
            row.problem = _problem(exc)
        rows.append(row)
    return rows


def render_memory(layout: StateLayout, current: CodebaseDigests | None = None) -> MemoryInjection:
    """The memory section for a new session, and one ``memory.loaded`` row per document.

    Each document is neutralised, then cut at whole lines to its cap (the
    journal's newest entries come first, so a cut drops the oldest; the marker
    says how many bytes were left out). The whole section is at most
    ``MEMORY_INJECTION_MAX_BYTES``. No document is ever a reason to fail: a
    corrupt or unreadable one is skipped and its row says why.
    """
    rows: list[InjectedDoc] = []
    regions: list[str] = []
    for doc in DOCS.values():
        path = doc_path(layout, doc)
        row = InjectedDoc(doc=doc.name, path=str(path), status="loaded")
        try:
            data = read_doc(path)
            if data is None:
                row.status = "missing"
                rows.append(row)
                continue
            row.file_bytes = len(data)
            row.sha256 = hashlib.sha256(data).hexdigest()
            text = decode_doc(path, data)
            label = ""
            if doc.name == "journal":
                entries = parse_journal(path, text)
                text = "".join(entry.text.rstrip() + "\n\n" for entry in entries)
            elif doc.name == "lessons":
                parse_lessons(path, text)
            elif doc.name == "codebase":
                row.staleness = codebase_staleness(parse_codebase(path, text), current)
                label = _staleness_label(row.staleness) + "\n"
        except (AxError, OSError) as exc:
            row.status = "skipped"
            row.reason = exc.message if isinstance(exc, AxError) else exc.strerror or str(exc)
            rows.append(row)
            continue
        body, row.omitted_bytes = cut_to_bytes(neutralise(text).rstrip("\n"), doc.cap, doc.file)
        row.truncated = row.omitted_bytes > 0
        row.bytes = len(body.encode())
        regions.append(
            f"{label}<<<{MEMORY_MARKER_WORDS} file={doc.file}>>>\n"
            f"{body}\n<<<end {MEMORY_MARKER_WORDS}>>>"
        )
        rows.append(row)
    if not regions:
        return MemoryInjection(text="", documents=rows)
    intro = f"{MEMORY_INTRO}\n{delimiters.CONTEXT_NOT_AUTHORITY}"
    return MemoryInjection(text="\n\n".join([intro, *regions]), documents=rows)


def _staleness_label(staleness: Staleness) -> str:
    reasons = "; ".join(staleness.reasons)
    if staleness.state == "fresh":
        return "Codebase summary: fresh (its stamp matches the map's current digests)."
    if staleness.state == "stale":
        return (
            f"Codebase summary: STALE ({reasons}). It describes the repository as it was; "
            "check the files before relying on it."
        )
    return f"Codebase summary: staleness unknown ({reasons}); check the files before relying on it."


def _problem(exc: AxError) -> str:
    if isinstance(exc, CorruptStore):
        return f"line {exc.line}: {exc.problem}" if exc.line is not None else exc.problem
    return exc.message
