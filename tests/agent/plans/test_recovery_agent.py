"""Typed recovery and the verification gate through a real session: the script provider
stands in for the model, ax-check runs pytest on a tiny Python project for real.

Delegation (``delegate_task``, issue 21) is not in main yet, so the two-task plan's
dependency is bound by hand-recorded task events (``task.started`` … ``task.applied``,
what delegation will record), and the gate is asked as delegate_task will ask it
(``check_group``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from agent.terminal.test_units import make
from agenttest import ScriptedApprover, call, events_of, of_type, open_session, write_script

from ax_agent.loop import run_turn
from ax_agent.plans.model import task_sha256
from ax_agent.plans.store import plan_state
from ax_agent.recovery.ledger import repair_ledger
from ax_agent.session import Session
from ax_agent.tasks.fold import fold_tasks
from ax_agent.tasks.gate import Binding, check_group
from ax_agent.terminal import commands
from ax_agent.tools.registry import all_tools

BROKEN = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def project(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Python project whose test check runs this interpreter's pytest; sub is wrong."""
    (workspace / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    )
    (workspace / "calc.py").write_text(BROKEN)
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_calc.py").write_text(
        "from calc import add, sub\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    assert sub(5, 3) == 2\n"
    )
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return workspace


def session_for(workspace: Path, tmp_path: Path, turns: list[dict[str, Any]]) -> Session:
    script = write_script(tmp_path / "s.json", turns)
    # Each check asks where no sandbox can be enforced; the person answers yes.
    approver = ScriptedApprover(["once"] * 10)
    return open_session(workspace, script, tools=all_tools(), approver=approver)


def command(session: Session, line: str) -> str:
    screen, _, err = make(tty=False)
    context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]
    assert commands.run_line(context, line) is None
    return str(err.getvalue())


def results(events: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in of_type(events, "tool.completed") if "check:" in e["content"]]


def test_a_failing_test_is_diagnosed_and_its_repair_proven_by_the_regression_check(
    project: Path, tmp_path: Path
) -> None:
    turns = [
        {"toolCalls": [call("run_check", kind="test")]},
        {"toolCalls": [call("write_file", path="calc.py", content=FIXED)]},
        {"toolCalls": [call("run_check", kind="test")]},
        {"text": "fixed"},
    ]
    session = session_for(project, tmp_path, turns)
    run_turn(session, "make the tests pass")
    events = events_of(session)
    failing, passing = results(events)
    assert failing.startswith("test check: FAILED (exit code 1)")
    assert "diagnosis: test-assertion" in failing
    assert "evidence: test-failed: tests/test_calc.py::test_sub" in failing
    assert "repair ledger: item 1, try 1 of 2 on this failure" in failing
    assert passing.startswith("test check: PASSED") and "diagnosis" not in passing
    [repair] = repair_ledger(events).repairs
    assert (repair.number, repair.diagnosis.name, repair.status) == (
        1,
        "test-assertion",
        "succeeded",
    )
    passed_at = [i for i, e in enumerate(events, 1) if e["type"] == "check.completed"][-1]
    assert repair.proof == (f"test passed at event {passed_at}",)
    shown = command(session, "/repair")
    assert "1. test-assertion: test check - succeeded" in shown
    assert f"proof: test passed at event {passed_at}" in shown


