"""The decision engine: allow, ask or deny for one tool call.

``decide`` is the single choke point. It reads only the facts a tool declares
(what it reads, writes or deletes, the command it runs, the check or setup it runs, the
outside service it talks to, the roles it delegates to, or that it touches
only ax's own state) plus the context (workspace, sandbox status, config) and
the grants. It is deny-first and first-match-wins, in this order:

1. a fact that throws, a tool declaring no facts, or conflicting facts: deny
2. delegation
3. a typed check (it spawns the project's own code, so before commands)
3b. a project setup (install: a session answer replays by its key; migrate, seed: ask)
3a. a git checkpoint (denied at the per-session cap)
4. external access
5. a shell command
6. a read of the repository through git commands the harness composed
7. writes and deletes (with any reads the same tool declares)
8. reads
9. internal state only

Deny beats ask beats allow. Grants are consulted only where the class is
grantable and the tool neither runs a command, writes nor deletes.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from libcommon.redact import redact

from .command_review import review_command
from .gitread import git_read_refusal
from .grants import Grants, SessionGrants
from .models import (
    MAX_FACT_PATHS,
    CheckFact,
    CheckpointFact,
    CommandFact,
    Decision,
    DecisionRequest,
    DeclaredFacts,
    DurableGrant,
    ExecBoundary,
    ExternalFact,
    GitReadFact,
    PathFacts,
    SandboxProfile,
    SandboxStatus,
    SetupFact,
    WorkspaceConfig,
)
from .pathcheck import validate_path

MAX_FACT_ERROR_CHARS = 300

# Roles a tool may delegate to, and what each may do (the fact table ax-agent's role
# table is pinned against when it loads). Any other role denies.
DELEGATE_ROLES = {
    "explorer": "read-only",
    "reviewer": "read-only",
    "planner": "read-only",
    "inspector": "read-only",
    # Reads, and may reach outside services (each such call is decided on its own).
    "researcher": "read-only-external",
    # Writes, in a worktree of its own; its changes reach the workspace only when applied.
    "executor": "mutating",
    # Orchestrator mode (issue 26): a worker thread, which changes files in the workspace;
    # each of its own calls is decided and asked like any other.
    "worker": "mutating",
}

FACT_KINDS = (
    "delegates",
    "check",
    "setup",
    "checkpoint",
    "external",
    "command",
    "git_read",
    "writes",
    "deletes",
    "reads",
)
_PATH_KINDS = frozenset({"reads", "writes", "deletes"})

FactFn = Callable[[Any], Any]


@dataclass(frozen=True)
class ToolFacts:
    """What a tool declares about a call, each fact a function of the call's input."""

    name: str
    reads: FactFn | None = None
    writes: FactFn | None = None
    deletes: FactFn | None = None
    command: FactFn | None = None
    check: FactFn | None = None
    setup: FactFn | None = None
    checkpoint: FactFn | None = None
    external: FactFn | None = None
    delegates: FactFn | None = None
    git_read: FactFn | None = None
    internal: bool = False

    @classmethod
    def declared(cls, name: str, facts: DeclaredFacts) -> ToolFacts:
        """Facts given as plain values (a JSON decision request) rather than functions."""
        fns: dict[str, FactFn] = {}
        for kind in FACT_KINDS:
            value = getattr(facts, kind)
            if value is not None:
                fns[kind] = _constant(value)
        return cls(name=name, internal=facts.internal, **fns)

    def declared_kinds(self) -> list[str]:
        kinds = [kind for kind in FACT_KINDS if getattr(self, kind) is not None]
        return [*kinds, "internal"] if self.internal else kinds


def _constant(value: Any) -> FactFn:
    return lambda _input: value


@dataclass(frozen=True)
class DecisionContext:
    workspace: Path
    sandbox: SandboxStatus = field(default_factory=SandboxStatus)
    config: WorkspaceConfig | None = None
    state_dir: Path | None = None
    # The PATH a command will run with, and the home folder the circuit breaker guards.
    path_env: str | None = None
    home: Path | None = None


