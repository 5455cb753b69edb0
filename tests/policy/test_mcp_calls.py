"""An MCP server's tool call is an external action (issue 23): it asks unless that exact
tool is granted; a workspace-declared server's approval is a grant of its exact entry."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ax_policy import (
    DecisionContext,
    DurableGrant,
    ExternalFact,
    Grants,
    PolicyConfig,
    SessionGrants,
    ToolFacts,
    add_durable_grant,
    decide,
    durable_external_eligible,
    list_durable_grants,
)

SHA = "a" * 64


def mcp_tool(name: str = "mcp__docs__search", host: str | None = None) -> ToolFacts:
    return ToolFacts(name, external=lambda _i: ExternalFact(mcp_server="docs", host=host))


def test_a_call_asks_and_may_be_granted(workspace: Path) -> None:
    decision = decide(mcp_tool(), {}, DecisionContext(workspace=workspace))
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "ask",
        "external",
        "mcp-call",
    )
    assert decision.grantable and "MCP server docs" in decision.reason


def test_only_a_grant_of_that_exact_tool_allows_it(workspace: Path, state_dir: Path) -> None:
    ctx = DecisionContext(workspace=workspace)
    session = Grants(session=SessionGrants())
    session.session.add("mcp__docs__search", "external")
    assert decide(mcp_tool(), {}, ctx, session).rule == "mcp-session-grant"
    assert decide(mcp_tool("mcp__docs__delete"), {}, ctx, session).verdict == "ask"
    add_durable_grant(state_dir, workspace, tool="mcp__docs__search")
    durable = Grants(durable=list_durable_grants(state_dir, workspace))
    assert decide(mcp_tool(), {}, ctx, durable).rule == "mcp-durable-grant"
    assert decide(mcp_tool("mcp__docs__delete"), {}, ctx, durable).verdict == "ask"


def test_a_server_entry_grant_allows_no_call(workspace: Path, state_dir: Path) -> None:
    add_durable_grant(state_dir, workspace, mcp_server=("docs", SHA))
    grants = Grants(durable=list_durable_grants(state_dir, workspace))
    assert grants.has_mcp_server(SHA) and not grants.has_mcp_server("b" * 64)
    assert decide(mcp_tool(), {}, DecisionContext(workspace=workspace), grants).verdict == "ask"


def test_an_http_server_on_a_blocked_host_is_denied(workspace: Path) -> None:
    ctx = DecisionContext(workspace=workspace, config=PolicyConfig(blocked_hosts=["evil.example"]))
    decision = decide(mcp_tool(host="mcp.evil.example"), {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "external-blocked-host")


def test_a_write_declared_call_asks_every_time(workspace: Path) -> None:
    facts = ToolFacts(
        "mcp__docs__publish", external=lambda _i: ExternalFact(mcp_server="docs", write=True)
    )
    grants = Grants(session=SessionGrants())
    grants.session.add("mcp__docs__publish", "external")
    decision = decide(facts, {}, DecisionContext(workspace=workspace), grants)
    assert (decision.verdict, decision.rule, decision.grantable) == ("ask", "mcp-call-write", False)


@pytest.mark.parametrize(
    ("tool", "eligible"),
    [
        ("web_search", True),
        ("mcp__docs__search", True),
        ("mcp__my_docs__search_all", True),
        ("mcp__docs__", False),
        ("mcp____search", False),
        ("mcp__a__b__c", True),
        ("run_command", False),
        ("mcp_docs_search", False),
    ],
)
def test_durable_eligibility(tool: str, eligible: bool) -> None:
    assert durable_external_eligible(tool) is eligible


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "mcp-server", "server": "docs"},
        {"kind": "mcp-server", "entrySha256": SHA},
        {"kind": "mcp-server", "server": "docs", "entrySha256": SHA, "tool": "web_search"},
        {"kind": "external-tool", "tool": "web_search", "entrySha256": SHA},
        {"kind": "check-replay", "replayKey": SHA, "server": "docs"},
        {"kind": "mcp-server", "server": "a__b", "entrySha256": SHA},
    ],
)
def test_a_grant_holds_exactly_one_identity(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        DurableGrant.model_validate(
            {"id": "g-1", "workspace": "/w", "createdAt": "2026-01-01T00:00:00Z", **fields}
        )


def test_an_mcp_server_grant_is_recorded_once(workspace: Path, state_dir: Path) -> None:
    first = add_durable_grant(state_dir, workspace, mcp_server=("docs", SHA))
    again = add_durable_grant(state_dir, workspace, mcp_server=("docs", SHA))
    other = add_durable_grant(state_dir, workspace, mcp_server=("docs", "b" * 64))
    assert first.id == again.id != other.id
    assert len(list_durable_grants(state_dir, workspace)) == 2
