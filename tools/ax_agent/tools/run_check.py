"""run_check: a typed check (test, lint, …) resolved by ax-check from the project's manifests.

The model names a kind, never a command: ax-check finds the command in the
project's own manifests. The tool declares the check; ax-policy decides whether
it runs without a question (only inside an enforced sandbox).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field

from ax_check import KINDS, CheckResult, Kind
from ax_policy import CheckFact, ToolFacts

from ..seam.models import CheckRunRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, clip_line, guarded, one_line, read_capped

CHECK_TARGETS_MAX = 64
CHECK_FINDINGS_SHOWN = 20
CHECK_SIGNALS_SHOWN = 20
CHECK_LINE_MAX_CHARS = 500


class RunCheckInput(ToolInput):
    kind: Kind = Field(
        description="What to check: build, test, test-targeted (give targets), typecheck, "
        "lint, format or static-analysis. The command comes from the project's manifests."
    )
    project: str = Field(
        default="",
        description="The project (unit) folder, relative to the workspace, when the "
        "workspace holds several; empty: the only one.",
    )
    targets: list[str] = Field(
        default_factory=list,
        max_length=CHECK_TARGETS_MAX,
        description="For test-targeted only: test ids or files, e.g. "
        "'tests/test_app.py::test_add'.",
    )


@guarded
def run(request: RunCheckInput, ctx: ToolContext) -> ToolResult:
    result: CheckResult = ctx.seam.call(
        "check.run",
        CheckRunRequest(
            kind=request.kind, project=request.project or None, targets=request.targets
        ),
        abort=ctx.abort,
    )
    cut = result.output is not None and result.output.truncated
    spill = result.output.spill_path if result.output is not None else None
    full = read_capped(spill) if cut and spill else None
    content = render(result, full is not None, ctx.step)
    diagnosis = diagnose(result, lambda: _session_events(ctx))
    if diagnosis:
        content += "\n" + "\n".join(diagnosis)
    return ToolResult(
        content=content,
        is_error=result.verdict in ("error", "unsupported"),
        summary=one_line(content.split("\n", 1)[0]),
        full_output=full,
    )


def render(result: CheckResult, saved: bool, step: int) -> str:
    """The check's result as the model reads it: verdict first, evidence after."""
    place = f" in {result.project}" if result.project not in (None, ".") else ""
    head = f"{result.kind} check{place}: {result.verdict.upper()}"
    if result.exit_code is not None:
        head += f" (exit code {result.exit_code})"
    elif result.termination not in (None, "exited"):
        head += f" ({result.termination})"
    lines = [head]
    if result.message:
        lines.append(result.message)
    if result.verdict == "unsupported":
        lines.append(f"reason: {result.reason}")
        if result.cure:
            lines.append(f"to make it possible: {result.cure}")
        return "\n".join(lines)
    if result.recipe is not None:
        lines.append(f"command: {result.recipe.command}  (recipe {result.recipe.id})")
    if result.replay_key:
        lines.append(f"replay key: {result.replay_key}")
    if result.duration_ms is not None:
        lines.append(f"took: {result.duration_ms / 1000:.2f}s")
    if result.summary is not None:
        counts = [
            f"{value} {label}"
            for label, value in (
                ("passed", result.summary.passed),
                ("failed", result.summary.failed),
                ("skipped", result.summary.skipped),
                ("xfailed", result.summary.xfailed),
                ("xpassed", result.summary.xpassed),
                ("errors", result.summary.errors),
                ("findings", result.summary.findings),
            )
            if value is not None
        ]
        if counts:
            lines.append(f"summary ({result.summary.tool}): {', '.join(counts)}")
    for signal in result.signals[:CHECK_SIGNALS_SHOWN]:
        lines.append(clip_line(f"signal {signal.name}: {signal.detail}", CHECK_LINE_MAX_CHARS))
    for finding in result.findings[:CHECK_FINDINGS_SHOWN]:
        at = ":".join(
            str(part) for part in (finding.path, finding.line, finding.column) if part is not None
        )
        code = f" [{finding.code}]" if finding.code else ""
        lines.append(clip_line(f"{at}{code} {finding.message}", CHECK_LINE_MAX_CHARS))
    if len(result.findings) > CHECK_FINDINGS_SHOWN:
        lines.append(f"… and {len(result.findings) - CHECK_FINDINGS_SHOWN} more findings")
    output = result.output
    if output is not None and output.bytes:
        if output.truncated:
            where = [f"recall_step(step={step})"] if saved else []
            if output.spill_path:
                where.append(f"spill file {output.spill_path}")
            whole = f"; the whole output: {', '.join(where)}" if where else ""
            lines.append(f"[output: {output.bytes} bytes, first and last parts{whole}]")
            lines.append(f"{output.head}\n… [left out] …\n{output.tail}".rstrip("\n"))
        else:
            lines.append(f"[output: {output.bytes} bytes]")
            lines.append(f"{output.head}{output.tail}".rstrip("\n"))
    return "\n".join(lines)


def _session_events(ctx: ToolContext) -> list[dict[str, Any]]:
    from ax_log import read_events

    return list(read_events(ctx.layout.session_log(ctx.session_id), ctx.session_id))


def diagnose(
    result: CheckResult, events: Callable[[], Sequence[Mapping[str, Any]]] | None = None
) -> list[str]:
    """The recovery catalogue's entry for a failing result (ax_agent.recovery), or nothing;
    with the session's ``events`` (read only for a failure), where its repair stands."""
    from ..recovery.classify import classify_check
    from ..recovery.ledger import attempt_line, repair_ledger
    from ..recovery.render import diagnosis_lines

    found = classify_check(
        {
            "kind": result.kind,
            "project": result.project,
            "scope": result.scope,
            "verdict": result.verdict,
            "reason": result.reason,
            "termination": result.termination,
            "exitCode": result.exit_code,
            "signals": [signal.to_json() for signal in result.signals],
        }
    )
    if found is None:
        return []
    lines = diagnosis_lines(found)
    ledger = repair_ledger(events()) if events is not None else None
    mine = [r for r in ledger.repairs if r.diagnosis.signature == found.signature] if ledger else []
    if mine and mine[-1].status == "open":
        lines.append(attempt_line(mine[-1]))
    return lines


TOOL = ModelTool(
    name="run_check",
    description=(
        "Run one of the project's own checks by kind (" + ", ".join(KINDS) + "). ax finds "
        "the command in the project's manifests (pyproject.toml, package.json, Cargo.toml, "
        "…); you never give a command. The result is the verdict (PASSED only when the "
        "command exited 0), the command, counts, failures and the output's beginning and "
        "end. Prefer it to run_command for tests, lint and type checks: it is the evidence "
        "the session report counts."
    ),
    input_model=RunCheckInput,
    facts=ToolFacts(name="run_check", check=lambda request: CheckFact(kind=request.kind)),
    run=run,
)