class _Refusal(Exception):
    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def decide(
    tool: ToolFacts, tool_input: Any, context: DecisionContext, grants: Grants | None = None
) -> Decision:
    """Allow, ask or deny one call of ``tool`` with ``tool_input``. Never raises."""
    try:
        context = replace(context, workspace=Path(os.path.realpath(context.workspace)))
        return _decide(tool, tool_input, context, grants or Grants())
    except _Refusal as refusal:
        return refusal.decision
    except Exception as exc:  # fail closed: an engine that cannot decide denies
        return _deny("engine-error", f"the policy engine failed on {tool.name}: {_describe(exc)}")


def decide_request(
    request: DecisionRequest,
    workspace: Path,
    *,
    config: WorkspaceConfig | None = None,
    durable: Sequence[DurableGrant] = (),
    state_dir: Path | None = None,
) -> Decision:
    """``decide`` for a JSON decision request (``ax-policy decide``)."""
    context = DecisionContext(
        workspace=workspace, sandbox=request.sandbox, config=config, state_dir=state_dir
    )
    session = SessionGrants(request.session_grants, request.session_replay_keys)
    grants = Grants(session=session, durable=durable)
    return decide(ToolFacts.declared(request.tool, request.facts), None, context, grants)


def _decide(tool: ToolFacts, tool_input: Any, ctx: DecisionContext, grants: Grants) -> Decision:
    kinds = tool.declared_kinds()
    if not kinds:
        return _deny(
            "no-facts",
            f"tool {tool.name} declares no facts, so nothing says what it does; "
            "declare what it reads, writes or runs",
        )
    conflict = _conflict(kinds)
    if conflict is not None:
        return _deny("conflicting-facts", f"tool {tool.name} declares {conflict}; refused")
    values = {kind: _evaluate(tool, kind, tool_input) for kind in kinds if kind != "internal"}

    if "delegates" in values:
        return _delegation(tool.name, values["delegates"])
    if "check" in values:
        return _check(values["check"], ctx, grants)
    if "setup" in values:
        return _setup(tool.name, values["setup"], grants)
    if "checkpoint" in values:
        return _checkpoint(tool.name, values["checkpoint"])
    if "external" in values:
        return _external(tool.name, values["external"], ctx, grants)
    if "command" in values:
        return _command(values["command"], ctx)
    if "git_read" in values:
        return _git_read(tool.name, values["git_read"])
    if "writes" in values or "deletes" in values:
        targets = [*values.get("writes", []), *values.get("deletes", [])]
        written = _writes(targets, ctx)
        if "reads" not in values or written.verdict == "deny":
            return written
        read = _reads(tool.name, values["reads"], ctx, grants, grantable=False)
        return _combine(written, read)
    if "reads" in values:
        return _reads(tool.name, values["reads"], ctx, grants, grantable=True)
    return Decision(
        verdict="allow",
        decision_class="observe",
        rule="internal",
        reason=f"{tool.name} touches only ax's own state",
    )


def _conflict(kinds: list[str]) -> str | None:
    """Reads, writes and deletes may go together; any other pair conflicts."""
    others = [kind for kind in kinds if kind not in _PATH_KINDS]
    if not others or len(kinds) == 1:
        return None
    return f"both {kinds[0]} and {kinds[1]}, and a tool that does both is never allowed"


def _evaluate(tool: ToolFacts, kind: str, tool_input: Any) -> Any:
    fn = getattr(tool, kind)
    try:
        value = fn(tool_input)
        return _checked(kind, value)
    except Exception as exc:
        raise _Refusal(
            _deny(
                "fact-error",
                f"the {kind} fact of {tool.name} could not be evaluated: {_describe(exc)}",
            )
        ) from None


