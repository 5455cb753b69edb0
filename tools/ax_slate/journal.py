"""JOURNAL.md: one entry per session, newest first, written when a session ends.

For the harness (ax-agent), at the end of a session that did real work::

    document, _ = ax_report.build_report(events)         # the session's own events
    evidence = evidence_from_report(document)            # pure: no disk, no clock
    write_journal_entry(layout, JournalEntryRequest(
        session_id=sid,
        narrative=JournalNarrative(summary=..., decisions=..., open_issues=..., next_steps=...),
        # or, when the provider call failed: narrative_unavailable="provider timed out"
        evidence=evidence,
        unfinished=[...],                                # the harness's own list, if any
    ))

ax-slate may not import ax-report (tests/test_architecture.py), so the
evidence arrives as an input: ``evidence_from_report`` reads ax-report's JSON
document (format 1: its ``files``, ``checks`` and ``commands`` sections), so
CHECKED means exactly what the report means by it.

An entry::

    ## Session <id> · <time>
    ### Summary (model-written)        … Decisions, Open issues, Next steps, the same way
    ### Evidence (from the event log)  the log's path, files and their CHECKED state,
                                       checks and their verdicts, commands killed
    ### Handoff                        acceptance state, unfinished work, the resume command

When the model's part could not be had, its four sections are replaced by one
``### Narrative unavailable`` section saying why (a skeleton entry).

Rules, all enforced here:

- Insert-or-replace by session id: the same session ending twice (after a
  resume) replaces its entry, which moves to the front.
- The newest ``JOURNAL_WHOLE_ENTRIES`` entries stay whole; older ones become
  stubs (heading, a one-line gist of the summary, the log pointer, the resume
  command). Past the cap, the oldest stubs go, then the second entry is
  compressed, then dropped; the new entry alone always fits.
- Model text is defused (``memstore.model_text``): it holds no line that
  starts a ``##`` entry or a ``###`` section, so it cannot forge a boundary.
- The file is re-read under the memory lock just before the write, and written
  atomically. One that cannot be parsed (not UTF-8, a first line other than
  ``# Session journal``, a ``##`` line that is not an entry heading, a session
  id twice) is refused with CorruptStore and kept as it is.
- The lines above the first entry are ax's and are rewritten on every write;
  whole entries below are kept as they are (trailing blank space aside) while
  they stay whole.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libcommon import clock
from libcommon.errors import CorruptStore, UsageError
from libcommon.paths import SESSION_ID_PATTERN, StateLayout, check_session_id

from .memstore import (
    DOCS,
    JOURNAL_MAX_BYTES,
    clip_bytes,
    cut_to_bytes,
    decode_doc,
    doc_path,
    memory_lock,
    model_text,
    one_line,
    read_doc,
    split_lines,
    write_doc,
)
from .models import JournalEntryRequest, JournalEvidence, JournalNarrative, JournalWriteResult

JOURNAL_WHOLE_ENTRIES = 2
JOURNAL_SECTION_MAX_BYTES = 600
JOURNAL_EVIDENCE_MAX_BYTES = 1_400
JOURNAL_HANDOFF_MAX_BYTES = 600
JOURNAL_ITEM_MAX_BYTES = 240
JOURNAL_ENTRY_MAX_BYTES = 5 * 1024
JOURNAL_STUB_GIST_MAX_BYTES = 160
# A stub kept as it is on disk while no larger than this; a bigger one is rebuilt.
JOURNAL_STUB_MAX_BYTES = 1024

JOURNAL_TITLE = "# Session journal"
NARRATIVE_UNAVAILABLE = "Narrative unavailable"
MODEL_SECTIONS = (
    ("summary", "Summary"),
    ("decisions", "Decisions"),
    ("open_issues", "Open issues"),
    ("next_steps", "Next steps"),
)
STUB_MARK = "(compressed)"
PREAMBLE = (
    f"{JOURNAL_TITLE}\n"
    "\n"
    "Written by ax when a session ends: one entry per session, newest first, replaced when\n"
    "the same session ends again. Sections marked (model-written) are a model's own account;\n"
    "Evidence and Handoff are derived by ax from the session's event log. The newest\n"
    f"{JOURNAL_WHOLE_ENTRIES} entries are whole, older ones are stubs that point at their log.\n"
    "ax rewrites these lines above the first entry.\n"
)

_ENTRY_HEADING = re.compile(r"^## Session (?P<id>\S+) · (?P<ts>\S+)[ \t]*\r?\n?$")
_LEVEL_TWO = re.compile(r"^##(?:[ \t]|\r?\n?$)")
_SUMMARY_HEADING = re.compile(r"^### Summary \(model-written\)")
_UNAVAILABLE_HEADING = re.compile(rf"^### {NARRATIVE_UNAVAILABLE}")
_SECTION_HEADING = re.compile(r"^###(?:[ \t]|\r?\n?$)")


@dataclass(frozen=True)
class RawEntry:
    """One entry as it is on disk: its text is kept byte for byte until it is compressed."""

    session_id: str
    ts: str
    text: str

    @property
    def stub(self) -> bool:
        """A stub has no ``###`` section; every whole entry has ax's own."""
        return not any(_SECTION_HEADING.match(line) for line in split_lines(self.text))


