"""project_setup: install dependencies, or run the project's own migrate or seed script.

The check inversion applied to setup: the model names an intent and a unit, never a
command; ax-check resolves the command from the project's lockfile or its allowlisted
scripts. Before the decision the loop reads ax-check's plan into the setup fact (the
command and the replay key), so the question names what will run and a session
answer binds to exactly it; the run passes the decided key back, and ax-check refuses
a setup that changed in between. Its evidence is ``setup.*``, never ``check.*``.

Parent-only: an executor's worktree is disposable (an install there fills a folder
about to be deleted, and a migration there writes the real database from what the
person believes is isolation), so no child role's registry may hold this tool.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ax_check import SetupPlan, SetupResult
from ax_policy import SetupFact, ToolFacts

from ..seam.models import SetupPlanRequest, SetupRunRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, guarded, one_line


class ProjectSetupInput(ToolInput):
    intent: Literal["install", "migrate", "seed"] = Field(
        description="install: the dependencies, from the project's lockfile; migrate or seed: "
        "the project's own script of that name (migrate, db:migrate, db-migrate; seed, "
        "db:seed, db-seed). ax finds the command; you never give one."
    )
    project: str = Field(
        default="",
        description="The project (unit) folder, relative to the workspace, when the "
        "workspace holds several; empty: the only one.",
    )


def _facts(request: ProjectSetupInput) -> SetupFact:
    # The loop fills in the command and replay key from ax-check's plan before deciding.
    return SetupFact(intent=request.intent, unit=request.project or ".")


@guarded
def run(request: ProjectSetupInput, ctx: ToolContext) -> ToolResult:
    key = ctx.decision.replay_key
    project = request.project or None
    if key is None:
        # Nothing was resolved when the question was asked, so nothing may run: say why.
        plan: SetupPlan = ctx.seam.call(
            "check.setup_plan", SetupPlanRequest(intent=request.intent, project=project)
        )
        return _unresolved(plan)
    result: SetupResult = ctx.seam.call(
        "check.setup",
        SetupRunRequest(intent=request.intent, project=project, expect_key=key),
        abort=ctx.abort,
    )
    content = render(result)
    return ToolResult(
        content=content,
        is_error=result.verdict != "succeeded",
        summary=one_line(content.split("\n", 1)[0]),
    )


def _unresolved(plan: SetupPlan) -> ToolResult:
    if plan.recipe is None:
        lines = [f"{plan.intent} in {plan.project}: UNSUPPORTED ({plan.reason})"]
        lines += [text for text in (plan.message, plan.cure and f"cure: {plan.cure}") if text]
    else:
        lines = [
            f"{plan.intent} in {plan.project}: NOT RUN: it resolved to nothing when it was "
            f"approved and to {plan.recipe.command} now; call project_setup again"
        ]
    content = "\n".join(lines)
    return ToolResult(content=content, is_error=True, summary=one_line(lines[0]))


def render(result: SetupResult) -> str:
    """The setup's result as the model reads it: verdict first, evidence after."""
    place = f" in {result.project}" if result.project not in (None, ".") else ""
    head = f"{result.intent}{place}: {result.verdict.upper()}"
    if result.exit_code is not None:
        head += f" (exit code {result.exit_code})"
    elif result.termination not in (None, "exited"):
        head += f" ({result.termination})"
    lines = [head, "(a setup is not a check: run_check verifies the work)"]
    if result.message:
        lines.append(result.message)
    if result.verdict == "unsupported":
        lines.append(f"reason: {result.reason}")
        if result.cure:
            lines.append(f"to make it possible: {result.cure}")
        return "\n".join(lines)
    if result.recipe is not None:
        lines.append(f"command: {result.recipe.command}  (row {result.recipe.id})")
    if result.duration_ms is not None:
        lines.append(f"took: {result.duration_ms / 1000:.2f}s")
    output = result.output
    if output is not None and output.bytes:
        cut = "; first and last parts" if output.truncated else ""
        lines.append(f"[output: {output.bytes} bytes{cut}]")
        middle = "\n… [left out] …\n" if output.truncated else ""
        lines.append(f"{output.head}{middle}{output.tail}".rstrip("\n"))
    return "\n".join(lines)


TOOL = ModelTool(
    name="project_setup",
    description=(
        "Install the project's dependencies from its lockfile (npm ci, pnpm, yarn, uv sync, "
        "poetry, pdm, pip from a pinned requirements lock, cargo fetch, go mod download), or "
        "run its own migrate or seed script. Name the intent, never a command: ax resolves "
        "it, and refuses when there is no lockfile or no such script. Installs run the "
        "packages' lifecycle scripts with the network; a person approves each. It is not a "
        "check and never counts as verification."
    ),
    input_model=ProjectSetupInput,
    facts=ToolFacts(name="project_setup", setup=_facts),
    run=run,
)