def _checked(kind: str, value: Any) -> Any:
    """Coerce a fact's value to its declared type, or raise (which denies)."""
    if kind in _PATH_KINDS:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise TypeError(f"expected a list of paths, got {type(value).__name__}")
        paths = list(value)
        if not all(isinstance(item, str) for item in paths):
            raise TypeError("every path must be a string")
        if not paths:
            raise ValueError("it names no path")
        if len(paths) > MAX_FACT_PATHS:
            raise ValueError(f"it names more than {MAX_FACT_PATHS} paths")
        return paths
    if kind == "delegates":
        # An empty list is a call that starts nothing (threads listing or stopping
        # workers); what it then does is decided as starting no session.
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise TypeError("expected a list of roles")
        return [str(role) for role in value]
    models: dict[str, type[BaseModel]] = {
        "command": CommandFact,
        "check": CheckFact,
        "setup": SetupFact,
        "checkpoint": CheckpointFact,
        "external": ExternalFact,
        "git_read": GitReadFact,
    }
    model = models[kind]
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        from libcommon.cliapp import describe_validation_error

        raise TypeError(
            f"not a valid {kind} fact: {describe_validation_error(exc, 'fact')}"
        ) from None


def _describe(exc: BaseException) -> str:
    text = redact(f"{type(exc).__name__}: {exc}")
    return text if len(text) <= MAX_FACT_ERROR_CHARS else text[:MAX_FACT_ERROR_CHARS] + "…"


def _deny(rule: str, reason: str, **extra: Any) -> Decision:
    return Decision(verdict="deny", decision_class="destructive", rule=rule, reason=reason, **extra)


def _delegation(name: str, roles: list[str]) -> Decision:
    if not roles:
        return Decision(
            verdict="allow",
            decision_class="observe",
            rule="delegate-none",
            reason=f"{name} starts no delegated session this call",
        )
    unknown = [role for role in roles if role not in DELEGATE_ROLES]
    if unknown:
        return _deny(
            "delegate-unknown-role",
            f"{name} delegates to unknown role(s) {', '.join(unknown)}; the whole group is "
            f"refused (known: {', '.join(sorted(DELEGATE_ROLES))})",
        )
    # The strictest member governs the group.
    mutating = [role for role in roles if DELEGATE_ROLES[role] == "mutating"]
    if mutating:
        return Decision(
            verdict="ask",
            decision_class="delegate",
            rule="delegate-mutating",
            reason=f"{name} starts a role that can change files ({', '.join(mutating)}); "
            "every such start is a person's decision",
        )
    external = [role for role in roles if DELEGATE_ROLES[role] == "read-only-external"]
    if external:
        return Decision(
            verdict="ask",
            decision_class="delegate",
            rule="delegate-external",
            reason=f"{name} starts a role that may reach outside services "
            f"({', '.join(external)}); every such start is a person's decision",
        )
    return Decision(
        verdict="allow",
        decision_class="observe",
        rule="delegate-read-only",
        reason=f"{name} delegates to read-only role(s) {', '.join(roles)}",
    )


def _checkpoint(name: str, fact: CheckpointFact) -> Decision:
    """A hidden-ref commit from a temporary index is the most reversible write there is;
    the per-session cap is the bound that stands in for a question."""
    from libcommon.git import MAX_CHECKPOINTS_PER_SESSION

    if fact.taken >= MAX_CHECKPOINTS_PER_SESSION:
        return _deny(
            "checkpoint-cap",
            f"{name}: the session already holds {fact.taken} checkpoints, the most one session "
            f"keeps ({MAX_CHECKPOINTS_PER_SESSION}); a person can prune them",
        )
    return Decision(
        verdict="allow",
        decision_class="reversible",
        rule="checkpoint",
        reason=f"{name} writes a commit under a hidden ref (refs/ax/checkpoints/) from a "
        "temporary index: nothing git status, log or branch shows changes "
        f"({fact.taken} of {MAX_CHECKPOINTS_PER_SESSION} taken)",
    )


# ax-check's browser kind (ax_check.BROWSER_KIND; ax-policy imports no other tool).
BROWSER_CHECK_KIND = "browser"


