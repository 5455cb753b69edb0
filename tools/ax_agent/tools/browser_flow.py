"""browser_flow: drive the running preview in the system Chromium with a typed flow.

The model declares the steps (ax_check.flow's strict schema); the harness owns
the browser, the waits and the verdict. The flow is locked to the origin
ax-preview recorded for the running preview (the one ready preview, or the one
``preview`` names): nothing the model writes can point the browser elsewhere.
The result is check evidence of kind ``browser`` with no exit code, so a pass
can satisfy a plan gate naming ``browser`` but never marks a file checked.
Screenshots are objects this session recorded: ``view_image`` shows them to a
model that takes images. ax-policy decides each call (a ``browser`` check fact:
the page's scripts run in a browser ax's sandbox does not confine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ax_check import DEFAULT_STEP_TIMEOUT_S, MAX_FLOW_STEPS, MAX_STEP_TIMEOUT_S
from ax_policy import CheckFact, ToolFacts

from ..seam.models import CheckBrowserRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded, one_line

if TYPE_CHECKING:
    from ax_check import FlowResult

BROWSER_FINDINGS_SHOWN = 20


Action = Literal[
    "goto",
    "click",
    "type",
    "expect_text",
    "expect_count",
    "expect_url",
    "expect_attribute",
    "screenshot",
]
# The fields each action takes (goto's ready_* become its ready condition).
FIELDS_OF: dict[str, tuple[str, ...]] = {
    "goto": ("url", "ready_selector", "ready_text", "ready_url"),
    "click": ("selector",),
    "type": ("selector", "text"),
    "expect_text": ("text",),
    "expect_count": ("selector", "count"),
    "expect_url": ("url",),
    "expect_attribute": ("selector", "name", "value"),
    "screenshot": (),
}
TEXT_FIELDS = (
    "url",
    "selector",
    "text",
    "ready_selector",
    "ready_text",
    "ready_url",
    "name",
    "value",
)


class StepInput(ToolInput):
    """One step, flat: the action, and the fields that action takes (the rest left empty)."""

    action: Action = Field(
        description="goto (url, and exactly one of ready_selector, ready_text, ready_url: "
        "what shows the page is ready; a load event never counts), click (selector), type "
        "(selector, text), expect_text (text visible), expect_count (selector, count), "
        "expect_url (url), expect_attribute (selector, name, value), screenshot."
    )
    url: str = Field(default="", description="A path on the preview ('/login'), or its URL.")
    selector: str = Field(default="", description="A CSS selector.")
    text: str = Field(default="", description="Text to type, or text expected visible.")
    ready_selector: str = Field(default="", description="goto: a selector present when ready.")
    ready_text: str = Field(default="", description="goto: a text visible when ready.")
    ready_url: str = Field(default="", description="goto: the URL reached when ready.")
    count: int = Field(default=-1, ge=-1, description="expect_count: how many match.")
    name: str = Field(default="", description="expect_attribute: the attribute's name.")
    value: str = Field(default="", description="expect_attribute: its expected value.")


def flow_step(step: StepInput, index: int) -> dict[str, object]:
    """The strict flow's step for one flat input step; Refused naming a misplaced field."""
    takes = FIELDS_OF[step.action]
    given = [name for name in TEXT_FIELDS if getattr(step, name)]
    given += ["count"] if step.count != -1 else []
    stray = [name for name in given if name not in takes]
    if stray:
        raise Refused(
            f"step {index} ({step.action}) does not take {', '.join(stray)}; it takes "
            f"{', '.join(takes) or 'nothing'}"
        )
    out: dict[str, object] = {"action": step.action}
    if step.action == "goto":
        out["url"] = step.url
        out["ready"] = {
            key: getattr(step, f"ready_{key}")
            for key in ("selector", "text", "url")
            if getattr(step, f"ready_{key}")
        }
        return out
    for name in takes:
        if name == "count":
            if step.count == -1:
                raise Refused(f"step {index} (expect_count) needs count")
            out["count"] = step.count
        else:
            out[name] = getattr(step, name)
    return out


class BrowserFlowInput(ToolInput):
    steps: list[StepInput] = Field(
        min_length=1,
        max_length=MAX_FLOW_STEPS,
        description="The steps, in order; the first failure stops the flow. Start with goto.",
    )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # The model is shown one flat schema: each step's object inline, no references.
        schema = super().model_json_schema(*args, **kwargs)
        definitions = schema.pop("$defs", {})
        schema["properties"]["steps"]["items"] = definitions[StepInput.__name__]
        return schema

    preview: str = Field(
        default="",
        description="The preview's id (ax-preview list); empty: the only ready preview.",
    )
    origin: str = Field(
        default="",
        description="Optional: the preview's URL, when you want the flow to say it; any "
        "other origin is refused.",
    )
    step_timeout_s: float = Field(
        default=DEFAULT_STEP_TIMEOUT_S,
        gt=0,
        le=MAX_STEP_TIMEOUT_S,
        description="How long each step may wait, in seconds.",
    )
    fail_on_console_errors: bool = Field(
        default=False,
        description="Fail the flow on a console error or uncaught page error (else a finding).",
    )
    fail_on_failed_requests: bool = Field(
        default=False,
        description="Fail the flow on a failed or blocked request (else a finding).",
    )


