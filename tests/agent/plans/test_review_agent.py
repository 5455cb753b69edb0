"""The review ledger end to end with the script provider: a reviewer's findings through the
real report_finding in a child session, the parent's triage through the real triage_finding,
and /accept over the result.

Delegation is not needed to prove the ledger, so the delegation engine's part is
hand-recorded here (and said so): the task.* events of the executor and the reviewer, and
the step that writes the reviewer's channel (``ReviewChannel.events()``) into the parent's
log at the task's end. Everything else is ax-agent as a person runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.terminal.test_units import make
from agenttest import call, events_of, of_type, open_session, write_script

from ax_agent.loop import run_turn
from ax_agent.plans.model import Plan, task_sha256
from ax_agent.providers.script import ScriptProvider, parse_script
from ax_agent.session import Session
from ax_agent.terminal import commands
from ax_agent.tools.registry import all_tools
from ax_agent.tools.report_finding import ReviewChannel

PLAN: dict[str, Any] = {
    "goal": "Harden the parser",
    "tasks": [
        {"id": "impl", "title": "Fix parse", "role": "executor", "touches": ["src"]},
        {"id": "look", "title": "Review it", "role": "reviewer", "depends_on": ["impl"]},
    ],
}
CHECK = {"kind": "test", "project": ".", "scope": ".", "recipeId": "pytest"}


def _command(session: Session, line: str) -> str:
    screen, _, err = make(tty=False)
    context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]
    assert commands.run_line(context, line) is None
    return str(err.getvalue())


def _script(session: Session, turns: list[dict[str, Any]]) -> None:
    session.provider = ScriptProvider(parse_script({"model": "scripted", "turns": turns}))


def _passing_check(session: Session) -> None:
    session.record({"type": "check.started", **CHECK},
                   {"type": "check.completed", **CHECK, "verdict": "passed", "exitCode": 0,
                    "termination": "exited", "reason": None})  # fmt: skip


def test_a_review_round_refuted_and_addressed_then_accepted(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "parse.py").write_text("def parse(x):\n    return x\n")
    parent = open_session(
        workspace,
        write_script(
            tmp_path / "p.json", [{"tool_calls": [call("plan_write", **PLAN)]}, {"text": "planned"}]
        ),
        tools=all_tools(),
    )
    run_turn(parent, "plan it")
    _command(parent, "/plan approve")
    shas = {t.id: task_sha256(t) for t in Plan.model_validate(PLAN).tasks}
    # Hand-recorded delegation: the executor ran, its capture was applied, the tests passed.
    impl = {"group": "g-impl", "taskId": "impl"}
    parent.record(
        {"type": "task.started", **impl, "role": "executor", "definitionSha256": shas["impl"]},
        {"type": "task.captured", **impl, "files": ["src/parse.py"]},
        {"type": "task.completed", **impl},
        {"type": "task.applied", **impl, "applied": ["src/parse.py"]},
    )
    _passing_check(parent)
    # The reviewer: a child session holding its task's channel, calling the real tool.
    look = {"group": "g-r1", "taskId": "look"}
    parent.record(
        {"type": "task.started", **look, "role": "reviewer", "definitionSha256": shas["look"]}
    )
    channel = ReviewChannel("g-r1", "look", "reviewer")
    findings = [
        call("report_finding", severity="critical", path="src/parse.py", line=2,
             title="returns the input unparsed"),
        call("report_finding", severity="high", path="src/parse.py", title="no type check"),
        call("report_finding", severity="low", path="../outside.py", title="refused"),
    ]  # fmt: skip
    child = open_session(
        workspace,
        write_script(tmp_path / "c.json", [{"tool_calls": findings}, {"text": "reviewed"}]),
        tools=all_tools(),
    )
    child.review = channel
    run_turn(child, "review the parser")
    assert [f["number"] for f in channel.findings] == [1, 2]  # the third was refused
    parent.record(*channel.events(), {"type": "task.completed", **look})
    blocked = _command(parent, "/accept")
    assert "[critical] src/parse.py:2: returns the input unparsed: not triaged" in blocked
    # The parent triages: refutes one, fixes the other and addresses it with the change's seq.
    _script(parent, [
        {"tool_calls": [call("triage_finding", finding="g-r1/look/1", action="refute",
                             reason="parse is the identity by design"),
                        call("triage_finding", finding="g-r1/look/2", action="accept",
                             reason="fine")]},
        {"tool_calls": [call("write_file", path="src/parse.py",
                             content="def parse(x: str) -> str:\n    return x\n")]},
        {"text": "triaged one, fixed the other"},
    ])  # fmt: skip
    run_turn(parent, "triage")
    [refused] = [e for e in of_type(events_of(parent), "tool.completed") if not e["ok"]]
    assert "only a medium or low finding may be accepted" in refused["content"]
    [fix] = of_type(events_of(parent), "file.mutated")
    _passing_check(parent)
    _script(parent, [
        {"tool_calls": [call("triage_finding", finding="g-r1/look/2", action="address",
                             reason="typed now", refs=[fix["seq"]])]},
        {"text": "addressed"},
    ])  # fmt: skip
    run_turn(parent, "address it")
    triaged = of_type(events_of(parent), "review.triaged")
    assert [(t["finding"], t["action"]) for t in triaged] == [
        ("g-r1/look/1", "refute"),
        ("g-r1/look/2", "address"),
    ]
    shown = _command(parent, "/accept")
    assert "Accepted: COMPLETE" in shown
    assert "REFUTED, an UNVERIFIED MODEL CLAIM: parse is the identity by design" in shown
    assert "the workspace changed after review round 1" in shown
    [_, accepted] = of_type(events_of(parent), "session.accepted")
    assert accepted["complete"] is True and any("UNVERIFIED" in c for c in accepted["caveats"])
    report = _command(parent, "/report acceptance")
    assert "- **COMPLETE**" in report and "UNVERIFIED MODEL CLAIM" in report
