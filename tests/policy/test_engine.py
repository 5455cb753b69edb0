"""The decision table: every branch of decide(), including conflicting and throwing facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ax_policy import (
    CheckFact,
    CommandFact,
    DecisionContext,
    DecisionRequest,
    ExternalFact,
    Grants,
    SandboxStatus,
    SessionGrants,
    ToolFacts,
    add_durable_grant,
    decide,
    decide_request,
    list_durable_grants,
)
from ax_policy.models import PolicyConfig

ENFORCED = SandboxStatus(
    backend="landlock",
    enforced=True,
    profiles=["read-only", "workspace-write"],
    network_denied=True,
)
ENFORCED_WITH_NETWORK = ENFORCED.model_copy(update={"network_denied": False})
NONE = SandboxStatus()
KEY = "a" * 64


@pytest.fixture
def ctx(project: Path, system_path: str, tmp_path: Path) -> DecisionContext:
    return DecisionContext(
        workspace=project, sandbox=ENFORCED, path_env=system_path, home=tmp_path / "home"
    )


def with_sandbox(ctx: DecisionContext, sandbox: SandboxStatus) -> DecisionContext:
    return DecisionContext(
        workspace=ctx.workspace, sandbox=sandbox, path_env=ctx.path_env, home=ctx.home
    )


READ_FILE = ToolFacts("read_file", reads=lambda i: [i["path"]])
WRITE_FILE = ToolFacts("write_file", writes=lambda i: [i["path"]])
RUN = ToolFacts(
    "run_command", command=lambda i: CommandFact(command=i["command"], cwd=i.get("cwd"))
)


def test_no_facts_denies(ctx: DecisionContext) -> None:
    decision = decide(ToolFacts("mystery"), {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "no-facts")
    assert "declare" in decision.reason


@pytest.mark.parametrize(
    "facts",
    [
        {"reads": lambda i: ["a"], "external": lambda i: ExternalFact(host="x.example")},
        {"command": lambda i: CommandFact(command="ls"), "writes": lambda i: ["a"]},
        {"check": lambda i: CheckFact(kind="test"), "command": lambda i: CommandFact(command="ls")},
        {"delegates": lambda i: ["explorer"], "reads": lambda i: ["a"]},
    ],
)
def test_conflicting_facts_deny(ctx: DecisionContext, facts: dict[str, Any]) -> None:
    decision = decide(ToolFacts("two_faced", **facts), {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "conflicting-facts")


def test_internal_plus_another_fact_conflicts(ctx: DecisionContext) -> None:
    decision = decide(ToolFacts("x", internal=True, reads=lambda i: ["a"]), {}, ctx)
    assert decision.rule == "conflicting-facts"


def test_throwing_fact_denies(ctx: DecisionContext) -> None:
    def boom(_input: Any) -> list[str]:
        raise KeyError("path sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA")

    decision = decide(ToolFacts("read_file", reads=boom), {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "fact-error")
    assert "KeyError" in decision.reason and "sk-ant-api03" not in decision.reason


@pytest.mark.parametrize("value", ["just-a-string", [1, 2], [], None, {"command": 5}, ["x"] * 1000])
def test_badly_typed_fact_denies(ctx: DecisionContext, value: Any) -> None:
    tool = ToolFacts("t", reads=lambda i: value)
    assert decide(tool, {}, ctx).rule == "fact-error"
    command_tool = ToolFacts("t", command=lambda i: value)
    assert decide(command_tool, {}, ctx).rule == "fact-error"


def test_an_invalid_fact_names_the_field(ctx: DecisionContext) -> None:
    decision = decide(ToolFacts("t", check=lambda i: {"kind": "", "replayKey": "x"}), {}, ctx)
    assert decision.rule == "fact-error"
    assert "fact field 'kind': String should have at least 1 character" in decision.reason
    assert "fact field 'replayKey': String should match pattern" in decision.reason


def test_missing_input_key_denies(ctx: DecisionContext) -> None:
    assert decide(READ_FILE, {}, ctx).rule == "fact-error"


# --- reads ---------------------------------------------------------------------------


def test_read_inside_allows(ctx: DecisionContext) -> None:
    decision = decide(READ_FILE, {"path": "src/app.py"}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "allow",
        "observe",
        "read-inside-workspace",
    )
    assert not decision.redact_log and not decision.requires_snapshot


@pytest.mark.parametrize("path", ["/etc/hostname", "../x", ".env", "escape/passwd"])
def test_sensitive_read_asks_grantable_with_redaction(ctx: DecisionContext, path: str) -> None:
    decision = decide(READ_FILE, {"path": path}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "ask",
        "sensitive",
        "read-sensitive",
    )
    assert decision.redact_log and decision.grantable


def test_session_grant_allows_sensitive_read(ctx: DecisionContext) -> None:
    grants = Grants(session=SessionGrants())
    grants.session.add("read_file", "sensitive")
    decision = decide(READ_FILE, {"path": ".env"}, ctx, grants)
    assert (decision.verdict, decision.rule) == ("allow", "read-session-grant")
    assert decision.redact_log
    # A grant for another tool does not apply.
    other = Grants(session=SessionGrants())
    other.session.add("grep", "sensitive")
    assert decide(READ_FILE, {"path": ".env"}, ctx, other).verdict == "ask"


def test_invalid_read_path_denies(ctx: DecisionContext) -> None:
    decision = decide(READ_FILE, {"path": "a\x00b"}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "path-invalid")


# --- writes and deletes --------------------------------------------------------------


def test_write_inside_allows_with_snapshot(ctx: DecisionContext) -> None:
    decision = decide(WRITE_FILE, {"path": "src/new.py"}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "allow",
        "reversible",
        "write-inside-workspace",
    )
    assert decision.requires_snapshot and not decision.grantable


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/tmp/elsewhere.txt", "write-outside-workspace"),
        ("escape/passwd", "write-outside-workspace"),
        (".git/config", "write-protected"),
        (".ax/config.json", "write-protected"),
        (".", "write-workspace-root"),
        ("", "path-invalid"),
    ],
)
def test_refused_writes(ctx: DecisionContext, path: str, rule: str) -> None:
    decision = decide(WRITE_FILE, {"path": path}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", rule)


def test_write_into_state_root_denies(ctx: DecisionContext, state_dir: Path) -> None:
    decision = decide(WRITE_FILE, {"path": str(state_dir / "trust.json")}, ctx)
    assert decision.verdict == "deny"


def test_configured_protected_path_denies_write(ctx: DecisionContext) -> None:
    config = PolicyConfig(protected_paths=["docs"])
    narrowed = DecisionContext(workspace=ctx.workspace, sandbox=ctx.sandbox, config=config)
    decision = decide(WRITE_FILE, {"path": "docs/guide.md"}, narrowed)
    assert (decision.verdict, decision.rule) == ("deny", "write-protected")


def test_delete_of_workspace_root_denies(ctx: DecisionContext) -> None:
    remove = ToolFacts("remove", deletes=lambda i: [i["path"]])
    assert decide(remove, {"path": "."}, ctx).rule == "write-workspace-root"
    assert decide(remove, {"path": "src/app.py"}, ctx).verdict == "allow"


@pytest.mark.parametrize("path", ["hardlink.txt", "linked/copy.txt", "pipe.fifo"])
def test_reading_a_name_for_something_outside_asks(ctx: DecisionContext, path: str) -> None:
    # A hard link's other name may be outside the workspace; a FIFO or device is not a file.
    decision = decide(READ_FILE, {"path": path}, ctx)
    assert (decision.verdict, decision.rule) == ("ask", "read-sensitive"), decision.reason
    assert decision.redact_log and decision.grantable
    assert "hard links" in decision.reason or "FIFO" in decision.reason


@pytest.mark.parametrize("path", ["hardlink.txt", "pipe.fifo"])
def test_writing_a_name_for_something_outside_asks(ctx: DecisionContext, path: str) -> None:
    # Writing in place through a hard link changes the outside file too; no grant answers.
    decision = decide(WRITE_FILE, {"path": path}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "ask",
        "reversible",
        "write-linked",
    )
    assert decision.requires_snapshot and not decision.grantable
    grants = Grants(session=SessionGrants())
    grants.session.add("write_file", "sensitive")
    assert decide(WRITE_FILE, {"path": path}, ctx, grants).verdict == "ask"


def test_read_and_write_together(ctx: DecisionContext) -> None:
    copy = ToolFacts("copy", reads=lambda i: [i["src"]], writes=lambda i: [i["dst"]])
    allowed = decide(copy, {"src": "a.txt", "dst": "c.txt"}, ctx)
    assert allowed.verdict == "allow" and allowed.requires_snapshot
    assert len(allowed.paths) == 2
    asked = decide(copy, {"src": ".env", "dst": "c.txt"}, ctx)
    assert (asked.verdict, asked.decision_class) == ("ask", "sensitive")
    assert asked.requires_snapshot and not asked.grantable
    # A session grant never applies to a tool that writes.
    grants = Grants(session=SessionGrants())
    grants.session.add("copy", "sensitive")
    assert decide(copy, {"src": ".env", "dst": "c.txt"}, ctx, grants).verdict == "ask"
    denied = decide(copy, {"src": "a.txt", "dst": ".git/x"}, ctx)
    assert denied.verdict == "deny"


# --- commands ------------------------------------------------------------------------


def test_read_only_command_with_enforced_sandbox_allows(ctx: DecisionContext) -> None:
    decision = decide(RUN, {"command": "grep -rn TODO src"}, ctx)
    assert (decision.verdict, decision.rule) == ("allow", "command-read-only-sandboxed")
    assert decision.exec_boundary == "sandboxed" and decision.sandbox_profile == "read-only"
    assert decision.review is not None and decision.review.verdict == "read-only"
    assert not decision.grantable


@pytest.mark.parametrize(
    "sandbox",
    [
        NONE,
        SandboxStatus(backend="landlock", enforced=False, profiles=["read-only"]),
        SandboxStatus(backend="landlock", enforced=True, profiles=["workspace-write"]),
    ],
)
def test_read_only_command_without_enforced_sandbox_asks(
    ctx: DecisionContext, sandbox: SandboxStatus
) -> None:
    decision = decide(RUN, {"command": "ls -la src"}, with_sandbox(ctx, sandbox))
    assert (decision.verdict, decision.rule) == ("ask", "command-read-only-unsandboxed")
    assert decision.exec_boundary == "unsandboxed" and "unsandboxed" in decision.reason


def test_unproven_command_asks_and_names_its_boundary(ctx: DecisionContext) -> None:
    decision = decide(RUN, {"command": "pytest -q"}, ctx)
    assert (decision.verdict, decision.rule, decision.decision_class) == (
        "ask",
        "command-ask",
        "command",
    )
    assert decision.exec_boundary == "unsandboxed" and not decision.grantable
    assert "not on the read-only allowlist" in decision.reason


def test_session_grant_never_applies_to_commands(ctx: DecisionContext) -> None:
    grants = Grants(session=SessionGrants())
    grants.session.add("run_command", "sensitive")
    grants.session.add("run_command", "external")
    assert decide(RUN, {"command": "pytest -q"}, ctx, grants).verdict == "ask"


def test_circuit_breaker_denies(ctx: DecisionContext) -> None:
    decision = decide(RUN, {"command": "rm -rf ."}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "command-circuit-breaker")
    assert decision.reason.startswith("circuit breaker")


@pytest.mark.parametrize(
    ("cwd", "rule"),
    [
        (".git", "command-cwd-protected"),
        (".ax", "command-cwd-protected"),
        ("/tmp", "command-cwd-outside"),
        ("escape", "command-cwd-outside"),
        ("bad\x00", "command-cwd-invalid"),
    ],
)
def test_command_cwd_refused(ctx: DecisionContext, cwd: str, rule: str) -> None:
    decision = decide(RUN, {"command": "ls", "cwd": cwd}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", rule)


def test_command_cwd_inside_is_used_for_paths(ctx: DecisionContext) -> None:
    decision = decide(RUN, {"command": "cat app.py", "cwd": "src"}, ctx)
    assert decision.verdict == "allow"
    assert decision.paths and decision.paths[0].resolved == str(ctx.workspace / "src")


# --- checks --------------------------------------------------------------------------

CHECK = ToolFacts("run_check", check=lambda i: CheckFact(kind="test", replay_key=i.get("key")))


def test_check_in_enforced_sandbox_without_network_allows(ctx: DecisionContext) -> None:
    decision = decide(CHECK, {}, ctx)
    assert (decision.verdict, decision.rule) == ("allow", "check-sandboxed")
    assert decision.exec_boundary == "sandboxed"
    assert decision.sandbox_profile == "workspace-write"


def test_check_with_network_open_asks_sandboxed(ctx: DecisionContext) -> None:
    decision = decide(CHECK, {}, with_sandbox(ctx, ENFORCED_WITH_NETWORK))
    assert (decision.verdict, decision.rule) == ("ask", "check-ask")
    assert decision.exec_boundary == "sandboxed" and "network" in decision.reason


def test_check_without_sandbox_asks_unsandboxed(ctx: DecisionContext) -> None:
    decision = decide(CHECK, {}, with_sandbox(ctx, NONE))
    assert (decision.verdict, decision.rule) == ("ask", "check-ask")
    assert decision.exec_boundary == "unsandboxed" and not decision.grantable


def test_check_read_only_profile_is_not_enough(ctx: DecisionContext) -> None:
    only_ro = SandboxStatus(backend="landlock", enforced=True, profiles=["read-only"])
    decision = decide(CHECK, {}, with_sandbox(ctx, only_ro))
    assert decision.verdict == "ask" and "no workspace-write profile" in decision.reason


def test_check_replay_grant_allows(ctx: DecisionContext, state_dir: Path) -> None:
    add_durable_grant(state_dir, ctx.workspace, replay_key=KEY)
    grants = Grants(durable=list_durable_grants(state_dir, ctx.workspace))
    unsandboxed = with_sandbox(ctx, NONE)
    decision = decide(CHECK, {"key": KEY}, unsandboxed, grants)
    assert (decision.verdict, decision.rule) == ("allow", "check-replay-grant")
    assert decision.exec_boundary == "unsandboxed"
    # A different key (the script changed) asks again.
    assert decide(CHECK, {"key": "b" * 64}, unsandboxed, grants).verdict == "ask"


def test_a_browser_check_always_asks_even_in_an_enforced_sandbox(
    ctx: DecisionContext, state_dir: Path
) -> None:
    browser = ToolFacts("browser_flow", check=lambda i: CheckFact(kind="browser", replay_key=KEY))
    add_durable_grant(state_dir, ctx.workspace, replay_key=KEY)
    grants = Grants(durable=list_durable_grants(state_dir, ctx.workspace))
    for sandbox in (ctx, with_sandbox(ctx, NONE)):
        decision = decide(browser, {}, sandbox, grants)
        assert (decision.verdict, decision.rule) == ("ask", "check-browser-ask")
        assert decision.exec_boundary == "unsandboxed" and decision.sandbox_profile is None
        assert "not confine" in decision.reason


# --- external ------------------------------------------------------------------------

SEARCH = ToolFacts("web_search", external=lambda i: ExternalFact(host=i.get("host")))
PUBLISH = ToolFacts("publish", external=lambda i: ExternalFact(host="api.example", write=True))


def test_external_read_asks_grantable(ctx: DecisionContext) -> None:
    decision = decide(SEARCH, {"host": "api.search.example"}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "ask",
        "external",
        "external-read",
    )
    assert decision.grantable


def test_external_read_session_and_durable_grants(ctx: DecisionContext, state_dir: Path) -> None:
    session = Grants(session=SessionGrants())
    session.session.add("web_search", "external")
    assert decide(SEARCH, {}, ctx, session).rule == "external-session-grant"
    add_durable_grant(state_dir, ctx.workspace, tool="web_search")
    durable = Grants(durable=list_durable_grants(state_dir, ctx.workspace))
    assert decide(SEARCH, {}, ctx, durable).rule == "external-durable-grant"


def test_external_write_always_asks(ctx: DecisionContext) -> None:
    grants = Grants(session=SessionGrants())
    grants.session.add("publish", "external")
    decision = decide(PUBLISH, {}, ctx, grants)
    assert (decision.verdict, decision.rule) == ("ask", "external-write")
    assert not decision.grantable


@pytest.mark.parametrize("host", ["evil.example", "api.evil.example", "EVIL.example."])
def test_blocked_host_denies(ctx: DecisionContext, host: str) -> None:
    config = PolicyConfig(blocked_hosts=["evil.example"])
    narrowed = DecisionContext(workspace=ctx.workspace, sandbox=ctx.sandbox, config=config)
    decision = decide(SEARCH, {"host": host}, narrowed)
    assert (decision.verdict, decision.rule) == ("deny", "external-blocked-host")
    assert decide(SEARCH, {"host": "notevil.example"}, narrowed).verdict == "ask"


# --- delegation and internal ----------------------------------------------------------

DELEGATE = ToolFacts("delegate", delegates=lambda i: i["roles"])


@pytest.mark.parametrize(
    ("roles", "verdict", "rule"),
    [
        (["explorer", "reviewer"], "allow", "delegate-read-only"),
        (["explorer", "executor"], "ask", "delegate-mutating"),
        (["inspector", "planner"], "allow", "delegate-read-only"),
        (["inspector", "researcher"], "ask", "delegate-external"),
        (["researcher", "executor"], "ask", "delegate-mutating"),
        (["explorer", "hacker"], "deny", "delegate-unknown-role"),
        # Issue 26: a call that starts nothing (threads' list and stop).
        ([], "allow", "delegate-none"),
        ("explorer", "deny", "fact-error"),
    ],
)
def test_delegation(ctx: DecisionContext, roles: list[str], verdict: str, rule: str) -> None:
    decision = decide(DELEGATE, {"roles": roles}, ctx)
    assert (decision.verdict, decision.rule) == (verdict, rule)
    assert not decision.grantable


def test_internal_allows(ctx: DecisionContext) -> None:
    decision = decide(ToolFacts("slate_note", internal=True), {}, ctx)
    assert (decision.verdict, decision.rule) == ("allow", "internal")


def test_engine_failure_denies(ctx: DecisionContext) -> None:
    broken = DecisionContext(workspace=ctx.workspace, sandbox=None)  # type: ignore[arg-type]
    decision = decide(RUN, {"command": "ls"}, broken)
    assert (decision.verdict, decision.rule) == ("deny", "engine-error")


# --- JSON requests -------------------------------------------------------------------


def test_decide_request_round_trip(project: Path) -> None:
    request = DecisionRequest.model_validate(
        {
            "tool": "read_file",
            "facts": {"reads": [".env"]},
            "sessionGrants": [{"tool": "read_file", "class": "sensitive"}],
        }
    )
    decision = decide_request(request, project)
    assert decision.rule == "read-session-grant"
    dumped = decision.to_json()
    assert dumped["class"] == "sensitive" and dumped["redactLog"] is True
    for key in ("verdict", "class", "rule", "reason", "requiresSnapshot", "execBoundary"):
        assert key in dumped
    assert "grantable" in dumped
