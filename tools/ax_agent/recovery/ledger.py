"""The repair ledger: every classified failure and what became of it, derived, never recorded.

There is no "repair ended" event to lose in a crash. Each classified failure
(a genuine failing check run, a refused apply, a failed task, a preview that
did not start) is an item, numbered in log order; the work after it is the
attempt. Its outcome, in this order:

- ``succeeded``: every regression check its class declares passed afterwards
  (a run started after the failure, in the same unit), and the proof includes
  the kind that failed with a scope covering the failed one (a targeted failure
  on ``tests/test_a.py`` is covered by a pass on ``tests``, not on
  ``tests/test_b.py``). A regression kind other than the failed one may be
  waived for a capability reason. Failures that are no check are proven by the
  event that answers them (the task's clean apply or discard, its completion,
  the preview's readiness);
- ``superseded``: the same signature failed again before that proof: a newer
  attempt took its place;
- ``dismissed``: a person recorded ``repair.dismissed`` naming its number and
  signature (``/repair dismiss N REASON``): the blocker closes, and it stays
  an acceptance caveat. A dismissal naming another signature, or an item
  already closed, changes nothing;
- ``open``: none of these. An open item is an *escalation*, waiting for the
  person, when its class may not be tried automatically, or when its failure is
  the ``REPAIR_ATTEMPTS_MAX``-th of the same signature: the budget of tries
  is spent, and another try would need a new hypothesis from a person.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..tasks.verify import CAPABILITY_REASONS, Ledger, Run, check_runs
from .catalogue import FAILED_KIND
from .classify import Diagnosis, classify_check, classify_event

RepairStatus = Literal["succeeded", "superseded", "dismissed", "open"]
DISMISSED_EVENT = "repair.dismissed"
# Failures of one signature after which no automatic try is left (the repair budget).
REPAIR_ATTEMPTS_MAX = 3
# A dismissal's reason, at most (repair.dismissed's own bound).
DISMISS_REASON_MAX_CHARS = 500
# The failure events that are no check, and the event types that can answer each.
_ANSWERS = {
    "task.applied": ("task.applied", "task.discarded"),
    "task.failed": ("task.completed",),
    "preview.failed": ("preview.ready",),
}


@dataclass(frozen=True)
class Repair:
    number: int
    diagnosis: Diagnosis
    status: RepairStatus
    # What proved it, or what it still needs (one line each).
    proof: tuple[str, ...] = ()
    dismissal: str | None = None
    failed_at: int = field(default=0, compare=False)
    # Which failure of its signature this is (1: the first).
    attempt: int = 1

    @property
    def budget_spent(self) -> bool:
        return self.attempt >= REPAIR_ATTEMPTS_MAX

    @property
    def escalation(self) -> bool:
        """Open, and the model may not try it (its class, or the budget): the person decides."""
        return self.status == "open" and (not self.diagnosis.entry.auto or self.budget_spent)

    def line(self) -> str:
        head = f"{self.number}. {self.diagnosis.name}: {self.diagnosis.subject}"
        if self.status == "open":
            state = "OPEN ESCALATION" if self.escalation else "open (unproven)"
            if self.budget_spent and self.diagnosis.entry.auto:
                state += f" (failure {self.attempt} of this signature: no try is left)"
        elif self.status == "dismissed":
            state = f"DISMISSED by the person: {self.dismissal}"
        else:
            state = self.status
        evidence = f" [{self.diagnosis.evidence[0]}]" if self.diagnosis.evidence else ""
        return f"{head} - {state}{evidence}"


@dataclass(frozen=True)
class RepairLedger:
    repairs: tuple[Repair, ...]
    # Dismissals that named no open item of that signature (position, why).
    ignored: tuple[str, ...] = ()

    def blockers(self) -> list[str]:
        """Open escalations and unproven repairs: honest unfinished work."""
        return [
            f"repair {r.line()}; needs: {'; '.join(r.proof)}"
            for r in self.repairs
            if r.status == "open"
        ]

    def caveats(self) -> list[str]:
        """Dismissed is not resolved: each dismissal stays visible."""
        return [f"repair {r.line()}" for r in self.repairs if r.status == "dismissed"]

    def find(self, number: int) -> Repair | None:
        return next((r for r in self.repairs if r.number == number), None)


def attempt_line(repair: Repair) -> str:
    """Where an open repair stands in its budget, as the model reads it."""
    if not repair.diagnosis.entry.auto:
        number = repair.number
        return f"  repair ledger: item {number}; the person decides (or /repair dismiss {number})"
    if repair.budget_spent:
        return (
            f"  repair ledger: item {repair.number}, failure {repair.attempt} of this signature: "
            "the budget of tries is spent; stop and tell the person what you tried"
        )
    return (
        f"  repair ledger: item {repair.number}, try {repair.attempt} of {REPAIR_ATTEMPTS_MAX - 1} "
        "on this failure; the next try needs a hypothesis different from the last"
    )


def dismissal_problem(ledger: RepairLedger, number: int) -> str | None:
    """Why ``/repair dismiss number`` is refused, or None (the call's half of the rule)."""
    repair = ledger.find(number)
    if repair is None:
        shown = ", ".join(str(r.number) for r in ledger.repairs if r.status == "open")
        return f"there is no repair {number} (open: {shown or 'none'})"
    if repair.status != "open":
        return f"repair {number} is {repair.status}; only an open one can be dismissed"
    return None


def repair_ledger(
    events: Iterable[Mapping[str, Any]], ledger: Ledger | None = None
) -> RepairLedger:
    """Every classified failure of the session and its derived outcome (module docstring);
    ``ledger``: the events' ``check_runs``, when the caller has it already."""
    events = list(events)
    runs = (ledger or check_runs(events)).runs
    found: list[tuple[int, Diagnosis, Run | None]] = []
    for run in runs:
        diagnosis = classify_check(run.event)
        if diagnosis is not None:
            found.append((run.completed, diagnosis, run))
    for position, event in enumerate(events, start=1):
        if event.get("type") in _ANSWERS:
            diagnosis = classify_event(event)
            if diagnosis is not None:
                found.append((position, diagnosis, None))
    found.sort(key=lambda item: item[0])
    # Indexes, so a long session's ledger stays linear: failures by signature, runs by
    # (kind, unit), both in log order.
    by_signature: dict[str, list[int]] = {}
    for at, diagnosis, _failed in found:
        by_signature.setdefault(diagnosis.signature, []).append(at)
    by_place: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        by_place.setdefault((run.kind, run.project), []).append(run)
    ends = {place: [run.completed for run in found_runs] for place, found_runs in by_place.items()}
    repairs: list[Repair] = []
    for number, (at, diagnosis, failed) in enumerate(found, start=1):
        same = by_signature[diagnosis.signature]
        attempt = bisect_right(same, at)
        newer = same[attempt] if attempt < len(same) else None
        if failed is not None:
            proven, proof = _check_proof(failed, diagnosis, by_place, ends)
        else:
            proven, proof = _event_proof(events, at)
        if proven is not None and (newer is None or proven < newer):
            status: RepairStatus = "succeeded"
        elif newer is not None:
            status, proof = "superseded", (f"the same failure again (event {newer})",)
        else:
            status = "open"
        repairs.append(Repair(number, diagnosis, status, proof, failed_at=at, attempt=attempt))
    return _dismissed(repairs, events)


def _check_proof(
    failed: Run,
    diagnosis: Diagnosis,
    by_place: Mapping[tuple[str, str], Sequence[Run]],
    ends: Mapping[tuple[str, str], Sequence[int]],
) -> tuple[int | None, tuple[str, ...]]:
    """The position that completed the proof (None: not proven) and what it rests on."""
    kinds = [failed.kind if k == FAILED_KIND else k for k in diagnosis.entry.regression]
    lines: list[str] = []
    latest = 0
    for kind in dict.fromkeys(kinds):
        place = by_place.get((kind, failed.project), [])
        # A run started after the failure was also judged after it.
        first = bisect_right(ends.get((kind, failed.project), []), failed.completed)
        match = next(
            (
                run
                for run in place[first:]
                if run.started is not None
                and run.started > failed.completed
                and (
                    (run.verdict == "passed" and _covers(run.scope, failed.scope))
                    if kind == failed.kind
                    else run.verdict == "passed" or run.reason in CAPABILITY_REASONS
                )
            ),
            None,
        )
        if match is None:
            return None, (f"{kind} in unit {failed.project} passing again"
                          f"{_scope_text(failed, kind)}",)  # fmt: skip
        latest = max(latest, match.completed)
        lines.append(f"{kind} {match.verdict} at event {match.completed}")
    return (latest or None), tuple(lines)


def _scope_text(failed: Run, kind: str) -> str:
    return (
        f" (scope {', '.join(failed.scope)})"
        if kind == failed.kind and kind == "test-targeted"
        else ""
    )


def _covers(passing: Sequence[str], failed: Sequence[str]) -> bool:
    """Every failed scope item lies inside some passing one ('.' holds everything)."""
    return all(any(p == "." or f == p or f.startswith(p + "/") for p in passing) for f in failed)


def _event_proof(
    events: Sequence[Mapping[str, Any]], at: int
) -> tuple[int | None, tuple[str, ...]]:
    failure = events[at - 1]
    kind = str(failure.get("type"))
    key = "previewId" if kind == "preview.failed" else "taskId"
    for position in range(at + 1, len(events) + 1):
        event = events[position - 1]
        if event.get("type") not in _ANSWERS[kind] or event.get(key) != failure.get(key):
            continue
        if event.get("type") == "task.applied" and (
            event.get("refused") or not event.get("applied")
        ):
            continue
        return position, (f"{event.get('type')} at event {position}",)
    return None, (f"one of {', '.join(_ANSWERS[kind])} for {failure.get(key)}",)


def _dismissed(repairs: list[Repair], events: Sequence[Mapping[str, Any]]) -> RepairLedger:
    ignored: list[str] = []
    by_number = {repair.number: index for index, repair in enumerate(repairs)}
    for position, event in enumerate(events, start=1):
        if event.get("type") != DISMISSED_EVENT:
            continue
        number = event.get("number")
        index = by_number.get(number) if isinstance(number, int) else None
        repair = repairs[index] if index is not None else None
        if repair is None or repair.diagnosis.signature != event.get("signature"):
            ignored.append(f"event {position}: names no repair of that number and signature")
        elif repair.failed_at > position:
            ignored.append(f"event {position}: predates the failure it names")
        elif repair.status == "open":
            repairs[index] = replace(  # type: ignore[index]
                repair, status="dismissed", dismissal=str(event.get("reason"))
            )
        else:
            ignored.append(f"event {position}: repair {repair.number} was already {repair.status}")
    return RepairLedger(tuple(repairs), tuple(ignored))
