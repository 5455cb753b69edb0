"""The write at a session's clean end: its journal entry, and never a message.

``finish(session, reason)`` is how a front end ends a session cleanly: the
headless path after its turn, the terminal at ``/quit``, ``/clear``, end of
input (Ctrl+D) and Ctrl+C twice at the prompt. A crash or a kill never gets
here, so nothing is written for that life; the session's next clean end
(after ``--resume``) writes the entry, for the whole session. ``/accept``
ends nothing and writes nothing: the entry written at the end carries the
same acceptance state it shows.

**Real work.** The journal is written only when the log shows, since the
session's last ``memory.narrative`` (or its start), a file changed
(``file.mutated``), a command started (``command.started``) or a check
started (``check.started``). A session that only read and talked leaves the
journal alone, and so does a resumed one that did nothing new.

**The narrative.** One provider call, through the session's provider, that
reuses the cached prompt prefix: the same system prompt, tool schemas and
bounded conversation as the turn's requests (bounded the same way, instruction
files pinned the same way), plus one final user instruction asking for
Summary, Decisions, Open issues and Next steps (and, when the map's digests
are known, optionally a codebase summary) in a strict format of marker lines.
Any failure (a provider error, ``NARRATIVE_TIMEOUT_S`` passed, an answer that
does not parse or was cut, an interrupt) writes the deterministic skeleton
entry instead, which says why the narrative is unavailable. A session whose
last turn was interrupted on the headless path is not narrated at all: the
person asked it to stop, so the skeleton is written at once.

**The entry.** Its Evidence is ax-report's JSON document over the session's
whole log, read by ax-slate's ``evidence_from_report``; its Handoff names the
acceptance state (``ax_agent.acceptance``: its blockers, then its caveats).
ax-slate re-reads the journal from disk under its lock just before writing and
replaces the session's entry by id, so two sessions ending at once both land
and a resumed session's entry is replaced, not doubled.

**The record.** One ``memory.narrative`` event (the documents written, each
with its bytes and sha256, why the narrative is unavailable, what could not be
written, the call's token usage), appended before ``session.ended``. The
instruction and the answer are never recorded as messages, so a resume
replays none of it.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from libcommon.errors import AxError

from .providers import Message, ProviderAborted, ProviderRequest, TextBlock, Usage

if TYPE_CHECKING:
    from ax_slate import CodebaseDigests, JournalNarrative

    from .session import Session

# How long the narrative call may take before the skeleton is written instead.
NARRATIVE_TIMEOUT_S = 120.0
# Events that make a session's work worth a journal entry.
REAL_WORK = frozenset({"file.mutated", "command.started", "check.started"})

MARKER = "==="
SECTIONS = ("SUMMARY", "DECISIONS", "OPEN ISSUES", "NEXT STEPS")
CODEBASE = "CODEBASE"
END = "END"
_MARKER_LINE = re.compile(rf"^{MARKER} ([A-Z][A-Z ]*[A-Z]) {MARKER}[ \t]*$")

INSTRUCTION = (
    "[ax: this session is ending. Write its entry for the project journal, which later "
    "sessions are given as context. Do not call any tool. Answer with the marker lines "
    "below, each alone on its line, in this order, and nothing before or after them:\n"
    "=== SUMMARY ===\n"
    "What this session did and why, in a few sentences (never empty).\n"
    "=== DECISIONS ===\n"
    "Decisions made, and the reasons for them.\n"
    "=== OPEN ISSUES ===\n"
    "Problems seen and not solved.\n"
    "=== NEXT STEPS ===\n"
    "What the next session should do first.\n"
    "{codebase}"
    "=== END ===\n"
    "Plain text; leave a section empty when there is nothing to say; each is cut at about "
    "600 bytes. Do not list the files changed or the checks run: ax adds that evidence "
    "itself, from the event log.]"
)
CODEBASE_OFFER = (
    "=== CODEBASE ===  (optional: leave this marker out unless you write one)\n"
    "A summary of the repository's architecture for later sessions (what lives where, how "
    "the parts fit), at most 16 KiB; it replaces the current one whole. The current "
    "summary is {state}: write one only if it is missing or stale, or if this session "
    "changed what it describes.\n"
)


class Unparsable(ValueError):
    """The model's answer does not follow the format; the message says how."""


@dataclass
class Account:
    """What the narrative call gave: the model's account, or why there is none."""

    narrative: JournalNarrative | None = None
    codebase: str | None = None
    unavailable: str | None = None
    usage: Usage | None = None


