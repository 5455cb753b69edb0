"""browser_flow: the model's typed flow against a real ax-preview preview, in real Chromium.

The preview is ax-preview's own fixture server started by ``ax-preview start`` (it
listens on ::1, so the origin ax-preview records is an IPv6 loopback URL); the tool
finds that URL in ax-preview's registry and nowhere else.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness
from axtest import CliRunner
from browserpage import needs_browser

from ax_agent.tools import browser_flow
from ax_log import read_events
from ax_preview.cli import main as preview_main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "preview"
HOME = {"action": "goto", "url": "/", "ready_text": "hello from the fixture"}


@pytest.fixture
def preview(harness: Harness, run_cli: CliRunner) -> Iterator[str]:
    shutil.copytree(FIXTURES, harness.workspace, dirs_exist_ok=True)
    ws = str(harness.workspace)
    started = run_cli(
        preview_main, ["start", "-C", ws, "--project", "py-procfile", "--ready-timeout", "10"]
    )
    assert started.exit_code == 0, started.stderr
    record = json.loads(started.stdout)
    try:
        yield record["url"]
    finally:
        run_cli(preview_main, ["stop", "-C", ws, record["id"]])


def test_no_ready_preview_is_refused_before_a_browser_starts(harness: Harness) -> None:
    result = harness.call(browser_flow.TOOL, {"steps": [HOME]})
    assert result.is_error and "no preview is running and ready" in result.content
    assert harness.seam.calls == []


def test_a_field_the_action_does_not_take_is_refused(harness: Harness) -> None:
    result = harness.call(
        browser_flow.TOOL, {"steps": [HOME, {"action": "click", "selector": "a", "count": 2}]}
    )
    assert result.is_error and "step 1 (click) does not take count" in result.content


def test_the_tool_declares_a_browser_check_that_always_asks(harness: Harness) -> None:
    tool_input = browser_flow.TOOL.input_model.model_validate({"steps": [HOME]})
    decision = harness.decide(browser_flow.TOOL, tool_input)
    assert (decision.verdict, decision.rule) == ("ask", "check-browser-ask")


@needs_browser
def test_a_flow_runs_on_the_origin_ax_preview_recorded_and_is_check_evidence(
    harness: Harness, preview: str
) -> None:
    assert preview.startswith("http://[::1]:")
    result = harness.call(
        browser_flow.TOOL,
        {
            "steps": [HOME, {"action": "screenshot"}, {"action": "expect_text", "text": "absent"}],
            "step_timeout_s": 2,
        },
    )
    assert not result.is_error, result.content
    origin = preview.rstrip("/")
    assert result.content.startswith(f"browser flow on {origin} (unit py-procfile): FAILED")
    assert "assertion at step 2" in result.content
    (verb, request), *_ = harness.seam.calls
    assert verb == "check.browser" and request.preview_url == preview  # type: ignore[attr-defined]
    events = read_events(harness.layout.session_log("s-tools"), "s-tools")
    completed = next(e for e in events if e["type"] == "check.completed")
    assert (completed["kind"], completed["exitCode"], completed["termination"]) == (
        "browser",
        None,
        None,
    )
    # The evidence names the unit the preview serves, as ax-preview recorded it.
    assert (completed["project"], completed["recipeId"]) == (
        "py-procfile",
        "browser.flow@py-procfile",
    )
    shots = [s["detail"] for s in completed["signals"] if s["name"] == "screenshot"]
    assert len(shots) == 2 and all(f"artifact {sha}" in result.content for sha in shots)
    # An origin the flow names must be the preview's own.
    other = harness.call(browser_flow.TOOL, {"steps": [HOME], "origin": "http://127.0.0.1:1"})
    assert other.is_error and "not the preview's" in other.content
