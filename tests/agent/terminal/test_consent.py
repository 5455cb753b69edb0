"""Contextual consent: which question each state asks (a pure fold over the plan file and
the log), and that a "yes" appends exactly what the slash command appends: each fixture is
built twice and run both ways, and the two logs' new events are compared."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.terminal.test_units import make
from agenttest import call, events_of, open_session, write_script

from ax_agent.loop import run_turn
from ax_agent.session import Session
from ax_agent.terminal import commands
from ax_agent.terminal.consent import ask, offer
from ax_agent.tools.registry import all_tools
from ax_log.envelope import ENVELOPE_KEYS

PLAN: dict[str, Any] = {
    "goal": "Split the parser",
    "tasks": [{"id": "lexer", "title": "Move the lexer", "role": "executor", "touches": ["src"]}],
}
CHECK = {"kind": "test", "project": ".", "scope": ".", "recipeId": "pytest"}
ENDED = {"termination": "exited", "reason": None}


def _context(session: Session, answer: bool | None = None) -> commands.Context:
    screen, _, _ = make(tty=False)
    confirm = None if answer is None else (lambda question: answer)
    return commands.Context(session, None, screen, None, confirm)  # type: ignore[arg-type]


def _session(workspace: Path, script: Path, turns: list[dict[str, Any]]) -> Session:
    session = open_session(workspace, write_script(script, turns), tools=all_tools())
    run_turn(session, "go")
    return session


def _planned(workspace: Path, script: Path) -> Session:
    return _session(workspace, script, [{"tool_calls": [call("plan_write", **PLAN)]},
                                        {"text": "planned"}])  # fmt: skip


def _amended(workspace: Path, script: Path) -> Session:
    edited = copy.deepcopy(PLAN)
    edited["tasks"][0]["touches"] = ["src", "lib"]
    session = _session(workspace, script, [{"tool_calls": [call("plan_write", **PLAN)]},
                                           {"text": "planned"},
                                           {"tool_calls": [call("plan_write", **edited)]},
                                           {"text": "amended"}])  # fmt: skip
    commands.run_line(_context(session), "/plan approve")
    run_turn(session, "widen it")
    found = offer(session.layout, session.id, events_of(session), at_quit=False)
    assert found is not None and found.kind == "reapprove"
    return session


def _failing(session: Session, times: int) -> None:
    for _ in range(times):
        session.record({"type": "check.started", **CHECK},
                       {"type": "check.completed", **CHECK, **ENDED, "verdict": "failed",
                        "exitCode": 1})  # fmt: skip


def _escalated(workspace: Path, script: Path) -> Session:
    session = _session(workspace, script, [{"text": "nothing"}])
    _failing(session, 3)
    return session


def _worked(workspace: Path, script: Path) -> Session:
    write = call("write_file", path="notes.txt", content="hello\n")
    session = _session(workspace, script, [{"tool_calls": [write]}, {"text": "wrote it"}])
    session.record({"type": "check.started", **CHECK},
                   {"type": "check.completed", **CHECK, **ENDED, "verdict": "passed",
                    "exitCode": 0})  # fmt: skip
    return session


def _normal(events: list[dict[str, Any]], session: Session) -> list[dict[str, Any]]:
    def strip(value: Any) -> Any:
        if isinstance(value, str):
            for real, placeholder in (
                (str(session.layout.project_dir), "<project>"),
                (str(session.workspace), "<workspace>"),
                (session.id, "<session>"),
            ):
                value = value.replace(real, placeholder)
            return value
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ENVELOPE_KEYS}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return [strip(event) for event in events]


def _both_ways(
    build: Callable[[Path, Path], Session], typed: str, tmp_path: Path, *, at_quit: bool = False
) -> list[dict[str, Any]]:
    # Each in its own workspace, so the fixture's own file changes are the same both times.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    by_hand = build(tmp_path / "a", tmp_path / "a.json")
    asked = build(tmp_path / "b", tmp_path / "b.json")
    before = (len(events_of(by_hand)), len(events_of(asked)))
    assert commands.run_line(_context(by_hand), typed) is None
    found = offer(asked.layout, asked.id, events_of(asked), at_quit=at_quit)
    assert found is not None and found.command.split()[0] == typed.split()[0]
    assert ask(_context(asked, answer=True), found)
    typed_events = _normal(events_of(by_hand)[before[0] :], by_hand)
    assert typed_events == _normal(events_of(asked)[before[1] :], asked)
    assert typed_events, "the command appended nothing to compare"
    return typed_events


def test_a_plan_awaiting_first_approval_both_ways(tmp_path: Path) -> None:
    [approved] = _both_ways(_planned, "/plan approve", tmp_path)
    assert approved["type"] == "plan.approved"


def test_an_amended_plan_both_ways(tmp_path: Path) -> None:
    [approved] = _both_ways(_amended, "/plan approve", tmp_path)
    assert approved["type"] == "plan.approved"


def test_an_open_repair_escalation_both_ways(tmp_path: Path) -> None:
    [dismissed] = _both_ways(_escalated, "/repair dismiss 3 dismissed by the person at the "
                             "terminal's question", tmp_path)  # fmt: skip
    assert dismissed["type"] == "repair.dismissed" and dismissed["number"] == 3


def test_a_clean_session_is_offered_acceptance_at_quit_only_and_both_ways(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _worked(workspace, tmp_path / "w.json")
    events = events_of(session)
    assert offer(session.layout, session.id, events, at_quit=False) is None
    found = offer(session.layout, session.id, events, at_quit=True)
    assert found is not None and found.kind == "accept"
    [accepted] = _both_ways(_worked, "/accept", tmp_path, at_quit=True)
    assert accepted["type"] == "session.accepted" and accepted["complete"] is True


def test_no_acceptance_offer_when_it_would_not_be_clean_or_was_just_made(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write = call("write_file", path="notes.txt", content="hello\n")
    unchecked = _session(workspace, tmp_path / "u.json", [{"tool_calls": [write]}, {"text": "ok"}])
    assert offer(unchecked.layout, unchecked.id, events_of(unchecked), at_quit=True) is None
    clean = _worked(workspace, tmp_path / "c.json")
    commands.run_line(_context(clean), "/accept")
    assert offer(clean.layout, clean.id, events_of(clean), at_quit=True) is None
    idle = _session(workspace, tmp_path / "i.json", [{"text": "nothing to do"}])
    assert offer(idle.layout, idle.id, events_of(idle), at_quit=True) is None


def test_a_no_appends_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _planned(workspace, tmp_path / "p.json")
    before = events_of(session)
    found = offer(session.layout, session.id, before, at_quit=False)
    assert found is not None
    assert not ask(_context(session, answer=False), found)
    assert not ask(_context(session), found)  # no one to ask: never a yes
    assert events_of(session) == before


def test_off_a_terminal_nothing_is_asked(tmp_path: Path) -> None:
    import io

    from ax_agent.session import StartOptions
    from ax_agent.terminal.repl import Terminal
    from libcommon.cliapp import Environment

    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _worked(workspace, tmp_path / "w.json")
    before = events_of(session)
    assert offer(session.layout, session.id, before, at_quit=True) is not None
    # A driver's next line would be taken as the answer: off a terminal there is no question.
    stdin, stderr = io.StringIO("y\n"), io.StringIO()
    environment = Environment(stdin, io.StringIO(), stderr, {}, False, False, False)
    Terminal(StartOptions(workspace=workspace), environment)._consent(session, at_quit=True)
    assert events_of(session) == before and stdin.read() == "y\n"
    assert "Accept it?" not in stderr.getvalue()


def test_a_delivered_plan_is_offered_acceptance_at_the_turn_boundary(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plan = {"goal": "Note it", "tasks": [{"id": "note", "title": "Write", "role": "parent"}]}
    write = call("write_file", path="notes.txt", content="hello\n")
    turns = [
        {"tool_calls": [call("plan_write", **plan)]},
        {"text": "planned"},
        {"tool_calls": [write]},
        {"text": "wrote it"},
    ]
    session = _session(workspace, tmp_path / "d.json", turns)
    commands.run_line(_context(session), "/plan approve")
    run_turn(session, "do it")
    unchecked = offer(session.layout, session.id, events_of(session), at_quit=False)
    assert unchecked is None  # not clean yet: the change is unchecked
    session.record({"type": "check.started", **CHECK},
                   {"type": "check.completed", **CHECK, **ENDED, "verdict": "passed",
                    "exitCode": 0})  # fmt: skip
    found = offer(session.layout, session.id, events_of(session), at_quit=False)
    assert found is not None and found.kind == "accept"