@dataclass
class Written:
    """What the end wrote (for the ``memory.narrative`` event and the person)."""

    account: Account
    documents: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def event(self) -> dict[str, Any]:
        from .loop import usage_json

        return {
            "type": "memory.narrative",
            "narrative": "unavailable" if self.account.narrative is None else "model-written",
            "reason": self.account.unavailable,
            "documents": self.documents,
            "problems": self.problems,
            "usage": usage_json(self.account.usage) if self.account.usage else None,
        }

    def line(self) -> str:
        """One line for the person: what was written, or what was not."""
        journal = next((doc for doc in self.documents if doc["doc"] == "journal"), None)
        if journal is None:
            return "ax-agent: no journal entry was written: " + "; ".join(self.problems)
        whose = (
            "the model's account"
            if self.account.narrative is not None
            else f"narrative unavailable: {self.account.unavailable}"
        )
        line = f"ax-agent: journal entry written ({whose}): {journal['path']}"
        if any(doc["doc"] == "codebase" for doc in self.documents):
            line += "; codebase summary replaced"
        if self.problems:
            line += "; " + "; ".join(self.problems)
        return line


def did_real_work(events: Iterable[Mapping[str, Any]]) -> bool:
    """Whether ``events`` show a change, a command or a check since the last journal write."""
    found = False
    for event in events:
        kind = event.get("type")
        if kind == "memory.narrative":
            found = False
        elif kind in REAL_WORK:
            found = True
    return found


def finish(
    session: Session,
    reason: str,
    *,
    abort: threading.Event | None = None,
    narrate: bool = True,
    say: Callable[[str], None] | None = None,
) -> Written | None:
    """End ``session`` cleanly: its journal entry first when it did real work, then the end.

    ``abort`` interrupts the narrative call (the skeleton is written);
    ``narrate`` False writes the skeleton without asking the model; ``say``
    tells the person what is happening. The session is ended whatever happens.
    Returns what was written (None when nothing was due).
    """
    try:
        return write_memory(session, abort=abort, narrate=narrate, say=say)
    finally:
        prune_checkpoints(session, say)
        session.end(reason)


def prune_checkpoints(session: Session, say: Callable[[str], None] | None = None) -> None:
    """A clean end drops the session's checkpoint refs but ``delivery`` ones (ax-log appends
    ``checkpoint.pruned``); outside a repository there are none, and a failure only says so:
    the refs stay listed by ``ax-log checkpoint list`` for a person to prune."""
    from libcommon.errors import Unsupported

    from .seam.models import CheckpointPruneRequest

    try:
        pruned = session.seam.call("log.checkpoint_prune", CheckpointPruneRequest())
    except Unsupported:
        return
    except AxError as exc:
        if say is not None:
            say(f"checkpoints were not pruned: {exc.message}")
        return
    if pruned.failed and say is not None:
        say(f"checkpoints not pruned: {', '.join(pruned.failed)}")


def write_memory(
    session: Session,
    *,
    abort: threading.Event | None = None,
    narrate: bool = True,
    say: Callable[[str], None] | None = None,
) -> Written | None:
    """The journal entry (and codebase summary) of a session that did real work."""
    from ax_report import build_report, session_events
    from ax_slate import evidence_from_report

    from .acceptance import session_acceptance
    from .memory import codebase_digests

    events = list(session_events(session.layout, session.id))
    records = [event for event in events if isinstance(event, dict)]
    if not did_real_work(records):
        return None
    digests = codebase_digests(session.layout)
    if not narrate:
        account = Account(unavailable="the session was interrupted, so the model was not asked")
    else:
        if say is not None:
            say("ax-agent: writing this session's journal entry (Ctrl+C: without the model)")
        account = ask_for_account(session, abort, digests)
    written = Written(account)
    document, _ = build_report(events)
    state = session_acceptance(session.layout, session.id)
    handoff = [*state.blockers, *(f"caveat: {item}" for item in state.caveats)]
    _write_journal(session, written, evidence_from_report(document), handoff)
    if account.codebase is not None and digests is not None:
        _write_codebase(session, written, account.codebase, digests)
    session.record(written.event())
    if say is not None:
        say(written.line())
    return written


def _write_journal(
    session: Session, written: Written, evidence: Any, unfinished: list[str]
) -> None:
    from ax_slate import JournalEntryRequest

    account = written.account
    request = JournalEntryRequest(
        session_id=session.id,
        narrative=account.narrative,
        narrative_unavailable=account.unavailable if account.narrative is None else None,
        evidence=evidence,
        unfinished=unfinished,
    )
    try:
        result = session.seam.call("slate.journal_write", request)
    except (AxError, OSError) as exc:
        written.problems.append(f"the journal was not written: {_problem(exc)}")
        return
    written.documents.append(
        {
            "doc": "journal",
            "path": result.path,
            "bytes": result.bytes,
            "sha256": result.sha256,
            "replaced": result.replaced,
            "entries": result.entries,
            "dropped": result.dropped,
        }
    )


def _write_codebase(
    session: Session, written: Written, text: str, digests: CodebaseDigests
) -> None:
    from ax_slate import CodebaseRequest

    request = CodebaseRequest(session_id=session.id, text=text, digests=digests)
    try:
        result = session.seam.call("slate.codebase_write", request)
    except (AxError, OSError) as exc:
        written.problems.append(f"the codebase summary was not written: {_problem(exc)}")
        return
    written.documents.append(
        {
            "doc": "codebase",
            "path": result.path,
            "bytes": result.bytes,
            "sha256": result.sha256,
            "omittedBytes": result.omitted_bytes,
        }
    )


