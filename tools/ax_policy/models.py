"""ax-policy's contracts at JSON boundaries.

Everything here is data: path facts, a command review, the facts a tool
declares, the decision request and the decision, configuration layers and
the trust and grant stores. JSON names are camelCase (``insideWorkspace``);
the Python attributes stay snake_case.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from libcommon.contracts import Contract

# Caps on configuration values: a config file is bytes from disk, and the
# workspace layer is attacker-influenceable.
MAX_PATTERNS_PER_LIST = 256
MAX_PATTERN_CHARS = 256
MAX_STEPS_CAP = 10_000
# The bounds of a user's contextBudget (tokens of one request).
CONTEXT_BUDGET_MIN_TOKENS = 1_000
CONTEXT_BUDGET_MAX_TOKENS = 10_000_000
# The user's own list of instruction file names ax-agent falls back to (CLAUDE.md …).
MAX_INSTRUCTION_FALLBACKS = 8
MAX_FILE_NAME_CHARS = 255
# MCP servers one configuration may declare (ax-agent, issue 23).
MAX_MCP_SERVERS = 32
# Orchestrator mode (issue 26): the user's workerExtensions patterns, each a regex.
MAX_WORKER_EXTENSION_PATTERNS = 32
# Caps on a decision request's facts, so a request cannot make decide() walk forever.
MAX_FACT_PATHS = 256
MAX_FACT_TEXT_CHARS = 65_536

ReviewVerdict = Literal["read-only", "ask", "deny"]
Verdict = Literal["allow", "ask", "deny"]
DecisionClass = Literal[
    "observe", "reversible", "sensitive", "external", "command", "delegate", "destructive"
]
GrantClass = Literal["sensitive", "external"]
ExecBoundary = Literal["sandboxed", "unsandboxed"]
SandboxProfile = Literal["read-only", "workspace-write"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TOOL_NAME = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
_SHA256_HEX = r"^[0-9a-f]{64}$"
# An MCP server's name as configured, and the name its tools reach the model under
# (``mcp__<server>__<tool>``): a server name never holds "__", so the split is exact.
MCP_SERVER_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*$"
MAX_MCP_SERVER_NAME_CHARS = 32
MCP_TOOL_NAME = re.compile(r"^mcp__[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*__[A-Za-z0-9_-]+$")
McpServerName = Annotated[
    str, StringConstraints(pattern=MCP_SERVER_NAME, max_length=MAX_MCP_SERVER_NAME_CHARS)
]


class _Model(Contract):
    # Build each model's validator on first use, not at import: a CLI verb pays
    # only for the contracts it touches.
    model_config = ConfigDict(defer_build=True)


def _no_control(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("control characters are not allowed")
    return value


Pattern = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_PATTERN_CHARS),
    AfterValidator(_no_control),
]
PatternList = Annotated[list[Pattern], Field(max_length=MAX_PATTERNS_PER_LIST)]
ToolName = Annotated[str, StringConstraints(pattern=_TOOL_NAME)]


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    return value


def _plain_file_name(value: str) -> str:
    if "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError("a file name, not a path: no '/', '\\', '.' or '..'")
    return value


FileName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_FILE_NAME_CHARS),
    AfterValidator(_no_control),
    AfterValidator(_plain_file_name),
]
FactPath = Annotated[str, StringConstraints(max_length=MAX_FACT_TEXT_CHARS)]
FactPaths = Annotated[list[FactPath], Field(max_length=MAX_FACT_PATHS)]


# --- Path validation -------------------------------------------------------------------


class PathFacts(_Model):
    """What validate_path found out about one path; facts with reasons, never a verdict."""

    # ax-mcp publishes these (policy_check_path); a model reads each description.
    raw: str = Field(description="The path as given.")
    write: bool = Field(description="True when it was checked as a write target.")
    valid: bool = Field(
        description="False when the path cannot be used at all; the other facts are then unset."
    )
    invalid_reason: str | None = Field(default=None, description="Why it is not valid, or null.")
    resolved: str | None = Field(
        default=None, description="The absolute path after following links; null if not valid."
    )
    inside_workspace: bool = Field(
        default=False, description="True when the resolved path lies inside the workspace."
    )
    containment_reason: str | None = Field(
        default=None, description="Where the resolved path lies relative to the workspace."
    )
    protected: bool = Field(
        default=False,
        description="True for a place ax never lets a tool change (e.g. .git, ax's state root).",
    )
    protected_reason: str | None = Field(default=None, description="Why it is protected, or null.")
    secret: bool = Field(
        default=False, description="True when its name or folder looks like it holds credentials."
    )
    secret_reason: str | None = Field(default=None, description="Why it looks secret, or null.")
    workspace_root: bool = Field(
        default=False, description="True when it is the workspace folder itself."
    )
    hard_linked: bool = Field(
        default=False, description="True for a file with more than one hard link."
    )
    hard_linked_reason: str | None = Field(
        default=None, description="Why the hard links matter, or null."
    )
    special: bool = Field(
        default=False, description="True for a device, FIFO or socket rather than a file."
    )
    special_reason: str | None = Field(
        default=None, description="What kind of special file it is, or null."
    )

    def refusal(self) -> tuple[str, str] | None:
        """The rule and reason that refuse this operation outright, or None.

        One rule for ``decide`` and ``check-path``: a path that is not valid is
        never used; a write outside the workspace, to the workspace folder
        itself or to a protected place is refused.
        """
        if not self.valid:
            return "path-invalid", f"path {self.raw!r}: {self.invalid_reason}"
        if not self.write:
            return None
        if not self.inside_workspace:
            return (
                "write-outside-workspace",
                f"writing {self.raw!r} is refused: {self.containment_reason}",
            )
        if self.workspace_root:
            return "write-workspace-root", f"{self.raw!r} is the workspace folder itself"
        if self.protected:
            return "write-protected", f"writing {self.raw!r} is refused: {self.protected_reason}"
        return None

    def concerns(self) -> list[str]:
        """Why using this (valid, not refused) path needs a person's answer; empty when none."""
        found: list[str] = []
        if not self.write and not self.inside_workspace:
            found.append(f"{self.raw!r}: {self.containment_reason}")
        if not self.write and self.secret:
            found.append(f"{self.raw!r}: {self.secret_reason}")
        if self.hard_linked:
            found.append(f"{self.raw!r}: {self.hard_linked_reason}")
        if self.special:
            found.append(f"{self.raw!r}: {self.special_reason}")
        return found

    def needs_no_question(self) -> bool:
        """True when the operation on this path would run without asking anyone."""
        return self.refusal() is None and not self.concerns()


