"""The task DAG: the fold over (plan, events) and the scheduler gate, rule by rule."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ax_agent.plans.model import Plan, PlanDocument, plan_sha256, task_sha256
from ax_agent.plans.store import LoadedPlan, PlanState
from ax_agent.tasks.fold import fold_tasks, summary
from ax_agent.tasks.gate import MAX_FAILURES, Binding, check_group

RAW: dict[str, Any] = {
    "tasks": [
        {"id": "explore", "title": "E", "role": "explorer"},
        {
            "id": "lexer",
            "title": "L",
            "role": "executor",
            "dependsOn": ["explore"],
            "touches": ["src/lexer"],
        },
        {"id": "parser", "title": "P", "role": "executor", "touches": ["src/parser"]},
        {"id": "both", "title": "B", "role": "executor", "touches": ["src"]},
        {
            "id": "after",
            "title": "A",
            "role": "executor",
            "dependsOn": ["lexer"],
            "touches": ["docs"],
        },
        {"id": "solo", "title": "S", "role": "executor", "serial": True, "touches": ["x"]},
        {"id": "risky", "title": "R", "role": "executor", "risk": "high", "touches": ["y"]},
        {"id": "mine", "title": "M", "role": "parent"},
        {"id": "uses-mine", "title": "U", "role": "reviewer", "dependsOn": ["mine"]},
    ]
}
PLAN = Plan.model_validate(RAW)
SHA = {task.id: task_sha256(task) for task in PLAN.tasks}


def ev(kind: str, task: str, group: str = "g1", **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": f"task.{kind}", "group": group, "taskId": task, **fields}
    if kind == "started":
        role = next(t.role for t in PLAN.tasks if t.id == task)
        event.setdefault("role", role)
        event.setdefault("definitionSha256", SHA[task])
    return event


def run(task: str, *ends: dict[str, Any], group: str = "g1") -> list[dict[str, Any]]:
    return [ev("started", task, group), *ends]


def states(events: list[dict[str, Any]], plan: Plan = PLAN) -> dict[str, str]:
    return {tid: view.state for tid, view in fold_tasks(plan, events).items()}


# --- the fold -------------------------------------------------------------------------------


def test_without_events_tasks_are_queued_blocked_or_parent_owned() -> None:
    assert states([]) == {
        "explore": "queued",
        "lexer": "blocked",
        "parser": "queued",
        "both": "queued",
        "after": "blocked",
        "solo": "queued",
        "risky": "queued",
        "mine": "parent-owned",
        "uses-mine": "queued",
    }
    views = fold_tasks(PLAN, [])
    assert views["lexer"].waiting_on == {"explore": "queued"}
    assert views["after"].waiting_on == {"lexer": "blocked"}
    assert summary(views) == "6 queued, 2 blocked, 1 parent-owned"


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (run("explore"), "running"),
        (run("explore", ev("asked", "explore", callId="c1")), "awaiting-approval"),
        (
            run(
                "explore",
                ev("asked", "explore", callId="c1"),
                ev("answered", "explore", callId="c1", answer="no"),
            ),
            "running",
        ),
        (run("explore", ev("completed", "explore")), "completed"),
        (run("explore", ev("failed", "explore", reason="error")), "failed"),
        (run("explore", ev("cancelled", "explore", reason="user")), "cancelled"),
        (run("explore", {"type": "session.started"}), "interrupted"),
        # An end after the restart belongs to no live attempt.
        (run("explore", {"type": "session.started"}, ev("completed", "explore")), "interrupted"),
        # An executor: completion without a capture lost the work.
        (run("parser", ev("completed", "parser")), "failed"),
        (
            run(
                "parser",
                ev("captured", "parser", files=["src/parser/a.py"]),
                ev("completed", "parser"),
            ),
            "integrating",
        ),
        (run("parser", ev("captured", "parser", files=[]), ev("completed", "parser")), "completed"),
        (
            run(
                "parser",
                ev("captured", "parser", files=["a", "b"]),
                ev("completed", "parser"),
                ev("applied", "parser", applied=["a"], refused=[{"path": "b", "reason": "drift"}]),
            ),
            "integrating",
        ),
        (
            run(
                "parser",
                ev("captured", "parser", files=["a", "b"]),
                ev("completed", "parser"),
                ev("applied", "parser", applied=["a"], refused=[{"path": "b", "reason": "drift"}]),
                ev("applied", "parser", applied=["b"]),
            ),
            "completed",
        ),
        (
            run(
                "parser",
                ev("captured", "parser", files=["a"]),
                ev("completed", "parser"),
                ev("discarded", "parser", reason="wrong"),
            ),
            "cancelled",
        ),
        # The parent does this task: no attempt changes that.
        ([], "parent-owned"),
    ],
)
def test_an_attempt_folds_to_its_state(events: list[dict[str, Any]], expected: str) -> None:
    task = events[0]["taskId"] if events else "mine"
    assert states(events)[task] == expected


def test_the_fold_keeps_what_integration_needs() -> None:
    events = run(
        "parser",
        ev("captured", "parser", files=["a", "b"]),
        ev("completed", "parser"),
        ev("applied", "parser", applied=["a"], refused=[{"path": "b", "reason": "drift"}]),
    )
    view = fold_tasks(PLAN, events)["parser"]
    assert (view.captured, view.applied, view.refused) == (
        ["a", "b"],
        ["a"],
        [{"path": "b", "reason": "drift"}],
    )
    assert (view.attempts, view.group) == (1, "g1")
    lost = fold_tasks(PLAN, run("parser", ev("completed", "parser")))["parser"]
    assert lost.detail is not None and "capture lost" in lost.detail


def test_a_completed_task_reopens_when_its_definition_changes() -> None:
    done = run("explore", ev("completed", "explore"))
    assert states(done)["lexer"] == "queued"
    changed = copy.deepcopy(RAW)
    changed["tasks"][0]["intent"] = "look deeper"
    plan = Plan.model_validate(changed)
    view = fold_tasks(plan, done)["explore"]
    assert (view.state, view.reopened) == ("queued", True)
    # Its dependents wait again.
    assert fold_tasks(plan, done)["lexer"].waiting_on == {"explore": "queued"}
    # A progress mark is not a new definition.
    marked = copy.deepcopy(RAW)
    marked["tasks"][0]["status"] = "done"
    assert states(done, Plan.model_validate(marked))["explore"] == "completed"


def test_failures_count_under_the_current_definition_only() -> None:
    events = [
        e
        for n in range(3)
        for e in run("parser", ev("failed", "parser", group=f"g{n}", reason="error"), group=f"g{n}")
    ]
    events += run("parser", ev("cancelled", "parser", group="g9", reason="user"), group="g9")
    assert fold_tasks(PLAN, events)["parser"].failures == 3
    assert fold_tasks(PLAN, events)["parser"].attempts == 4
    changed = copy.deepcopy(RAW)
    changed["tasks"][2]["verify"] = "run the parser tests"
    assert fold_tasks(Plan.model_validate(changed), events)["parser"].failures == 0


def test_unbound_attempts_and_other_events_do_not_count() -> None:
    unbound = [ev("started", "explore", definitionSha256=None), ev("completed", "explore")]
    assert states(unbound)["explore"] == "queued"
    noise = [{"type": "user.message", "content": "x"}, {"type": "tool.completed", "callId": "c"}]
    assert states(noise) == states([])


def test_an_end_before_its_start_changes_nothing() -> None:
    assert states([ev("completed", "explore"), ev("started", "explore")])["explore"] == "running"
    assert states([ev("completed", "explore", group="g0"), *run("explore")])["explore"] == "running"


EVENT_KINDS = [
    "started",
    "asked",
    "answered",
    "captured",
    "completed",
    "failed",
    "cancelled",
    "applied",
    "discarded",
]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    events = []
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 9)) == 0:
            events.append({"type": "session.started"})
            continue
        kind = draw(st.sampled_from(EVENT_KINDS))
        task = draw(st.sampled_from(["explore", "lexer", "parser", "uses-mine"]))
        group = draw(st.sampled_from(["g1", "g2"]))
        extra: dict[str, Any] = {
            "asked": {"callId": "c1"},
            "answered": {"callId": "c1", "answer": "yes"},
            "captured": {"files": draw(st.lists(st.sampled_from(["a", "b"]), max_size=2))},
            "failed": {"reason": "error"},
            "cancelled": {"reason": "user"},
            "applied": {"applied": ["a"], "refused": draw(st.sampled_from([[], [{"path": "b"}]]))},
            "discarded": {"reason": "x"},
        }.get(kind, {})
        events.append(ev(kind, task, group, **extra))
    return events


@settings(max_examples=100, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_the_fold_is_deterministic_and_respects_order(
    events: list[dict[str, Any]], rnd: random.Random
) -> None:
    first = fold_tasks(PLAN, events)
    assert fold_tasks(PLAN, copy.deepcopy(events)) == first
    assert fold_tasks(PLAN, iter(events)) == first
    # Events of other kinds interleaved anywhere change nothing.
    noisy = list(events)
    for _ in range(5):
        noisy.insert(rnd.randint(0, len(noisy)), {"type": "tool.completed", "callId": "x"})
    assert fold_tasks(PLAN, noisy) == first
    # A task's events decide its state: those of another task, dropped, change nothing for it.
    only_parser = [e for e in events if e.get("taskId") in (None, "parser")]
    assert fold_tasks(PLAN, only_parser)["parser"] == first["parser"]
    # Once a task's last attempt has ended and nothing for it follows, later events of
    # other tasks leave it as it was: the fold of a prefix is kept.
    for cut in range(len(events) + 1):
        prefix = fold_tasks(PLAN, events[:cut])
        rest = events[cut:]
        for tid in ("explore", "parser"):
            untouched = not any(
                e.get("taskId") == tid or e["type"] == "session.started" for e in rest
            )
            if untouched and prefix[tid].state not in ("queued", "blocked"):
                assert first[tid] == prefix[tid]


# --- the gate -------------------------------------------------------------------------------


def approved(plan: Plan = PLAN) -> PlanState:
    document = PlanDocument(
        session="s", status="approved", approved_sha256=plan_sha256(plan), updated_at="t", plan=plan
    )
    return PlanState(
        "approved", LoadedPlan(Path("/p.plan.json"), document, plan_sha256(plan)), "approved"
    )


def gate(
    group: list[Binding], events: list[dict[str, Any]] | None = None, plan: PlanState | None = None
) -> list[tuple[str, str]]:
    result = check_group(plan or approved(), events or [], group)
    assert result.allowed == (not result.refusals)
    return [(refusal.task, refusal.rule) for refusal in result.refusals]


EX = "executor"


def test_no_plan_blocks_nothing() -> None:
    assert gate([Binding(EX), Binding(EX, "anything")], plan=PlanState("absent")) == []


@pytest.mark.parametrize("standing", ["draft", "diverged", "unconsented", "invalid", "unreadable"])
def test_an_existing_plan_must_be_approved_and_current_for_executors(standing: str) -> None:
    plan = PlanState(standing, None, f"it is {standing}")  # type: ignore[arg-type]
    result = check_group(plan, [], [Binding(EX, "parser"), Binding("explorer")])
    assert [(r.task, r.rule) for r in result.refusals] == [("parser", "plan-not-approved")]
    assert f"it is {standing}" in result.message()
    # A read-only group may help write the plan.
    assert gate([Binding("explorer"), Binding("planner")], plan=plan) == []
    # Approved and current: the same group passes.
    assert gate([Binding(EX, "parser"), Binding("explorer")]) == []


def test_an_unbound_executor_is_refused_naming_the_ready_tasks() -> None:
    result = check_group(approved(), [], [Binding(EX, label="quick fix")])
    assert [(r.task, r.rule) for r in result.refusals] == [("quick fix", "unbound-executor")]
    assert "parser, both, solo, risky" in result.refusals[0].message
    assert gate([Binding("explorer", label="look")]) == []


def test_unknown_ids_and_role_mismatches_are_refused() -> None:
    assert gate([Binding(EX, "ghost")]) == [("ghost", "unknown-task")]
    assert gate([Binding("explorer", "parser")]) == [("parser", "role-mismatch")]
    assert gate([Binding("explorer", "explore")]) == []


def test_group_make_up() -> None:
    assert gate([Binding(EX, "parser"), Binding(EX, "parser")]) == [("parser", "duplicate-binding")]
    done_explore = run("explore", ev("completed", "explore"))
    # after waits for lexer, which waits for explore: a dependency through another task too.
    assert gate([Binding("explorer", "explore"), Binding(EX, "lexer")]) == [
        ("lexer", "dependency-in-group")
    ]
    assert ("after", "dependency-in-group") in gate(
        [Binding("explorer", "explore"), Binding(EX, "after")]
    )
    assert gate([Binding(EX, "lexer")], done_explore) == []
    assert gate([Binding(EX, "solo"), Binding(EX, "parser")]) == [("solo", "must-run-alone")]
    assert gate([Binding(EX, "risky"), Binding("explorer")]) == [("risky", "must-run-alone")]
    assert gate([Binding(EX, "solo")]) == [] and gate([Binding(EX, "risky")]) == []
    assert gate([Binding(EX, "parser"), Binding(EX, "both")]) == [
        ("parser, both", "overlapping-touches")
    ]
    assert gate([Binding(EX, "lexer"), Binding(EX, "parser")], done_explore) == []


def test_task_states() -> None:
    captured = [ev("captured", "parser", files=["src/parser/a"]), ev("completed", "parser")]
    assert gate([Binding(EX, "parser")], run("parser", *captured)) == [
        ("parser", "still-integrating")
    ]
    applied = run("parser", *captured, ev("applied", "parser", applied=["src/parser/a"]))
    assert gate([Binding(EX, "parser")], applied) == [("parser", "already-completed")]
    assert gate([Binding(EX, "parser")], run("parser")) == [("parser", "still-running")]
    # Failed, cancelled and interrupted tasks may run again.
    for end in (
        ev("failed", "parser", reason="e"),
        ev("cancelled", "parser", reason="u"),
        {"type": "session.started"},
    ):
        assert gate([Binding(EX, "parser")], run("parser", end)) == []


def test_the_attempt_ceiling() -> None:
    def failed(n: int) -> list[dict[str, Any]]:
        return [
            e
            for k in range(n)
            for e in run("parser", ev("failed", "parser", group=f"g{k}", reason="e"), group=f"g{k}")
        ]

    assert gate([Binding(EX, "parser")], failed(MAX_FAILURES - 1)) == []
    assert gate([Binding(EX, "parser")], failed(MAX_FAILURES)) == [("parser", "attempts-exhausted")]
    changed = copy.deepcopy(RAW)
    changed["tasks"][2]["intent"] = "another way"
    assert (
        gate([Binding(EX, "parser")], failed(MAX_FAILURES), approved(Plan.model_validate(changed)))
        == []
    )


def test_unmet_dependencies_name_their_state() -> None:
    result = check_group(approved(), run("explore"), [Binding(EX, "lexer")])
    assert [(r.task, r.rule) for r in result.refusals] == [("lexer", "unmet-dependency")]
    assert "explore (running)" in result.refusals[0].message
    # A parent-owned dependency is met.
    assert gate([Binding("reviewer", "uses-mine")]) == []


def test_the_group_is_refused_whole_with_every_rule_named() -> None:
    result = check_group(
        approved(),
        [],
        [Binding(EX, "parser"), Binding(EX, "both"), Binding("planner", "explore")],
    )
    assert not result.allowed
    assert [(r.task, r.rule) for r in result.refusals] == [
        ("explore", "role-mismatch"),
        ("parser, both", "overlapping-touches"),
    ]
    for line in result.message().splitlines()[1:]:
        assert line.startswith("- ") and line.endswith("]")
