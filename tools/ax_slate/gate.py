"""The review gate: pending proposals and unbound candidates, decided by a person.

Accepted Seeds are appended to ``memory/knowledge.jsonl`` with their
provenance and rendered to ``memory/KNOWLEDGE.md``. This module takes the
decisions from a callable; the CLI supplies one that asks a person at a
terminal and refuses to run without one. There is no other path into
accepted knowledge.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_bytes, atomic_write_json
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import file_lock
from libcommon.paths import StateLayout
from libcommon.safeopen import open_state_file

from .models import (
    DEFAULT_SEED_KIND,
    SEED_KINDS,
    KnowledgeEntry,
    KnowledgeProvenance,
    Proposal,
    ProposalSummary,
    ReviewResult,
    SlateSeed,
)

PROPOSAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
KNOWLEDGE_RENDER_MAX = 500

# (seed, its position from 1, how many) -> True to accept, False to reject.
Decide = Callable[[SlateSeed, int, int], bool]


def check_proposal_id(value: str) -> str:
    if not PROPOSAL_ID_PATTERN.fullmatch(value):
        raise UsageError(
            f"invalid proposal id {value!r}",
            hint="use an id printed by `ax-slate proposals`",
        )
    return value


def _read_proposal(path: Path) -> Proposal:
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    data = jsonio.read_json(path)
    try:
        return Proposal.model_validate(data)
    except ValidationError as exc:
        problem = describe_validation_error(exc, "proposal")
        raise CorruptStore(str(path), f"not a proposal ({problem})") from None


def _pending_files(layout: StateLayout) -> list[Path]:
    found: list[Path] = []
    for folder in (layout.proposals_dir, layout.candidates_dir):
        if folder.is_dir():
            found.extend(p for p in folder.glob("*.json") if PROPOSAL_ID_PATTERN.fullmatch(p.stem))
    return found


def list_proposals(layout: StateLayout) -> list[ProposalSummary]:
    """Pending proposals and unbound candidates of this project, oldest first."""
    rows = []
    for path in _pending_files(layout):
        proposal = _read_proposal(path)
        if proposal.status != "pending":
            continue
        rows.append(
            ProposalSummary(
                id=proposal.id,
                kind=proposal.kind,
                workspace_id=proposal.workspace_id,
                external_session_id=proposal.external_session_id,
                origin=proposal.origin,
                trust=proposal.trust,
                seeds=len(proposal.seeds),
                created_at=proposal.created_at,
            )
        )
    rows.sort(key=lambda row: (row.created_at, row.id))
    return rows


def find_proposal(layout: StateLayout, proposal_id: str) -> tuple[Path, Proposal]:
    check_proposal_id(proposal_id)
    for folder in (layout.proposals_dir, layout.candidates_dir):
        path = folder / f"{proposal_id}.json"
        if path.exists():
            return path, _read_proposal(path)
    import shlex

    raise OperationFailed(
        f"no proposal or candidate {proposal_id!r} in this project ({layout.workspace})",
        hint=f"list them with `ax-slate proposals -C {shlex.quote(str(layout.workspace))}`",
    )


def show_proposal(layout: StateLayout, proposal_id: str) -> Proposal:
    """One proposal or candidate, pending or reviewed, whole: its Seeds, anchors and decisions.

    Seed text was redacted when it was written; it and the anchors (stored as
    the agent sent them) pass through the redactor again on their way out, as
    recalled output does. Nothing is changed.
    """
    from libcommon.redact import redact, redact_value

    _, proposal = find_proposal(layout, proposal_id)
    for seed in proposal.seeds:
        seed.text = redact(seed.text)
    proposal.anchors = redact_value(proposal.anchors)
    return proposal


def pending_proposal(layout: StateLayout, proposal_id: str) -> Proposal:
    _, proposal = find_proposal(layout, proposal_id)
    if proposal.status != "pending":
        raise OperationFailed(f"{proposal_id} was already reviewed at {proposal.reviewed_at}")
    return proposal


def review(layout: StateLayout, proposal_id: str, decide: Decide) -> ReviewResult:
    """Ask ``decide`` about each Seed, then record the outcome in one go.

    Decisions are gathered first, without holding a lock (a person may take
    their time); if ``decide`` raises, nothing has changed. The changes are then
    made under the proposal's lock, after checking that nobody reviewed it
    meanwhile.
    """
    proposal = pending_proposal(layout, proposal_id)
    decisions = {
        seed.id: decide(seed, number, len(proposal.seeds))
        for number, seed in enumerate(proposal.seeds, start=1)
    }
    path, _ = find_proposal(layout, proposal_id)
    with file_lock(path.with_suffix(".lock")):
        current = _read_proposal(path)
        if current.status != "pending":
            raise OperationFailed(f"{proposal_id} was reviewed by someone else meanwhile")
        reviewed_at = clock.timestamp()
        accepted = [seed for seed in current.seeds if decisions.get(seed.id)]
        _add_knowledge(layout, current, accepted, reviewed_at)
        current.status = "reviewed"
        current.reviewed_at = reviewed_at
        current.decisions = {
            seed.id: "accepted" if decisions.get(seed.id) else "rejected" for seed in current.seeds
        }
        atomic_write_json(path, current.to_json())
    return ReviewResult(
        proposal_id=proposal_id,
        accepted=[seed.id for seed in accepted],
        rejected=[seed.id for seed in current.seeds if not decisions.get(seed.id)],
        knowledge_file=str(knowledge_file(layout)),
    )


def knowledge_file(layout: StateLayout) -> Path:
    return layout.memory_dir / "knowledge.jsonl"


def read_knowledge(layout: StateLayout) -> list[KnowledgeEntry]:
    path = knowledge_file(layout)
    if not path.exists():
        return []
    return [KnowledgeEntry.model_validate(value) for _, value in jsonio.iter_jsonl(path)]


def _add_knowledge(
    layout: StateLayout, proposal: Proposal, accepted: list[SlateSeed], reviewed_at: str
) -> None:
    path = knowledge_file(layout)
    with file_lock(layout.memory_dir / "knowledge.lock"):
        existing = read_knowledge(layout)
        # A review that crashed after this step is re-run idempotently.
        seen = {(e.provenance.proposal_id, e.provenance.seed_id) for e in existing}
        lines = b""
        for seed in accepted:
            if (proposal.id, seed.id) in seen:
                continue
            entry = KnowledgeEntry(
                id=clock.new_id("know"),
                kind=seed.kind or DEFAULT_SEED_KIND,
                text=seed.text,
                accepted_at=reviewed_at,
                provenance=KnowledgeProvenance(
                    proposal_id=proposal.id,
                    seed_id=seed.id,
                    seed_ts=seed.ts,
                    origin=seed.origin,
                    trust=seed.trust,
                    reviewed_at=reviewed_at,
                ),
            )
            existing.append(entry)
            lines += jsonio.dumps_line(entry.to_json())
        if lines:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_state_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, lines)
                os.fsync(fd)
            finally:
                os.close(fd)
        atomic_write_bytes(layout.memory_dir / "KNOWLEDGE.md", render_knowledge(existing).encode())


def render_knowledge(entries: list[KnowledgeEntry]) -> str:
    """KNOWLEDGE.md: the newest accepted entries grouped by kind, with provenance."""
    shown = entries[-KNOWLEDGE_RENDER_MAX:]
    out = [
        "# Project knowledge",
        "",
        "Seeds a person accepted with `ax-slate review`. Generated from knowledge.jsonl; "
        "edits here are overwritten.",
    ]
    if len(entries) > len(shown):
        out.append(
            f"Showing the newest {len(shown)} of {len(entries)} entries; "
            "the rest are in knowledge.jsonl."
        )
    for kind in SEED_KINDS:
        group = [entry for entry in shown if entry.kind == kind]
        if not group:
            continue
        out += ["", f"## {kind}", ""]
        for entry in group:
            source = entry.provenance
            text = entry.text.replace("\n", "\n  ")
            out.append(
                f"- {text}\n  (from {source.origin.harness} session "
                f"{source.origin.external_session_id}, trust {source.trust}; "
                f"proposal {source.proposal_id}, accepted {entry.accepted_at})"
            )
    return "\n".join(out) + "\n"
