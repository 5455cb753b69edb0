"""The review ledger: what the reviewers' records are worth, a pure fold over (plan, events).

Reviewers record typed findings (``report_finding``); the delegation engine
writes each reviewer task's findings into the parent's log at its end, as
``review.finding`` events (``group``, ``taskId``, ``number``) closed by one
``review.captured {findings: n}``. An empty capture is a recorded clean
review; a reviewer task that ended with no capture lost its round's evidence.

Only what the log proves counts, re-derived here so a hand-written event
cannot launder a blocker:

- a finding counts only inside an open attempt of a reviewer or inspector
  task (after its ``task.started``, before its capture), numbered in order;
  its channel is the task's role, never the event's own ``advisory`` flag;
- a capture counts only when its count is the findings recorded before it;
- review is *required* when the plan has an executor task (mode ``auto``) or
  says ``required``; ``waived`` (with a reason) lifts it only when a person
  approved that very plan (``plan.approved`` of its sha), and stays a caveat;
- a *round* is one delegation group of reviewer tasks. It qualifies when each
  of its tasks completed with a capture, no apply landed inside its window
  (a reviewer that saw a half-applied workspace reviewed neither state), and
  real work (a file change, an apply) preceded it. Changes after the newest
  qualifying round do not undo it: they are a caveat. Only the first
  ``REVIEW_ROUNDS_MAX`` rounds can qualify; after them the blocker hands the
  exits to the person;
- findings never expire: a later, cleaner round clears none of them. Each
  stays a blocker until the parent's triage (``review.triaged``) clears it:
  ``verify`` keeps it blocking, ``refute`` clears it as an UNVERIFIED MODEL
  CLAIM (an acceptance caveat), ``accept`` clears a medium or low one (a
  caveat), ``address`` needs ``refs``: the seq of workspace changes that
  exist and postdate the finding (and precede the triage). A triage that
  breaks a rule changes nothing (``triage_problem`` refuses it at the call
  with the same words);
- the inspector (``@review``) writes to the advisory channel: its findings
  are shown, block nothing, and its tasks spend no round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from libcommon import delimiters

from ..plans.model import Plan, plan_sha256
from ..plans.store import APPROVE_COMMAND, consented

# Reviewer rounds that can qualify; a third is refused at delegation and counts for nothing.
REVIEW_ROUNDS_MAX = 2
# A finding's text as the fold shows it, at most (report_finding bounds it at the call).
FINDING_SHOWN_MAX_CHARS = 300
BLOCKING_ROLE = "reviewer"
ADVISORY_ROLE = "inspector"
UNVERIFIED = "UNVERIFIED MODEL CLAIM"
# Severities the parent may accept (a critical or high one is verified, refuted or addressed).
ACCEPTABLE = frozenset({"medium", "low"})
TRIAGE_ACTIONS = ("verify", "refute", "accept", "address")
# What "addressed" can point at: a change to the workspace.
WORK_EVENTS = frozenset({"file.mutated", "undo.applied", "task.applied"})
_ENDS = frozenset({"task.completed", "task.failed", "task.cancelled"})
_LOST = "evidence is lost"
_MARKERS = delimiters.phrase_pattern([UNVERIFIED, "harness note", "review finding"])
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def clean_text(text: str, limit: int = FINDING_SHOWN_MAX_CHARS) -> str:
    """Model text made safe for a harness-attributed line: one line, no marker, bounded."""
    flat = _CONTROL.sub(" ", delimiters.neutralise(text, _MARKERS)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class Finding:
    key: str
    position: int
    severity: str
    path: str
    title: str
    line: int | None = None
    advisory: bool = False
    # Its standing after triage: open, verified, refuted, accepted, addressed.
    status: str = "open"
    reason: str = ""

    def text(self) -> str:
        where = self.path + (f":{self.line}" if self.line else "")
        return f"review finding {self.key} [{self.severity}] {where}: {clean_text(self.title)}"


@dataclass
class _Attempt:
    group: str
    task_id: str
    role: str
    started: int
    ended: int | None = None
    end: str | None = None
    captured: int | None = None
    findings: list[Finding] = field(default_factory=list)
    lost: str | None = None


@dataclass
class Round:
    number: int
    group: str
    start: int
    end: int | None
    tasks: list[str]
    # Why it does not qualify (empty: it does).
    problems: list[str] = field(default_factory=list)

    @property
    def qualifies(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class ReviewState:
    required: bool
    rounds: tuple[Round, ...]
    findings: tuple[Finding, ...]
    advisory: tuple[Finding, ...]
    blockers_: tuple[str, ...]
    caveats_: tuple[str, ...]
    # Review events that proved nothing, and why (forged or out of place).
    ignored: tuple[str, ...] = ()

    def blockers(self) -> list[str]:
        return list(self.blockers_)

    def caveats(self) -> list[str]:
        return list(self.caveats_)

    def find(self, key: str) -> Finding | None:
        return next((f for f in self.findings if f.key == key), None)


def review_required(plan: Plan | None) -> bool:
    if plan is None:
        return False
    if plan.review.mode == "required":
        return True
    return any(task.role == "executor" for task in plan.tasks)


def _seq(event: Mapping[str, Any], position: int) -> int:
    value = event.get("seq")
    return value if isinstance(value, int) and value > 0 else position


def triage_problem(
    finding: Finding | None,
    key: str,
    action: str,
    reason: str,
    refs: Sequence[int],
    events: Sequence[Mapping[str, Any]],
    at: int,
) -> str | None:
    """Why a triage of ``key`` by ``action`` at position ``at`` is refused, or None.

    The call and the fold both ask this, so the log stays clean and a forged
    triage is ignored on replay for the same reason.
    """
    if finding is None:
        return f"there is no blocking review finding {key!r} recorded before it"
    if finding.position >= at:
        return f"finding {key} is recorded after the triage"
    if action not in TRIAGE_ACTIONS:
        return f"{action!r} is no triage action (verify, refute, accept or address)"
    if not reason.strip():
        return "a triage needs a reason"
    if action == "accept" and finding.severity not in ACCEPTABLE:
        return (
            f"finding {key} is {finding.severity}: only a medium or low finding may be accepted; "
            "verify it, address it with the changes that fix it, or refute it"
        )
    if action == "address":
        if not refs:
            return "address needs refs: the seq of the events that fixed the finding"
        by_seq = {
            _seq(event, position): (position, event) for position, event in enumerate(events, 1)
        }
        for ref in refs:
            found = by_seq.get(ref)
            if found is None or found[0] >= at:
                return f"ref {ref} names no event recorded before the triage"
            position, event = found
            if position <= finding.position:
                return f"ref {ref} is older than finding {key}: it cannot have fixed it"
            if event.get("type") not in WORK_EVENTS or (
                event.get("type") == "task.applied" and not event.get("applied")
            ):
                return f"ref {ref} is a {event.get('type')}, not a change to the workspace"
    return None


def review_state(plan: Plan | None, events: Iterable[Mapping[str, Any]]) -> ReviewState:
    """The review ledger over ``events`` (see the module docstring)."""
    events = list(events)
    attempts: list[_Attempt] = []
    open_by_key: dict[tuple[str, str], _Attempt] = {}
    findings: list[Finding] = []
    ignored: list[str] = []
    work: list[int] = []
    applies: list[int] = []
    for position, event in enumerate(events, start=1):
        kind = event.get("type")
        key = (str(event.get("group")), str(event.get("taskId")))
        if kind == "session.started":
            for attempt in open_by_key.values():
                if attempt.end is None and attempt.lost is None:
                    attempt.lost = "it never ended (the parent started again)"
            open_by_key.clear()
        elif kind in WORK_EVENTS and (kind != "task.applied" or event.get("applied")):
            work.append(position)
            if kind == "task.applied":
                applies.append(position)
        if kind == "task.started":
            open_by_key.pop(key, None)
            if event.get("role") in (BLOCKING_ROLE, ADVISORY_ROLE):
                attempt = _Attempt(key[0], key[1], str(event.get("role")), position)
                attempts.append(attempt)
                open_by_key[key] = attempt
        elif kind in _ENDS:
            attempt_or_none = open_by_key.get(key)
            if attempt_or_none is not None and attempt_or_none.end is None:
                attempt_or_none.end, attempt_or_none.ended = str(kind), position
        elif kind == "review.finding":
            _finding(event, position, open_by_key.get(key), findings, ignored)
        elif kind == "review.captured":
            _capture(event, position, open_by_key.get(key), ignored)
        elif kind == "review.triaged":
            _triage(event, position, findings, events, ignored)
    rounds = _rounds(attempts, work, applies)
    blockers, caveats = _verdict(plan, events, attempts, rounds, findings, work)
    return ReviewState(
        required=review_required(plan),
        rounds=tuple(rounds),
        findings=tuple(f for f in findings if not f.advisory),
        advisory=tuple(f for f in findings if f.advisory),
        blockers_=tuple(blockers),
        caveats_=tuple(caveats),
        ignored=tuple(ignored),
    )


def round_refusal(plan: Plan | None, events: Iterable[Mapping[str, Any]]) -> str | None:
    """Why a new group of reviewer tasks may not be spawned (the delegation's half of the
    round cap), or None. The spawn is refused with the same exits the blocker names."""
    spent = len(review_state(plan, events).rounds)
    if spent < REVIEW_ROUNDS_MAX:
        return None
    return (
        f"the {REVIEW_ROUNDS_MAX} review rounds are spent; a person decides: waive review in "
        f"the plan with a reason and approve it ({APPROVE_COMMAND}), or accept with the "
        "review blocker on record"
    )


def _finding(
    event: Mapping[str, Any],
    position: int,
    attempt: _Attempt | None,
    findings: list[Finding],
    ignored: list[str],
) -> None:
    if attempt is None or attempt.captured is not None:
        ignored.append(f"event {position}: a review.finding outside an open reviewer task")
        return
    number = event.get("number")
    if number != len(attempt.findings) + 1:
        ignored.append(f"event {position}: finding number {number} out of order")
        return
    severity = str(event.get("severity"))
    if severity not in ("critical", "high", "medium", "low"):
        ignored.append(f"event {position}: severity {severity!r} is unknown")
        severity = "critical"
    line = event.get("line")
    found = Finding(
        key=f"{attempt.group}/{attempt.task_id}/{number}",
        position=position,
        severity=severity,
        path=clean_text(str(event.get("path"))),
        title=clean_text(str(event.get("title"))),
        line=line if isinstance(line, int) and line > 0 else None,
        advisory=attempt.role == ADVISORY_ROLE,
    )
    attempt.findings.append(found)
    findings.append(found)


def _capture(
    event: Mapping[str, Any], position: int, attempt: _Attempt | None, ignored: list[str]
) -> None:
    if attempt is None or attempt.captured is not None:
        ignored.append(f"event {position}: a review.captured outside an open reviewer task")
        return
    count = event.get("findings")
    if count != len(attempt.findings):
        attempt.lost = (
            f"its capture says {count} finding(s) where {len(attempt.findings)} were recorded"
        )
        ignored.append(f"event {position}: {attempt.lost}")
    attempt.captured = position


def _triage(
    event: Mapping[str, Any],
    position: int,
    findings: list[Finding],
    events: Sequence[Mapping[str, Any]],
    ignored: list[str],
) -> None:
    key = str(event.get("finding"))
    finding = next((f for f in findings if f.key == key and not f.advisory), None)
    action = str(event.get("action"))
    reason = str(event.get("reason") or "")
    refs = [ref for ref in event.get("refs") or [] if isinstance(ref, int)]
    problem = triage_problem(finding, key, action, reason, refs, events, position)
    if problem is not None or finding is None:
        ignored.append(f"event {position}: triage {action} of {key} ignored: {problem}")
        return
    finding.status = {"verify": "verified", "refute": "refuted", "accept": "accepted"}.get(
        action, "addressed"
    )
    finding.reason = clean_text(reason)


def _rounds(attempts: list[_Attempt], work: list[int], applies: list[int]) -> list[Round]:
    by_group: dict[str, list[_Attempt]] = {}
    for attempt in attempts:
        if attempt.role == BLOCKING_ROLE:
            by_group.setdefault(attempt.group, []).append(attempt)
    rounds: list[Round] = []
    for number, (group, members) in enumerate(by_group.items(), start=1):
        start = min(a.started for a in members)
        ends = [max(a.ended or 0, a.captured or 0) for a in members]
        end = max(ends) if all(a.end is not None or a.lost for a in members) else None
        problems: list[str] = []
        if number > REVIEW_ROUNDS_MAX:
            problems.append(f"only {REVIEW_ROUNDS_MAX} review rounds can count")
        for a in members:
            if a.lost:
                problems.append(f"reviewer {a.task_id}: its {_LOST}: {a.lost}")
            elif a.end is None:
                problems.append(f"reviewer {a.task_id} is still running")
            elif a.captured is None:
                problems.append(f"reviewer {a.task_id} ended with no capture: its {_LOST}")
            elif a.end != "task.completed":
                problems.append(f"reviewer {a.task_id} did not complete ({a.end})")
        if not any(at < start for at in work):
            problems.append("no work preceded it (nothing changed before the reviewers started)")
        landed = [at for at in applies if start < at < (end or 1 << 62)]
        if landed:
            problems.append(f"an apply landed inside it (event {landed[0]})")
        tasks = [a.task_id for a in members]
        rounds.append(Round(number, group, start, end, tasks, problems))
    return rounds


def _verdict(
    plan: Plan | None,
    events: list[Mapping[str, Any]],
    attempts: list[_Attempt],
    rounds: list[Round],
    findings: list[Finding],
    work: list[int],
) -> tuple[list[str], list[str]]:
    blockers: list[str] = []
    caveats: list[str] = []
    required = review_required(plan)
    if plan is not None and plan.review.mode == "waived" and required:
        reason = clean_text(plan.review.reason)
        if reason and consented(events, plan_sha256(plan)):
            caveats.append(f"review waived by the approved plan: {reason}")
            required = False
        else:
            blockers.append(
                "review: the plan waives review, but no person approved that plan with a "
                f"reason ({APPROVE_COMMAND} once it names one)"
            )
    # Lost evidence blocks whether or not review is required: the findings it held are
    # unknown, and findings never expire.
    for r in rounds:
        blockers += [f"review round {r.number}: {p}" for p in r.problems if _LOST in p]
    qualifying = [r for r in rounds if r.qualifies]
    if required and not qualifying:
        for r in rounds:
            problems = [p for p in r.problems if _LOST not in p]
            if problems:
                blockers.append(f"review round {r.number} does not count: {'; '.join(problems)}")
        if len(rounds) >= REVIEW_ROUNDS_MAX:
            blockers.append(
                f"review required, and its {REVIEW_ROUNDS_MAX} rounds are spent with none "
                "qualifying: the person decides: waive review in the plan with a reason and "
                f"approve it ({APPROVE_COMMAND}), or accept with this blocker on record"
            )
        else:
            blockers.append(
                "review required (the plan has executor tasks): no qualifying review round "
                "yet; delegate reviewer tasks once the work is applied"
            )
    for attempt in attempts:
        if attempt.role == ADVISORY_ROLE and (
            attempt.lost or (attempt.end and not attempt.captured)
        ):
            caveats.append(f"inspector {attempt.task_id}: its advisory findings were not captured")
    if qualifying and any(at > (qualifying[-1].end or 0) for at in work):
        caveats.append(
            f"the workspace changed after review round {qualifying[-1].number}: "
            "those changes were not reviewed"
        )
    for finding in findings:
        if finding.advisory:
            continue
        if finding.status == "open":
            blockers.append(f"{finding.text()}: not triaged")
        elif finding.status == "verified":
            blockers.append(f"{finding.text()}: verified, not fixed ({finding.reason})")
        elif finding.status == "refuted":
            caveats.append(f"{finding.text()}: REFUTED, an {UNVERIFIED}: {finding.reason}")
        elif finding.status == "accepted":
            caveats.append(f"{finding.text()}: accepted as it is: {finding.reason}")
    return blockers, caveats