class PathCheck(PathFacts):
    """PathFacts plus the verdict a caller acts on: true only when no question is needed."""

    ok: bool = Field(
        description="True only when using the path this way would need no question and no refusal."
    )


# --- Command review --------------------------------------------------------------------


class CommandReview(_Model):
    """The outcome of reviewing one shell command string."""

    verdict: ReviewVerdict = Field(
        description="'read-only' only when proven read-only; otherwise 'ask' or 'deny'."
    )
    reasons: list[str] = Field(description="Why, one sentence per finding.")
    executable: str | None = Field(
        default=None, description="The absolute path ax resolved the program to, or null."
    )
    argv: list[str] | None = Field(
        default=None, description="The words ax parsed the command into, or null."
    )


# --- The decision engine ---------------------------------------------------------------


class SandboxStatus(_Model):
    """The probed sandbox, an input fact (ax-policy never probes or runs anything)."""

    backend: str = "none"
    enforced: bool = False
    profiles: list[SandboxProfile] = Field(default_factory=list)
    network_denied: bool = False

    def confines(self, profile: SandboxProfile, *, no_network: bool = False) -> bool:
        if not self.enforced or profile not in self.profiles:
            return False
        return self.network_denied or not no_network


class CommandFact(_Model):
    command: Annotated[str, StringConstraints(max_length=MAX_FACT_TEXT_CHARS)]
    cwd: FactPath | None = None


class CheckFact(_Model):
    """A typed check: it runs the project's own code."""

    kind: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    replay_key: Annotated[str, StringConstraints(pattern=_SHA256_HEX)] | None = None


class SetupFact(_Model):
    """A project setup (ax-check setup): the intent, the unit, and what consent binds to.

    ``replay_key`` is ax-check's key over the setup row, its command and every file that
    chooses what an install fetches and runs; ``command`` is shown in the question.
    """

    intent: Literal["install", "migrate", "seed"]
    unit: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    command: Annotated[str, StringConstraints(max_length=MAX_FACT_TEXT_CHARS)] | None = None
    replay_key: Annotated[str, StringConstraints(pattern=_SHA256_HEX)] | None = None


class ExternalFact(_Model):
    """The tool talks to something outside this machine, or to a program ax does not control.

    ``mcp_server`` names the MCP server a ``mcp__<server>__<tool>`` call goes to: what
    it does is the server's to say, so it is an external action whatever its name.
    """

    host: Annotated[str, StringConstraints(max_length=253)] | None = None
    write: bool = False
    mcp_server: McpServerName | None = None


