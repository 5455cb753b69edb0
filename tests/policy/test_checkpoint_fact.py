"""The checkpoint fact: a git checkpoint allows as reversible, and the per-session cap denies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ax_policy import (
    CommandFact,
    DecisionContext,
    DecisionRequest,
    ToolFacts,
    decide,
    decide_request,
)
from ax_policy.models import CheckpointFact
from libcommon.git import MAX_CHECKPOINTS_PER_SESSION


@pytest.fixture
def ctx(project: Path) -> DecisionContext:
    return DecisionContext(workspace=project)


def checkpoint_tool(taken: int) -> ToolFacts:
    return ToolFacts("git_checkpoint", checkpoint=lambda _input: CheckpointFact(taken=taken))


def test_a_checkpoint_under_the_cap_allows_as_reversible_without_a_snapshot(
    ctx: DecisionContext,
) -> None:
    decision = decide(checkpoint_tool(0), {}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "allow",
        "reversible",
        "checkpoint",
    )
    assert not decision.requires_snapshot and not decision.grantable


def test_the_cap_is_a_fact_level_deny(ctx: DecisionContext) -> None:
    below = decide(checkpoint_tool(MAX_CHECKPOINTS_PER_SESSION - 1), {}, ctx)
    at = decide(checkpoint_tool(MAX_CHECKPOINTS_PER_SESSION), {}, ctx)
    assert below.verdict == "allow"
    assert (at.verdict, at.rule) == ("deny", "checkpoint-cap")
    assert str(MAX_CHECKPOINTS_PER_SESSION) in at.reason


@pytest.mark.parametrize(
    "facts",
    [
        {"command": lambda i: CommandFact(command="git reset --hard")},
        {"writes": lambda i: [".git/refs/heads/main"]},
        {"internal": True},
    ],
)
def test_a_checkpoint_with_any_other_fact_is_denied(
    ctx: DecisionContext, facts: dict[str, Any]
) -> None:
    tool = ToolFacts("git_checkpoint", checkpoint=lambda _i: CheckpointFact(taken=0), **facts)
    assert decide(tool, {}, ctx).rule == "conflicting-facts"


@pytest.mark.parametrize("value", [{"taken": -1}, {"taken": "many"}, {}, None])
def test_a_malformed_checkpoint_fact_denies(ctx: DecisionContext, value: Any) -> None:
    tool = ToolFacts("git_checkpoint", checkpoint=lambda _input: value)
    decision = decide(tool, {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "fact-error")


def test_a_git_mutation_declared_with_no_facts_never_falls_through_to_observe(
    ctx: DecisionContext,
) -> None:
    # A tool with no command, no writes and no reads: it is denied for declaring nothing,
    # never allowed as "observe"; a git tool must declare the fact of what it does.
    decision = decide(ToolFacts("git_commit"), {"message": "x"}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "no-facts")
    assert decision.decision_class != "observe"


def test_the_fact_travels_in_a_decision_request(project: Path) -> None:
    request = DecisionRequest.model_validate(
        {"tool": "git_checkpoint", "facts": {"checkpoint": {"taken": MAX_CHECKPOINTS_PER_SESSION}}}
    )
    decision = decide_request(request, project)
    assert decision.rule == "checkpoint-cap"