def preview_url(ctx: ToolContext, wanted: str) -> tuple[str, str]:
    """The URL ax-preview recorded for the preview this call means, and the unit it
    serves; Refused when none is."""
    from ax_preview import list_previews

    ready = [row for row in list_previews(ctx.workspace) if row.state == "ready" and row.url]
    if wanted:
        chosen = [row for row in ready if row.id == wanted]
        if not chosen:
            raise Refused(
                f"no ready preview {wanted!r} in this workspace (ready: "
                f"{', '.join(row.id for row in ready) or 'none'})"
            )
    elif len(ready) != 1:
        if not ready:
            raise Refused(
                "no preview is running and ready in this workspace; a flow runs only "
                "against a running preview (ask the user to start one with ax-preview start)"
            )
        raise Refused(
            "several previews are ready; name one with preview: "
            + ", ".join(f"{row.id} ({row.url})" for row in ready)
        )
    else:
        chosen = ready
    url = chosen[0].url
    assert url is not None
    return url, chosen[0].project


@guarded
def run(request: BrowserFlowInput, ctx: ToolContext) -> ToolResult:
    steps = [flow_step(step, index) for index, step in enumerate(request.steps)]
    url, project = preview_url(ctx, request.preview)
    flow: dict[str, object] = {
        "steps": steps,
        "stepTimeoutS": request.step_timeout_s,
        "failOnConsoleErrors": request.fail_on_console_errors,
        "failOnFailedRequests": request.fail_on_failed_requests,
    }
    if request.origin:
        flow["origin"] = request.origin
    result: FlowResult = ctx.seam.call(
        "check.browser",
        CheckBrowserRequest(flow=flow, preview_url=url, project=project),
        abort=ctx.abort,
    )
    content = render(result)
    return ToolResult(
        content=content,
        is_error=result.verdict in ("error", "unsupported"),
        summary=one_line(content.split("\n", 1)[0]),
    )


def render(result: FlowResult) -> str:
    """The flow's result as the model reads it: verdict first, the evidence after."""
    if result.verdict == "unsupported":
        lines = [f"browser flow: UNSUPPORTED ({result.reason}): {result.message}"]
        if result.cure:
            lines.append(f"cure: {result.cure}")
        return "\n".join(lines)
    unit = f" (unit {result.project})" if result.project not in (None, ".") else ""
    lines = [f"browser flow on {result.origin}{unit}: {result.verdict.upper()}"]
    failure = result.failure
    if failure is not None:
        lines.append(f"{failure.failure_class} at step {failure.step}: {failure.message}")
        if failure.failure_class == "protocol":
            lines.append("The browser died: the application was not judged.")
        observed = failure.observed
        if observed is not None:
            lines.append(f"observed: url {observed.url}, title {observed.title!r}")
            if observed.detail:
                lines.append(f"observed: {observed.detail}")
            if observed.text:
                lines.append(f"page text (start): {observed.text}")
    done = [f"{step.index}:{step.action}:{step.status}" for step in result.steps]
    if done:
        lines.append("steps: " + " ".join(done))
    for finding in result.findings[:BROWSER_FINDINGS_SHOWN]:
        lines.append(f"finding {finding.kind}: {finding.detail}")
    if result.findings_total > min(len(result.findings), BROWSER_FINDINGS_SHOWN):
        lines.append(f"({result.findings_total} findings in all)")
    for shot in result.screenshots:
        lines.append(
            f"screenshot of step {shot.step}: artifact {shot.sha256} (view_image shows it "
            "to a model that takes images; a picture is never the verdict)"
        )
    lines.append(
        "This is browser evidence: it can satisfy a gate naming 'browser', never a test run."
    )
    return "\n".join(lines)


TOOL = ModelTool(
    name="browser_flow",
    description=(
        "Drive the running preview (ax-preview) in a real browser with a typed flow: goto "
        "with a declared ready condition, click, type, typed expectations, screenshots. "
        "The browser reaches only the preview's origin; leaving it fails the flow. The "
        "verdict is PASSED only when every step held; failures say timeout, assertion (with "
        "what the page showed), navigation, runtime or protocol (the browser died). Console "
        "errors and failed requests are findings unless you ask to fail on them."
    ),
    input_model=BrowserFlowInput,
    facts=ToolFacts(name="browser_flow", check=lambda request: CheckFact(kind="browser")),
    run=run,
)
