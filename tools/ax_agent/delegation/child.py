"""A delegated task's own session: started beside its parent, never through the trust gate.

The child is a ``Session`` like any other (its own id, log and owner lease),
driven by the same ``run_turn``; its ``session.started`` names its parent and
its task. What it may do is inherited or narrower, by construction:

- its tools are its role's registry (``roles.registry_for``), a subset of the
  parent's without the parent-only tools;
- the parent's loaded configuration (with its narrowing rules) decides every
  call, under the parent's probed sandbox; its session grants start empty;
- it reads the project's instruction files (never the user-level file) and no
  generated project memory and no repository map;
- its workspace is the parent's (read-only roles) or a worktree made of it
  (executors), trusted by derivation: ``trust.verified`` says ``derived`` and
  nothing is written to the trust store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from libcommon import clock
from libcommon.locks import OwnerLease
from libcommon.paths import state_layout

if TYPE_CHECKING:
    from ..approvals import Approver
    from ..providers import Provider
    from ..session import Listener, Session
    from ..tools.base import ModelTool
    from .roles import Role

# A child's harness-fixed budget: model calls, tokens (input and output, summed over
# its turn) and wall clock. The model cannot change them.
CHILD_MAX_STEPS = 30
CHILD_MAX_TOKENS = 400_000
CHILD_MAX_SECONDS = 900.0


def child_provider(parent: Provider, task: str) -> Provider:
    """The provider a child asks: the script's turns for the task, or the parent's own
    provider (its HTTP client is shared behind a lock, and safe across threads)."""
    for_task = getattr(parent, "for_task", None)
    if callable(for_task):
        provider: Provider = for_task(task)
        return provider
    return parent


def start_child(
    parent: Session,
    *,
    role: Role,
    task: str,
    workspace: Path,
    approver: Approver,
    listener: Listener,
    tools: dict[str, ModelTool] | None = None,
    resume: str | None = None,
    provider: Provider | None = None,
) -> Session:
    """A child session for ``task``, its first records written (see the module docstring).

    ``tools`` replaces the role's registry (a worker thread's: its role's tools and the
    whitelisted MCP servers'); ``resume`` opens that earlier child session again, its
    conversation rebuilt from its log (a worker thread's follow-up); ``provider``
    replaces ``child_provider``'s (a worker thread keeps its own across turns).
    """
    from ax_log import read_events
    from ax_policy import SessionGrants

    from ..context import probe_git, system_prompt
    from ..instructions import load_instructions
    from ..resume import rebuild
    from ..seam.compose import make_seam
    from ..seam.models import SlateStartRequest
    from ..session import SESSION_ID_PREFIX, Session, complete_end, last_trail_step
    from ..window.window import SYSTEM_NOTE, ContextWindow
    from .roles import registry_for

    layout = state_layout(workspace, parent.environ)
    git = probe_git(layout.workspace, parent.environ)
    instructions = load_instructions(
        layout.workspace,
        parent.config,
        working=layout.workspace,
        toplevel=git.toplevel,
        user_folder=None,
        for_delegated_task=True,
    )
    provider = provider or child_provider(parent.provider, task)
    child_id = resume if resume is not None else clock.new_id(SESSION_ID_PREFIX)
    lease = OwnerLease(layout.session_lease(child_id))
    lease.acquire()
    history = None
    if resume is not None:
        history = list(read_events(layout.session_log(child_id), child_id))
    try:
        seam = make_seam(layout, child_id, parent.environ, parent.config)
        system = system_prompt(layout.workspace, parent.sandbox, git, instructions)
        system += "\n\n" + SYSTEM_NOTE + "\n\n" + role.prompt
        child = Session(
            id=child_id,
            layout=layout,
            environ=parent.environ,
            provider=provider,
            model=provider.model,
            tools=tools
            if tools is not None
            else registry_for(role, {**parent.tools, **_child_only_tools()}),
            system=system,
            seam=seam,
            sandbox=parent.sandbox,
            config=parent.config,
            approver=approver,
            grants=SessionGrants(_research_grants(parent, role)),
            max_steps=CHILD_MAX_STEPS,
            lease=lease,
            listeners=[listener],
            instructions=instructions,
            resumed=history is not None,
            # A resumed child shows its listener only what this life appends.
            shown_offset=complete_end(layout.session_log(child_id)) if history else 0,
        )
        child.research = _shared_research(parent, role)
        child.record(*_first_records(child, parent, task, role, git.event()))
        seam.call("slate.start", SlateStartRequest())
        if history is not None:
            child.trail_step = last_trail_step(layout, child_id)
        child.window = ContextWindow.resumed(seam, child.record, history or [])
        child.listeners.append(child.window.archive)
        if history is not None:
            child.messages = rebuild(child.record, history)
    except BaseException:
        lease.release()
        raise
    return child


def _child_only_tools() -> dict[str, ModelTool]:
    """The tools only a delegated role holds (``tools.registry.CHILD_ONLY``), imported by
    name: the registry imports delegate_task, which starts children through this module."""
    import importlib

    registry = importlib.import_module("..tools.registry", __package__)
    tools: dict[str, ModelTool] = registry.child_only_tools()
    return tools


def _research_grants(parent: Session, role: Role) -> list[Any]:
    """A researcher starts with the parent's research consent (``webresearch.child_grants``);
    every other role starts with no grants."""
    from ..webresearch import RESEARCH_TOOLS, child_grants

    if not RESEARCH_TOOLS & set(role.tools):
        return []
    return child_grants(parent)


def _shared_research(parent: Session, role: Role) -> Any:
    """The parent's research allowance, the same object (None: the role does no research,
    or the configuration cannot be used, which the child's own calls then say)."""
    from ..research.errors import ResearchError
    from ..webresearch import RESEARCH_TOOLS, research_state

    if not RESEARCH_TOOLS & set(role.tools):
        return None
    try:
        return research_state(parent)
    except ResearchError:
        return None


def _first_records(
    child: Session, parent: Session, task: str, role: Role, git_event: dict[str, Any]
) -> list[dict[str, Any]]:
    assert child.instructions is not None
    workspace = str(child.workspace)
    return [
        {
            "type": "session.started",
            "workspace": workspace,
            "provider": child.provider.name,
            "model": child.model,
            "resumed": child.resumed,
            "parent": parent.id,
            "task": task,
            "role": role.name,
        },
        {"type": "trust.verified", "workspace": workspace, "basis": "derived"},
        {"type": "config.loaded", "sources": [s.to_json() for s in parent.config.sources]},
        child.sandbox.event(),
        git_event,
        {**child.instructions.event(), "documents": list(child.instructions.documents)},
    ]