def _check(check: CheckFact, ctx: DecisionContext, grants: Grants) -> Decision:
    if check.kind == BROWSER_CHECK_KIND:
        # ax-exec contains the browser's process tree but no sandbox profile applies to it,
        # so no sandbox status may allow it, and no durable grant names a flow.
        return Decision(
            verdict="ask",
            decision_class="command",
            rule="check-browser-ask",
            reason="the browser check runs the preview's pages (the project's own scripts) "
            "in the system Chromium, which ax's sandbox does not confine; the browser "
            "reaches only the preview's loopback origin",
            exec_boundary="unsandboxed",
        )
    sandbox = ctx.sandbox
    if sandbox.confines("workspace-write", no_network=True):
        return Decision(
            verdict="allow",
            decision_class="command",
            rule="check-sandboxed",
            reason=f"the {check.kind} check runs the project's code inside the enforced "
            f"{sandbox.backend} sandbox (workspace-write profile, no network)",
            exec_boundary="sandboxed",
            sandbox_profile="workspace-write",
        )
    sandboxed = sandbox.confines("workspace-write")
    boundary: ExecBoundary = "sandboxed" if sandboxed else "unsandboxed"
    profile: SandboxProfile | None = "workspace-write" if sandboxed else None
    if check.replay_key is not None and grants.has_replay_key(check.replay_key):
        return Decision(
            verdict="allow",
            decision_class="command",
            rule="check-replay-grant",
            reason=f"the {check.kind} check's exact command has a durable grant "
            f"(replay key {check.replay_key[:12]}…); it runs {boundary}",
            exec_boundary=boundary,
            sandbox_profile=profile,
        )
    if sandboxed:
        why = f"the {sandbox.backend} sandbox cannot deny it the network"
    elif sandbox.enforced:
        why = f"the {sandbox.backend} sandbox has no workspace-write profile"
    else:
        why = f"no sandbox is enforced here (backend: {sandbox.backend})"
    return Decision(
        verdict="ask",
        decision_class="command",
        rule="check-ask",
        reason=f"the {check.kind} check runs the project's own code and {why}; "
        f"if approved it runs {boundary}",
        exec_boundary=boundary,
        sandbox_profile=profile,
    )


def _setup(name: str, fact: SetupFact, grants: Grants) -> Decision:
    """A project setup runs third-party code unsandboxed: consent follows consequence.

    An install is external and may replay under a session answer bound to its exact
    replay key (lockfile, manifest, package-manager configuration). A migration or a
    seed changes a database and is not idempotent: it asks every time, never grantable.
    """
    command = f" ({fact.command})" if fact.command else ""
    where = f"{name} {fact.intent}{command} in unit {fact.unit}"
    if fact.intent != "install":
        return Decision(
            verdict="ask",
            decision_class="destructive",
            rule=f"setup-{fact.intent}",
            reason=f"{where} runs the project's own {fact.intent} script, unsandboxed, "
            "against whatever database it is configured for; it is not idempotent, so it "
            "asks every time",
            exec_boundary="unsandboxed",
            replay_key=fact.replay_key,
        )
    if fact.replay_key is not None and grants.session.holds_replay(fact.replay_key):
        return Decision(
            verdict="allow",
            decision_class="external",
            rule="setup-install-session",
            reason=f"{where}: this session approved an install of this exact lockfile and "
            f"configuration (replay key {fact.replay_key[:12]}…); it runs unsandboxed",
            exec_boundary="unsandboxed",
            replay_key=fact.replay_key,
        )
    return Decision(
        verdict="ask",
        decision_class="external",
        rule="setup-install",
        reason=f"{where} fetches packages from the network and runs their lifecycle scripts "
        "(preinstall, install, postinstall, build backends) with your privileges, "
        "unsandboxed",
        exec_boundary="unsandboxed",
        # Only an install ax can name exactly may be answered for the session.
        grantable=fact.replay_key is not None,
        replay_key=fact.replay_key,
    )


def _host_blocked(host: str, patterns: Sequence[str]) -> str | None:
    name = host.casefold().rstrip(".")
    for pattern in patterns:
        target = pattern.casefold().rstrip(".")
        if fnmatch.fnmatchcase(name, target) or name.endswith("." + target.lstrip("*.")):
            return pattern
    return None


