"""The verification gate: the fold over hand-written event streams, rule by rule, and the
forged events that try to launder a blocker (each refused by the gate and by the fold)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ax_agent.plans.model import Plan, PlanDocument, canonical_json, plan_sha256, task_sha256
from ax_agent.plans.store import LoadedPlan, PlanState
from ax_agent.plans.validate import plan_problems
from ax_agent.tasks.fold import fold_tasks
from ax_agent.tasks.gate import Binding, check_group
from ax_agent.tasks.verify import check_runs


def make_plan(
    checks: list[str] | None = None,
    touches: list[str] | None = None,
    projects: list[str] | None = None,
    role: str = "executor",
    integration: list[str] | None = None,
) -> Plan:
    return Plan.model_validate(
        {
            "tasks": [
                {
                    "id": "lexer",
                    "title": "L",
                    "role": role,
                    "touches": touches if touches is not None else ["src/lexer"],
                    "checks": checks if checks is not None else ["test"],
                },
                {
                    "id": "parser",
                    "title": "P",
                    "role": "executor",
                    "dependsOn": ["lexer"],
                    "touches": ["src/parser"],
                },
            ],
            "gates": {"projects": projects or [], "integration": integration or []},
        }
    )


PLAN = make_plan()


def task(kind: str, plan: Plan = PLAN, group: str = "g1", **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": f"task.{kind}", "group": group, "taskId": "lexer", **fields}
    if kind == "started":
        lexer = plan.tasks[0]
        event.update(role=lexer.role, definitionSha256=task_sha256(lexer))
    return event


def integrated(plan: Plan = PLAN, group: str = "g1") -> list[dict[str, Any]]:
    """lexer ran as an executor, completed, and its capture was applied."""
    return [
        task("started", plan, group),
        task("captured", plan, group, files=["src/lexer/a.py"]),
        task("completed", plan, group),
        task("applied", plan, group, applied=["src/lexer/a.py"]),
    ]


def started(kind: str = "test", project: str = ".", scope: Any = ".") -> dict[str, Any]:
    return {"type": "check.started", "kind": kind, "project": project, "scope": scope,
            "recipeId": f"python.pytest@{project}"}  # fmt: skip


def completed(
    verdict: str = "passed",
    kind: str = "test",
    project: str = ".",
    scope: Any = ".",
    reason: str | None = None,
    signals: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    exited = verdict in ("passed", "failed", "modified")
    return {
        **started(kind, project, scope),
        "type": "check.completed",
        "verdict": verdict,
        "exitCode": (0 if verdict in ("passed", "modified") else 1) if exited else None,
        "termination": "exited" if exited else None,
        "reason": reason,
        "signals": signals or [],
    }


def check(verdict: str = "passed", **fields: Any) -> list[dict[str, Any]]:
    """A genuine run: its start, then its result."""
    start_fields = {k: v for k, v in fields.items() if k in ("kind", "project", "scope")}
    return [started(**start_fields), completed(verdict, **fields)]


def approved(plan: Plan) -> PlanState:
    document = PlanDocument(
        session="s", status="approved", approved_sha256=plan_sha256(plan), updated_at="t", plan=plan
    )
    return PlanState(
        "approved", LoadedPlan(Path("/p.plan.json"), document, plan_sha256(plan)), "approved"
    )


def verdict(events: list[dict[str, Any]], plan: Plan = PLAN) -> tuple[str, str, list[str]]:
    """(lexer's verification status, parser's state, the gate's refusals of parser): the fold
    and the gate must agree on every stream."""
    views = fold_tasks(plan, events)
    verification = views["lexer"].verification
    assert verification is not None
    result = check_group(approved(plan), events, [Binding("executor", "parser")])
    refusals = [refusal.text() for refusal in result.refusals]
    assert (views["parser"].state == "queued") == result.allowed
    return verification.status, views["parser"].state, refusals


# --- the gate's predicate ------------------------------------------------------------------


def test_a_task_without_declared_checks_gates_nothing() -> None:
    plan = make_plan(checks=[])
    assert verdict(integrated(plan), plan) == ("none", "queued", [])


def test_a_completed_task_whose_check_never_ran_blocks_its_dependent_naming_the_kind() -> None:
    status, state, refusals = verdict(integrated())
    assert (status, state) == ("pending", "blocked")
    assert "lexer (completed, verification pending: test: no run after" in refusals[0]
    assert "[unmet-dependency]" in refusals[0]
    waiting = fold_tasks(PLAN, integrated())["parser"].waiting_on
    assert waiting["lexer"].startswith("completed, verification pending: test")


def test_a_pass_after_the_apply_makes_it_green_and_the_dependent_may_start() -> None:
    assert verdict(integrated() + check("passed")) == ("green", "queued", [])


def test_the_newest_run_is_the_workspace_standing() -> None:
    assert verdict(integrated() + check("failed") + check("passed"))[0] == "green"
    status, _, refusals = verdict(integrated() + check("passed") + check("failed"))
    assert status == "pending"
    assert "test in unit .: failed (exit code 1)" in refusals[0]


def test_a_gate_refusal_carries_the_failing_runs_diagnosis() -> None:
    signal = [{"name": "test-failed", "detail": "tests/test_lexer.py::test_tokens"}]
    _, _, refusals = verdict(integrated() + check("failed", signals=signal))
    text = refusals[0]
    assert "diagnosis: test-assertion" in text
    assert "evidence: test-failed: tests/test_lexer.py::test_tokens" in text
    assert "a repair is proven by: test passing again" in text


def test_an_unfinished_dependency_is_waited_for_by_state_not_verification() -> None:
    events = integrated()[:2]
    assert verdict(events)[1:] == (
        "blocked",
        ["parser: it waits for lexer (running) [unmet-dependency]"],
    )


def test_a_parent_owned_dependency_never_blocks_but_its_verification_is_derived() -> None:
    plan = make_plan(role="parent")
    events: list[dict[str, Any]] = [
        {"type": "file.mutated", "path": "src/lexer/a.py"},
        *check("failed"),
    ]
    assert verdict(events, plan) == ("pending", "queued", [])
    # Its anchor is the parent's newest workspace change: a pass before it proves nothing.
    assert verdict([*check("passed"), events[0]], plan)[0] == "pending"
    assert verdict([events[0], *check("passed")], plan)[0] == "green"


def test_the_plans_integration_gate_is_declared_for_executors() -> None:
    plan = make_plan(checks=[], integration=["lint"])
    assert verdict(integrated(plan), plan)[0] == "pending"
    assert verdict(integrated(plan) + check("passed", kind="lint"), plan)[0] == "green"


# --- forged events -------------------------------------------------------------------------


def test_forged_a_completed_pass_with_no_start_proves_nothing() -> None:
    events = [*integrated(), completed("passed")]
    assert verdict(events)[:2] == ("pending", "blocked")
    assert [f.why for f in check_runs(events).forged] == [
        "a check.completed with no check.started before it"
    ]


def test_forged_a_start_from_an_old_process_cannot_be_completed_later() -> None:
    events = [*integrated(), started(), {"type": "session.started"}, completed("passed")]
    assert verdict(events)[0] == "pending"


def test_forged_a_start_is_consumed_once() -> None:
    events = [*integrated(), *check("failed"), completed("passed")]
    assert verdict(events)[0] == "pending"


def test_forged_a_check_before_the_anchor_proves_nothing() -> None:
    events = integrated()
    assert verdict([*events[:3], *check("passed"), events[3]])[0] == "pending"
    # A run that started before the apply and was judged after it did not test the work.
    assert verdict([*events[:3], started(), events[3], completed("passed")])[0] == "pending"


def test_a_failed_attempts_capture_applied_later_moves_the_anchor() -> None:
    first = [
        task("started", group="g1"),
        task("captured", group="g1", files=["src/lexer/a.py"]),
        task("failed", group="g1", reason="budget"),
    ]
    second = integrated(group="g2")
    late_apply = task("applied", group="g1", applied=["src/lexer/b.py"])
    assert verdict([*first, *second, *check("passed")])[0] == "green"
    assert verdict([*first, *second, *check("passed"), late_apply])[0] == "pending"
    assert verdict([*first, *second, late_apply, *check("passed")])[0] == "green"


def test_forged_a_targeted_run_whose_scope_does_not_overlap_the_touches() -> None:
    plan = make_plan(checks=["test-targeted"])
    elsewhere = check("passed", kind="test-targeted", scope=["tests/test_parser.py::test_x"])
    assert verdict(integrated(plan) + elsewhere, plan)[0] == "pending"
    inside = check("passed", kind="test-targeted", scope=["src/lexer/test_a.py::test_x"])
    assert verdict(integrated(plan) + inside, plan)[0] == "green"
    # A task that touches nothing can never be proven by a targeted run.
    bare = make_plan(checks=["test-targeted"], touches=[], role="explorer")
    events = [task("started", bare), task("completed", bare)]
    assert verdict(events + inside, bare)[0] == "pending"


def test_every_targeted_scope_must_be_green_not_only_the_newest() -> None:
    plan = make_plan(checks=["test-targeted"])
    red = check("failed", kind="test-targeted", scope=["src/lexer/test_a.py"])
    green = check("passed", kind="test-targeted", scope=["src/lexer/test_b.py"])
    assert verdict(integrated(plan) + red + green, plan)[0] == "pending"


# --- waivers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("no-recipe", "green"),
        ("precondition", "green"),
        ("toolchain-unavailable", "green"),
        ("bad-request", "pending"),
        ("precondition-curable", "pending"),
    ],
)
def test_an_unsupported_result_waives_only_for_a_capability_reason(
    reason: str, status: str
) -> None:
    events = [*integrated(), completed("unsupported", reason=reason)]
    assert verdict(events)[0] == status


def test_a_toolchain_waiver_is_loud_and_names_the_toolchain() -> None:
    missing = [{"name": "toolchain-unavailable", "detail": "cargo is not on PATH"}]
    events = [
        *integrated(),
        completed("unsupported", reason="toolchain-unavailable", signals=missing),
    ]
    verification = fold_tasks(PLAN, events)["lexer"].verification
    assert verification is not None and verification.status == "green"
    assert verification.caveats() == [
        "test in unit .: WAIVED, the machine lacks a toolchain: cargo is not on PATH"
    ]
    quiet = [*integrated(), completed("unsupported", reason="no-recipe")]
    assert fold_tasks(PLAN, quiet)["lexer"].verification.caveats() == []  # type: ignore[union-attr]


def test_a_curable_precondition_names_why_it_never_waives() -> None:
    events = [*integrated(), completed("unsupported", reason="precondition-curable")]
    text = verdict(events)[2][0]
    assert "test in unit .: unsupported (precondition-curable), which never waives a gate" in text
    assert "diagnosis: dependency-setup" in text


# --- project units -------------------------------------------------------------------------


def test_with_named_units_every_unit_must_pass_and_the_blocker_names_the_missing_one() -> None:
    plan = make_plan(projects=["apps/a", "apps/b"])
    only_a = integrated(plan) + check("passed", project="apps/a", scope="apps/a")
    _, _, refusals = verdict(only_a, plan)
    assert "test in unit apps/b: no run after the task's work was integrated" in refusals[0]
    assert "apps/a" not in refusals[0]
    both = only_a + check("unsupported", project="apps/b", scope="apps/b", reason="no-recipe")
    assert verdict(both, plan)[0] == "green"
    # A run in a unit the gates do not name counts for nothing.
    other = integrated(plan) + check("passed", project="apps/c", scope="apps/c")
    assert verdict(other, plan)[0] == "pending"


def test_without_named_units_every_unit_that_ran_must_pass() -> None:
    events = (
        integrated()
        + check("failed", project="apps/x", scope="apps/x")
        + check("passed", project="apps/y", scope="apps/y")
    )
    _, _, refusals = verdict(events)
    assert "test in unit apps/x: failed" in refusals[0]


# --- the plan's new field ------------------------------------------------------------------


def test_plans_without_gate_projects_keep_the_hash_they_were_approved_at() -> None:
    plan = make_plan()
    content = plan.model_dump(mode="json", by_alias=True)
    old = {
        "goal": content["goal"],
        "gates": {"completion": [], "integration": []},
        "review": content["review"],
        "tasks": sorted(
            (
                {
                    k: (sorted(v) if isinstance(v, list) else v)
                    for k, v in t.items()
                    if k != "status"
                }
                for t in content["tasks"]
            ),
            key=lambda t: canonical_json([t["id"], t]),
        ),
    }
    assert plan_sha256(plan) == hashlib.sha256(canonical_json(old)).hexdigest()
    assert plan_sha256(make_plan(projects=["apps/a"])) != plan_sha256(plan)


def test_gate_projects_are_contained_workspace_relative_units(tmp_path: Path) -> None:
    from ax_agent.plans.validate import plan_problems

    assert plan_problems(make_plan(projects=["apps/a", "."]), tmp_path) == []
    problems = plan_problems(make_plan(projects=["../elsewhere", "/abs"]), tmp_path)
    assert [p.split(" ", 4)[:4] for p in problems] == [
        ["the", "gates'", "project", "'../elsewhere'"],
        ["the", "gates'", "project", "'/abs'"],
    ]
    many = make_plan(projects=[f"u{n}" for n in range(40)])
    assert plan_problems(many, tmp_path) == ["the gates name 40 projects, more than 32"]


# --- browser flows -------------------------------------------------------------------------


def browser_run(result: Any) -> list[dict[str, Any]]:
    """A flow's evidence exactly as ax-check records it: its start, then its result."""
    from ax_check.browser import completed_event, started_event

    return [started_event(), completed_event(result, "f" * 64)]


def test_a_browser_gate_is_satisfied_by_a_flow_pass_and_blocked_by_a_failure() -> None:
    from ax_check.flow import FlowFailure, FlowResult

    plan = make_plan(checks=["browser"])
    assert not plan_problems(plan, Path("/ws"))
    passed = FlowResult(verdict="passed", origin="http://127.0.0.1:1")
    failure = FlowFailure(failure_class="assertion", step=2, message="expect_text did not hold")
    failed = FlowResult(verdict="failed", origin="http://127.0.0.1:1", failure=failure)
    assert verdict(integrated(plan) + browser_run(passed), plan) == ("green", "queued", [])
    status, state, refusals = verdict(integrated(plan) + browser_run(failed), plan)
    assert (status, state) == ("pending", "blocked")
    assert (
        "browser in unit .: failed (browser-assertion: step 2: expect_text did not hold)"
        in (refusals[0])
    )
    # A browser pass is no test run: a gate naming test stays unmet.
    tests = make_plan(checks=["test"])
    assert verdict(integrated(tests) + browser_run(passed), tests)[0] == "pending"


def test_no_chromium_waives_a_browser_gate_loudly_naming_the_package() -> None:
    from ax_check.browser import completed_event
    from ax_check.flow import FlowResult
    from ax_exec import chromium_unavailable

    plan = make_plan(checks=["browser"])
    missing = chromium_unavailable()
    result = FlowResult(
        verdict="unsupported", reason="toolchain-unavailable", message=missing.message
    )
    events = [*integrated(plan), completed_event(result, None)]
    verification = fold_tasks(plan, events)["lexer"].verification
    assert verification is not None and verification.status == "green"
    (caveat,) = verification.caveats()
    assert caveat.startswith("browser in unit .: WAIVED, the machine lacks a toolchain: no ")
    assert "chromium" in caveat


def test_a_browser_gate_in_named_units_counts_the_preview_of_that_unit() -> None:
    from ax_check.browser import completed_event, started_event
    from ax_check.flow import FlowResult

    plan = make_plan(checks=["browser"], projects=["web"])
    passed = FlowResult(verdict="passed", origin="http://127.0.0.1:1")
    root = [started_event("."), completed_event(passed, "f" * 64, ".")]
    web = [started_event("web"), completed_event(passed, "f" * 64, "web")]
    status, _, refusals = verdict(integrated(plan) + root, plan)
    assert status == "pending" and "browser in unit web: no run" in refusals[0]
    assert verdict(integrated(plan) + root + web, plan)[0] == "green"
