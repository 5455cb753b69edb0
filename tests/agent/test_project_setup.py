"""project_setup in the turn loop: consent per intent, binding to the replay key, and
setup evidence that never reads as a check."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from agenttest import (
    ScriptedApprover,
    call,
    events_of,
    of_type,
    open_session,
    real_tools,
    types,
    write_script,
)

from ax_agent.approvals import ApprovalAnswer, ApprovalRequest
from ax_agent.loop import run_turn
from ax_report import build_report

LOCK = json.dumps({"name": "tiny", "lockfileVersion": 3, "packages": {}})


def fake_npm(tmp_path: Path) -> dict[str, str]:
    """An environment whose `npm` only counts its runs (no network, no registry)."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    npm = folder / "npm"
    npm.write_text('#!/bin/sh\necho "$@" >> installs.log\n')
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture
def npm_project(workspace: Path) -> Path:
    (workspace / "package.json").write_text(json.dumps({"name": "tiny", "version": "1.0.0"}))
    (workspace / "package-lock.json").write_text(LOCK)
    return workspace


def rules(events: list[dict[str, Any]]) -> list[str]:
    return [decision["rule"] for decision in of_type(events, "policy.decision")]


def test_an_install_answered_for_the_session_replays_until_a_config_file_changes(
    npm_project: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("project_setup", intent="install")]},
            {"toolCalls": [call("project_setup", intent="install", project=".")]},
            {"toolCalls": [call("write_file", path=".npmrc", content="registry=x\n")]},
            {"toolCalls": [call("project_setup", intent="install")]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover(["session", "no"])
    session = open_session(
        npm_project, script, tools=real_tools(), approver=approver, environ=fake_npm(tmp_path)
    )
    run_turn(session, "go")
    events = events_of(session)
    assert rules(events) == [
        "setup-install",
        "setup-install-session",
        "write-inside-workspace",
        "setup-install",
    ]
    assert [question.tool for question in approver.asked] == ["project_setup"] * 2
    first_question = approver.asked[0]
    assert first_question.offers == ("no", "once", "session")
    assert "lifecycle scripts" in first_question.decision.reason
    assert "npm ci" in first_question.decision.reason
    # Ran twice (the answer, then its replay); the changed .npmrc asked again and got "no".
    assert (npm_project / "installs.log").read_text() == "ci\nci\n"
    completed = of_type(events, "setup.completed")
    assert [event["verdict"] for event in completed] == ["succeeded", "succeeded"]
    assert not [kind for kind in types(events) if kind.startswith("check.")]


@pytest.fixture
def make_project(workspace: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed on this machine")
    (workspace / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    (workspace / "Makefile").write_text("migrate:\n\techo run >> migrations.log\n")
    return workspace


@pytest.mark.parametrize("compose", ["inprocess", pytest.param("process", marks=pytest.mark.slow)])
def test_a_migration_asks_every_time_even_after_a_session_answer(
    make_project: Path, tmp_path: Path, compose: str
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("project_setup", intent="migrate")]},
            {"toolCalls": [call("project_setup", intent="migrate", project=".")]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover(["session", "once"])
    environ = {**os.environ, "AX_COMPOSE": compose}
    session = open_session(
        make_project, script, tools=real_tools(), approver=approver, environ=environ
    )
    run_turn(session, "go")
    events = events_of(session)
    assert rules(events) == ["setup-migrate", "setup-migrate"]
    assert [question.offers for question in approver.asked] == [("no", "once")] * 2
    assert "every time" in approver.asked[0].decision.reason
    assert [event["scope"] for event in of_type(events, "approval.resolved")] == ["once"] * 2
    assert (make_project / "migrations.log").read_text() == "run\nrun\n"
    assert types(events).count("setup.started") == 2


def test_setup_evidence_never_makes_a_changed_file_checked(
    make_project: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("write_file", path="app.py", content="x = 1\n")]},
            {"toolCalls": [call("project_setup", intent="migrate")]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover(["once", "once"])
    session = open_session(make_project, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    events = events_of(session)
    assert of_type(events, "setup.completed")[0]["verdict"] == "succeeded"
    assert not [kind for kind in types(events) if kind.startswith(("check.", "command."))]
    document, _ = build_report(events)
    verdicts = {item["path"]: item["verdict"] for item in document["files"]}
    assert verdicts["app.py"] == "UNCHECKED"


class ChangingApprover:
    """Says yes, and while the question is open rewrites the script it is about."""

    name = "test"

    def __init__(self, makefile: Path) -> None:
        self.makefile = makefile
        self.asked: list[ApprovalRequest] = []

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        self.makefile.write_text("migrate:\n\techo other >> migrations.log\n")
        return ApprovalAnswer("once", self.name)


@pytest.mark.parametrize("compose", ["inprocess", pytest.param("process", marks=pytest.mark.slow)])
def test_a_setup_changed_after_its_question_does_not_run(
    make_project: Path, tmp_path: Path, compose: str
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("project_setup", intent="migrate")]}, {"text": "ok"}],
    )
    approver = ChangingApprover(make_project / "Makefile")
    environ = {**os.environ, "AX_COMPOSE": compose}
    session = open_session(
        make_project, script, tools=real_tools(), approver=approver, environ=environ
    )
    run_turn(session, "go")
    events = events_of(session)
    assert not (make_project / "migrations.log").exists()
    assert not [kind for kind in types(events) if kind.startswith("setup.")]
    completed = of_type(events, "tool.completed")[0]
    assert completed["ok"] is False
    assert "changed since it was approved" in completed["content"]


def test_an_unresolvable_install_asks_ungrantably_and_runs_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "package.json").write_text(json.dumps({"name": "tiny"}))
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("project_setup", intent="install")]}, {"text": "ok"}],
    )
    approver = ScriptedApprover(["once"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    events = events_of(session)
    assert approver.asked[0].offers == ("no", "once")
    completed = of_type(events, "tool.completed")[0]
    assert completed["ok"] is False
    assert "UNSUPPORTED (no-recipe)" in completed["content"]
    assert "no lockfile" in completed["content"]
