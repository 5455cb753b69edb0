"""ax-check's browser kind: typed flows in the real system Chromium, driven by real Playwright,
against a small application on loopback; each failure class of the taxonomy is exercised."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner
from browserpage import needs_browser, served

from ax_check.browser import BrowserBadRequest, BrowserRequest, parse_flow, run_browser_check
from ax_check.cli import main
from ax_check.flow import FlowResult
from ax_log import read_events
from libcommon.paths import state_layout
from libcommon.procfs import all_pids, command_of

pytestmark = needs_browser


@pytest.fixture
def app() -> Iterator[str]:
    with served() as url:
        yield url


def run(app: str, workspace: Path, steps: list[dict[str, Any]], **extra: Any) -> FlowResult:
    flow = parse_flow({"steps": steps, "stepTimeoutS": 3, **extra})
    return run_browser_check(BrowserRequest(flow, app, workspace=workspace), os.environ)


HOME = {"action": "goto", "url": "/", "ready": {"text": "Welcome"}}
SLOW = {"action": "goto", "url": "/slow", "ready": {"text": "never"}}


def test_a_flow_that_holds_passes_and_keeps_its_screenshot(
    app: str, workspace: Path, state_dir: Path
) -> None:
    result = run(
        app,
        workspace,
        [
            HOME,
            {"action": "type", "selector": "#name", "text": "Ada"},
            {"action": "click", "selector": "#go"},
            {"action": "expect_text", "text": "Hello, Ada"},
            {"action": "expect_count", "selector": "li", "count": 2},
            {
                "action": "expect_attribute",
                "selector": "#next",
                "name": "data-kind",
                "value": "internal",
            },
            {"action": "screenshot"},
            {"action": "click", "selector": "#next"},
            {"action": "expect_url", "url": "/next"},
        ],
    )
    assert result.verdict == "passed", result.failure
    assert [step.status for step in result.steps] == ["passed"] * 9
    (shot,) = result.screenshots
    stored = next(state_dir.glob(f"projects/*/objects/{shot.sha256}"))
    assert stored.read_bytes().startswith(b"\x89PNG")
    assert list((state_dir / "tmp").iterdir()) == []


def test_an_assertion_fails_with_the_last_observed_state_and_stops_the_flow(
    app: str, workspace: Path
) -> None:
    result = run(
        app,
        workspace,
        [
            HOME,
            {"action": "expect_count", "selector": "li", "count": 3},
            {"action": "click", "selector": "#next"},
        ],
    )
    assert result.verdict == "failed"
    assert result.failure is not None
    assert result.failure.failure_class == "assertion"
    assert result.failure.step == 1
    observed = result.failure.observed
    assert observed is not None and observed.url == f"{app}/"
    assert observed.title == "Home" and "Welcome" in (observed.text or "")
    assert "2" in (observed.detail or "")
    assert [step.status for step in result.steps] == ["passed", "failed", "skipped"]
    # A picture of the failing page, for judgment; never the verdict.
    assert [shot.step for shot in result.screenshots] == [1]


def test_a_ready_condition_that_never_holds_is_a_timeout(app: str, workspace: Path) -> None:
    result = run(app, workspace, [{"action": "goto", "url": "/", "ready": {"selector": "#never"}}])
    assert result.verdict == "failed"
    assert result.failure is not None and result.failure.failure_class == "timeout"


def test_a_click_off_the_origin_aborts_the_flow_as_navigation(app: str, workspace: Path) -> None:
    result = run(app, workspace, [HOME, {"action": "click", "selector": "#away"}, HOME])
    assert result.failure is not None
    assert result.failure.failure_class == "navigation"
    assert "192.0.2.1" in result.failure.message and result.failure.step == 1
    assert result.verdict == "failed"


def test_a_redirect_off_the_origin_is_a_navigation_failure(app: str, workspace: Path) -> None:
    result = run(app, workspace, [{"action": "goto", "url": "/bounce", "ready": {"text": "x"}}])
    assert result.failure is not None
    assert result.failure.failure_class == "navigation"


def test_a_page_that_does_not_load_is_a_navigation_failure(workspace: Path) -> None:
    with served() as url:
        pass  # the port is closed now: nothing answers there
    result = run(url, workspace, [HOME])
    assert result.failure is not None and result.failure.failure_class == "navigation"


def test_console_errors_and_failed_requests_are_findings_unless_the_flow_asks(
    app: str, workspace: Path
) -> None:
    noisy = [{"action": "goto", "url": "/noisy", "ready": {"text": "Noisy"}}]
    result = run(app, workspace, noisy)
    assert result.verdict == "passed"
    kinds = {finding.kind for finding in result.findings}
    assert {"console-error", "failed-request", "blocked-request"} <= kinds
    assert any("192.0.2.1/tracker.gif" in f.detail for f in result.findings)
    assert any(f.detail.startswith("WebSocket ws://192.0.2.1/socket") for f in result.findings)
    strict = run(app, workspace, noisy, failOnConsoleErrors=True)
    assert strict.failure is not None and strict.failure.failure_class == "runtime"
    assert "failOnConsoleErrors" in strict.failure.message


def test_a_step_that_cannot_be_performed_is_a_runtime_failure(app: str, workspace: Path) -> None:
    result = run(app, workspace, [HOME, {"action": "click", "selector": "li:::nonsense("}])
    assert result.failure is not None and result.failure.failure_class == "runtime"


def _browsers(profile_root: Path) -> list[int]:
    """The browser processes (not their renderers or helpers) whose profile is under the root."""
    marker = f"--user-data-dir={profile_root}"
    found = []
    for pid in all_pids():
        command = command_of(pid) or ""
        if marker in command and "--type=" not in command:
            found.append(pid)
    return found


def test_a_browser_killed_mid_flow_is_protocol_and_the_app_was_never_judged(
    workspace: Path, state_dir: Path
) -> None:
    slow_asked = threading.Event()

    def kill_mid_flow() -> None:
        # Step 1 waits on a page that never loads; the kill lands then.
        if slow_asked.wait(20):
            for pid in _browsers(state_dir / "tmp"):
                os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_mid_flow)
    with served(slow_asked) as app:
        killer.start()
        result = run(app, workspace, [HOME, SLOW], stepTimeoutS=20)
    killer.join()
    assert result.verdict == "error"
    assert result.failure is not None and result.failure.failure_class == "protocol"
    assert result.failure.step == 1 and "never judged" in result.failure.message
    assert list((state_dir / "tmp").iterdir()) == []


def test_a_flow_off_the_preview_origin_is_refused_before_anything_runs(
    workspace: Path, state_dir: Path
) -> None:
    flow = parse_flow(
        {"steps": [{"action": "goto", "url": "http://192.0.2.1/", "ready": {"text": "x"}}]}
    )
    with pytest.raises(BrowserBadRequest, match="off the origin"):
        run_browser_check(BrowserRequest(flow, "http://127.0.0.1:9"), os.environ)
    named = parse_flow({"origin": "http://127.0.0.1:10", "steps": [HOME]})
    with pytest.raises(BrowserBadRequest, match="not the preview's"):
        run_browser_check(BrowserRequest(named, "http://127.0.0.1:9"), os.environ)
    with pytest.raises(BrowserBadRequest, match="not on loopback"):
        run_browser_check(
            BrowserRequest(parse_flow({"steps": [HOME]}), "http://192.0.2.1"), os.environ
        )
    assert not (state_dir / "tmp").exists()


def test_the_cli_records_the_flow_on_the_check_channel_with_no_exit_code(
    app: str, workspace: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    flow = tmp_path / "flow.json"
    flow.write_text(json.dumps({"steps": [HOME, {"action": "expect_text", "text": "Nope"}]}))
    argv = ["browser", "--flow", str(flow), "--origin", app, "-C", str(workspace)]
    result = run_cli(main, [*argv, "--session", "s-1", "--json"])
    assert result.exit_code == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["verdict"] == "failed"
    assert document["failure"]["failureClass"] == "assertion"
    assert "assertion at step 1" in result.stderr
    events = read_events(state_layout(workspace).session_log("s-1"), "s-1")
    started, completed = [e for e in events if e["type"].startswith("check.")]
    assert (started["type"], started["kind"], completed["kind"]) == (
        "check.started",
        "browser",
        "browser",
    )
    assert (completed["verdict"], completed["exitCode"], completed["termination"]) == (
        "failed",
        None,
        None,
    )
    assert completed["signals"][0]["name"] == "browser-assertion"
    # From stdin, a flow that holds: exit 0.
    good = json.dumps({"steps": [HOME]})
    assert run_cli(main, [*argv[:1], "--flow", "-", *argv[3:]], stdin=good).exit_code == 0


def test_an_abort_stops_a_waiting_step_at_once_and_the_app_is_not_judged(
    workspace: Path, state_dir: Path
) -> None:
    slow_asked, abort = threading.Event(), threading.Event()

    def abort_mid_flow() -> None:
        if slow_asked.wait(20):
            abort.set()

    flow = parse_flow({"steps": [HOME, SLOW], "stepTimeoutS": 30})
    with served(slow_asked) as app:
        threading.Thread(target=abort_mid_flow, daemon=True).start()
        begun = time.monotonic()
        result = run_browser_check(
            BrowserRequest(flow, app, workspace=workspace), os.environ, abort
        )
        took = time.monotonic() - begun
    # Without the abort, the step would wait its 30 s.
    assert took < 20, took
    assert result.verdict == "error"
    assert result.failure is not None and result.failure.failure_class == "protocol"
    assert result.failure.step == 1 and result.failure.message.startswith("aborted on request")
    assert list((state_dir / "tmp").iterdir()) == []
