"""The ``browser`` check kind: run a typed flow in the system Chromium against a preview.

The browser is ax-exec's contained Chromium (``ax_exec.launched_chromium``),
driven by Playwright for Python over CDP; nothing is ever downloaded. One
browser context per flow: downloads refused, service workers blocked, and
every request routed through the origin guard, which lets through only the
flow's origin (and ``data:``/``blob:``): an off-origin top-level navigation is
aborted and fails the flow (``navigation``); an off-origin subresource or
WebSocket is refused and is a finding.

The verdict is the flow's, never an exit status: the evidence rides the check
channel (``check.started``/``check.completed``, kind ``browser``) with no exit
code and no termination, so ax-report never counts a browser pass as a file
CHECKED, while a plan's gate naming ``browser`` is satisfied by a pass and
waived (loudly) by ``toolchain-unavailable``. A ``protocol`` failure (the
browser died) is ``error``: the application was never judged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal
from urllib.parse import urljoin

from ax_check.flow import (
    Click,
    ExpectAttribute,
    ExpectCount,
    ExpectText,
    ExpectUrl,
    FailureClass,
    FindingKind,
    Flow,
    FlowFailure,
    FlowFinding,
    FlowResult,
    FlowVerdict,
    Goto,
    Observed,
    Screenshot,
    ScreenshotRef,
    Step,
    StepRecord,
    TypeText,
    lock_origin,
    origin_of,
)
from ax_check.models import BROWSER_KIND
from libcommon.errors import AxError, OperationFailed, Unsupported, UsageError
from libcommon.paths import StateLayout, state_layout
from libcommon.redact import redact

if TYPE_CHECKING:
    from playwright.sync_api import Page, Request, Route, WebSocketRoute

    from ax_exec import AbortHook, LaunchedChromium

# The signal naming a screenshot's object: what view_image takes as this session's artifact.
SCREENSHOT_SIGNAL = "screenshot"
BROWSER_RECIPE = "browser.flow"
PLAYWRIGHT_EXTRA = "browser"
# Connecting Playwright to the launched browser.
CDP_CONNECT_TIMEOUT_S = 15.0
# Findings kept (all are counted); characters of one finding's detail.
MAX_FINDINGS = 50
FINDING_DETAIL_CHARS = 300
# The page's visible text quoted with a failure, and the time allowed to read it.
OBSERVED_TEXT_CHARS = 2000
OBSERVE_TIMEOUT_S = 2.0
# A screenshot is a viewport PNG; one larger than this is not kept.
SCREENSHOT_MAX_BYTES = 4 * 1024 * 1024
VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1280, 800
# How often the caller's abort is looked at while a step waits.
ABORT_POLL_S = 0.05
ABORTED = "aborted on request: the browser was stopped, so the app was never judged"
# Schemes a page may load without a request to any origin.
LOCAL_SCHEMES = ("data:", "blob:", "about:")


class BrowserBadRequest(UsageError):
    """The flow or the origin is refused before anything runs (nothing recorded)."""


def parse_flow(data: object) -> Flow:
    """A flow from its JSON value; BrowserBadRequest naming the first problem."""
    from pydantic import ValidationError

    try:
        return Flow.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BrowserBadRequest(
            f"the flow is not valid: {where}: {first['msg']}",
            hint="see `docs/ax-check.md`, 'Browser flows', for the steps and their fields",
        ) from None


def flow_key(flow: Flow, origin: str) -> str:
    """sha256 of the flow's canonical JSON and its origin: what this run was."""
    text = json.dumps({"origin": origin, "flow": flow.to_json()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Watch:
    """What the page did while the flow ran: findings, and off-origin top-level navigations."""

    origin: str
    findings: list[FlowFinding] = field(default_factory=list)
    total: int = 0
    errors: int = 0
    failed_requests: int = 0
    left_origin: list[str] = field(default_factory=list)

    def add(self, kind: FindingKind, detail: str) -> None:
        self.total += 1
        if kind in ("console-error", "page-error"):
            self.errors += 1
        else:
            self.failed_requests += 1
        if len(self.findings) < MAX_FINDINGS:
            text = redact(detail)[:FINDING_DETAIL_CHARS]
            self.findings.append(FlowFinding(kind=kind, detail=text))

    def guard(self, route: Route, request: Request) -> None:
        url = request.url
        if url.startswith(LOCAL_SCHEMES) or origin_of(url) == self.origin:
            route.continue_()
            return
        if _top_level(request):
            self.left_origin.append(url)
        else:
            self.add("blocked-request", f"{request.method} {url} (off the origin {self.origin})")
        route.abort("blockedbyclient")

    def guard_socket(self, socket: WebSocketRoute) -> None:
        """A WebSocket reaches the server only on the flow's origin (ws: as http:)."""
        url = socket.url
        as_http = "http" + url[2:] if url.startswith(("ws://", "wss://")) else url
        if origin_of(as_http) == self.origin:
            socket.connect_to_server()
            return
        self.add("blocked-request", f"WebSocket {url} (off the origin {self.origin})")
        socket.close()

    def navigated(self, url: str) -> None:
        if not url.startswith(LOCAL_SCHEMES) and origin_of(url) != self.origin:
            self.left_origin.append(url)


def _top_level(request: Request) -> bool:
    try:
        return request.is_navigation_request() and request.frame.parent_frame is None
    except Exception:
        # A request with no frame (a worker's) is never a top-level navigation.
        return False


class _StepFailed(Exception):
    def __init__(self, failure_class: FailureClass, message: str, detail: str | None = None):
        super().__init__(message)
        self.failure_class = failure_class
        self.message = message
        self.detail = detail


@dataclass
class FlowRun:
    """One flow against one origin, with where its screenshots go."""

    flow: Flow
    origin: str
    layout: StateLayout
    environ: Mapping[str, str]
    abort: AbortHook | None = None
    screenshots: list[ScreenshotRef] = field(default_factory=list)
    abort_seen: threading.Event = field(default_factory=threading.Event)

    def run(self) -> FlowResult:
        from ax_exec import launched_chromium

        started = time.monotonic()
        if not playwright_installed():
            return _unsupported(
                f"the Python package playwright is not installed (ax's {PLAYWRIGHT_EXTRA!r} extra)",
                f"pip install 'ax[{PLAYWRIGHT_EXTRA}]' into ax's own environment",
            )
        try:
            with launched_chromium(self.layout.root, self.environ) as chromium:
                result = self._drive(chromium)
        except Unsupported as exc:
            return _unsupported(exc.message, exc.hint)
        except OperationFailed as exc:
            failure = FlowFailure(
                failure_class="protocol",
                step=0,
                message=f"the browser did not start: {exc.message}",
            )
            result = FlowResult(verdict="error", origin=self.origin, failure=failure)
        return result.model_copy(update={"duration_ms": int((time.monotonic() - started) * 1000)})

    def _drive(self, chromium: LaunchedChromium) -> FlowResult:
        from playwright.sync_api import Error, sync_playwright

        watch = _Watch(self.origin)
        records: list[StepRecord] = []
        failure: FlowFailure | None = None
        with sync_playwright() as driver:
            try:
                browser = driver.chromium.connect_over_cdp(
                    chromium.cdp_url, timeout=CDP_CONNECT_TIMEOUT_S * 1000
                )
                context = browser.new_context(
                    accept_downloads=False,
                    service_workers="block",
                    viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT},
                )
                context.route("**/*", watch.guard)
                context.route_web_socket(lambda _url: True, watch.guard_socket)
                page = context.new_page()
            except Error as exc:
                failure = FlowFailure(
                    failure_class="protocol",
                    step=0,
                    message=f"could not open a page in the browser: {_said(exc)}",
                )
                return FlowResult(verdict="error", origin=self.origin, failure=failure)
            context.on("page", lambda new: _watch_page(new, watch))
            _watch_page(page, watch)
            done = threading.Event()
            watcher = threading.Thread(
                target=self._stop_on_abort, args=(chromium, done), daemon=True
            )
            watcher.start()
            for index, step in enumerate(self.flow.steps):
                begun = time.monotonic()
                try:
                    if self.abort_seen.is_set():
                        raise _StepFailed("protocol", ABORTED)
                    self._step(page, index, step)
                    self._judge_watch(watch)
                except _StepFailed as exc:
                    failure = self._failure(chromium, page, index, step, exc)
                except Error as exc:
                    failure = self._failure(chromium, page, index, step, _classify(exc))
                took = int((time.monotonic() - begun) * 1000)
                status: Literal["passed", "failed"] = "failed" if failure else "passed"
                records.append(
                    StepRecord(index=index, action=step.action, status=status, duration_ms=took)
                )
                if failure is not None:
                    break
            records += [
                StepRecord(index=i, action=s.action, status="skipped", duration_ms=0)
                for i, s in enumerate(self.flow.steps)
                if i >= len(records)
            ]
            done.set()
            watcher.join()
        verdict: FlowVerdict = "passed"
        if failure is not None:
            verdict = "error" if failure.failure_class == "protocol" else "failed"
        return FlowResult(
            verdict=verdict,
            origin=self.origin,
            failure=failure,
            steps=records,
            findings=watch.findings,
            findings_total=watch.total,
            screenshots=self.screenshots,
        )

    def _stop_on_abort(self, chromium: LaunchedChromium, done: threading.Event) -> None:
        """Stop the browser on the caller's abort: a step's wait ends now, not at its timeout."""
        while not done.wait(ABORT_POLL_S):
            if _abort_asked(self.abort):
                self.abort_seen.set()
                chromium.terminate()
                return

    def _judge_watch(self, watch: _Watch) -> None:
        if watch.left_origin:
            raise _StepFailed(
                "navigation",
                f"the page navigated off the origin {self.origin} to "
                f"{watch.left_origin[0][:FINDING_DETAIL_CHARS]}; the flow was aborted",
            )
        if self.flow.fail_on_console_errors and watch.errors:
            raise _StepFailed(
                "runtime", f"the page logged {watch.errors} error(s) (failOnConsoleErrors)"
            )
        if self.flow.fail_on_failed_requests and watch.failed_requests:
            raise _StepFailed(
                "runtime",
                f"{watch.failed_requests} request(s) failed or were blocked (failOnFailedRequests)",
            )

    def _step(self, page: Page, index: int, step: Step) -> None:
        from playwright.sync_api import expect

        ms = self.flow.step_timeout_s * 1000
        if isinstance(step, Goto):
            page.goto(self._url(step.url), wait_until="commit", timeout=ms)
            ready = step.ready
            if ready.selector is not None:
                page.wait_for_selector(ready.selector, state="attached", timeout=ms)
            elif ready.text is not None:
                page.get_by_text(ready.text).first.wait_for(state="visible", timeout=ms)
            else:
                assert ready.url is not None
                page.wait_for_url(self._url(ready.url), wait_until="commit", timeout=ms)
        elif isinstance(step, Click):
            page.locator(step.selector).first.click(timeout=ms)
        elif isinstance(step, TypeText):
            page.locator(step.selector).first.fill(step.text, timeout=ms)
        elif isinstance(step, Screenshot):
            self._screenshot(page, index)
        else:
            try:
                if isinstance(step, ExpectText):
                    expect(page.get_by_text(step.text).first).to_be_visible(timeout=ms)
                elif isinstance(step, ExpectCount):
                    expect(page.locator(step.selector)).to_have_count(step.count, timeout=ms)
                elif isinstance(step, ExpectUrl):
                    expect(page).to_have_url(self._url(step.url), timeout=ms)
                else:
                    assert isinstance(step, ExpectAttribute)
                    expect(page.locator(step.selector).first).to_have_attribute(
                        step.name, step.value, timeout=ms
                    )
            except AssertionError as exc:
                raise _StepFailed("assertion", f"{step.action} did not hold", _said(exc)) from None

    def _url(self, url: str) -> str:
        return urljoin(self.origin + "/", url)

    def _screenshot(self, page: Page, index: int) -> None:
        from ax_log import store_bytes

        data = page.screenshot(type="png", timeout=self.flow.step_timeout_s * 1000)
        if len(data) > SCREENSHOT_MAX_BYTES:
            return
        sha = store_bytes(self.layout, data)
        self.screenshots.append(ScreenshotRef(step=index, sha256=sha, bytes=len(data)))

    def _failure(
        self,
        chromium: LaunchedChromium,
        page: Page,
        index: int,
        step: Step,
        exc: _StepFailed,
    ) -> FlowFailure:
        failure_class = exc.failure_class
        if self.abort_seen.is_set():
            return FlowFailure(failure_class="protocol", step=index, message=ABORTED)
        browser = page.context.browser
        alive = chromium.alive() and browser is not None and browser.is_connected()
        if not alive:
            return FlowFailure(
                failure_class="protocol",
                step=index,
                message=f"the browser died during {step.action}; the app was never judged",
            )
        observed = _observe(page, exc.detail)
        if failure_class != "navigation":
            # What the page looked like when the step failed; a picture, never a verdict.
            with contextlib.suppress(Exception):
                self._screenshot(page, index)
        message = exc.message
        return FlowFailure(
            failure_class=failure_class, step=index, message=message, observed=observed
        )


def playwright_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("playwright") is not None


def _watch_page(page: Page, watch: _Watch) -> None:
    page.on(
        "console",
        lambda message: (
            watch.add("console-error", message.text) if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: watch.add("page-error", str(error)))
    page.on(
        "requestfailed",
        lambda request: (
            None
            if request.failure == "net::ERR_BLOCKED_BY_CLIENT"
            else watch.add("failed-request", f"{request.method} {request.url}: {request.failure}")
        ),
    )
    page.on(
        "framenavigated",
        lambda frame: watch.navigated(frame.url) if frame.parent_frame is None else None,
    )


def _classify(exc: Exception) -> _StepFailed:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    said = _said(exc)
    if isinstance(exc, PlaywrightTimeout):
        return _StepFailed("timeout", said)
    lowered = said.lower()
    if "has been closed" in lowered or "connection closed" in lowered or "crashed" in lowered:
        return _StepFailed("protocol", said)
    if "net::err" in lowered or "navigation" in lowered:
        return _StepFailed("navigation", said)
    return _StepFailed("runtime", said)


def _said(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    first = redact(str(text)).strip()
    # Playwright appends a call log; its first lines say what went wrong.
    return "\n".join(first.splitlines()[:6])[: FINDING_DETAIL_CHARS * 2]


def _observe(page: Page, detail: str | None) -> Observed:
    ms = OBSERVE_TIMEOUT_S * 1000
    url = title = text = None
    # The page may be mid-navigation or gone: the failure is already known, and what
    # could be observed before the page stopped answering is what the result shows.
    with contextlib.suppress(Exception):
        url = page.url
        title = page.title()[:FINDING_DETAIL_CHARS]
        text = redact(page.locator("body").inner_text(timeout=ms))[:OBSERVED_TEXT_CHARS]
    return Observed(url=url, title=title, text=text, detail=detail)


def _abort_asked(abort: AbortHook | None) -> bool:
    if abort is None:
        return False
    return abort.is_set() if isinstance(abort, threading.Event) else bool(abort())


def _unsupported(message: str, cure: str | None) -> FlowResult:
    return FlowResult(
        verdict="unsupported", reason="toolchain-unavailable", message=message, cure=cure
    )


# --- the check channel ----------------------------------------------------------


@dataclass(frozen=True)
class BrowserRequest:
    flow: Flow
    # The URL ax-preview recorded for the running preview: the origin the flow is locked to.
    preview_url: str
    workspace: str | Path | None = None
    session: str | None = None
    # The unit the preview serves (ax-preview's record says which): what the evidence is of.
    project: str = "."


def check_project(project: str) -> str:
    """A workspace-relative unit id ('.' or 'packages/web'); BrowserBadRequest otherwise."""
    parts = PurePosixPath(project).parts
    if (
        not project
        or project.startswith("/")
        or ".." in parts
        or any(ord(char) < 32 or ord(char) == 127 for char in project)
    ):
        raise BrowserBadRequest(
            f"project {project!r} is not a workspace-relative folder",
            hint="give the preview's unit as ax-preview lists it ('.' for the root)",
        )
    return str(PurePosixPath(*parts)) if parts else "."


def _event(kind: str, project: str) -> dict[str, object]:
    return {
        "type": kind,
        "kind": BROWSER_KIND,
        "project": project,
        "scope": project,
        "recipeId": f"{BROWSER_RECIPE}@{project}",
    }


def started_event(project: str = ".") -> dict[str, object]:
    """``check.started`` for a flow of the preview serving ``project``."""
    return _event("check.started", project)


def completed_event(result: FlowResult, key: str | None, project: str = ".") -> dict[str, object]:
    """``check.completed`` for a flow: the flow's verdict, no exit code, no termination."""
    signals: list[dict[str, str]] = []
    if result.failure is not None:
        signals.append(
            {
                "name": f"browser-{result.failure.failure_class}",
                "detail": f"step {result.failure.step}: {result.failure.message}"[
                    :FINDING_DETAIL_CHARS
                ],
            }
        )
    if result.reason == "toolchain-unavailable" and result.message:
        signals.append({"name": "toolchain-unavailable", "detail": result.message[:300]})
    signals += [{"name": SCREENSHOT_SIGNAL, "detail": shot.sha256} for shot in result.screenshots]
    signals += [
        {"name": finding.kind, "detail": finding.detail} for finding in result.findings[:10]
    ]
    return {
        **_event("check.completed", project),
        "verdict": result.verdict,
        "exitCode": None,
        "termination": None,
        "reason": result.reason,
        "replayKey": key,
        "signals": signals,
    }


def run_browser_check(
    request: BrowserRequest, environ: Mapping[str, str], abort: AbortHook | None = None
) -> FlowResult:
    """Lock the origin, run the flow, record its evidence on the session's check channel.

    BrowserBadRequest (nothing runs, nothing recorded) when the preview URL is
    not on loopback, the flow names a URL off its origin, or the project is no
    workspace-relative folder.
    """
    from ax_exec import find_chromium

    try:
        origin = lock_origin(request.flow, request.preview_url)
    except ValueError as exc:
        raise BrowserBadRequest(
            str(exc), hint="flows run only against a running preview on loopback"
        ) from None
    project = check_project(request.project)
    layout = state_layout(request.workspace, environ)
    session = request.session

    def record(events: list[dict[str, object]]) -> None:
        if session is not None:
            from ax_log import append_events

            append_events(layout, session, events)

    key = flow_key(request.flow, origin)
    # As for a command: an unsupported run (nothing to run it with) gets no started event.
    if playwright_installed() and find_chromium(environ) is not None:
        record([started_event(project)])
    result = FlowRun(request.flow, origin, layout, environ, abort).run()
    result = result.model_copy(update={"project": project})
    try:
        record([completed_event(result, key if result.verdict != "unsupported" else None, project)])
    except AxError as exc:
        raise OperationFailed(
            f"the flow finished ({result.verdict}) but its evidence was not recorded: "
            f"{exc.message}",
            hint=exc.hint,
        ) from exc
    return result