def journal_path(layout: StateLayout) -> Path:
    return doc_path(layout, DOCS["journal"])


def parse_journal(path: Path, text: str) -> list[RawEntry]:
    """The entries of a journal's text, newest first; CorruptStore when it is not a journal."""
    lines = split_lines(text)
    if not lines or lines[0].rstrip("\r\n") != JOURNAL_TITLE:
        raise CorruptStore(str(path), f"the first line is not {JOURNAL_TITLE!r}", line=1)
    entries: list[RawEntry] = []
    current: list[str] | None = None
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not _LEVEL_TWO.match(line):
            if current is not None:
                current.append(line)
            continue
        heading = _ENTRY_HEADING.match(line)
        if heading is None or not SESSION_ID_PATTERN.fullmatch(heading["id"]):
            raise CorruptStore(
                str(path), "a '##' line that is not '## Session <id> · <time>'", line=number
            )
        if heading["id"] in seen:
            raise CorruptStore(
                str(path),
                f"session {heading['id']} has two entries (the other at line "
                f"{seen[heading['id']]})",
                line=number,
            )
        if current is not None:
            entries.append(_raw(current))
        seen[heading["id"]] = number
        current = [line]
    if current is not None:
        entries.append(_raw(current))
    return entries


def _raw(lines: list[str]) -> RawEntry:
    heading = _ENTRY_HEADING.match(lines[0])
    assert heading is not None  # only a matching heading starts an entry
    return RawEntry(heading["id"], heading["ts"], "".join(lines))


def read_journal(layout: StateLayout) -> list[RawEntry] | None:
    """The journal's entries, newest first; None when there is no journal yet."""
    path = journal_path(layout)
    data = read_doc(path)
    if data is None:
        return None
    return parse_journal(path, decode_doc(path, data))


# ---- evidence ---------------------------------------------------------------------


def evidence_from_report(document: Mapping[str, Any]) -> JournalEvidence:
    """The Evidence of a journal entry, read from ax-report's JSON document (format 1).

    Pure: the caller runs ``ax_report.build_report`` over the session's events
    (all sections) and passes the document. A document without the ``files``,
    ``checks`` and ``commands`` sections is refused.
    """
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    files, checks, commands = (document.get(name) for name in ("files", "checks", "commands"))
    if (
        document.get("format") != 1
        or not isinstance(files, list)
        or not isinstance(checks, list)
        or not isinstance(commands, list)
    ):
        raise UsageError(
            "not an ax-report document (format 1) with its files, checks and commands sections",
            hint="pass the JSON document of ax_report.build_report over all sections",
        )
    try:
        return JournalEvidence.model_validate(
            {
                "files": [_file(row) for row in files],
                "checks": [_check(row) for row in checks],
                "killed": [
                    {"command": row.get("command"), "termination": str(row.get("termination"))}
                    for row in commands
                    if row.get("outcome") == "killed"
                ],
                "neverCompleted": [
                    f"command `{row.get('command')}` started and never completed"
                    for row in commands
                    if row.get("outcome") == "never-completed"
                ]
                + [
                    f"check {row.get('kind')} in {_where(row.get('project'))} started and "
                    "never completed"
                    for row in checks
                    if row.get("verdict") is None
                ],
            }
        )
    except (ValidationError, AttributeError) as exc:
        problem = (
            describe_validation_error(exc, "report")
            if isinstance(exc, ValidationError)
            else "a row is not an object"
        )
        raise UsageError(f"the report document does not read as evidence: {problem}") from None


def _file(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ("path", "status", "verdict", "why")}


def _check(row: Mapping[str, Any]) -> dict[str, Any]:
    termination, code, reason = row.get("termination"), row.get("exitCode"), row.get("reason")
    if termination == "exited":
        detail = f"exit {code}"
    elif termination is None:
        detail = "no exit code"
    else:
        detail = f"{termination}, no exit code"
    if reason:
        detail += f", {reason}"
    return {
        "kind": row.get("kind"),
        "project": row.get("project"),
        "verdict": row.get("verdict"),
        "detail": detail,
    }