# What one gitRead fact may name: a few short harness-composed git command lines.
MAX_GIT_READ_COMMANDS = 8
MAX_GIT_READ_WORDS = 32
GitWord = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_PATTERN_CHARS), AfterValidator(_no_control)
]


class GitReadFact(_Model):
    """The tool reads the repository's state by running exactly these git commands."""

    commands: Annotated[
        list[Annotated[list[GitWord], Field(min_length=1, max_length=MAX_GIT_READ_WORDS)]],
        Field(min_length=1, max_length=MAX_GIT_READ_COMMANDS),
    ]


class CheckpointFact(_Model):
    """The call writes a git checkpoint (a commit under a hidden ref, from a temporary
    index); ``taken`` is how many live checkpoints the session already holds."""

    taken: Annotated[int, Field(ge=0)]


class DeclaredFacts(_Model):
    """Facts as plain values, the shape a decision request carries over JSON."""

    reads: FactPaths | None = None
    writes: FactPaths | None = None
    deletes: FactPaths | None = None
    command: CommandFact | None = None
    check: CheckFact | None = None
    setup: SetupFact | None = None
    external: ExternalFact | None = None
    checkpoint: CheckpointFact | None = None
    delegates: Annotated[list[ToolName], Field(max_length=16)] | None = None
    git_read: GitReadFact | None = None
    internal: bool = False


class SessionGrant(_Model):
    tool: ToolName
    grant_class: GrantClass = Field(validation_alias="class", serialization_alias="class")


class DecisionRequest(_Model):
    """``ax-policy decide`` reads one of these on stdin."""

    tool: ToolName
    facts: DeclaredFacts
    sandbox: SandboxStatus = Field(default_factory=SandboxStatus)
    session_grants: Annotated[list[SessionGrant], Field(max_length=256)] = Field(
        default_factory=list
    )
    # Installs this session answered "for the session", each by its setup replay key.
    session_replay_keys: Annotated[
        list[Annotated[str, StringConstraints(pattern=_SHA256_HEX)]], Field(max_length=256)
    ] = Field(default_factory=list)


class Decision(_Model):
    verdict: Verdict
    decision_class: DecisionClass = Field(validation_alias="class", serialization_alias="class")
    rule: str
    reason: str
    requires_snapshot: bool = False
    exec_boundary: ExecBoundary | None = None
    sandbox_profile: SandboxProfile | None = None
    grantable: bool = False
    redact_log: bool = False
    review: CommandReview | None = None
    paths: list[PathFacts] = Field(default_factory=list)
    # For a setup: the replay key decided on, so the run can refuse a setup that changed.
    replay_key: Annotated[str, StringConstraints(pattern=_SHA256_HEX)] | None = None


# --- Configuration ---------------------------------------------------------------------


class WorkspaceConfig(_Model):
    """``<ws>/.ax/config.json``: deny lists only; nothing here can widen authority."""

    protected_paths: PatternList = Field(default_factory=list)
    secret_patterns: PatternList = Field(default_factory=list)
    env_exclude_patterns: PatternList = Field(default_factory=list)
    blocked_hosts: PatternList = Field(default_factory=list)


class UserConfig(WorkspaceConfig):
    """``<state>/config.json``: preferences plus the same narrowing knobs."""

    provider: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    model: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None
    base_url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None
    max_steps: Annotated[int, Field(ge=1, le=MAX_STEPS_CAP)] | None = None
    # ax-agent's context budget (issue 26): a session pauses when a request reaches this
    # many tokens. User layer only: how long a person lets a session run is theirs.
    context_budget: (
        Annotated[int, Field(ge=CONTEXT_BUDGET_MIN_TOKENS, le=CONTEXT_BUDGET_MAX_TOKENS)] | None
    ) = None
    # ax-agent's instruction files: the names tried after AGENTS.override.md, AGENTS.md
    # and AGENT.md in each folder (None: ax-agent's default, CLAUDE.md). User layer only:
    # a repository already chooses which files it ships.
    instruction_fallbacks: (
        Annotated[list[FileName], Field(max_length=MAX_INSTRUCTION_FALLBACKS)] | None
    ) = None
    # ax-agent's MCP servers (issue 23), keyed by name. Each entry is checked where it
    # is used (ax_agent.mcp.config), whose errors name the entry's field; here only its
    # shape. User layer only: a workspace declares servers in its own files, which start
    # nothing until a person approves each entry.
    mcp_servers: (
        Annotated[
            dict[McpServerName, dict[str, Any]],
            Field(max_length=MAX_MCP_SERVERS),
        ]
        | None
    ) = None
    # ax-agent's web research (issue 25): the one provider host, its key variable and
    # the allowance, checked where it is used (ax_agent.research.settings). User layer
    # only: a repository must never choose where its agent's queries go, nor how many.
    research: dict[str, Any] | None = None
    # Orchestrator mode (issue 26): regular expressions naming the running MCP servers
    # every worker thread is given. User layer only: a workspace naming it is ignored
    # with a warning (config.load_config), never an error and never obeyed.
    worker_extensions: (
        Annotated[
            list[Annotated[Pattern, AfterValidator(_compiles)]],
            Field(max_length=MAX_WORKER_EXTENSION_PATTERNS),
        ]
        | None
    ) = None


