"""ax-check browser: refusals and the missing toolchain, which need no browser to test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from axtest import CliRunner

from ax_check.cli import main
from ax_log import read_events
from libcommon.paths import state_layout

HOME = {"action": "goto", "url": "/", "ready": {"text": "Welcome"}}


def flow_file(tmp_path: Path, data: object) -> str:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("data", "origin", "said"),
    [
        ({"steps": [{"action": "goto", "url": "/"}]}, "http://127.0.0.1:9", "steps.0.goto.ready"),
        (
            {"steps": [{"action": "goto", "url": "/", "ready": {}}]},
            "http://127.0.0.1:9",
            "a load event or an idle network never counts",
        ),
        ({"steps": [HOME], "extra": 1}, "http://127.0.0.1:9", "extra"),
        (
            {"steps": [HOME, {"action": "expect_count", "selector": "li", "count": "2"}]},
            "http://127.0.0.1:9",
            "valid integer",
        ),
        (
            {"steps": [{"action": "click", "selector": "a"}]},
            "http://127.0.0.1:9",
            "starts with a goto",
        ),
        ({"steps": [HOME]}, "http://192.0.2.1:80", "not on loopback"),
        ({"steps": [HOME]}, "file:///etc/passwd", "not an http(s) URL"),
        (
            {"steps": [{"action": "goto", "url": "//192.0.2.1/x", "ready": {"text": "x"}}]},
            "http://127.0.0.1:9",
            "off the origin",
        ),
        (
            {"origin": "http://localhost:10", "steps": [HOME]},
            "http://127.0.0.1:9",
            "not the preview's",
        ),
    ],
)
def test_a_bad_flow_or_origin_exits_2_and_records_nothing(
    run_cli: CliRunner, workspace: Path, tmp_path: Path, data: object, origin: str, said: str
) -> None:
    argv = ["browser", "--flow", flow_file(tmp_path, data), "--origin", origin]
    result = run_cli(main, [*argv, "-C", str(workspace), "--session", "s-1"])
    assert result.exit_code == 2, result.stderr
    assert said in result.stderr
    assert not state_layout(workspace).session_log("s-1").exists()


@pytest.mark.parametrize("project", ["/etc", "../x", "a/../../b", "", "we\x07b"])
def test_a_project_outside_the_workspace_is_refused(
    run_cli: CliRunner, workspace: Path, tmp_path: Path, project: str
) -> None:
    argv = ["browser", "--flow", flow_file(tmp_path, {"steps": [HOME]})]
    argv += ["--origin", "http://127.0.0.1:9", "-C", str(workspace), "--session", "s-1"]
    result = run_cli(main, [*argv, "--project", project])
    assert result.exit_code == 2, result.stderr
    assert "not a workspace-relative folder" in result.stderr
    assert not state_layout(workspace).session_log("s-1").exists()


def test_no_chromium_is_unsupported_toolchain_unavailable_naming_the_package(
    run_cli: CliRunner, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    argv = ["browser", "--flow", flow_file(tmp_path, {"steps": [HOME]})]
    argv += ["--origin", "http://127.0.0.1:9", "-C", str(workspace), "--session", "s-1"]
    result = run_cli(main, [*argv, "--json"])
    assert result.exit_code == 5, result.stderr
    document = json.loads(result.stdout)
    assert (document["verdict"], document["reason"]) == ("unsupported", "toolchain-unavailable")
    assert "apt-get install chromium" in document["cure"]
    (completed,) = read_events(state_layout(workspace).session_log("s-1"), "s-1")
    assert completed["type"] == "check.completed" and completed["verdict"] == "unsupported"
    assert (completed["project"], completed["recipeId"]) == (".", "browser.flow@.")
    web = run_cli(main, [*argv, "--project", "./web/"])
    assert web.exit_code == 5
    events = list(read_events(state_layout(workspace).session_log("s-1"), "s-1"))
    assert (events[-1]["project"], events[-1]["scope"]) == ("web", "web")
    assert completed["signals"][0]["name"] == "toolchain-unavailable"
