"""A session's MCP servers: which may start (approval of workspace entries), and their tools.

``prepare`` runs in the start sequence after the configuration is loaded: a bad
user entry is a usage error there (exit 2, nothing written). A workspace entry
starts only under a durable grant of its exact sha256; on a terminal the person
is asked (and a yes is recorded as that grant), off one it is not started and
the session says so once (an ``mcp.server`` event, ``awaiting-approval``).

``model_tool`` turns one of a server's tools into a ModelTool: its facts say it
is an external action on that server (ax-policy asks unless the exact tool is
granted), and its run is a call through ``McpServers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from libcommon.contracts import Contract
from libcommon.redact import redact

from .client import McpCallFailed, McpServers, ServerState
from .config import HttpEntry, ServerSpec, user_servers, workspace_servers
from .tools import McpTool

if TYPE_CHECKING:
    from ax_policy import PolicyConfig
    from libcommon.paths import StateLayout

    from ..tools.base import ModelTool, ToolContext, ToolResult

MCP_TOOL_PREFIX = "mcp__"
QUESTION_MAX_CHARS = 600


class McpArguments(Contract):
    """Whatever object the model sends: the server's own schema is what it was shown."""

    model_config = ConfigDict(extra="allow")


def prepare(
    layout: StateLayout,
    config: PolicyConfig,
    ask: Callable[[str], bool] | None,
) -> tuple[list[ServerState], list[str]]:
    """Each declared server in its first state, and notes on ignored declarations."""
    from ax_policy import add_durable_grant, list_durable_grants

    states = [ServerState(spec, "starting") for spec in user_servers(layout, config)]
    specs, notes = workspace_servers(layout.workspace, {state.name for state in states})
    if not specs:
        return states, notes
    granted = {
        grant.entry_sha256
        for grant in list_durable_grants(layout.root, layout.workspace)
        if grant.kind == "mcp-server"
    }
    for spec in specs:
        if spec.entry is None:
            states.append(ServerState(spec, "failed", spec.problem))
            continue
        approved = spec.sha256 in granted
        if not approved and ask is not None and ask(question(spec)):
            add_durable_grant(layout.root, layout.workspace, mcp_server=(spec.name, spec.sha256))
            approved = True
        if approved:
            states.append(ServerState(spec, "starting"))
        else:
            reason = (
                f"declared by the workspace ({spec.path}) and not approved"
                + ("" if ask is None else ": declined")
                + f"; entry sha256 {spec.sha256[:12]}"
            )
            states.append(ServerState(spec, "awaiting-approval", reason))
    return states, notes


def describe(spec: ServerSpec) -> str:
    entry = spec.entry
    if isinstance(entry, HttpEntry):
        headers = ", ".join(f"{k}: {v}" for k, v in entry.headers.items()) or "none"
        return f"connects to {entry.url} (headers {headers})"
    assert entry is not None
    command = " ".join([entry.command, *entry.args])
    env = ", ".join(sorted(entry.passed())) or "none"
    return f"runs `{command}` (variables passed: {env})"


def question(spec: ServerSpec) -> str:
    text = redact(
        f"the workspace declares the MCP server {spec.name!r} in {spec.path}; it "
        f"{describe(spec)}. Start it, now and in later sessions while the entry stays "
        f"exactly this (sha256 {spec.sha256[:12]})?"
    )
    return text if len(text) <= QUESTION_MAX_CHARS else text[: QUESTION_MAX_CHARS - 1] + "…"


def open_servers(
    states: list[ServerState],
    notes: list[str],
    layout: StateLayout,
    session_id: str,
    environ: Mapping[str, str],
) -> McpServers:
    """The session's servers: those that may start are started in the background."""
    servers = McpServers(
        states,
        workspace=layout.workspace,
        log_dir=layout.session_dir(session_id) / "mcp",
        environ=environ,
    )
    for state in states:
        if state.state != "starting":
            servers.note(
                {
                    "type": "mcp.server",
                    "server": state.name,
                    "source": state.spec.source,
                    "state": state.state,
                    "reason": state.reason,
                }
            )
    for note in notes:
        servers.note({"type": "mcp.server", "server": None, "state": "ignored", "reason": note})
    servers.start()
    return servers


def sync_tools(tools: dict[str, ModelTool], servers: McpServers) -> None:
    """Make ``tools`` hold exactly the ready servers' tools beside the built-in ones."""
    ready = {tool.name: tool for tool in servers.ready_tools()}
    for name in [name for name in tools if name.startswith(MCP_TOOL_PREFIX)]:
        if name not in ready:
            del tools[name]
    for name, tool in ready.items():
        if name not in tools:
            tools[name] = model_tool(tool, servers)


def model_tool(tool: McpTool, servers: McpServers) -> ModelTool:
    from ax_policy import ExternalFact, ToolFacts

    from ..tools.base import ModelTool, ToolResult

    entry = servers.servers[tool.server].spec.entry
    host = entry.host if isinstance(entry, HttpEntry) else None

    def external(_value: Any) -> ExternalFact:
        return ExternalFact(mcp_server=tool.server, host=host)

    def run(value: McpArguments, ctx: ToolContext) -> ToolResult:
        arguments = value.model_dump(mode="json")
        try:
            text, is_error = servers.call(tool.server, tool.remote, arguments)
        except McpCallFailed as exc:
            return ToolResult(str(exc), is_error=True, summary=f"{tool.name}: {exc}")
        return ToolResult(
            text, is_error=is_error, summary=f"{tool.name}: {'error' if is_error else 'ok'}"
        )

    return ModelTool(
        tool.name,
        tool.description,
        McpArguments,
        ToolFacts(name=tool.name, external=external),
        run,
        input_schema=tool.schema,
    )


def status_lines(servers: McpServers | None) -> list[str]:
    """What ``/mcp`` shows: each server, its state (and why), where it came from, its tools."""
    if servers is None or not servers.servers:
        return [
            "no MCP servers: declare them under mcpServers in the user config "
            "(see docs/ax-agent.md, MCP servers)"
        ]
    lines: list[str] = []
    for state in servers.snapshot():
        where = "user config" if state.spec.source == "user" else f"workspace, {state.spec.path}"
        head = f"{state.name}: {state.state} ({where})"
        if state.reason:
            head += f": {state.reason}"
        lines.append(head)
        if state.spec.entry is not None:
            lines.append(f"  {redact(describe(state.spec))}")
        if state.state == "ready":
            names = ", ".join(tool.name for tool in state.tools) or "none"
            lines.append(f"  tools: {names}")
        lines.extend(f"  note: {note}" for note in state.notes)
        if state.log is not None:
            lines.append(f"  stderr log: {state.log}")
    return lines