class ConfigSource(_Model):
    layer: Literal["user", "workspace"]
    path: str
    present: bool
    sha256: str | None = None


class PolicyConfig(UserConfig):
    """The merged configuration: preferences from the user layer, deny lists unioned."""

    sources: list[ConfigSource] = Field(default_factory=list)
    # What the loader ignored and why (a workspace's workerExtensions): said, never obeyed.
    warnings: list[str] = Field(default_factory=list)


# --- Trust ----------------------------------------------------------------------------


class TrustEntry(_Model):
    granted_at: str
    source: Annotated[str, StringConstraints(min_length=1, max_length=64)]


class TrustStore(_Model):
    version: Literal[1] = 1
    workspaces: dict[str, TrustEntry] = Field(default_factory=dict)


class TrustStatus(_Model):
    workspace: str
    trusted: bool
    # "store": recorded consent; "once": --trust-this-workspace, never saved; "derived":
    # an executor's worktree of a trusted workspace (never saved).
    basis: Literal["store", "once", "derived"] | None = None
    granted_at: str | None = None


# --- Durable grants -------------------------------------------------------------------

# The closed set of tools whose external reads may be granted for good. Anything
# that writes, runs a command, or reads out-of-workspace or secret files is not here.
DURABLE_EXTERNAL_TOOLS = frozenset({"web_search"})


def durable_external_eligible(tool: str) -> bool:
    """A tool whose calls a person may grant for good: the closed set, or one exact MCP tool.

    An MCP tool's name is its whole identity (``mcp__<server>__<tool>``); the grant
    names it exactly, never a server's tools as a group.
    """
    return tool in DURABLE_EXTERNAL_TOOLS or MCP_TOOL_NAME.fullmatch(tool) is not None


class DurableGrant(_Model):
    id: Annotated[str, StringConstraints(pattern=r"^g-[A-Za-z0-9._-]{1,64}$")]
    kind: Literal["check-replay", "external-tool", "mcp-server"]
    workspace: str
    replay_key: Annotated[str, StringConstraints(pattern=_SHA256_HEX)] | None = None
    tool: ToolName | None = None
    # A workspace-declared MCP server the person approved: its name, and the sha256 of
    # its entry's canonical JSON (a changed entry is another identity, asked again).
    server: McpServerName | None = None
    entry_sha256: Annotated[str, StringConstraints(pattern=_SHA256_HEX)] | None = None
    created_at: str

    @model_validator(mode="after")
    def _exact_identity(self) -> DurableGrant:
        server = (self.server, self.entry_sha256)
        if self.kind == "check-replay":
            if self.replay_key is None or self.tool is not None or server != (None, None):
                raise ValueError("a check-replay grant holds exactly one replayKey and no tool")
        elif self.kind == "mcp-server":
            if None in server or self.tool is not None or self.replay_key is not None:
                raise ValueError(
                    "an mcp-server grant holds exactly one server and entrySha256, "
                    "and no tool or replayKey"
                )
        else:
            if self.tool is None or self.replay_key is not None or server != (None, None):
                raise ValueError("an external-tool grant holds exactly one tool and no replayKey")
            if not durable_external_eligible(self.tool):
                raise ValueError(
                    f"tool {self.tool!r} is not eligible for a durable grant "
                    f"(eligible: {', '.join(sorted(DURABLE_EXTERNAL_TOOLS))}, "
                    "or one exact mcp__<server>__<tool>)"
                )
        return self


class GrantStore(_Model):
    version: Literal[1] = 1
    grants: list[DurableGrant] = Field(default_factory=list)
