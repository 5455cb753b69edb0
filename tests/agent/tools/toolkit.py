"""What the model-tool tests share: a seam over the real core functions, and contexts.

``CoreSeam`` stands in for the loop's in-process seam, which is being built in
parallel (branch agent-core) and is not here yet. It is not a mock: each verb
calls the same core function the real seam calls (ax_exec.run_managed,
ax_check.run_check, ax_slate's notes and recall), so a tool's result comes from
a real process, a real check and a real slate on disk.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ax_agent.seam_models import CheckRunRequest, NoteKeyRequest, NoteSetRequest, RecallRequest
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_check import DEFAULT_TIMEOUT_S, CheckRequest, Hooks, run_check
from ax_exec import ExecSpec, run_managed
from ax_policy import Decision, DecisionContext, SandboxStatus, decide
from ax_slate import delete_note, open_session, recall_step, set_note
from libcommon.paths import StateLayout, state_layout

SESSION = "s-tools"

ENFORCED = SandboxStatus(
    backend="landlock",
    enforced=True,
    profiles=["read-only", "workspace-write"],
    network_denied=True,
)


@dataclass
class CoreSeam:
    layout: StateLayout
    session_id: str = SESSION
    calls: list[tuple[str, BaseModel]] = field(default_factory=list)

    def call(self, verb: str, request: BaseModel, *, abort: threading.Event | None = None) -> Any:
        self.calls.append((verb, request))
        if verb == "exec.run":
            assert isinstance(request, ExecSpec)
            return run_managed(request, abort=abort)
        if verb == "check.run":
            assert isinstance(request, CheckRunRequest)
            return run_check(
                CheckRequest(
                    kind=request.kind,
                    workspace=self.layout.workspace,
                    project=request.project,
                    targets=tuple(request.targets),
                    session=self.session_id,
                    timeout_s=request.timeout_s or DEFAULT_TIMEOUT_S,
                ),
                Hooks(abort=abort),
            )
        if verb == "slate.note_set":
            assert isinstance(request, NoteSetRequest)
            return set_note(self.layout, self.session_id, request.key, request.text)
        if verb == "slate.note_delete":
            assert isinstance(request, NoteKeyRequest)
            return delete_note(self.layout, self.session_id, request.key)
        if verb == "slate.recall":
            assert isinstance(request, RecallRequest)
            return recall_step(self.layout, self.session_id, request.step, request.page)
        raise AssertionError(f"the tools never call {verb}")


@dataclass
class Harness:
    """One workspace with its state layout, slate and seam; ``call`` runs a tool."""

    workspace: Path
    state_dir: Path
    sandbox: SandboxStatus = field(default_factory=SandboxStatus)
    environ: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.layout = state_layout(self.workspace)
        open_session(self.layout, SESSION)
        self.seam = CoreSeam(self.layout)
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
    ) -> ToolResult:
        tool_input = tool.input_model.model_validate(raw)
        self.step += 1
        ctx = ToolContext(
            layout=self.layout,
            session_id=SESSION,
            call_id=f"call-{self.step}",
            step=self.step,
            seam=self.seam,
            decision=self.decide(tool, tool_input),
            abort=abort or threading.Event(),
            environ=self.environ,
        )
        result = tool.run(tool_input, ctx)
        assert result.summary and "\n" not in result.summary
        return result
