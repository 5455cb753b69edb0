"""What the model-tool tests share: the real in-process seam, and contexts to call tools in.

``RecordingSeam`` is ax-agent's own ``LocalSeam`` (the in-process composition
the loop uses) that also remembers each call, so a test can assert what a
tool asked for. In a session the loop wraps it in a ``CallSeam``, which adds
the command.started/ended events and fills a check's sandbox from the
decision; the tools' results do not depend on that wrapper.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ax_agent.seam.local import LocalSeam
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_policy import Decision, DecisionContext, SandboxStatus, decide
from ax_slate import open_session
from libcommon.paths import StateLayout, state_layout

SESSION = "s-tools"

ENFORCED = SandboxStatus(
    backend="landlock",
    enforced=True,
    profiles=["read-only", "workspace-write"],
    network_denied=True,
)


class RecordingSeam(LocalSeam):
    def __init__(self, layout: StateLayout) -> None:
        super().__init__(layout, SESSION, os.environ, policy_config=None)
        self.calls: list[tuple[str, BaseModel]] = []

    def call(self, verb: str, request: BaseModel, *, abort: threading.Event | None = None) -> Any:
        self.calls.append((verb, request))
        return super().call(verb, request, abort=abort)


@dataclass
class Harness:
    """One workspace with its state layout, slate and seam; ``call`` runs a tool."""

    workspace: Path
    state_dir: Path
    sandbox: SandboxStatus = field(default_factory=SandboxStatus)
    environ: dict[str, str] = field(default_factory=dict)
    # A reviewer task's findings channel (report_finding), when the test plays one.
    review: Any = None

    def __post_init__(self) -> None:
        self.layout = state_layout(self.workspace)
        open_session(self.layout, SESSION)
        self.seam = RecordingSeam(self.layout)
        self.step = 0

    def decide(self, tool: ModelTool, tool_input: BaseModel) -> Decision:
        context = DecisionContext(
            workspace=self.workspace, sandbox=self.sandbox, state_dir=self.state_dir
        )
        return decide(tool.facts, tool_input, context)

    def call(
        self,
        tool: ModelTool,
        raw: dict[str, Any],
        *,
        abort: threading.Event | None = None,
        decision: Decision | None = None,
        model: str = "",
    ) -> ToolResult:
        """Run ``tool``; ``decision`` may be one taken earlier, before the workspace changed;
        ``model`` is the one the result goes to (whether it sees images)."""
        tool_input = tool.input_model.model_validate(raw)
        self.step += 1
        ctx = ToolContext(
            layout=self.layout,
            session_id=SESSION,
            call_id=f"call-{self.step}",
            step=self.step,
            seam=self.seam,
            decision=decision or self.decide(tool, tool_input),
            abort=abort or threading.Event(),
            environ=self.environ,
            review=self.review,
            model=model,
        )
        result = tool.run(tool_input, ctx)
        assert result.summary and "\n" not in result.summary
        return result
