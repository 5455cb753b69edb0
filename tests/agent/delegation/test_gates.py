"""The gates of issue 22 through the real ``delegate_task``: the verification gate holding a
dependent back while its dependency's test is red, a review round of real reviewer
children triaged by the parent, and the review round cap refusing a third reviewer group.

Everything is real but the models: the parent and every child are driven by the script
provider (the parent's turns are the script's ``turns``, each task's ``tasks[<key>]``),
executors run in real git worktrees, and ``run_check`` runs ax-check's ``test`` kind
(this interpreter's pytest) on a tiny real project whose ``sub`` is wrong.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from agent.terminal.test_units import make
from agenttest import YesApprover, call, events_of, of_type, open_session, write_script
from axtest import CliRunner
from checkpointgit import make_repo, needs_git

from ax_agent.loop import run_turn
from ax_agent.plans.store import plan_state
from ax_agent.providers.script import Script, ScriptProvider
from ax_agent.session import Session
from ax_agent.tasks.fold import fold_tasks
from ax_agent.tasks.review import review_state
from ax_agent.terminal import commands

pytestmark = needs_git

BROKEN = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
# A fix that is no fix: the dependency completes, its test stays red.
WRONG = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return b - a\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TYPED = (
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\n"
    "def sub(a: int, b: int) -> int:\n    return a - b\n"
)
TEST = (
    "from calc import add, sub\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n"
)


@pytest.fixture
def project(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository of a Python project whose ``test`` check runs this pytest."""
    make_repo(
        workspace,
        {
            "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
            '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            ".gitignore": ".pytest_cache/\n__pycache__/\n",
            "calc.py": BROKEN,
            "tests/test_calc.py": TEST,
        },
    )
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return workspace


def _script_file(tmp_path: Path, script: dict[str, Any]) -> Path:
    path = write_script(tmp_path / "script.json", script["turns"])
    data = json.loads(path.read_text())
    data["tasks"] = script.get("tasks", {})
    path.write_text(json.dumps(data))
    return path


def _parent(
    workspace: Path, tmp_path: Path, script: dict[str, Any], approver: YesApprover
) -> Session:
    return open_session(workspace, _script_file(tmp_path, script), approver=approver)


def _rescript(parent: Session, script: dict[str, Any]) -> None:
    """The parent's next turns (and its tasks'), once the log names what they must say."""
    parent.provider = ScriptProvider(
        Script.model_validate({"model": "scripted", **script}), source="test"
    )


def _approved_plan(parent: Session, tasks: list[dict[str, Any]]) -> None:
    from ax_agent.plans.actions import approve
    from ax_agent.plans.model import Plan
    from ax_agent.plans.store import write_plan

    write_plan(parent.layout, parent.id, Plan.model_validate({"tasks": tasks}))
    approve(parent.layout, parent.id, parent.record, "test")


def _command(session: Session, line: str) -> str:
    screen, _, err = make(tty=False)
    context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]
    assert commands.run_line(context, line) is None
    return str(err.getvalue())


def _delegate(*tasks: dict[str, Any]) -> dict[str, Any]:
    return call("delegate_task", tasks=list(tasks))


