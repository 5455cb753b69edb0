"""run_command: one shell command, run by ax-exec under the boundary the decision named.

The tool declares the command and its folder; ax-policy reviews them and names
the boundary (sandboxed with a profile, or unsandboxed). The tool only passes
that on: ``exec.run`` with the decision's profile, or ``none`` when the
decision says unsandboxed. ax-exec confines, times out and kills the tree.
"""

from __future__ import annotations

from pydantic import Field

from ax_exec import ExecOutcome, ExecSpec, SandboxProfile, StreamCapture
from ax_policy import CommandFact, Decision, ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded, one_line, read_capped, resolve, shown

RUN_DEFAULT_TIMEOUT_S = 120.0
RUN_MAX_TIMEOUT_S = 1_800.0
RUN_COMMAND_MAX_CHARS = 16_384
# What ax-exec keeps of each stream for the model: head and tail, the rest in the spill.
RUN_OUTPUT_BYTES = 16 * 1024


class RunCommandInput(ToolInput):
    command: str = Field(
        min_length=1,
        max_length=RUN_COMMAND_MAX_CHARS,
        description="The shell command line (run by bash, no profile or rc files).",
    )
    cwd: str = Field(
        default=".",
        min_length=1,
        description="The folder to run it in, relative to the workspace root.",
    )
    timeout_s: float = Field(
        default=RUN_DEFAULT_TIMEOUT_S,
        gt=0,
        le=RUN_MAX_TIMEOUT_S,
        description=f"Seconds before the command and everything it started are killed "
        f"(default {RUN_DEFAULT_TIMEOUT_S:g}, at most {RUN_MAX_TIMEOUT_S:g}).",
    )


def sandbox_for(decision: Decision) -> SandboxProfile:
    """The profile the decision named; ``none`` when it runs unsandboxed."""
    if decision.exec_boundary == "unsandboxed" or decision.sandbox_profile is None:
        return "none"
    return decision.sandbox_profile


@guarded
def run(request: RunCommandInput, ctx: ToolContext) -> ToolResult:
    cwd = resolve(request.cwd, ctx, write=True)
    if not cwd.is_dir():
        raise Refused(f"the cwd {shown(cwd, ctx)} is not a folder")
    spec = ExecSpec(
        shell=request.command,
        cwd=str(cwd),
        timeout_s=request.timeout_s,
        sandbox=sandbox_for(ctx.decision),
        workspace=str(ctx.workspace),
        max_output_bytes=RUN_OUTPUT_BYTES,
        spill_dir=str(ctx.layout.objects_dir),
    )
    outcome: ExecOutcome = ctx.seam.call("exec.run", spec, abort=ctx.abort)
    status = _status(outcome, request.timeout_s)
    cut = outcome.stdout.truncated or outcome.stderr.truncated
    full = read_capped(outcome.spill_path) if cut and outcome.spill_path else None
    parts = [
        status,
        _stream("stdout", outcome.stdout, outcome, full is not None, ctx.step),
        _stream("stderr", outcome.stderr, outcome, full is not None, ctx.step),
    ]
    return ToolResult(
        content="\n".join(parts),
        is_error=outcome.termination != "exited",
        summary=one_line(f"{status}: {request.command}"),
        full_output=full,
    )


def _status(outcome: ExecOutcome, timeout_s: float) -> str:
    took = f"{outcome.duration_ms / 1000:.2f}s"
    where = f"sandbox {outcome.sandbox.profile} ({outcome.sandbox.backend})"
    if outcome.sandbox.profile == "none":
        where = "unsandboxed"
    if outcome.termination == "timeout":
        head = f"timed out after {timeout_s:g}s; the command and its children were killed"
    elif outcome.termination == "aborted":
        head = "aborted; the command and its children were killed"
    elif outcome.termination == "spawn-error":
        return f"the command could not start: {outcome.error}"
    elif outcome.exit_code is not None:
        head = f"exit code {outcome.exit_code}"
    else:
        head = f"ended by signal {outcome.signal}"
    if outcome.termination != "exited" and not outcome.kill.verified:
        head += f" (processes that survived the kill: {outcome.kill.survivors})"
    return f"{head} · {took} · {where}"


def _stream(name: str, capture: StreamCapture, outcome: ExecOutcome, saved: bool, step: int) -> str:
    if capture.bytes == 0:
        return f"[{name}: empty]"
    if not capture.truncated:
        return f"[{name}: {capture.bytes} bytes]\n{capture.head}{capture.tail}".rstrip("\n")
    kept = len(capture.head.encode()) + len(capture.tail.encode())
    where = []
    if saved:
        where.append(f"recall_step(step={step}) pages through both streams")
    if outcome.spill_path:
        where.append(f"spill file {outcome.spill_path}")
    whole = f"; the whole output: {', '.join(where)}" if where else ""
    return (
        f"[{name}: {capture.bytes} bytes, showing the first and last parts{whole}]\n"
        f"{capture.head}\n… [{capture.bytes - kept} bytes left out] …\n{capture.tail}"
    ).rstrip("\n")


TOOL = ModelTool(
    name="run_command",
    description=(
        "Run a shell command (bash) in the workspace and get its exit code, stdout and "
        "stderr. Long output keeps its beginning and end, with the byte counts; the whole "
        "output stays recallable. A command is reviewed before it runs: a read-only one may "
        "run at once inside the sandbox, anything else waits for a person's approval. Use "
        "read_file, grep, glob and edit_file rather than cat, grep, find or sed. "
        f"Default timeout {RUN_DEFAULT_TIMEOUT_S:g}s."
    ),
    input_model=RunCommandInput,
    facts=ToolFacts(
        name="run_command",
        command=lambda request: CommandFact(command=request.command, cwd=request.cwd),
    ),
    run=run,
)