def _where(project: object) -> str:
    return "`.`" if project in (None, "") else f"`{project}`"


# ---- rendering --------------------------------------------------------------------


def render_entry(request: JournalEntryRequest, ts: str) -> str:
    """One whole entry, at most JOURNAL_ENTRY_MAX_BYTES bytes, ending in a newline."""
    sid = check_session_id(request.session_id)
    parts = [f"## Session {sid} · {ts}\n"]
    if request.narrative is not None:
        parts += _narrative(request.narrative)
    else:
        why = one_line(request.narrative_unavailable or "", JOURNAL_ITEM_MAX_BYTES) or "no reason"
        parts.append(
            f"\n### {NARRATIVE_UNAVAILABLE}\n\nThe model's account of this session could not "
            f"be had ({why}). Evidence and Handoff below are ax's own.\n"
        )
    parts.append(f"\n### Evidence (from the event log)\n\n{_evidence(sid, request.evidence)}")
    parts.append(f"\n### Handoff\n\n{_handoff(sid, request.evidence, request.unfinished)}")
    return "".join(parts)


def _narrative(narrative: JournalNarrative) -> list[str]:
    parts = []
    for field, label in MODEL_SECTIONS:
        body = model_text(getattr(narrative, field)) or "(none)"
        body, _ = cut_to_bytes(body, JOURNAL_SECTION_MAX_BYTES, f"the {label.lower()}")
        parts.append(f"\n### {label} (model-written)\n\n{body}\n")
    return parts


def log_pointer(session_id: str) -> str:
    """The session's event log, relative to JOURNAL.md (``memory/`` sits beside ``sessions/``)."""
    target = f"../sessions/{session_id}.jsonl"
    return f"[{target}]({target})"


def resume_command(session_id: str) -> str:
    return f"`ax-agent --resume {session_id}`"


def _item(text: str) -> str:
    return "  - " + one_line(text, JOURNAL_ITEM_MAX_BYTES) + "\n"


def _more(count: int) -> str:
    return f"  - … and {count} more in the log\n"


def _evidence(sid: str, evidence: JournalEvidence) -> str:
    groups = [
        (
            "Files changed",
            [f"`{f.path}` ({f.status}): {f.verdict}, {f.why}" for f in evidence.files],
        ),
        (
            "Checks",
            [
                f"{c.kind} in {_where(c.project)}: "
                f"{c.verdict or 'started, never completed'} ({c.detail})"
                for c in evidence.checks
            ],
        ),
        ("Commands killed", [f"`{k.command}`: {k.termination}" for k in evidence.killed]),
    ]
    head = f"- Log: {log_pointer(sid)}\n"
    titles = [f"- {title} ({len(texts)}){':' if texts else ': none'}\n" for title, texts in groups]
    reserve = sum(len(_more(len(texts)).encode()) for _, texts in groups if texts)
    room = JOURNAL_EVIDENCE_MAX_BYTES - len((head + "".join(titles)).encode()) - reserve
    shown = _round_robin([texts for _, texts in groups], room)
    out = [head]
    for title, (_, texts), lines in zip(titles, groups, shown, strict=True):
        out.append(title)
        out += lines
        if len(lines) < len(texts):
            out.append(_more(len(texts) - len(lines)))
    return "".join(out)


def _round_robin(groups: list[list[str]], room: int) -> list[list[str]]:
    """The item lines of each group that fit ``room`` bytes, taking one from each in turn.

    A group stops at its first line that does not fit. Lines are made only as
    they are tried: a session that changed 100,000 files redacts a few dozen.
    """
    shown: list[list[str]] = [[] for _ in groups]
    stopped = [not texts for texts in groups]
    while not all(stopped):
        for index, texts in enumerate(groups):
            if stopped[index]:
                continue
            line = _item(texts[len(shown[index])])
            size = len(line.encode())
            if size > room:
                stopped[index] = True
                continue
            room -= size
            shown[index].append(line)
            stopped[index] = len(shown[index]) == len(texts)
    return shown


def acceptance(evidence: JournalEvidence) -> str:
    """The session's acceptance state in one line, derived from its evidence alone."""
    files = evidence.files
    unchecked = [f for f in files if f.verdict != "CHECKED"]
    if not files:
        state = "nothing to accept: no file changed"
    elif unchecked:
        state = f"NOT verified: {len(unchecked)} of {len(files)} changed files UNCHECKED"
    else:
        state = f"verified: all {len(files)} changed files CHECKED"
    verdicts: dict[str, int] = {}
    for check in evidence.checks:
        key = check.verdict or "never completed"
        verdicts[key] = verdicts.get(key, 0) + 1
    if verdicts:
        state += "; checks: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    if evidence.killed:
        state += f"; {len(evidence.killed)} command(s) killed"
    return state


