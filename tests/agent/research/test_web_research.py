"""Web research end to end: the script provider, a real session, the real HTTP client and a
fake Tavily API on loopback (``fake_tavily``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from agenttest import ScriptedApprover, call, events_of, of_type, open_session, write_script

from ax_agent.acceptance import acceptance_state
from ax_agent.approvals import ApprovalAnswer, ApprovalRequest, DenyingApprover
from ax_agent.loop import run_turn
from ax_agent.research.budget import Spend, search_cost
from ax_agent.research.untrusted import FENCE_CLOSE
from ax_agent.session import Session
from ax_agent.webresearch import research_file, research_state
from ax_log import read_events
from ax_policy import add_durable_grant

from .fake_tavily import KEY, FakeTavily, fake_tavily

CHANGELOG = "https://libfoo.example/changelog"
MIGRATE = "https://docs.libfoo.example/migrate"


@pytest.fixture
def tavily(state_dir: Path) -> Any:
    with fake_tavily() as fake:
        yield fake


def _configure(state_dir: Path, fake: FakeTavily, **limits: int) -> None:
    research: dict[str, Any] = {"baseUrl": fake.url}
    if limits:
        research["limits"] = limits
    (state_dir / "config.json").write_text(json.dumps({"research": research}))


def _environ(**extra: str) -> dict[str, str]:
    # No proxy of the machine's: the fake API is on loopback.
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**clean, "TAVILY_API_KEY": KEY, **extra}


def _script(
    tmp_path: Path, turns: list[dict[str, Any]], tasks: dict[str, Any] | None = None
) -> Path:
    path = write_script(tmp_path / "script.json", turns)
    if tasks:
        data = json.loads(path.read_text())
        data["tasks"] = tasks
        path.write_text(json.dumps(data))
    return path


def _open(workspace: Path, script: Path, approver: Any, **kw: Any) -> Session:
    return open_session(workspace, script, approver=approver, environ=_environ(), **kw)


def _child_events(parent: Session) -> list[dict[str, Any]]:
    started = of_type(events_of(parent), "task.started")
    child = started[0]["child"]
    return list(read_events(parent.layout.session_log(child), child))


def _completed(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["content"]) for e in of_type(events, "tool.completed")]


def test_search_with_consent_then_a_researcher_extracts_and_records_findings(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    query = "libfoo 3.0 frobnicate removed?  (exact words)"
    script = _script(
        tmp_path,
        [
            {"tool_calls": [call("web_search", query=query, max_results=3)]},
            {
                "tool_calls": [
                    call(
                        "delegate_task",
                        tasks=[{"role": "researcher", "label": "look-up", "prompt": "confirm"}],
                    )
                ],
                "expect": "UNTRUSTED WEB CONTENT",
            },
            {"text": "researched"},
        ],
        {
            "look-up": [
                {"tool_calls": [call("web_extract", urls=[CHANGELOG, MIGRATE])]},
                {
                    "tool_calls": [
                        call(
                            "record_source",
                            claim="libfoo 3.0 removed frobnicate()",
                            sources=[CHANGELOG, MIGRATE],
                            verdict="corroborated",
                        )
                    ]
                },
                {
                    "tool_calls": [
                        call(
                            "record_source",
                            claim="frob() replaces frobnicate()",
                            sources=[MIGRATE, MIGRATE.replace("https", "http") + "/"],
                            verdict="corroborated",
                        )
                    ],
                    "expect": "recorded finding",
                },
                {
                    "tool_calls": [
                        call(
                            "record_source",
                            claim="frob() replaces frobnicate()",
                            sources=[MIGRATE],
                            verdict="single-source",
                        )
                    ],
                    "expect": "[claim-refused]",
                },
                {
                    "tool_calls": [call("web_extract", urls=["http://192.168.1.10/notes"])],
                    "expect": "recorded finding",
                },
                {"text": "confirmed", "expect": "[url-refused]"},
            ]
        },
    )
    approver = ScriptedApprover(["session", "once"])
    parent = _open(workspace, script, approver)
    assert run_turn(parent, "look it up").text == "researched"

    # The parent holds web_search and never web_extract or record_source.
    assert "web_search" in parent.tools
    assert not {"web_extract", "record_source"} & set(parent.tools)

    # The first call asked, with the query verbatim, the bounds and the allowance left.
    question = approver.asked[0]
    assert question.tool == "web_search"
    details = "\n".join(question.details)
    assert f"query (verbatim): {query}" in details
    assert "this call at most: 1 search(es), 0 page extract(s), 1 credit(s)" in details
    assert "allowance left: 20 search(es)" in details
    assert "reach one host, 127.0.0.1" in details and "not the harness's" in details
    assert "proxy: none configured" in details
    assert question.decision.rule == "external-read"
    assert "127.0.0.1" in question.decision.reason

    # On the wire: one search, one extract, the key as a bearer token, nothing else.
    assert tavily.paths() == ["/search", "/extract"]
    assert tavily.requests[0]["body"]["query"] == query
    assert tavily.requests[1]["body"]["urls"] == [CHANGELOG, MIGRATE]
    assert all(r["headers"]["Authorization"] == f"Bearer {KEY}" for r in tavily.requests)

    # The parent got snippets, fenced; the private result withheld, the escape removed.
    searched = _completed(events_of(parent))[0]
    assert searched.count(FENCE_CLOSE) == 2 and "10.0.0.7" not in searched
    assert "\x1b" not in searched and "1 result(s) withheld" in searched

    # The researcher got the pages, sanitised and neutralised inside their fences.
    child = _child_events(parent)
    extracted, first, second, third, private = _completed(child)
    assert extracted.count(FENCE_CLOSE) == 2 and "\u202e" not in extracted
    assert "(marker text removed)" in extracted
    assert "recorded finding" in first and "corroborated" in first
    assert "[claim-refused]" in second and "distinct" in second
    assert "recorded finding" in third and "single-source" in third
    assert "[url-refused]" in private and "192.168.1.10" in private

    # The findings reached the parent's log and RESEARCH.md; acceptance carries caveats.
    events = events_of(parent)
    sources = of_type(events, "research.source")
    assert [(s["verdict"], s["taskId"]) for s in sources] == [
        ("corroborated", "look-up"),
        ("single-source", "look-up"),
    ]
    captured = of_type(events, "research.captured")[0]
    assert (captured["extracts"], captured["findings"]) == (2, 2)
    notes = research_file(parent.layout).read_text()
    assert "libfoo 3.0 removed frobnicate()" in notes and "· single-source" in notes
    caveats = acceptance_state(None, events).caveats
    assert any("web research was consulted" in c for c in caveats)
    weak = [c for c in caveats if c.startswith("web finding")]
    assert len(weak) == 1 and "rests on a single source" in weak[0]
    assert "frob() replaces frobnicate()" in weak[0]
    parent.end("done")

    # A resume rebuilds the shared allowance from both logs: a restart cannot refill it.
    resumed = open_session(
        workspace, script, approver=DenyingApprover(), environ=_environ(), resume=parent.id
    )
    spent = research_state(resumed).budget.spent
    assert (spent.searches, spent.extracts, spent.credits) == (1, 2, 2)
    assert 0 < spent.chars < search_cost("basic", 3).chars + 2 * 20_000
    resumed.end("done")


def test_the_allowance_refuses_a_call_whole_before_the_question_and_the_wire(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily, searches=1)
    script = _script(
        tmp_path,
        [
            {"tool_calls": [call("web_search", query="one")]},
            {"tool_calls": [call("web_search", query="two")]},
            {"text": "out", "expect": "[budget]"},
        ],
    )
    approver = ScriptedApprover(["session"])
    parent = _open(workspace, script, approver)
    run_turn(parent, "search twice")
    assert tavily.paths() == ["/search"]
    assert len(approver.asked) == 1
    refused = _completed(events_of(parent))[1]
    assert (
        "refused whole and nothing is sent" in refused and "searches (1 asked, 0 left)" in refused
    )
    parent.end("done")

    # Resumed, the one search is still spent.
    again = _script(tmp_path, [{"tool_calls": [call("web_search", query="three")]}, {"text": "x"}])
    resumed = open_session(
        workspace, again, approver=ScriptedApprover(["once"]), environ=_environ(), resume=parent.id
    )
    run_turn(resumed, "once more")
    assert tavily.paths() == ["/search"]
    assert "[budget]" in _completed(events_of(resumed))[-1]
    resumed.end("done")


class DrainingApprover:
    """Says yes, but a sibling drains the allowance while the person reads the question."""

    name = "draining"

    def __init__(self) -> None:
        self.session: Session | None = None

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        assert self.session is not None
        budget = research_state(self.session).budget
        budget.reserve(Spend(searches=budget.remaining().searches))
        return ApprovalAnswer("once", self.name)


def test_every_bound_is_checked_again_at_execute(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    script = _script(
        tmp_path,
        [{"tool_calls": [call("web_search", query="q")]}, {"text": "x", "expect": "[budget]"}],
    )
    approver = DrainingApprover()
    parent = _open(workspace, script, approver)
    approver.session = parent
    run_turn(parent, "search")
    assert tavily.requests == []
    assert of_type(events_of(parent), "research.spent") == []
    parent.end("done")


def test_off_a_terminal_research_is_refused_unless_granted_for_good(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    turns = [{"tool_calls": [call("web_search", query="q")]}, {"text": "x"}]
    parent = _open(workspace, _script(tmp_path, turns), DenyingApprover())
    run_turn(parent, "search")
    assert tavily.requests == []
    assert "declined" in _completed(events_of(parent))[0]
    parent.end("done")

    add_durable_grant(state_dir, workspace, tool="web_search")
    granted = _open(workspace, _script(tmp_path, turns), DenyingApprover())
    run_turn(granted, "search")
    assert tavily.paths() == ["/search"]
    decision = of_type(events_of(granted), "policy.decision")[0]
    assert decision["rule"] == "external-durable-grant"
    granted.end("done")


def test_the_question_says_a_configured_proxy_still_carries_the_call(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    turns = [{"tool_calls": [call("web_search", query="q")]}, {"text": "x"}]
    approver = ScriptedApprover(["no"])
    parent = open_session(
        workspace,
        _script(tmp_path, turns),
        approver=approver,
        environ=_environ(AX_PROXY="http://127.0.0.1:9"),
    )
    run_turn(parent, "search")
    details = "\n".join(approver.asked[0].details)
    assert "proxy: a configured proxy (AX_PROXY) still carries this connection" in details
    assert tavily.requests == []
    parent.end("done")


def test_a_blocked_research_host_is_denied_by_policy(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    (workspace / ".ax").mkdir()
    (workspace / ".ax" / "config.json").write_text(json.dumps({"blockedHosts": ["127.0.0.1"]}))
    turns = [{"tool_calls": [call("web_search", query="q")]}, {"text": "x"}]
    approver = ScriptedApprover([])
    parent = _open(workspace, _script(tmp_path, turns), approver)
    run_turn(parent, "search")
    assert approver.asked == [] and tavily.requests == []
    assert of_type(events_of(parent), "policy.decision")[0]["rule"] == "external-blocked-host"
    parent.end("done")


def test_a_workspace_cannot_configure_research(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    from libcommon.errors import AxError

    (workspace / ".ax").mkdir()
    (workspace / ".ax" / "config.json").write_text(
        json.dumps({"research": {"baseUrl": tavily.url}})
    )
    with pytest.raises(AxError, match="research"):
        _open(workspace, _script(tmp_path, [{"text": "x"}]), DenyingApprover())


def test_no_key_and_a_provider_error_are_named(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    turns = [{"tool_calls": [call("web_search", query="q")]}, {"text": "x"}]
    environ = {k: v for k, v in _environ().items() if k != "TAVILY_API_KEY"}
    parent = open_session(
        workspace, _script(tmp_path, turns), approver=ScriptedApprover([]), environ=environ
    )
    run_turn(parent, "search")
    assert "[no-key] TAVILY_API_KEY is not set" in _completed(events_of(parent))[0]
    parent.end("done")

    tavily.status = 429
    parent = _open(workspace, _script(tmp_path, turns), ScriptedApprover(["once"]))
    run_turn(parent, "search")
    failed = _completed(events_of(parent))[0]
    assert "[provider-status]" in failed and "HTTP 429" in failed and KEY not in failed
    settled = of_type(events_of(parent), "research.settled")[0]
    assert (settled["chars"], settled["outcome"]) == (0, "provider-status")
    parent.end("done")


def test_research_never_marks_a_file_checked_nor_satisfies_a_gate(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    from ax_report import build_report

    _configure(state_dir, tavily)
    turns = [
        {"tool_calls": [call("write_file", path="app.py", content="print(1)\n")]},
        {"tool_calls": [call("web_search", query="does print work")]},
        {"text": "done"},
    ]
    parent = _open(workspace, _script(tmp_path, turns), ScriptedApprover(["once"]))
    run_turn(parent, "write and look it up")
    events = events_of(parent)
    assert of_type(events, "research.settled")[0]["outcome"] == "ok"
    document, _ = build_report(events)
    verdicts = {item["path"]: item["verdict"] for item in document["files"]}
    assert verdicts["app.py"] == "UNCHECKED"
    state = acceptance_state(None, events)
    assert any("files changed with no passing check" in b and "app.py" in b for b in state.blockers)
    assert any("web research was consulted" in c for c in state.caveats)
    parent.end("done")


def test_a_query_holding_a_secret_is_refused_before_the_question(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    turns = [{"tool_calls": [call("web_search", query=f"why {secret} fails")]}, {"text": "x"}]
    approver = ScriptedApprover([])
    parent = _open(workspace, _script(tmp_path, turns), approver)
    run_turn(parent, "search")
    assert approver.asked == [] and tavily.requests == []
    assert "[query-refused]" in _completed(events_of(parent))[0]
    parent.end("done")


def test_without_a_session_answer_a_researchers_research_is_declined(
    workspace: Path, tmp_path: Path, state_dir: Path, tavily: FakeTavily
) -> None:
    _configure(state_dir, tavily)
    script = _script(
        tmp_path,
        [
            {"tool_calls": [call("web_search", query="q")]},
            {
                "tool_calls": [
                    call(
                        "delegate_task",
                        tasks=[{"role": "researcher", "label": "look-up", "prompt": "read"}],
                    )
                ]
            },
            {"text": "done"},
        ],
        {
            "look-up": [
                {"tool_calls": [call("web_extract", urls=[CHANGELOG])]},
                {"text": "could not", "expect": "declined"},
            ]
        },
    )
    # "once", not "for the session": no consent reaches the researcher.
    parent = _open(workspace, script, ScriptedApprover(["once", "once"]))
    run_turn(parent, "look it up")
    assert tavily.paths() == ["/search"]
    child = _child_events(parent)
    assert of_type(child, "research.spent") == []
    assert of_type(child, "policy.decision")[0]["rule"] == "external-read"
    parent.end("done")
