"""The setup fact: an install replays under a session answer bound to its replay key;
migrations and seeds ask every time and are never grantable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_policy import (
    DecisionContext,
    DecisionRequest,
    Grants,
    SessionGrants,
    SetupFact,
    ToolFacts,
    decide,
    decide_request,
)
from ax_policy.cli import main

KEY = "a" * 64
OTHER = "b" * 64


@pytest.fixture
def ctx(project: Path) -> DecisionContext:
    return DecisionContext(workspace=project)


def setup_tool(intent: str, key: str | None = KEY) -> ToolFacts:
    fact = SetupFact(intent=intent, unit=".", command="npm ci", replay_key=key)  # type: ignore[arg-type]
    return ToolFacts("project_setup", setup=lambda _input: fact)


def session_with(*keys: str) -> Grants:
    return Grants(session=SessionGrants(replay_keys=keys))


def test_an_install_asks_grantably_and_says_it_runs_lifecycle_scripts(
    ctx: DecisionContext,
) -> None:
    decision = decide(setup_tool("install"), {}, ctx)
    assert (decision.verdict, decision.rule, decision.decision_class) == (
        "ask",
        "setup-install",
        "external",
    )
    assert decision.grantable
    assert decision.exec_boundary == "unsandboxed"
    assert "lifecycle scripts" in decision.reason and "npm ci" in decision.reason
    assert decision.replay_key == KEY


def test_an_install_replays_under_the_sessions_answer_for_its_key(ctx: DecisionContext) -> None:
    decision = decide(setup_tool("install"), {}, ctx, session_with(KEY))
    assert (decision.verdict, decision.rule) == ("allow", "setup-install-session")
    assert decision.exec_boundary == "unsandboxed"


def test_a_changed_key_asks_again(ctx: DecisionContext) -> None:
    decision = decide(setup_tool("install"), {}, ctx, session_with(OTHER))
    assert decision.verdict == "ask"


def test_an_install_without_a_key_cannot_be_answered_for_the_session(
    ctx: DecisionContext,
) -> None:
    decision = decide(setup_tool("install", None), {}, ctx, session_with(KEY))
    assert decision.verdict == "ask" and not decision.grantable


def test_a_tool_class_grant_never_answers_for_an_install(ctx: DecisionContext) -> None:
    grants = Grants(session=SessionGrants())
    grants.session.add("project_setup", "external")
    assert decide(setup_tool("install"), {}, ctx, grants).verdict == "ask"


@pytest.mark.parametrize("intent", ["migrate", "seed"])
def test_migrate_and_seed_ask_every_time_even_with_an_answer(
    ctx: DecisionContext, intent: str
) -> None:
    grants = session_with(KEY)
    grants.session.add("project_setup", "external")
    decision = decide(setup_tool(intent), {}, ctx, grants)
    assert (decision.verdict, decision.rule) == ("ask", f"setup-{intent}")
    assert not decision.grantable
    assert decision.decision_class == "destructive"
    assert "every time" in decision.reason


def test_a_setup_fact_with_any_other_fact_is_denied(ctx: DecisionContext) -> None:
    fact = SetupFact(intent="install", unit=".")
    tool = ToolFacts("x", setup=lambda _input: fact, reads=lambda _input: ["a"])
    assert decide(tool, {}, ctx).verdict == "deny"


def test_a_malformed_setup_fact_denies(ctx: DecisionContext) -> None:
    tool = ToolFacts("x", setup=lambda _input: {"intent": "anything", "unit": "."})
    decision = decide(tool, {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "fact-error")


def test_the_json_request_carries_the_sessions_replay_keys(project: Path) -> None:
    facts: dict[str, Any] = {"setup": {"intent": "install", "unit": ".", "replayKey": KEY}}
    request = DecisionRequest.model_validate(
        {"tool": "project_setup", "facts": facts, "sessionReplayKeys": [KEY]}
    )
    assert decide_request(request, project).verdict == "allow"
    request = DecisionRequest.model_validate({"tool": "project_setup", "facts": facts})
    assert decide_request(request, project).verdict == "ask"


def test_ax_policy_decide_reads_a_setup_fact(project: Path, run_cli: CliRunner) -> None:
    request = {
        "tool": "project_setup",
        "facts": {"setup": {"intent": "migrate", "unit": ".", "replayKey": KEY}},
        "sessionReplayKeys": [KEY],
    }
    result = run_cli(main, ["decide", "-C", str(project), "-"], stdin=json.dumps(request))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["rule"] == "setup-migrate"