@pytest.mark.slow
def test_the_same_failure_spends_the_budget_then_the_person_dismisses_it(
    project: Path, tmp_path: Path
) -> None:
    check = {"toolCalls": [call("run_check", kind="test")]}
    session = session_for(project, tmp_path, [check, check, check, {"text": "it still fails"}])
    run_turn(session, "run the tests")
    first, second, third = results(events_of(session))
    assert "repair ledger: item 1, try 1 of 2 on this failure" in first
    assert "repair ledger: item 2, try 2 of 2 on this failure" in second
    assert (
        "repair ledger: item 3, failure 3 of this signature: the budget of tries is spent" in third
    )
    ledger = repair_ledger(events_of(session))
    assert [r.status for r in ledger.repairs] == ["superseded", "superseded", "open"]
    assert ledger.repairs[-1].escalation
    assert ledger.blockers()[0].startswith(
        "repair 3. test-assertion: test check - OPEN ESCALATION (failure 3 of this signature"
    )
    refused = command(session, "/repair dismiss 1 superseded already")
    assert "repair 1 is superseded; only an open one can be dismissed" in refused
    said = command(session, "/repair dismiss 3 the sub bug is tracked upstream")
    assert "Dismissed repair 3 (test-assertion)" in said
    events = events_of(session)
    [dismissed] = of_type(events, "repair.dismissed")
    assert (dismissed["number"], dismissed["reason"]) == (3, "the sub bug is tracked upstream")
    ledger = repair_ledger(events)
    assert ledger.blockers() == []
    assert ledger.caveats() == [
        "repair 3. test-assertion: test check - DISMISSED by the person: the sub bug is tracked "
        "upstream [test-failed: tests/test_calc.py::test_sub]"
    ]
    assert "only an open one can be dismissed" in command(session, "/repair dismiss 3 again")
    assert "there is no repair 4 (open: none)" in command(session, "/repair dismiss 4 what")
    assert len(of_type(events_of(session), "repair.dismissed")) == 1


PLAN: dict[str, Any] = {
    "goal": "Fix the calculator",
    "tasks": [
        {"id": "fix-sub", "title": "Fix sub", "role": "executor", "touches": ["calc.py"],
         "checks": ["test"]},
        {"id": "docs", "title": "Document it", "role": "executor", "depends_on": ["fix-sub"],
         "touches": ["docs"]},
    ],
}  # fmt: skip


def test_a_dependent_is_refused_while_its_dependencys_test_is_red_and_allowed_after_green(
    project: Path, tmp_path: Path
) -> None:
    turns = [
        {"toolCalls": [call("plan_write", **PLAN)]},
        {"text": "planned"},
        {"toolCalls": [call("run_check", kind="test")]},
        {"text": "red"},
        {"toolCalls": [call("write_file", path="calc.py", content=FIXED)]},
        {"toolCalls": [call("run_check", kind="test")]},
        {"text": "green"},
    ]
    session = session_for(project, tmp_path, turns)
    run_turn(session, "plan it")
    assert "Approved the plan" in command(session, "/plan approve")
    state = plan_state(session.layout, session.id, events_of(session))
    assert state.loaded is not None
    fix_sub = state.loaded.plan.tasks[0]
    # What delegate_task will record for an executor whose capture was applied.
    binding = {"group": "g1", "taskId": "fix-sub"}
    session.record(
        {"type": "task.started", **binding, "role": "executor",
         "definitionSha256": task_sha256(fix_sub)},
        {"type": "task.captured", **binding, "files": ["calc.py"]},
        {"type": "task.completed", **binding},
        {"type": "task.applied", **binding, "applied": ["calc.py"]},
    )  # fmt: skip
    dependent = [Binding("executor", "docs")]

    run_turn(session, "run the tests")
    events = events_of(session)
    refused = check_group(plan_state(session.layout, session.id, events), events, dependent)
    assert not refused.allowed
    text = refused.message()
    assert "docs: it waits for fix-sub (completed, verification pending: test in unit .: " in text
    assert "failed (exit code 1)) [unmet-dependency]" in text
    assert "fix-sub: diagnosis: test-assertion" in text
    assert fold_tasks(state.loaded.plan, events)["docs"].state == "blocked"
    shown = command(session, "/plan")
    assert "  - verification pending: test in unit .: failed (exit code 1)" in shown
    assert "waits for: fix-sub (completed, verification pending: test in unit ." in shown

    run_turn(session, "fix it")
    events = events_of(session)
    allowed = check_group(plan_state(session.layout, session.id, events), events, dependent)
    assert allowed.allowed, allowed.message()
    assert fold_tasks(state.loaded.plan, events)["docs"].state == "queued"
    assert "  - verification green" in command(session, "/plan")
