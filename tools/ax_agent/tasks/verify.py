"""The verification gate: is a task's work proven by its checks? A pure fold over the events.

A task declares check kinds (its ``checks``; an executor also the plan's
``gates.integration``). Its dependents may start only when it completed and
its verification is not ``pending`` (``fold.dependency_unmet``); a task with
no declared kind has status ``none`` and gates nothing.

What ``green`` proves: every declared kind passed, or was honestly waived, on
the workspace *after the task's own work was integrated*. The *anchor* is the
newest of the task's bindings (``fold`` computes it: an executor's newest
``task.applied``, another delegated role's completion), because a failed
attempt's capture can be applied later; a parent-owned task's is the parent's
newest workspace change (``file.mutated``, ``undo.applied``,
``command.started``) or the plan's approval, whichever is later: the log
records no moment the parent finished it.

Only *genuine* runs count, re-derived here so a hand-written event cannot
launder a blocker:

- a verdict other than ``unsupported`` needs its ``check.started`` (same kind,
  project, scope and recipe) earlier in the same process life, and that start
  must come after the anchor: a run that began before the work was integrated
  proves nothing about it;
- an ``unsupported`` result is recorded alone (nothing ran), so it needs no
  start, and it can only waive, never pass;
- for ``test-targeted`` the run's scope must overlap the task's ``touches``
  (a task that touches nothing can never be proven by a targeted run).

Per kind, the runs after the anchor are grouped by unit and scope, and the
newest of each group is the workspace's standing: ``passed`` is satisfied; an
``unsupported`` whose reason is a capability one (``no-recipe``,
``precondition``) waives quietly; ``toolchain-unavailable`` waives loudly,
tracked apart, its caveat naming the missing toolchain; ``bad-request`` and
``precondition-curable`` never waive (a caller's mistake, a project not
installed yet). With ``gates.projects`` the kind must be satisfied in every
named unit (runs in others do not count), and a blocker names the one missing;
without it, in every unit a run of the kind reached, and at least one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from ..plans.model import Plan, PlanTask, normal_touch
from ..plans.validate import overlaps

# Unsupported reasons that say what the project or host cannot do: they waive a kind.
CAPABILITY_REASONS = frozenset({"no-recipe", "precondition"})
TOOLCHAIN_REASON = "toolchain-unavailable"
# Distinct scope spellings whose normal form is remembered (a cache, not a cap).
SCOPE_CACHE_ENTRIES = 1024
# A parent's own workspace changes (a parent-owned task's anchor).
PARENT_WORK = frozenset({"file.mutated", "undo.applied", "command.started"})

Outcome = Literal["passed", "waived", "toolchain-waived", "failed", "refused", "missing"]
Status = Literal["none", "pending", "green"]
SATISFYING: frozenset[str] = frozenset({"passed", "waived", "toolchain-waived"})


@dataclass(frozen=True)
class Run:
    """One genuine check result: where it started and was judged, and what it said."""

    started: int | None = field(compare=False)
    completed: int = field(compare=False)
    kind: str
    project: str
    scope: tuple[str, ...]
    verdict: str
    reason: str | None
    event: Mapping[str, Any]

    @property
    def outcome(self) -> Outcome:
        if self.verdict == "passed":
            return "passed"
        if self.verdict == "unsupported":
            if self.reason in CAPABILITY_REASONS:
                return "waived"
            return "toolchain-waived" if self.reason == TOOLCHAIN_REASON else "refused"
        return "failed"

    def how(self) -> str:
        """How a failed run ended: its exit code or termination, else (a browser flow,
        which has neither) its first signal."""
        code = self.event.get("exitCode")
        if code is not None:
            return f"exit code {code}"
        if self.event.get("termination"):
            return str(self.event["termination"])
        for signal in self.event.get("signals") or []:
            if isinstance(signal, Mapping):
                return f"{signal.get('name')}: {signal.get('detail')}"
        return "no exit status"

    def toolchain(self) -> str:
        """What is missing, as the run recorded it (its ``toolchain-unavailable`` signal)."""
        for signal in self.event.get("signals") or []:
            if isinstance(signal, Mapping) and signal.get("name") == TOOLCHAIN_REASON:
                return str(signal.get("detail"))
        return "a toolchain is not on PATH"


@dataclass(frozen=True)
class Forged:
    """A check event that proves nothing, and why."""

    position: int
    why: str


@dataclass(frozen=True)
class Ledger:
    """Every genuine run, and the check events that are not, in log order."""

    runs: tuple[Run, ...]
    forged: tuple[Forged, ...]


def scope_of(value: Any) -> tuple[str, ...]:
    """A recorded scope as workspace-relative paths (a test id's ``::name`` dropped)."""
    items = value if isinstance(value, list) else [value]
    return tuple(_normal(str(item).split("::", 1)[0]) for item in items)


# A session repeats the same few scopes thousands of times; path parsing dominated the fold.
_normal = lru_cache(maxsize=SCOPE_CACHE_ENTRIES)(normal_touch)


def check_runs(events: Iterable[Mapping[str, Any]]) -> Ledger:
    """Pair each ``check.completed`` with its ``check.started`` (see the module docstring)."""
    runs: list[Run] = []
    forged: list[Forged] = []
    open_starts: list[tuple[tuple[Any, ...], int]] = []
    for position, event in enumerate(events, start=1):
        kind = event.get("type")
        if kind == "session.started":
            # A run that never completed died with the old process: nothing may pair with it.
            open_starts.clear()
            continue
        if kind not in ("check.started", "check.completed"):
            continue
        key = (
            event.get("kind"),
            event.get("project"),
            scope_of(event.get("scope")),
            event.get("recipeId"),
        )
        if kind == "check.started":
            open_starts.append((key, position))
            continue
        started = next((at for k, at in reversed(open_starts) if k == key), None)
        if started is not None:
            open_starts.remove((key, started))
        elif event.get("verdict") != "unsupported":
            forged.append(Forged(position, "a check.completed with no check.started before it"))
            continue
        runs.append(
            Run(
                started=started,
                completed=position,
                kind=str(key[0]),
                project=str(key[1]),
                scope=key[2],
                verdict=str(event.get("verdict")),
                reason=event.get("reason"),
                event=event,
            )
        )
    return Ledger(tuple(runs), tuple(forged))


@dataclass(frozen=True)
class UnitResult:
    """A kind's standing in one unit (and scope): the newest genuine run there, or none."""

    unit: str | None
    outcome: Outcome
    run: Run | None = None

    def text(self, kind: str) -> str:
        where = f" in unit {self.unit}" if self.unit is not None else ""
        run = self.run
        if run is None or self.outcome == "missing":
            return f"{kind}{where}: no run after the task's work was integrated"
        scope = f" (scope {', '.join(run.scope)})" if kind == "test-targeted" else ""
        if self.outcome == "failed":
            return f"{kind}{where}{scope}: {run.verdict} ({run.how()})"
        if self.outcome == "refused":
            return f"{kind}{where}: unsupported ({run.reason}), which never waives a gate"
        if self.outcome == "toolchain-waived":
            return f"{kind}{where}: WAIVED, the machine lacks a toolchain: {run.toolchain()}"
        return f"{kind}{where}{scope}: {self.outcome}"


@dataclass(frozen=True)
class KindResult:
    kind: str
    units: tuple[UnitResult, ...]

    @property
    def satisfied(self) -> bool:
        return all(unit.outcome in SATISFYING for unit in self.units)


@dataclass(frozen=True)
class Verification:
    task_id: str
    status: Status
    # The position (1-based, in the events folded) after which runs count; None: not yet.
    # A coordinate, not a state: unrelated events interleaved move it and change nothing.
    anchor: int | None = field(default=None, compare=False)
    kinds: tuple[KindResult, ...] = ()
    why_unanchored: str | None = None

    def blockers(self) -> list[str]:
        """What keeps it pending, one line per kind and unit (each names both)."""
        if self.status != "pending":
            return []
        if self.anchor is None:
            return [self.why_unanchored or "its work is not integrated yet"]
        return [
            unit.text(result.kind)
            for result in self.kinds
            for unit in result.units
            if unit.outcome not in SATISFYING
        ]

    def caveats(self) -> list[str]:
        """The loud waivers: a kind waived because this machine lacks a toolchain."""
        return [
            unit.text(result.kind)
            for result in self.kinds
            for unit in result.units
            if unit.outcome == "toolchain-waived"
        ]

    def failing_runs(self) -> list[Run]:
        """The runs behind the blockers that failed or were refused (for a diagnosis)."""
        return [
            unit.run
            for result in self.kinds
            for unit in result.units
            if unit.run is not None and unit.outcome in ("failed", "refused")
        ]


def declared_kinds(plan: Plan, task: PlanTask) -> list[str]:
    kinds = list(task.checks)
    if task.role == "executor":
        kinds += [kind for kind in plan.gates.integration if kind not in kinds]
    return kinds


def parent_anchor(events: Sequence[Mapping[str, Any]]) -> int | None:
    """The parent's newest workspace change or plan approval (a parent-owned task's anchor)."""
    found = None
    for position, event in enumerate(events, start=1):
        if event.get("type") in PARENT_WORK or event.get("type") == "plan.approved":
            found = position
    return found


def verify_task(
    plan: Plan, task: PlanTask, anchor: int | None, ledger: Ledger, unanchored: str | None = None
) -> Verification:
    """One task's verification, its work integrated at ``anchor`` (see the module docstring)."""
    kinds = declared_kinds(plan, task)
    if not kinds:
        return Verification(task.id, "none", anchor)
    if anchor is None:
        return Verification(task.id, "pending", None, why_unanchored=unanchored)
    named = list(plan.gates.projects)
    results = tuple(_kind_result(kind, task, anchor, ledger, named) for kind in kinds)
    status: Status = "green" if all(result.satisfied for result in results) else "pending"
    return Verification(task.id, status, anchor, results)


def _kind_result(
    kind: str, task: PlanTask, anchor: int, ledger: Ledger, named: list[str]
) -> KindResult:
    newest: dict[tuple[str, tuple[str, ...]], Run] = {}
    for run in ledger.runs:
        if run.kind != kind or run.completed <= anchor:
            continue
        if run.started is not None and run.started <= anchor:
            continue
        if kind == "test-targeted" and not _covers_touches(run.scope, task.touches):
            continue
        newest[(run.project, run.scope)] = run
    by_unit: dict[str, list[Run]] = {}
    for (unit, _scope), run in newest.items():
        by_unit.setdefault(unit, []).append(run)
    units: list[UnitResult] = []
    for unit in named or sorted(by_unit):
        found = sorted(by_unit.get(unit, []), key=lambda run: run.completed)
        if not found:
            units.append(UnitResult(unit, "missing"))
        units += [UnitResult(unit, run.outcome, run) for run in found]
    return KindResult(kind, tuple(units or [UnitResult(None, "missing")]))


def _covers_touches(scope: tuple[str, ...], touches: Sequence[str]) -> bool:
    return any(overlaps(item, touch) for item in scope for touch in touches)