def _problem(exc: AxError | OSError) -> str:
    """What went wrong; a failed write (a full disk, say) leaves the old document whole."""
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    return exc.message + (f" ({exc.hint})" if exc.hint else "")


def instruction(session: Session, digests: CodebaseDigests | None) -> str:
    """The final user message of the narrative call."""
    offer = ""
    if digests is not None:
        offer = CODEBASE_OFFER.format(state=_codebase_state(session))
    return INSTRUCTION.format(codebase=offer)


def _codebase_state(session: Session) -> str:
    rows = session.memory.rows if session.memory is not None else []
    row = next((r for r in rows if r.get("doc") == "codebase"), None)
    if row is None or row.get("status") != "loaded":
        return "missing"
    state = (row.get("staleness") or {}).get("state")
    return state if state in ("fresh", "stale") else "of unknown staleness"


def ask_for_account(
    session: Session, abort: threading.Event | None, digests: CodebaseDigests | None
) -> Account:
    """One provider call on the cached prefix; any failure is an Account saying why."""
    from .window.window import place_pinned

    abort = abort or threading.Event()
    messages = [*session.messages, Message("user", [TextBlock(instruction(session, digests))])]
    request = ProviderRequest(
        system=session.system,
        messages=messages,
        tools=[tool.schema() for tool in session.tools.values()],
        model=session.model,
    )
    pinned = session.instructions.pin(len(messages) - 1) if session.instructions is not None else []
    try:
        # Bounded and pinned as the turn's requests are, so the prefix is theirs.
        if session.window is not None:
            request = session.window.bound(request, pinned)
        elif pinned:
            request = replace(request, messages=place_pinned(request.messages, pinned))
    except AxError as exc:
        return Account(unavailable=f"the request could not be made: {exc.message}")
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        abort.set()

    timer = threading.Timer(NARRATIVE_TIMEOUT_S, expire)
    timer.daemon = True
    timer.start()
    try:
        response = session.provider.complete(request, abort=abort)
    except ProviderAborted:
        why = (
            f"the model did not answer within {NARRATIVE_TIMEOUT_S:g} s"
            if timed_out.is_set()
            else "the narrative call was interrupted"
        )
        return Account(unavailable=why)
    except AxError as exc:
        return Account(unavailable=f"the provider failed: {exc.message}")
    finally:
        timer.cancel()
    if response.stop_reason == "max_tokens":
        return Account(unavailable="the answer was cut at the output limit", usage=response.usage)
    try:
        narrative, codebase = parse_account(response.text, codebase=digests is not None)
    except Unparsable as exc:
        called = " (it called a tool instead)" if response.tool_uses else ""
        why = f"the answer did not follow the format{called}: {exc}"
        return Account(unavailable=why, usage=response.usage)
    return Account(narrative=narrative, codebase=codebase, usage=response.usage)


def parse_account(text: str, *, codebase: bool) -> tuple[JournalNarrative, str | None]:
    """The four sections (and the codebase summary, when offered) of an answer.

    Strict: the marker lines ``=== SUMMARY ===``, ``=== DECISIONS ===``,
    ``=== OPEN ISSUES ===``, ``=== NEXT STEPS ===``, optionally ``=== CODEBASE ===``
    (only when offered), then ``=== END ===``, each once and in that order, with
    nothing but blank space before the first and after the last; the summary
    not empty. Anything else raises Unparsable.
    """
    from ax_slate import JournalNarrative

    lines = text.replace("\r\n", "\n").split("\n")
    found = [
        (index, match.group(1))
        for index, line in enumerate(lines)
        if (match := _MARKER_LINE.match(line)) is not None
    ]
    names = [name for _, name in found]
    expected = [*SECTIONS, *([CODEBASE] if CODEBASE in names else []), END]
    if names != expected or (CODEBASE in names and not codebase):
        wanted = " ".join(f"{MARKER} {name} {MARKER}" for name in [*SECTIONS, END])
        raise Unparsable(f"its marker lines are {names or 'none'}, not {wanted}")
    start, end = found[0][0], found[-1][0]
    if any(line.strip() for line in lines[:start] + lines[end + 1 :]):
        raise Unparsable("it has text before the first marker line or after the last")
    bodies: dict[str, str] = {}
    for (at, name), (following, _) in itertools.pairwise(found):
        bodies[name] = "\n".join(lines[at + 1 : following]).strip()
    if not bodies["SUMMARY"]:
        raise Unparsable("its summary is empty")
    narrative = JournalNarrative(
        summary=bodies["SUMMARY"],
        decisions=bodies["DECISIONS"],
        open_issues=bodies["OPEN ISSUES"],
        next_steps=bodies["NEXT STEPS"],
    )
    summary = bodies.get(CODEBASE) or None
    return narrative, summary