def _external(name: str, fact: ExternalFact, ctx: DecisionContext, grants: Grants) -> Decision:
    if fact.host is not None and ctx.config is not None:
        blocked = _host_blocked(fact.host, ctx.config.blocked_hosts)
        if blocked is not None:
            return _deny(
                "external-blocked-host",
                f"{name} would reach {fact.host}, which the configuration blocks ({blocked})",
            )
    if fact.mcp_server is not None:
        return _mcp_call(name, fact, grants)
    target = fact.host or "an outside service"
    if fact.write:
        return Decision(
            verdict="ask",
            decision_class="external",
            rule="external-write",
            reason=f"{name} sends or publishes to {target}; that asks every time",
        )
    if grants.has_external_tool(name):
        return Decision(
            verdict="allow",
            decision_class="external",
            rule="external-durable-grant",
            reason=f"{name} reads from {target} under a durable grant",
        )
    if grants.session.holds(name, "external"):
        return Decision(
            verdict="allow",
            decision_class="external",
            rule="external-session-grant",
            reason=f"{name} reads from {target} under this session's grant",
        )
    return Decision(
        verdict="ask",
        decision_class="external",
        rule="external-read",
        reason=f"{name} reads from {target}, outside this machine",
        grantable=True,
    )


def _mcp_call(name: str, fact: ExternalFact, grants: Grants) -> Decision:
    """A call to an MCP server's tool: the server says what it does, so a person decides.

    Only a grant of this exact tool answers for them; ``write`` (a server's own hint
    is never taken for it) makes it ask every time.
    """
    where = f"the MCP server {fact.mcp_server}" + (f" at {fact.host}" if fact.host else "")
    if fact.write:
        return Decision(
            verdict="ask",
            decision_class="external",
            rule="mcp-call-write",
            reason=f"{name} is a tool of {where}, declared as changing things; "
            "that asks every time",
        )
    if grants.has_external_tool(name):
        return Decision(
            verdict="allow",
            decision_class="external",
            rule="mcp-durable-grant",
            reason=f"{name} is a tool of {where}, granted for good in this workspace",
        )
    if grants.session.holds(name, "external"):
        return Decision(
            verdict="allow",
            decision_class="external",
            rule="mcp-session-grant",
            reason=f"{name} is a tool of {where}, granted for this session",
        )
    return Decision(
        verdict="ask",
        decision_class="external",
        rule="mcp-call",
        reason=f"{name} is a tool of {where}, a program ax does not control; "
        "what the call does is the server's to say",
        grantable=True,
    )


def _command(fact: CommandFact, ctx: DecisionContext) -> Decision:
    ws = ctx.workspace
    cwd_facts: list[PathFacts] = []
    if fact.cwd is not None:
        where = validate_path(fact.cwd, ws, write=True, config=ctx.config, state_dir=ctx.state_dir)
        cwd_facts = [where]
        if not where.valid:
            return _deny("command-cwd-invalid", f"the command's cwd: {where.invalid_reason}")
        if not where.inside_workspace:
            return _deny("command-cwd-outside", f"the command's cwd {where.containment_reason}")
        if where.protected:
            return _deny(
                "command-cwd-protected",
                f"the command's cwd is refused: {where.protected_reason}",
            )
    review = review_command(
        fact.command,
        ws,
        cwd=cwd_facts[0].resolved if cwd_facts else None,
        path_env=ctx.path_env,
        config=ctx.config,
        state_dir=ctx.state_dir,
        home=ctx.home,
    )
    common: dict[str, Any] = {"review": review, "paths": cwd_facts}
    if review.verdict == "deny":
        return _deny("command-circuit-breaker", review.reasons[0], **common)
    sandbox = ctx.sandbox
    if review.verdict == "read-only":
        if sandbox.confines("read-only"):
            return Decision(
                verdict="allow",
                decision_class="observe",
                rule="command-read-only-sandboxed",
                reason=f"proven read-only, and the enforced {sandbox.backend} sandbox "
                "confines it (read-only profile)",
                exec_boundary="sandboxed",
                sandbox_profile="read-only",
                **common,
            )
        return Decision(
            verdict="ask",
            decision_class="command",
            rule="command-read-only-unsandboxed",
            reason="proven read-only, but no enforced sandbox backs it "
            f"(backend: {sandbox.backend}), so it asks; if approved it runs unsandboxed",
            exec_boundary="unsandboxed",
            **common,
        )
    return Decision(
        verdict="ask",
        decision_class="command",
        rule="command-ask",
        reason=f"not proven read-only: {'; '.join(review.reasons)}; "
        "if approved it runs unsandboxed, at your own privilege",
        exec_boundary="unsandboxed",
        **common,
    )


