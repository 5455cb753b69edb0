"""Session start facts (git, sandbox) and the terminal approver; instruction files are in
test_instructions.py."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ax_agent.approvals import ApprovalRequest, TerminalApprover
from ax_agent.context import probe_git, probe_sandbox
from ax_policy import Decision


def _git(workspace: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(workspace), *args],
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"},
    )  # fmt: skip


def test_the_git_probe_reads_branch_head_and_changes(workspace: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert probe_git(workspace, os.environ).repo is False
    _git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("a")
    _git(workspace, "add", "a.txt")
    _git(workspace, "commit", "-q", "-m", "one")
    (workspace / "b.txt").write_text("b")
    facts = probe_git(workspace, {**os.environ, "GIT_DIR": "/nonexistent"})
    assert (facts.repo, facts.branch, facts.dirty) == (True, "main", 1)
    assert facts.head is not None and len(facts.head) == 40
    # Read-only: the probe took no index lock and wrote nothing.
    assert not (workspace / ".git" / "index.lock").exists()


def test_the_git_probe_counts_a_rename_once_and_says_why_git_is_unusable(
    workspace: Path, tmp_path: Path
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("a rename keeps its content\n" * 10)
    _git(workspace, "add", "a.txt")
    _git(workspace, "commit", "-q", "-m", "one")
    _git(workspace, "mv", "a.txt", "b.txt")
    assert probe_git(workspace, os.environ).dirty == 1
    old = tmp_path / "old-git"
    old.mkdir()
    (old / "git").write_text("#!/bin/sh\necho 'git version 2.1.0'\n")
    (old / "git").chmod(0o755)
    facts = probe_git(workspace, {**os.environ, "PATH": str(old)})
    assert facts.repo is False and facts.reason is not None and "older than" in facts.reason


def test_the_git_probe_runs_no_program_of_the_repository_or_its_submodules(
    workspace: Path, tmp_path: Path
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    canary = tmp_path / "canary"
    plant = f'[filter "evil"]\n\tclean = "touch {canary}; cat"\n'
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for repo in (workspace, upstream):
        _git(repo, "init", "-q", "-b", "main")
        (repo / ".gitattributes").write_text("* filter=evil\n")
        (repo / "a.txt").write_text("a")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "one")
    _git(
        workspace,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(upstream),
        "sub",
    )
    _git(workspace, "commit", "-q", "-m", "sub")
    for repo in (workspace, workspace / ".git" / "modules" / "sub"):
        config = repo / "config" if repo.name == "sub" else repo / ".git" / "config"
        with config.open("a") as handle:
            handle.write(plant)
    (workspace / "a.txt").write_text("changed")
    (workspace / "sub" / "a.txt").write_text("changed")
    facts = probe_git(workspace, os.environ)
    assert (facts.repo, facts.dirty) == (True, 1)
    assert not canary.exists()
    # Plain git runs the plants: their absence above is the probe's doing.
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True, check=False)
    assert canary.exists()


def test_the_sandbox_status_has_the_policy_shape() -> None:
    facts = probe_sandbox()
    event = facts.event()
    assert set(event) >= {"backend", "enforced", "profiles", "networkDenied"}
    if facts.policy.enforced:
        assert facts.policy.profiles and facts.confines
    else:
        assert facts.policy.profiles == []


def _request(offers: tuple[str, ...] = ("no", "once")) -> ApprovalRequest:
    decision = Decision(
        verdict="ask",
        decision_class="command",
        rule="command-ask",
        reason="not proven read-only",
        exec_boundary="unsandboxed",
    )
    return ApprovalRequest("c1", "run_command", {"command": "rm x"}, decision, offers=offers)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("typed", "choice"),
    [("y\n", "once"), ("\n", "no"), ("n\n", "no"), ("", "stop"), ("a\nyes\n", "once")],
)
def test_the_terminal_approver_reads_typed_answers(typed: str, choice: str) -> None:
    err = io.StringIO()
    answer = TerminalApprover(io.StringIO(typed), err).ask(_request())
    assert answer.choice == choice
    shown = err.getvalue()
    assert "command=rm x" in shown and "UNSANDBOXED" in shown and "Enter = no" in shown
    if typed.startswith("a"):
        assert "'a' is not one of the answers offered" in shown


def test_the_terminal_approver_offers_session_only_when_grantable() -> None:
    err = io.StringIO()
    answer = TerminalApprover(io.StringIO("s\n"), err).ask(_request(("no", "once", "session")))
    assert answer.choice == "session"
    assert "[s] yes, for this session" in err.getvalue()
    three_bad = TerminalApprover(io.StringIO("x\nx\nx\ny\n"), io.StringIO()).ask(_request())
    assert three_bad.choice == "no"
