"""The contract every model-facing tool meets.

A tool is data plus one function: its name and description, a pydantic input
model (the JSON Schema the model sees is derived from it), the policy facts it
declares (functions of the parsed input, evaluated by ax-policy, never
judged here), and ``run``. Tools contain no policy logic and never write the
event log: the loop decides, snapshots, records and only then calls ``run``. (The
exceptions record through ``ctx.session`` what must be durable the moment it happens:
web research, ``tools.research_call``, its spend before anything is sent and its
findings; the delegation tools, ``delegate_task``, ``thread``, ``threads`` and
``episode``, their tasks and threads as they start, answer and end.)
Anything that touches another ax tool goes through ``ctx.seam``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libcommon.contracts import Contract
from libcommon.paths import StateLayout

if TYPE_CHECKING:
    from ax_agent.providers.base import ImagePart, ToolSchema
    from ax_agent.seam import Seam
    from ax_agent.session import Session
    from ax_agent.tools.report_finding import ReviewChannel
    from ax_policy import Decision, DeclaredFacts, ToolFacts


@dataclass
class ToolContext:
    """What one call of a tool may use."""

    layout: StateLayout
    session_id: str
    call_id: str
    step: int
    seam: Seam
    decision: Decision
    abort: threading.Event = field(default_factory=threading.Event)
    environ: Mapping[str, str] = field(default_factory=dict)
    # Every real path the call resolved (common.resolve): the folders it worked in,
    # whose instruction files the loop loads the first time.
    touched: list[Path] = field(default_factory=list)
    # The model the call's result goes to (view_image asks the catalog whether it sees).
    model: str = ""
    # The calling session, for the one tool that starts sessions of its own
    # (delegate_task): every other tool reaches ax only through ``seam``.
    session: Session | None = None
    # A delegated reviewer task's findings channel (report_finding); None: not a reviewer.
    review: ReviewChannel | None = None

    @property
    def workspace(self) -> Path:
        return self.layout.workspace


@dataclass
class ToolResult:
    """What the model sees (``content``), and what the harness records."""

    content: str
    is_error: bool = False
    # One line for tool.completed and the trail.
    summary: str = ""
    # The full output when ``content`` had to be cut; saved for recall_step.
    full_output: str | None = None
    # Images shown to the model beside ``content`` (view_image).
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True)
class ModelTool:
    name: str
    description: str
    input_model: type[Contract]
    facts: ToolFacts
    run: Callable[[Any, ToolContext], ToolResult]
    # A schema given as data (an MCP server's) instead of derived from ``input_model``.
    input_schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    # Why the call cannot be done at all, asked before the policy decides (so nobody is
    # asked about it): the harness's own state refuses it. None: it may go on.
    precheck: Callable[[Any, Session], str | None] | None = field(
        default=None, compare=False, hash=False
    )
    # Facts only the session knows (the research host its configuration names), filled
    # into the declared facts before the policy decides.
    bind_facts: Callable[[DeclaredFacts, Session], DeclaredFacts] | None = field(
        default=None, compare=False, hash=False
    )
    # Lines the approval question adds (a research call: the query verbatim, the call's
    # bounds and the allowance left).
    consent: Callable[[Any, Session], list[str]] | None = field(
        default=None, compare=False, hash=False
    )

    def schema(self) -> ToolSchema:
        from ax_agent.providers.base import ToolSchema
        from libcommon.contracts import published_schema

        if self.input_schema is not None:
            return ToolSchema(self.name, self.description, self.input_schema)
        return ToolSchema(self.name, self.description, published_schema(self.input_model))