def _git_read(name: str, fact: GitReadFact) -> Decision:
    for argv in fact.commands:
        refusal = git_read_refusal(argv)
        if refusal is not None:
            return _deny(
                "git-read-unproven", f"{name} runs git that is not a proven read: {refusal}"
            )
    shown = "; ".join("git " + " ".join(argv) for argv in fact.commands)
    return Decision(
        verdict="allow",
        decision_class="observe",
        rule="git-read",
        reason=f"{name} reads the repository's state with harness-composed git: {shown}",
    )


def _writes(targets: list[str], ctx: DecisionContext) -> Decision:
    facts = [
        validate_path(raw, ctx.workspace, write=True, config=ctx.config, state_dir=ctx.state_dir)
        for raw in targets
    ]
    for item in facts:
        refusal = item.refusal()
        if refusal is not None:
            rule, reason = refusal
            return _deny(rule, reason, paths=facts)
    concerns = [concern for item in facts for concern in item.concerns()]
    if concerns:
        # A file with another name (or a device) is not only the workspace's to change:
        # a person decides, and no grant answers for them.
        return Decision(
            verdict="ask",
            decision_class="reversible",
            rule="write-linked",
            reason=f"the file written is not the workspace's alone ({'; '.join(concerns)})",
            requires_snapshot=True,
            paths=facts,
        )
    names = ", ".join(item.raw for item in facts)
    return Decision(
        verdict="allow",
        decision_class="reversible",
        rule="write-inside-workspace",
        reason=f"writes {names} inside the workspace; a snapshot is taken first",
        requires_snapshot=True,
        paths=facts,
    )


def _reads(
    name: str, targets: list[str], ctx: DecisionContext, grants: Grants, *, grantable: bool
) -> Decision:
    facts = [
        validate_path(raw, ctx.workspace, config=ctx.config, state_dir=ctx.state_dir)
        for raw in targets
    ]
    for item in facts:
        refusal = item.refusal()
        if refusal is not None:
            rule, reason = refusal
            return _deny(rule, reason, paths=facts)
    sensitive = [concern for item in facts for concern in item.concerns()]
    if not sensitive:
        return Decision(
            verdict="allow",
            decision_class="observe",
            rule="read-inside-workspace",
            reason=f"reads inside the workspace: {', '.join(item.raw for item in facts)}",
            paths=facts,
        )
    if grantable and grants.session.holds(name, "sensitive"):
        return Decision(
            verdict="allow",
            decision_class="sensitive",
            rule="read-session-grant",
            reason=f"sensitive read under this session's grant ({'; '.join(sensitive)})",
            redact_log=True,
            paths=facts,
        )
    return Decision(
        verdict="ask",
        decision_class="sensitive",
        rule="read-sensitive",
        reason=f"sensitive read ({'; '.join(sensitive)}); its output is redacted in the log",
        redact_log=True,
        grantable=grantable,
        paths=facts,
    )


def _combine(written: Decision, read: Decision) -> Decision:
    """A tool that writes and reads: the stricter verdict, the snapshot kept."""
    paths = [*written.paths, *read.paths]
    if read.verdict == "allow":
        return written.model_copy(update={"paths": paths})
    return read.model_copy(update={"requires_snapshot": True, "grantable": False, "paths": paths})
