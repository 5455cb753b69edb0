"""A browser flow: the typed steps a model (or a person) declares, and what a run of them says.

The model declares; the harness owns execution, waits and the verdict. The
schema is strict (no coercion, no unknown keys): ``goto`` must name what makes
the page ready (a selector present, a text visible, or the URL reached), since
a load event or an idle network says nothing about the application; the
assertions are typed; the steps run in order and the first failure stops the
flow. Every URL is a path on the origin the flow is locked to (the URL ax-preview
recorded for the running preview), or an absolute URL on that same origin.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urljoin, urlsplit

from pydantic import ConfigDict, Field, model_validator

from libcommon.contracts import Contract

MAX_FLOW_STEPS = 50
MAX_SELECTOR_CHARS = 500
MAX_TEXT_CHARS = 2000
MAX_URL_CHARS = 2000
DEFAULT_STEP_TIMEOUT_S = 10.0
MAX_STEP_TIMEOUT_S = 60.0
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

FailureClass = Literal["timeout", "assertion", "navigation", "runtime", "protocol"]
FlowVerdict = Literal["passed", "failed", "error", "unsupported"]
FindingKind = Literal["console-error", "page-error", "failed-request", "blocked-request"]


class FlowModel(Contract):
    # Contract's camelCase names and unknown keys refused, plus no coercion ("3" is no count).
    model_config = ConfigDict(strict=True)


Selector = Annotated[str, Field(min_length=1, max_length=MAX_SELECTOR_CHARS)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
UrlText = Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS)]


class Ready(FlowModel):
    """What makes the page ready: exactly one of a selector, a visible text, or a URL."""

    selector: Selector | None = Field(default=None, description="A CSS selector present.")
    text: Text | None = Field(default=None, description="A text visible on the page.")
    url: UrlText | None = Field(
        default=None, description="The page's URL reached (a path on the origin, or the URL)."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Ready:
        given = [name for name in ("selector", "text", "url") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "ready needs exactly one of selector, text or url (a load event or an idle "
                "network never counts as ready)"
            )
        return self


class Goto(FlowModel):
    action: Literal["goto"]
    url: UrlText = Field(description="A path on the origin ('/login'), or a URL on it.")
    ready: Ready


class Click(FlowModel):
    action: Literal["click"]
    selector: Selector


class TypeText(FlowModel):
    action: Literal["type"]
    selector: Selector
    text: Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class ExpectText(FlowModel):
    """A text is visible on the page."""

    action: Literal["expect_text"]
    text: Text


class ExpectCount(FlowModel):
    """Exactly ``count`` elements match ``selector``."""

    action: Literal["expect_count"]
    selector: Selector
    count: Annotated[int, Field(ge=0, le=10_000)]


class ExpectUrl(FlowModel):
    """The page's URL is this one (a path on the origin, or the URL)."""

    action: Literal["expect_url"]
    url: UrlText


class ExpectAttribute(FlowModel):
    """The first element matching ``selector`` has attribute ``name`` equal to ``value``."""

    action: Literal["expect_attribute"]
    selector: Selector
    name: Annotated[str, Field(min_length=1, max_length=200)]
    value: Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class Screenshot(FlowModel):
    """A PNG of the viewport, kept as a content-addressed blob."""

    action: Literal["screenshot"]


Step = Annotated[
    Goto | Click | TypeText | ExpectText | ExpectCount | ExpectUrl | ExpectAttribute | Screenshot,
    Field(discriminator="action"),
]


class Flow(FlowModel):
    """The steps, in order; the first failure stops the flow."""

    steps: list[Step] = Field(min_length=1, max_length=MAX_FLOW_STEPS)
    origin: UrlText | None = Field(
        default=None,
        description="The origin the flow runs on; when given it must be the preview's own.",
    )
    step_timeout_s: float = Field(default=DEFAULT_STEP_TIMEOUT_S, gt=0, le=MAX_STEP_TIMEOUT_S)
    fail_on_console_errors: bool = False
    fail_on_failed_requests: bool = False

    @model_validator(mode="after")
    def _starts_with_goto(self) -> Flow:
        if not isinstance(self.steps[0], Goto):
            raise ValueError("a flow starts with a goto step (there is no page before it)")
        return self


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL (the port made explicit), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}:{port}"


def loopback_origin(url: str) -> str:
    """The origin of a loopback http(s) URL; ValueError naming the problem otherwise."""
    origin = origin_of(url)
    if origin is None:
        raise ValueError(f"{url!r} is not an http(s) URL")
    host = urlsplit(url).hostname or ""
    if host not in LOOPBACK_HOSTS and f"[{host}]" not in LOOPBACK_HOSTS:
        raise ValueError(f"{url!r} is not on loopback (127.0.0.1, localhost or ::1)")
    return origin


def lock_origin(flow: Flow, preview_url: str) -> str:
    """The origin the flow is locked to: the preview's; a flow naming another is refused."""
    origin = loopback_origin(preview_url)
    if flow.origin is not None:
        named = origin_of(flow.origin)
        if named != origin:
            raise ValueError(
                f"the flow names origin {flow.origin!r}, not the preview's {origin}: a flow "
                "runs only on the running preview's origin"
            )
    for step in flow.steps:
        for url in _urls(step):
            absolute = urljoin(origin + "/", url)
            if origin_of(absolute) != origin:
                raise ValueError(
                    f"{step.action} names {url!r}, which is off the origin {origin}; give a "
                    "path on it ('/login')"
                )
    return origin


def _urls(step: Step) -> list[str]:
    if isinstance(step, Goto):
        return [step.url] + ([step.ready.url] if step.ready.url is not None else [])
    if isinstance(step, ExpectUrl):
        return [step.url]
    return []


# --- what a run says ------------------------------------------------------------


class Observed(FlowModel):
    """The page as the failing step last saw it."""

    url: str | None = None
    title: str | None = None
    text: str | None = Field(default=None, description="The start of the page's visible text.")
    detail: str | None = Field(default=None, description="What the assertion saw, in words.")


class FlowFailure(FlowModel):
    failure_class: FailureClass = Field(
        description="timeout: a wait ran out; assertion: the page was reached and was wrong "
        "(see observed); navigation: a page did not load, or the flow left its origin; "
        "runtime: a step could not be performed, or a console error or failed request the "
        "flow asked to fail on; protocol: the browser died, so the app was never judged."
    )
    step: int = Field(description="The failing step's index, from 0.")
    message: str
    observed: Observed | None = None


class StepRecord(FlowModel):
    index: int
    action: str
    status: Literal["passed", "failed", "skipped"]
    duration_ms: int


class FlowFinding(FlowModel):
    """Something the page did that is not a verdict (unless the flow asked it to be)."""

    kind: FindingKind
    detail: str


class ScreenshotRef(FlowModel):
    step: int
    sha256: str
    bytes: int


class FlowResult(FlowModel):
    """One run of a flow. Evidence on the check channel: never an exit code."""

    verdict: FlowVerdict
    origin: str | None = None
    project: str | None = Field(
        default=None, description="The unit the preview serves, as the evidence names it."
    )
    failure: FlowFailure | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    findings: list[FlowFinding] = Field(default_factory=list)
    findings_total: int = 0
    screenshots: list[ScreenshotRef] = Field(default_factory=list)
    duration_ms: int = 0
    reason: str | None = Field(
        default=None, description="Why it is unsupported (toolchain-unavailable); else null."
    )
    message: str | None = None
    cure: str | None = None