def _handoff(sid: str, evidence: JournalEvidence, unfinished: list[str]) -> str:
    head = f"- Acceptance: {one_line(acceptance(evidence), JOURNAL_ITEM_MAX_BYTES)}\n"
    tail = f"- Resume: {resume_command(sid)}\n"
    texts = [*unfinished, *evidence.never_completed]
    title = f"- Unfinished ({len(texts)}){':' if texts else ': none recorded'}\n"
    room = JOURNAL_HANDOFF_MAX_BYTES - len((head + title + tail).encode())
    if texts:
        room -= len(_more(len(texts)).encode())
    (lines,) = _round_robin([texts], room)
    more = [_more(len(texts) - len(lines))] if len(lines) < len(texts) else []
    return head + title + "".join(lines + more) + tail


def _gist(entry: RawEntry) -> str:
    """The first line of an entry's summary, or what stands in for it."""
    lines = split_lines(entry.text)
    for index, line in enumerate(lines):
        if line.startswith(f"{STUB_MARK} Summary: "):
            return line.removeprefix(f"{STUB_MARK} Summary: ").strip()
        if _UNAVAILABLE_HEADING.match(line):
            return "narrative unavailable"
        if _SUMMARY_HEADING.match(line):
            for body in lines[index + 1 :]:
                if _SECTION_HEADING.match(body):
                    break
                if body.strip():
                    return body.strip()
    return "no summary recorded"


def stub_of(entry: RawEntry) -> str:
    """The entry compressed: heading, a one-line gist, and where its evidence is."""
    if entry.stub and len(entry.text.encode()) <= JOURNAL_STUB_MAX_BYTES:
        return entry.text
    gist = one_line(_gist(entry), JOURNAL_STUB_GIST_MAX_BYTES)
    return (
        f"## Session {entry.session_id} · {clip_bytes(entry.ts, 64)}\n"
        f"\n{STUB_MARK} Summary: {gist}\n"
        f"- Log: {log_pointer(entry.session_id)} · Resume: {resume_command(entry.session_id)}\n"
    )


@dataclass
class _Slot:
    session_id: str
    text: str
    whole: bool


def _document(slots: list[_Slot]) -> str:
    return PREAMBLE + "".join("\n" + slot.text.rstrip() + "\n" for slot in slots)


def roll(
    new_entry: str, session_id: str, old: list[RawEntry]
) -> tuple[str, list[_Slot], list[str]]:
    """The journal with ``new_entry`` in front: (its text, the entries kept, the ids dropped).

    The newest JOURNAL_WHOLE_ENTRIES stay whole, older ones become stubs; past
    the cap the oldest stubs go first, then the second entry is compressed,
    then it goes. The new entry alone always fits (JOURNAL_ENTRY_MAX_BYTES).
    """
    slots = [_Slot(session_id, new_entry, True)]
    for entry in (e for e in old if e.session_id != session_id):
        whole = len(slots) < JOURNAL_WHOLE_ENTRIES and not entry.stub
        slots.append(_Slot(entry.session_id, entry.text if whole else stub_of(entry), whole))
    by_id = {e.session_id: e for e in old}
    dropped: list[str] = []
    text = _document(slots)
    while len(text.encode()) > JOURNAL_MAX_BYTES and len(slots) > 1:
        last = slots[-1]
        if len(slots) == 2 and last.whole:
            slots[-1] = _Slot(last.session_id, stub_of(by_id[last.session_id]), False)
        else:
            dropped.append(slots.pop().session_id)
        text = _document(slots)
    return text, slots, dropped


def write_journal_entry(layout: StateLayout, request: JournalEntryRequest) -> JournalWriteResult:
    """Insert or replace the session's entry; re-read under the memory lock, written atomically.

    Raises CorruptStore (the file is kept) when the journal on disk cannot be
    parsed, Fenced when the lock is not had within 30 s, UsageError for a bad id.
    """
    entry = render_entry(request, clock.timestamp())
    path = journal_path(layout)
    with memory_lock(layout):
        old = read_journal(layout) or []
        text, slots, dropped = roll(entry, request.session_id, old)
        write_doc(path, text)
    return JournalWriteResult(
        path=str(path),
        session_id=request.session_id,
        narrative="model-written" if request.narrative is not None else "unavailable",
        replaced=any(e.session_id == request.session_id for e in old),
        entries=len(slots),
        whole=sum(slot.whole for slot in slots),
        stubs=sum(not slot.whole for slot in slots),
        dropped=dropped,
        bytes=len(text.encode()),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
