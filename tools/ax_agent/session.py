"""Starting, resuming and ending a session, in the order that makes it safe.

Start: the workspace's realpath (a state root inside it is refused) → the
trust gate (nothing before it reads a workspace byte) → the configuration →
the sandbox probe → the read-only git probe → the instruction files → the
session's id and owner lease → the repository map (ax-map, through the seam,
in a trusted workspace) → the project memory (ax-slate, through the seam;
after the map, whose digests say whether the codebase summary is stale) → the
system prompt → a new session, or the old one rebuilt from its log. Then the
first records, always in this order: ``session.started``,
``trust.verified``, ``config.loaded``, ``sandbox.status``, ``git.context``,
``memory.loaded`` (the instruction files' rows, then the memory documents'),
``map.built``.
A resumed session then loads again the instruction files its earlier lives
loaded as they worked (a second ``memory.loaded``, trigger ``resume``).

The end that writes the journal is ``ax_agent.narrative.finish``; ``Session.end``
only records the end and gives the lease up.

A session is owned by one live process at a time (an owner lease next to its
log); a second one is refused (exit 4) and a crashed owner's lease is taken over.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libcommon import clock
from libcommon.errors import OperationFailed, UsageError
from libcommon.locks import OwnerLease
from libcommon.paths import StateLayout, check_session_id, state_layout
from libcommon.trust import SPARES_DIR_NAME, WORKTREES_DIR_NAME

from .approvals import Approver, DenyingApprover
from .context import GitFacts, SandboxFacts, git_toplevel, probe_git, probe_sandbox, system_prompt
from .instructions import (
    Instructions,
    folders_loaded_before,
    load_instructions,
    working_folder,
)
from .memory import Memory, load_memory
from .providers import Message, Provider, make_provider
from .repo_map import SessionMap, load_map
from .seam import Seam
from .seam.compose import make_seam
from .seam.models import AppendRequest, SlateStartRequest
from .window.window import SYSTEM_NOTE, ContextWindow

if TYPE_CHECKING:
    from ax_policy import PolicyConfig, SessionGrants

    from .handoff.records import PauseReason
    from .mcp_servers.client import McpServers
    from .orchestrator import ThreadBoard
    from .tools.base import ModelTool
    from .tools.report_finding import ReviewChannel
    from .webresearch import ResearchLedger, ResearchState

DEFAULT_PROVIDER = "anthropic"
DEFAULT_MAX_STEPS = 50
# How long a session's start waits for the orphan sweep of executors' worktrees.
SWEEP_WAIT_SECONDS = 2.0
SESSION_ID_PREFIX = "s"

Listener = Callable[[dict[str, Any]], None]


def _ledger() -> ResearchLedger:
    from .webresearch import ResearchLedger

    return ResearchLedger()


@dataclass
class StartOptions:
    workspace: str | Path | None = None
    # The current directory the session was started in (None: this process's); when it
    # is inside the workspace, instruction files are read down to it.
    cwd: str | Path | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    script: Path | None = None
    max_steps: int | None = None
    resume: str | None = None
    continue_latest: bool = False
    trust_once: bool = False
    interactive: bool = False
    trust_ask: Callable[[str], bool] | None = None
    approver: Approver = field(default_factory=DenyingApprover)
    # The model-facing tools; None means every tool of the registry.
    tools: list[ModelTool] | None = None
    listeners: list[Listener] = field(default_factory=list)
    on_text: Callable[[str], None] | None = None
    # A running command's output as it arrives: (call id, stream, bytes).
    on_output: Callable[[str, str, bytes], None] | None = None
    # Said in the log when --dangerously-allow-all (or the demo) answers for the user.
    approval_note: str | None = None
    # Asks whether a workspace-declared MCP server may start (None: off a terminal, so no).
    mcp_ask: Callable[[str], bool] | None = None
    # Orchestrator mode (issue 26): read, plan and delegate every change to worker threads.
    orchestrator: bool = False


@dataclass
class Session:
    id: str
    layout: StateLayout
    environ: Mapping[str, str]
    provider: Provider
    model: str
    tools: dict[str, ModelTool]
    system: str
    seam: Seam
    sandbox: SandboxFacts
    config: PolicyConfig
    approver: Approver
    grants: SessionGrants
    max_steps: int
    lease: OwnerLease
    messages: list[Message] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)
    on_text: Callable[[str], None] | None = None
    on_output: Callable[[str, str, bytes], None] | None = None
    resumed: bool = False
    # True while an approval question waits for an answer (a Ctrl-C then stops the wait).
    asking: threading.Event = field(default_factory=threading.Event)
    # The Trail's last step: the next executed call becomes step trail_step + 1.
    trail_step: int = 0
    # How far into the log listeners have been shown (a byte offset at a line end).
    shown_offset: int = 0
    # Bounded context (issue 13); None sends the whole history (sessions built by hand).
    window: ContextWindow | None = None
    # The instruction files (issue 19): those of the start, and the loader of the rest.
    instructions: Instructions | None = None
    # The project memory the system prompt carries (issue 19).
    memory: Memory | None = None
    # The repository map the system prompt carries (issue 18).
    map: SessionMap | None = None
    # The plan (issue 21): the content hash whose detailed view the model was given, and
    # the history index of the message that carried it (ax_agent.plans.note).
    plan_shown: tuple[str, int] | None = None
    # The session's MCP servers (issue 23); None when none is declared.
    mcp: McpServers | None = None
    # Git checkpoints (issue 20): whether a command that may write has run (or the session
    # just began) since the last automatic checkpoint, and why none can be taken here.
    checkpoint_due: bool = True
    checkpoints_unavailable: str | None = None
    # Uncatalogued models this process has already said it runs on defaults for.
    models_noted: set[str] = field(default_factory=set)
    # Delegated tasks (issue 21): shown one line per running task (the terminal's status);
    # an empty list when none runs any more.
    on_task_status: Callable[[list[str]], None] | None = None
    # A delegated reviewer task's findings channel (the delegation engine sets it).
    review: ReviewChannel | None = None
    # Web research (issue 25): the allowance shared by reference with every researcher
    # this session starts (built on first use), and this session's own spend and findings.
    research: ResearchState | None = None
    research_ledger: ResearchLedger = field(default_factory=lambda: _ledger())
    # Handoff (issue 26): how the workspace is trusted for this run ("store", "once",
    # "derived"), the pause the saved state holds (new prompts are refused while one
    # does), the reasoning effort recorded for it, the user's context budget and the
    # request size a budget resume counts from, and the newest failover attempt.
    trust_basis: str = "store"
    pause_reason: PauseReason | None = None
    effort: str | None = None
    context_budget: int | None = None
    budget_floor: int = 0
    failover_attempt: str | None = None
    # Orchestrator mode (issue 26): whether it is on, and its worker threads (kept when it
    # is switched off, so switching it on again finds them).
    orchestrating: bool = False
    threads: ThreadBoard | None = None
    # A worker thread's session: after a batch of tool results it is reminded, once per
    # turn, to issue independent calls together.
    remind_parallel: bool = False

    @property
    def workspace(self) -> Path:
        return self.layout.workspace

    def record(self, *events: dict[str, Any]) -> list[dict[str, Any]]:
        """Append events through the seam, then show listeners everything new in the log.

        What the MCP servers queued since (their events happen on a background
        thread) goes first, in this thread, so the log's order is this thread's.
        """
        if self.mcp is not None:
            events = (*self.mcp.drain(), *events)
        if not events:
            return []
        stored: list[dict[str, Any]] = self.seam.call(
            "log.append", AppendRequest(events=list(events))
        )
        self.show_new(stored)
        return stored

    def show_new(self, appended: Sequence[Mapping[str, Any]] = ()) -> None:
        """Pass the log's new complete lines to the listeners, in log order.

        Read from the file rather than from what this process appended, so events
        other tools append (ax-check's, ax-log's snapshots) reach a stream too.
        ``appended`` is the batch this process just stored: when the log grew by
        exactly its lines since the last show, those lines are what the file now
        holds past the shown offset, and the file need not be read back.
        """
        if not self.listeners:
            return
        from libcommon import jsonio

        path = self.layout.session_log(self.id)
        data = b"".join(jsonio.dumps_line(record) for record in appended)
        if not data or os.stat(path).st_size != self.shown_offset + len(data):
            with path.open("rb") as handle:
                handle.seek(self.shown_offset)
                data = handle.read()
        end = data.rfind(b"\n") + 1
        self.shown_offset += end
        for line in data[:end].splitlines():
            if line.strip():
                record = jsonio.loads(line)
                for listener in self.listeners:
                    listener(record)

    def end(self, reason: str) -> None:
        """Stop the MCP servers, record the end and give the lease up (a later --resume
        opens it again)."""
        try:
            if self.mcp is not None:
                self.mcp.close()
            self.record(
                {"type": "session.ended", "reason": reason, "workspace": str(self.workspace)}
            )
        finally:
            self.lease.release()


def _all_tools() -> list[ModelTool]:
    import importlib

    registry = importlib.import_module(".tools.registry", __package__)
    tools: list[ModelTool] = registry.all_tools()
    return tools


def start_session(options: StartOptions) -> Session:
    """Run the start sequence and return a live, owned session (see the module docstring)."""
    from ax_policy import SessionGrants, ensure_trusted, load_config

    from .mcp_servers.session import open_servers, prepare

    layout = state_layout(options.workspace, options.environ)
    trust = ensure_trusted(
        layout,
        interactive=options.interactive,
        trust_once=options.trust_once,
        ask=options.trust_ask,
    )
    config = load_config(layout)
    # Issue 23: a bad user entry stops here, before anything is written.
    mcp_states, mcp_notes = prepare(layout, config, options.mcp_ask)
    sandbox = probe_sandbox()
    git = probe_git(layout.workspace, options.environ)
    working = working_folder(layout.workspace, options.cwd)
    instructions = load_instructions(
        layout.workspace,
        config,
        working=working,
        toplevel=git.toplevel
        if working == layout.workspace
        else git_toplevel(working, options.environ),
        user_folder=layout.root,
    )
    provider = _provider(options, config)
    # Issue 24: as a seat of an ax-mesh, its tools join (a seat that cannot authenticate
    # stops here, before anything is written).
    from .mesh_tools import seat_tools

    mesh_tools = seat_tools(options.environ)
    session_id, history = _identity(options, layout)
    lease = OwnerLease(layout.session_lease(session_id))
    lease.acquire()
    servers: McpServers | None = None
    log = layout.session_log(session_id)
    try:
        seam = make_seam(layout, session_id, options.environ, config)
        repo_map = load_map(seam, trusted=trust.trusted)
        memory = load_memory(seam, layout)
        system = system_prompt(
            layout.workspace, sandbox, git, instructions, memory.text, repo_map.text
        )
        # Bounded context (issue 13): the system prompt says how older rounds leave.
        system += "\n\n" + SYSTEM_NOTE
        tools = [*(options.tools if options.tools is not None else _all_tools()), *mesh_tools]
        session = Session(
            id=session_id,
            layout=layout,
            environ=options.environ,
            provider=provider,
            model=provider.model,
            tools={tool.name: tool for tool in tools},
            system=system,
            seam=seam,
            sandbox=sandbox,
            config=config,
            approver=options.approver,
            grants=SessionGrants(),
            max_steps=options.max_steps or config.max_steps or DEFAULT_MAX_STEPS,
            lease=lease,
            listeners=list(options.listeners),
            on_text=options.on_text,
            on_output=options.on_output,
            # A successor whose log holds only its handoff entry starts its first life.
            resumed=history is not None
            and any(event.get("type") == "session.started" for event in history),
            # A resumed session streams only what this life appends.
            shown_offset=complete_end(log) if history is not None else 0,
            instructions=instructions,
            memory=memory,
            map=repo_map,
            trust_basis=trust.basis or "store",
            context_budget=config.context_budget,
        )
        _first_records(session, trust.basis or "store", config, git, instructions, options)
        _sweep_orphans(session)
        if history is not None:
            folders = [layout.workspace / folder for folder in folders_loaded_before(history)]
            again = instructions.touch(folders, "resume")
            if again is not None:
                session.record(again)
        if mcp_states or mcp_notes:
            servers = open_servers(mcp_states, mcp_notes, layout, session_id, options.environ)
            session.mcp = servers
        session.seam.call("slate.start", SlateStartRequest())
        session.trail_step = last_trail_step(layout, session_id)
        # Bounded context (issue 13): requests send a bounded view of the history, the
        # archive keeps every message for recall, and a resume keeps what was elided.
        session.window = ContextWindow.resumed(session.seam, session.record, history or [])
        session.listeners.append(session.window.archive)
        if history is not None:
            from .handoff.pause import apply_state
            from .resume import rebuild

            session.messages = rebuild(session.record, history)
            # Issue 26: a saved pause holds across a reload.
            states = [event for event in history if event.get("type") == "handoff.state"]
            if states:
                apply_state(session, states[-1])
        # Issue 26: the orchestrator's own tools only in orchestrator mode, which holds
        # only its restricted set.
        from .orchestrator import set_orchestrator

        set_orchestrator(session, options.orchestrator)
    except BaseException:
        if servers is not None:
            servers.close()
        lease.release()
        raise
    return session


def _sweep_orphans(session: Session) -> None:
    """Remove the executors' worktrees a dead parent left (``tasks.worktrees.sweep_orphans``:
    by the owner's pid and start time, never by age), and the spare worktrees, this
    project's and any other's (a project whose repository moved never sweeps its own),
    that are too old, over the cap or fail their checks, at start and at resume.

    Bounded and never blocking: the sweep runs in a thread the session waits for at most
    ``SWEEP_WAIT_SECONDS``; one still running then goes on in the background (its next
    run finishes what a process exit interrupts). What it removed, what it could not, and
    a sweep that failed or outlived its wait are one ``worktrees.swept`` event.
    """
    layout = session.layout
    if not (layout.project_dir / WORKTREES_DIR_NAME).is_dir() and not any(
        (layout.root / "projects").glob(f"*/{WORKTREES_DIR_NAME}/{SPARES_DIR_NAME}")
    ):
        return
    from .tasks.worktrees import Sweep, sweep_orphans

    done: list[Sweep | BaseException] = []

    def sweep() -> None:
        try:
            done.append(sweep_orphans(session.layout, session.environ))
        except Exception as exc:  # reported in the session's log, never raised into it
            done.append(exc)

    worker = threading.Thread(target=sweep, name="ax-worktree-sweep", daemon=True)
    worker.start()
    worker.join(SWEEP_WAIT_SECONDS)
    if not done:
        event: dict[str, Any] = {
            "error": f"still running after {SWEEP_WAIT_SECONDS:g} s; it goes on in the background"
        }
    elif isinstance(done[0], BaseException):
        event = {"error": f"the sweep failed: {done[0]}"}
    elif done[0].removed or done[0].failed:
        event = {
            "removed": list(done[0].removed),
            "failed": [{"group": group, "reason": why} for group, why in done[0].failed],
        }
    else:
        return
    session.record({"type": "worktrees.swept", **event})


def complete_end(log: Path) -> int:
    """Where the log's complete lines end: a killed writer's fragment is moved aside later."""
    data = log.read_bytes()
    return data.rfind(b"\n") + 1


def last_trail_step(layout: StateLayout, session_id: str) -> int:
    from ax_slate import read_trail

    newest = read_trail(layout, session_id, count=1)
    return newest[-1].step if newest else 0


def _provider(options: StartOptions, config: PolicyConfig) -> Provider:
    name = options.provider or config.provider or DEFAULT_PROVIDER
    base_url = options.base_url
    # The config's base URL belongs to the config's provider: another provider's key
    # must not be sent to it.
    if base_url is None and name == (config.provider or "openai-compatible"):
        base_url = config.base_url
    # So does its model, when it names a provider: a Claude model is no DeepSeek model.
    model = options.model
    if model is None and config.provider in (None, name):
        model = config.model
    return make_provider(
        name,
        model=model,
        base_url=base_url,
        script=options.script,
        environ=options.environ,
    )


def _identity(
    options: StartOptions, layout: StateLayout
) -> tuple[str, list[dict[str, Any]] | None]:
    """A new session id, or the resumed one with its events as the log holds them now."""
    from ax_log import latest_session, read_events, require_log

    if options.resume is not None and options.continue_latest:
        raise UsageError("give --continue or --resume ID, not both")
    if options.resume is None and not options.continue_latest:
        return clock.new_id(SESSION_ID_PREFIX), None
    if options.resume is not None:
        session_id = check_session_id(options.resume)
    else:
        latest = latest_session(layout)
        if latest is None:
            raise OperationFailed(
                f"there is no session to continue in {layout.workspace}",
                hint="start one with -p TEXT",
            )
        session_id = latest
    path = require_log(layout, session_id)
    return session_id, list(read_events(path, session_id))


def _first_records(
    session: Session,
    basis: str,
    config: PolicyConfig,
    git: GitFacts,
    instructions: Instructions,
    options: StartOptions,
) -> None:
    from .providers.registry import identity

    started: dict[str, Any] = {
        "type": "session.started",
        "workspace": str(session.workspace),
        "provider": session.provider.name,
        "model": session.model,
        "resumed": session.resumed,
        **identity(session.provider, options.environ).fields(),
    }
    events = [
        started,
        {"type": "trust.verified", "workspace": str(session.workspace), "basis": basis},
        {
            "type": "config.loaded",
            "sources": [source.to_json() for source in config.sources],
            # Issue 26: what the loader ignored (a workspace naming workerExtensions).
            **({"warnings": list(config.warnings)} if config.warnings else {}),
        },
        session.sandbox.event(),
        git.event(),
        # The start's documents: the instruction files, then the project memory.
        {
            **instructions.event(),
            "documents": [*instructions.documents, *(session.memory or Memory()).rows],
        },
    ]
    if session.map is not None:
        events.append(session.map.event)
    if options.approval_note:
        events.append(
            {"type": "custom", "kind": "approvals", "data": {"note": options.approval_note}}
        )
    session.record(*events)
