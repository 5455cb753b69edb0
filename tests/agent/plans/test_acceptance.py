"""The acceptance state over hand-written event streams: COMPLETE, each kind of blocker, and
the caveats that stay visible when nothing blocks."""

from __future__ import annotations

from typing import Any

from agent.plans.test_review import CRITICAL, EXECUTOR_PLAN, applied, reviewer_round

from ax_agent.acceptance import acceptance_state
from ax_agent.plans.model import Plan, task_sha256

CHECK = {"kind": "test", "project": ".", "scope": ".", "recipeId": "pytest"}
PASSED = {"type": "check.completed", **CHECK, "verdict": "passed", "exitCode": 0}
FAILED = {"type": "check.completed", **CHECK, "verdict": "failed", "exitCode": 1}
STARTED = {"type": "check.started", **CHECK}
CHANGE = {"type": "file.mutated", "path": "src/a.py"}
DONE = {"type": "turn.completed", "stopReason": "end_turn"}


def test_nothing_done_and_a_checked_change_are_complete() -> None:
    assert acceptance_state(None, []).complete
    state = acceptance_state(None, [CHANGE, STARTED, PASSED, DONE])
    assert state.complete and state.lines() == ["COMPLETE"]


def test_an_interrupted_turn_blocks() -> None:
    state = acceptance_state(None, [{"type": "turn.aborted", "phase": "tool"}])
    assert state.blockers == ("the last turn was interrupted (tool)",)


def test_a_change_checked_only_by_a_run_started_before_it_is_unchecked() -> None:
    state = acceptance_state(None, [STARTED, CHANGE, PASSED, DONE])
    assert "files changed with no passing check" in state.blockers[0]


def test_a_targeted_run_checks_only_its_scope() -> None:
    targeted = {**CHECK, "kind": "test-targeted", "scope": ["tests/test_b.py"]}
    run = [{"type": "check.started", **targeted},
           {"type": "check.completed", **targeted, "verdict": "passed", "exitCode": 0}]  # fmt: skip
    state = acceptance_state(None, [CHANGE, *run, DONE])
    assert state.blockers and "src/a.py" in state.blockers[0]


def test_a_forged_pass_is_no_check_and_a_caveat() -> None:
    state = acceptance_state(None, [CHANGE, PASSED, DONE])
    assert not state.complete
    assert any("no check.started" in caveat for caveat in state.caveats)


def test_an_open_repair_blocks_and_a_dismissed_one_is_a_caveat() -> None:
    failing = [STARTED, FAILED, DONE]
    state = acceptance_state(None, failing)
    assert any(b.startswith("repair 1.") for b in state.blockers)
    from ax_agent.recovery.ledger import repair_ledger

    signature = repair_ledger(failing).repairs[0].diagnosis.signature
    dismissal = {"type": "repair.dismissed", "number": 1, "signature": signature, "reason": "flaky"}
    state = acceptance_state(None, [*failing, dismissal])
    assert state.complete and any("DISMISSED" in c for c in state.caveats)


def test_a_plan_problem_and_unfinished_tasks_block() -> None:
    state = acceptance_state(EXECUTOR_PLAN, [DONE], plan_problem="the plan is a draft")
    assert "plan: the plan is a draft" in state.blockers
    assert "task impl is queued" in state.blockers and "task look is blocked" in state.blockers


def _review_done(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Bound to the plan's tasks (their definition sha), as delegate_task records them.
    shas = {task.id: task_sha256(task) for task in EXECUTOR_PLAN.tasks}
    events = [*applied(), STARTED, PASSED, *reviewer_round("g-r1", findings), DONE]
    return [
        {**e, "definitionSha256": shas[e["taskId"]]} if e["type"] == "task.started" else e
        for e in events
    ]


def test_a_reviewed_executor_plan_is_complete_and_an_untriaged_finding_blocks() -> None:
    assert acceptance_state(EXECUTOR_PLAN, _review_done([])).blockers == ()
    state = acceptance_state(EXECUTOR_PLAN, _review_done([CRITICAL]))
    assert any("[critical]" in b for b in state.blockers)
    refuted = {"type": "review.triaged", "finding": "g-r1/look/1", "action": "refute",
               "reason": "it is checked upstream"}  # fmt: skip
    state = acceptance_state(EXECUTOR_PLAN, [*_review_done([CRITICAL]), refuted])
    assert state.complete and any("UNVERIFIED MODEL CLAIM" in c for c in state.caveats)


def test_a_verification_gate_blocks_its_task() -> None:
    plan = Plan.model_validate({"tasks": [{"id": "p", "title": "Do", "role": "parent",
                                           "checks": ["lint"]}]})  # fmt: skip
    state = acceptance_state(plan, [{"type": "plan.approved", "sha256": "0" * 64}, CHANGE, DONE])
    assert any(b.startswith("task p: lint") for b in state.blockers)


def test_completion_gates_must_pass_after_the_last_change() -> None:
    plan = Plan.model_validate({"tasks": [{"id": "p", "title": "Do", "role": "parent"}],
                                "gates": {"completion": ["test"]}})  # fmt: skip
    state = acceptance_state(plan, [STARTED, PASSED, CHANGE, DONE])
    assert any(b.startswith("completion gate: test") for b in state.blockers)
    assert acceptance_state(plan, [CHANGE, STARTED, PASSED, DONE]).complete


def test_web_research_and_advisory_findings_are_caveats() -> None:
    inspected = reviewer_round("g-i", [CRITICAL], task="inspect", role="inspector")
    events = [{"type": "research.fetched", "url": "https://example.org"}, *inspected, DONE]
    state = acceptance_state(None, events)
    assert state.complete
    assert any("web research was consulted" in c for c in state.caveats)
    assert any(c.startswith("advisory (inspector)") for c in state.caveats)
