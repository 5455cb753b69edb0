"""Orchestrator mode (issue 26): the session reads, plans and delegates every change.

``ax-agent --orchestrator`` or ``/orchestrator on``: the session keeps only
``ORCHESTRATOR_TOOLS`` (read-only tools, ``plan_write``, and its own
``thread``, ``threads`` and ``episode``); every change is a worker thread's
(``delegation.threads``). It gains no MCP server's tools; its instructions name
the servers ``workerExtensions`` whitelists for its workers, and their tools, so
it knows what it can delegate. ``/orchestrator off`` gives the full set back;
the threads stay, for when it is switched on again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .delegation.extensions import Whitelist
    from .providers import Provider
    from .session import Session
    from .tools.base import ModelTool

# The tools only an orchestrating session holds:
ORCHESTRATOR_ONLY: frozenset[str] = frozenset({"thread", "threads", "episode"})
# and the whole of what it holds: read-only tools, the plan and its own three. A list of
# what it may keep, not of what it may not: a tool added later stays out until named here.
ORCHESTRATOR_TOOLS: frozenset[str] = frozenset(
    {
        "read_file",
        "view_image",
        "list_dir",
        "glob",
        "grep",
        "retrieve",
        "recall_step",
        "slate_trail",
        "history_search",
        "git_status",
        "plan_write",
        *ORCHESTRATOR_ONLY,
    }
)

DOCTRINE = (
    "You are the orchestrator of this session. You read, search and plan; you change "
    "nothing yourself. Every change (an edit, a command, a check) is a worker thread's: "
    "dispatch one with the thread tool (a label and a task it can do on its own: it sees "
    "nothing of this conversation), steer one with threads (send a follow-up to the same "
    "worker, list them, stop one), and when a worker has delivered, record it with "
    "episode (its thread id, a summary and the evidence: paths, checks and their "
    "verdicts). A worker's answer is its own account: check it before you rely on it."
)


@dataclass
class ThreadBoard:
    """A session's orchestration state in this process."""

    # The session's tools without the orchestrator's own: what it holds when the mode
    # is off, and where a worker's tools come from (an orchestrator's set holds no writer).
    full_tools: dict[str, ModelTool]
    # The orchestrator's own three, as the session was given them.
    own_tools: dict[str, ModelTool]
    # The system prompt without the orchestrator's instructions (taken when it goes on).
    base_system: str
    # Each thread's provider, so a follow-up continues where the last turn left off
    # (the script provider's turns); a thread first met here gets a new one.
    providers: dict[str, Provider] = field(default_factory=dict)
    whitelist: Whitelist | None = None


def doctrine(whitelist: Whitelist | None) -> str:
    """The orchestrator's instructions, naming each whitelisted server and its tools."""
    lines = [DOCTRINE]
    servers = whitelist.servers if whitelist is not None else []
    if servers:
        lines.append(
            "Every worker also holds these MCP servers (you do not: delegate what needs them):"
        )
        lines += [f"- {entry.server}: {', '.join(entry.tools)}" for entry in servers]
    return "\n\n".join([lines[0], "\n".join(lines[1:])]) if servers else lines[0]


def set_orchestrator(session: Session, on: bool) -> None:
    """Switch orchestrator mode (see the module docstring). The session's start calls it
    once either way, with every tool of the registry in ``session.tools``."""
    from .mcp_servers.session import MCP_TOOL_PREFIX

    board = session.threads
    if board is None:
        # The set as it is now, without the servers' tools (sync_tools keeps those in
        # step; a worker gets only the whitelisted ones), the orchestrator's own aside.
        tools = {n: t for n, t in session.tools.items() if not n.startswith(MCP_TOOL_PREFIX)}
        board = ThreadBoard(
            full_tools={n: t for n, t in tools.items() if n not in ORCHESTRATOR_ONLY},
            own_tools={n: t for n, t in tools.items() if n in ORCHESTRATOR_ONLY},
            base_system=session.system,
        )
        session.threads = board
    if on:
        if not session.orchestrating:
            # The prompt as it is now (not as it was at the start): what "off" gives back.
            board.base_system = session.system
        kept = {n: t for n, t in board.full_tools.items() if n in ORCHESTRATOR_TOOLS}
        session.tools = {**kept, **board.own_tools}
        session.system = board.base_system + "\n\n" + doctrine(board.whitelist)
    elif session.orchestrating:
        session.tools = dict(board.full_tools)
        session.system = board.base_system
    else:
        # Already off (the start): only the orchestrator's own leave.
        session.tools = {n: t for n, t in session.tools.items() if n not in ORCHESTRATOR_ONLY}
    session.orchestrating = on


def prepare_turn(session: Session) -> None:
    """Before an orchestrator's turn: resolve ``workerExtensions`` once (the servers have
    had their start-up wait) and name the whitelist in the instructions."""
    board = session.threads
    if board is None:
        return
    if board.whitelist is None:
        board.whitelist = resolve_whitelist(session)
        if board.whitelist.servers or board.whitelist.warnings:
            session.record(board.whitelist.event())
    session.system = board.base_system + "\n\n" + doctrine(board.whitelist)


def resolve_whitelist(session: Session) -> Whitelist:
    from .delegation.extensions import Whitelist, resolve

    patterns = session.config.worker_extensions or []
    if not patterns:
        return Whitelist()
    states = session.mcp.snapshot() if session.mcp is not None else []
    return resolve(patterns, states)