def _results(events: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    """Each ``tool.completed`` of ``tool``, in order."""
    # In log order: a rescripted parent numbers its calls' ids from 1 again.
    names: dict[str, str] = {}
    found = []
    for event in events:
        if event["type"] == "tool.requested":
            names[event["callId"]] = event["tool"]
        elif event["type"] == "tool.completed" and names.get(event["callId"]) == tool:
            found.append(event)
    return found


def _delegate_asks(approver: YesApprover) -> int:
    return sum(1 for request in approver.asked if request.tool == "delegate_task")


GATED_PLAN = [
    {"id": "fix-sub", "title": "Fix sub", "role": "executor", "touches": ["calc.py"],
     "checks": ["test"]},
    {"id": "docs", "title": "Document calc", "role": "executor", "depends_on": ["fix-sub"],
     "touches": ["docs"]},
]  # fmt: skip


@pytest.mark.slow
def test_a_dependent_is_refused_while_its_dependencys_test_is_red_and_spawned_after_green(
    project: Path, tmp_path: Path
) -> None:
    fix_sub = {"role": "executor", "task_id": "fix-sub", "prompt": "Fix sub in calc.py"}
    docs = {"role": "executor", "task_id": "docs", "prompt": "Document calc"}
    script = {
        "turns": [
            {"tool_calls": [_delegate(fix_sub)]},
            {"text": "delegated", "expect": "fix-sub: completed"},
            {"tool_calls": [call("apply_task_changes", task="fix-sub", files=["calc.py"])]},
            {"tool_calls": [call("run_check", kind="test")], "expect": "calc.py"},
            {"tool_calls": [_delegate(docs)], "expect": "test check: FAILED"},
            {"text": "refused while red", "expect": "[unmet-dependency]"},
            {"tool_calls": [call("write_file", path="calc.py", content=FIXED)]},
            {"tool_calls": [call("run_check", kind="test")]},
            {"tool_calls": [_delegate(docs)], "expect": "test check: PASSED"},
            {"text": "documented", "expect": "docs: completed"},
        ],
        "tasks": {
            "fix-sub": [
                {"tool_calls": [call("write_file", path="calc.py", content=WRONG)]},
                {"text": "sub fixed"},
            ],
            "docs": [
                {"tool_calls": [call("write_file", path="docs/calc.md", content="# calc\n")]},
                {"text": "documented"},
            ],
        },
    }
    approver = YesApprover()
    parent = _parent(project, tmp_path, script, approver)
    _approved_plan(parent, GATED_PLAN)

    assert run_turn(parent, "fix sub").text == "delegated"
    asked = _delegate_asks(approver)
    assert run_turn(parent, "apply it, test it, then document it").text == "refused while red"
    events = events_of(parent)
    # The dependency completed and its work was applied: only its red test holds docs back.
    [_, refused] = _results(events, "delegate_task")
    assert not refused["ok"]
    text = refused["content"]
    assert text.startswith("the group was refused, nothing was spawned (1 problem(s)):")
    assert "docs: it waits for fix-sub (completed, verification pending: test in unit .: " in text
    assert "failed (exit code 1)) [unmet-dependency]" in text
    assert "fix-sub: diagnosis: test-assertion" in text
    # Refused before the policy's question and before anything was spawned or checked out.
    assert _delegate_asks(approver) == asked
    assert [e["taskId"] for e in of_type(events, "task.started")] == ["fix-sub"]
    assert len([e for e in of_type(events, "checkpoint.created") if e["kind"] == "task-base"]) == 1
    state = plan_state(parent.layout, parent.id, events)
    assert state.loaded is not None
    views = fold_tasks(state.loaded.plan, events)
    assert (views["fix-sub"].state, views["docs"].state) == ("completed", "blocked")

    assert run_turn(parent, "fix it and try again").text == "documented"
    events = events_of(parent)
    delegated = _results(events, "delegate_task")
    assert [e["ok"] for e in delegated] == [True, False, True]
    assert [e["taskId"] for e in of_type(events, "task.started")] == ["fix-sub", "docs"]
    views = fold_tasks(state.loaded.plan, events)
    assert views["fix-sub"].verification is not None
    assert views["fix-sub"].verification.status == "green"
    assert views["docs"].state == "integrating"
    # The green run counts because it started after the dependency's work was applied.
    applied = next(i for i, e in enumerate(events, 1) if e["type"] == "task.applied")
    assert views["fix-sub"].verification.anchor == applied
    parent.end("done")


REVIEWED_PLAN = [
    {"id": "impl", "title": "Fix sub", "role": "executor", "touches": ["calc.py"],
     "checks": ["test"]},
    {"id": "look", "title": "Review calc", "role": "reviewer", "depends_on": ["impl"]},
]  # fmt: skip
CRITICAL = "sub overflows on large numbers"
REFUTED = "Python integers do not overflow; sub(10**30, 1) is exact"


@pytest.mark.slow
def test_a_review_round_of_real_reviewers_is_triaged_by_the_parent_and_then_clears(
    project: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    from ax_report.cli import main as report_main

    impl = {"role": "executor", "task_id": "impl", "prompt": "Fix sub in calc.py"}
    look = {"role": "reviewer", "task_id": "look", "prompt": "Review calc.py"}
    findings = [
        call("report_finding", severity="critical", path="calc.py", line=6, title=CRITICAL),
        call("report_finding", severity="high", path="calc.py", title="no type annotations"),
    ]
    script = {
        "turns": [
            {"tool_calls": [_delegate(impl)]},
            {"tool_calls": [call("apply_task_changes", task="impl", files=["calc.py"])]},
            {"tool_calls": [call("run_check", kind="test")]},
            {"tool_calls": [_delegate(look)], "expect": "test check: PASSED"},
            # The digest's head names each finding as triage_finding takes it.
            {"text": "reviewed", "expect": f"/look/1 [critical] calc.py:6: {CRITICAL}"},
        ],
        "tasks": {
            "impl": [
                {"tool_calls": [call("write_file", path="calc.py", content=FIXED)]},
                {"text": "sub fixed"},
            ],
            "look": [{"tool_calls": findings}, {"text": "two findings"}],
        },
    }
    parent = _parent(project, tmp_path, script, YesApprover())
    _approved_plan(parent, REVIEWED_PLAN)
    assert run_turn(parent, "fix sub, test it, have it reviewed").text == "reviewed"
    events = events_of(parent)
    reported = of_type(events, "review.finding")
    assert [(e["taskId"], e["number"], e["severity"]) for e in reported] == [
        ("look", 1, "critical"),
        ("look", 2, "high"),
    ]
    group = reported[0]["group"]
    first, second = f"{group}/look/1", f"{group}/look/2"
    [digest] = [e["content"] for e in _results(events, "delegate_task") if "look:" in e["content"]]
    head = digest.split("\n\n", 1)[0]
    assert f"review finding {first} [critical] calc.py:6: {CRITICAL}" in head.splitlines()
    assert f"review finding {second} [high] calc.py: no type annotations" in head.splitlines()
    blocked = _command(parent, "/accept")
    assert f"  - review finding {first} [critical] calc.py:6: {CRITICAL}: not triaged" in (
        blocked.splitlines()
    )
    applied = of_type(events, "task.applied")[0]["seq"]

    # Two triages that break the rules are refused at the call; the refute is recorded.
    _rescript(parent, {"turns": [
        {"tool_calls": [
            call("triage_finding", finding=first, action="accept", reason="it is fine"),
            call("triage_finding", finding=first, action="refute", reason=REFUTED),
            call("triage_finding", finding=second, action="address", reason="typed",
                 refs=[applied]),
        ]},
        {"tool_calls": [call("write_file", path="calc.py", content=TYPED)]},
        {"tool_calls": [call("run_check", kind="test")]},
        {"text": "refuted one, typed calc"},
    ]})  # fmt: skip
    assert run_turn(parent, "triage the findings").text == "refuted one, typed calc"
    events = events_of(parent)
    accept, refute, address = _results(events, "triage_finding")
    assert not accept["ok"] and "only a medium or low finding may be accepted" in accept["content"]
    assert not address["ok"]
    assert f"ref {applied} is older than finding {second}" in address["content"]
    assert refute["ok"]
    [triaged] = of_type(events, "review.triaged")
    assert (triaged["finding"], triaged["action"], triaged["reason"]) == (first, "refute", REFUTED)
    state = plan_state(parent.layout, parent.id, events)
    assert state.loaded is not None
    assert review_state(state.loaded.plan, events).blockers() == [
        f"review finding {second} [high] calc.py: no type annotations: not triaged"
    ]
    fix = [e for e in of_type(events, "file.mutated") if e["path"] == "calc.py"][-1]["seq"]

    _rescript(parent, {"turns": [
        {"tool_calls": [call("triage_finding", finding=second, action="address",
                             reason="annotated", refs=[fix])]},
        {"text": "addressed"},
    ]})  # fmt: skip
    assert run_turn(parent, "address the other").text == "addressed"
    events = events_of(parent)
    assert [e["action"] for e in of_type(events, "review.triaged")] == ["refute", "address"]
    assert review_state(state.loaded.plan, events).blockers() == []
    refuted = (
        f"review finding {first} [critical] calc.py:6: {CRITICAL}: REFUTED, an UNVERIFIED "
        f"MODEL CLAIM: {REFUTED}"
    )
    shown = _command(parent, "/accept")
    assert "Accepted: COMPLETE" in shown
    assert f"caveat: {refuted}" in shown
    [_, accepted] = of_type(events_of(parent), "session.accepted")
    assert accepted["complete"] is True and refuted in accepted["caveats"]
    assert f"- caveat: {refuted}" in _command(parent, "/report acceptance")
    parent.end("done")
    # ax-report alone shows what /accept recorded, the finding named as a person names it.
    alone = run_cli(report_main, ["--session", parent.id, "-C", str(project), "--section",
                                  "acceptance"])  # fmt: skip
    assert alone.exit_code == 0, alone.stderr
    assert f"- caveat: {refuted}" in alone.stdout


REVIEW_REQUIRED_PLAN = [
    {"id": "impl", "title": "Change a", "role": "executor", "touches": ["a.txt"]},
    {"id": "look", "title": "Review a", "role": "reviewer"},
]
SPENT = (
    "the group was refused, nothing was spawned: the 2 review rounds are spent; a person "
    "decides: waive review in the plan with a reason and approve it (/plan approve), or "
    "accept with the review blocker on record"
)


def test_a_third_reviewer_group_is_refused_once_the_rounds_are_spent_and_the_person_decides(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    look = {"role": "reviewer", "task_id": "look", "prompt": "Review a.txt"}

    def reviewer(label: str) -> dict[str, Any]:
        return {"role": "reviewer", "label": label, "prompt": "Review a.txt"}

    script = {
        "turns": [
            {"tool_calls": [_delegate(look)]},
            {"tool_calls": [_delegate(reviewer("r2"))], "expect": "/look/1 [low] a.txt: terse"},
            # The plan's reviewer again: the spent rounds, not "change the task", answer it.
            {"tool_calls": [_delegate(look)], "expect": "r2: completed"},
            {"tool_calls": [_delegate(reviewer("r3"))], "expect": SPENT},
            {"tool_calls": [_delegate({"role": "inspector", "label": "i1", "prompt": "Look"})],
             "expect": SPENT},
            {"text": "advised", "expect": "i1: completed"},
        ],
        "tasks": {
            "look": [
                {"tool_calls": [call("report_finding", severity="low", path="a.txt",
                                     title="terse")]},
                {"text": "one nit"},
            ],
            "r2": [{"text": "clean"}],
            "r3": [{"text": "never"}],
            "i1": [{"text": "nothing to add"}],
        },
    }  # fmt: skip
    approver = YesApprover()
    parent = _parent(workspace, tmp_path, script, approver)
    _approved_plan(parent, REVIEW_REQUIRED_PLAN)
    assert run_turn(parent, "review it again and again").text == "advised"
    events = events_of(parent)
    first, second, again, third, advised = _results(events, "delegate_task")
    assert first["ok"] and second["ok"] and advised["ok"]
    assert (again["ok"], again["content"]) == (False, SPENT)
    assert (third["ok"], third["content"]) == (False, SPENT)
    # The inspector spends no round, so its group still runs; no third reviewer ever did.
    assert [e["taskId"] for e in of_type(events, "task.started")] == ["look", "r2", "i1"]
    [finding] = of_type(events, "review.finding")
    named = f"{finding['group']}/look/1"
    assert f"review finding {named} [low] a.txt: terse" in first["content"].split("\n\n")[0]
    # Neither round counts (no work preceded them), and the blockers hand the exits to the
    # person rather than prescribing another reviewer group, which would be refused.
    blockers = [
        line for line in _command(parent, "/accept").splitlines() if line.startswith("  - ")
    ]
    assert any(
        "review required, and its 2 rounds are spent with none qualifying: the person decides"
        in line
        for line in blockers
    )
    assert any(
        f"review finding {named} [low] a.txt: terse: not triaged" in line for line in blockers
    )
    assert not any("delegate reviewer tasks" in line for line in blockers)
    parent.end("done")
