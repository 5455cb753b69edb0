"""Push bound to what was observed: a local bare repository is the remote, real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from agenttest import events_of, open_session, write_script
from gittest import git, git_env, init_repo, need_git

from ax_agent.cli import main
from ax_agent.git.push import PUSH_TOOL, prepare_push, push, push_decision
from ax_agent.terminal import commands
from ax_log import append_events, read_events
from ax_policy import DurableGrant, Grants, SessionGrants, grant_trust
from ax_policy.models import SessionGrant
from libcommon.paths import state_layout

from .terminal.test_units import make

SID = "s-push"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    need_git()
    found = git_env(tmp_path / "home")
    for key in list(os.environ):
        if key.startswith("GIT_") or key == "EMAIL":
            monkeypatch.delenv(key)
    for key in ("HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(key, found[key])
    # Tokens in the person's environment: none may reach git or the remote's hooks.
    monkeypatch.setenv("GH_TOKEN", "gho_" + "a" * 36)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "b" * 36)
    return found


@pytest.fixture
def remote(tmp_path: Path, env: dict[str, str]) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], env=env, check=True)
    return bare


@pytest.fixture
def repo(workspace: Path, env: dict[str, str], remote: Path) -> Path:
    init_repo(workspace, env)
    git(workspace, "remote", "add", "origin", str(remote), env=env)
    layout = state_layout(workspace)
    grant_trust(layout)
    append_events(layout, SID, [{"type": "custom", "kind": "test", "data": {}}])
    return workspace


def remote_head(remote: Path, env: dict[str, str], branch: str = "main") -> str | None:
    out = git(remote, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", env=env, check=False)
    return out.strip() or None


def local_head(repo: Path, env: dict[str, str]) -> str:
    return git(repo, "rev-parse", "HEAD", env=env).strip()


def commit(repo: Path, env: dict[str, str], message: str) -> str:
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return local_head(repo, env)


def push_cli(run_cli, repo: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli(main, ["push", "-C", str(repo), "--session", SID, *extra])


def pushes(repo: Path) -> list[dict[str, object]]:
    layout = state_layout(repo)
    return [
        e for e in read_events(layout.session_log(SID), SID) if str(e["type"]).startswith("push.")
    ]


def test_a_new_branch_is_pushed_verified_and_nothing_else_is_written(
    run_cli, repo: Path, remote: Path, env: dict[str, str]
) -> None:
    hook = remote / "hooks" / "pre-receive"
    dump = remote.parent / "hook-env"
    hook.write_text(f"#!/bin/sh\nenv > '{dump}'\nexit 0\n")
    hook.chmod(0o755)
    result = push_cli(run_cli, repo, "--yes")
    assert result.exit_code == 0, result.stderr
    assert remote_head(remote, env) == local_head(repo, env)
    assert "nothing (a new branch): new" in result.stderr
    # The remote's hook ran, and saw no token.
    seen = dump.read_text()
    assert "PATH=" in seen and "GH_TOKEN" not in seen and "GITHUB_TOKEN" not in seen
    # Looking and pushing wrote no remote-tracking ref and no FETCH_HEAD.
    assert git(repo, "for-each-ref", "refs/remotes", env=env) == ""
    assert not (repo / ".git" / "FETCH_HEAD").exists()
    started, completed = pushes(repo)
    assert started["type"] == "push.started" and started["expected"] is None
    assert (completed["ok"], completed["verified"]) == (True, True)
    assert completed["oid"] == local_head(repo, env)


def test_a_fast_forward(run_cli, repo: Path, remote: Path, env: dict[str, str]) -> None:
    git(repo, "push", "-q", "origin", "main", env=env)
    old = local_head(repo, env)
    new = commit(repo, env, "second")
    result = push_cli(run_cli, repo, "--yes")
    assert result.exit_code == 0, result.stderr
    assert f"is now {old[:12]}: fast-forward" in result.stderr
    assert remote_head(remote, env) == new


def test_a_remote_that_rejects(run_cli, repo: Path, remote: Path, env: dict[str, str]) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes on Fridays' >&2\nexit 1\n")
    hook.chmod(0o755)
    result = push_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1
    assert "the push failed" in result.stderr and "refused" in result.stderr
    assert remote_head(remote, env) is None
    completed = pushes(repo)[-1]
    assert (completed["ok"], completed["verified"]) == (False, False)


def test_diverged_needs_force_and_force_is_leased(
    run_cli, repo: Path, remote: Path, env: dict[str, str]
) -> None:
    base = local_head(repo, env)
    commit(repo, env, "theirs")
    git(repo, "push", "-q", "origin", "main", env=env)
    theirs = local_head(repo, env)
    git(repo, "reset", "-q", "--hard", base, env=env)
    mine = commit(repo, env, "mine")
    blocked = push_cli(run_cli, repo, "--yes")
    assert blocked.exit_code == 1 and "not a fast-forward" in blocked.stderr
    assert remote_head(remote, env) == theirs
    forced = push_cli(run_cli, repo, "--yes", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert f"--force-with-lease=refs/heads/main:{theirs}" in forced.stderr
    assert remote_head(remote, env) == mine


def test_a_remote_commit_never_seen_here_refuses_even_a_force(
    run_cli, repo: Path, remote: Path, env: dict[str, str], tmp_path: Path
) -> None:
    git(repo, "push", "-q", "origin", "main", env=env)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], env=env, check=True)
    stranger = commit(other, env, "from elsewhere")
    git(other, "push", "-q", "origin", "main", env=env)
    commit(repo, env, "mine")
    for extra in ((), ("--force",)):
        result = push_cli(run_cli, repo, "--yes", *extra)
        assert result.exit_code == 1
        assert "never seen" in result.stderr and "forced or not" in result.stderr
        assert remote_head(remote, env) == stranger


def test_the_refspec_source_is_the_observed_oid_and_a_moved_remote_refuses(
    repo: Path, remote: Path, env: dict[str, str], tmp_path: Path
) -> None:
    plan = prepare_push(state_layout(repo), env)
    observed = plan.oid
    commit(repo, env, "made while the person read the preview")
    result = push(env, plan)
    assert (result.ok, result.verified) == (True, True)
    assert remote_head(remote, env) == observed != local_head(repo, env)
    # The remote moves after the look: nothing is sent.
    plan = prepare_push(state_layout(repo), env)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], env=env, check=True)
    moved = commit(other, env, "elsewhere")
    git(other, "push", "-q", "origin", "main", env=env)
    result = push(env, plan)
    assert not result.ok and "moved since the preview" in result.reason
    assert remote_head(remote, env) == moved


def test_off_a_terminal_it_needs_yes(
    run_cli, repo: Path, remote: Path, env: dict[str, str]
) -> None:
    result = push_cli(run_cli, repo)
    assert result.exit_code == 2 and "--yes" in result.stderr
    assert remote_head(remote, env) is None and pushes(repo) == []


def test_detached_head_says_what_to_do(
    run_cli, repo: Path, remote: Path, env: dict[str, str]
) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD", env=env)
    result = push_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1
    assert "HEAD is detached" in result.stderr and "--branch" in result.stderr
    assert push_cli(run_cli, repo, "--yes", "--branch", "main").exit_code == 0
    assert remote_head(remote, env) == local_head(repo, env)


def test_bad_names_an_empty_repository_and_no_repository(
    run_cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    bad = push_cli(run_cli, repo, "--yes", "--remote", "--upload-pack=touch x")
    assert bad.exit_code == 2 and "not a name ax pushes to" in bad.stderr
    missing = push_cli(run_cli, repo, "--yes", "--remote", "nowhere")
    assert missing.exit_code == 1 and "no remote 'nowhere'" in missing.stderr
    empty = tmp_path / "empty"
    init_repo(empty, env, commit=False)
    layout = state_layout(empty)
    grant_trust(layout)
    append_events(layout, SID, [{"type": "custom", "kind": "test", "data": {}}])
    result = run_cli(main, ["push", "-C", str(empty), "--session", SID, "--yes"])
    assert result.exit_code == 1 and "no commit yet" in result.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    layout = state_layout(plain)
    grant_trust(layout)
    append_events(layout, SID, [{"type": "custom", "kind": "test", "data": {}}])
    result = run_cli(main, ["push", "-C", str(plain), "--session", SID, "--yes"])
    assert result.exit_code == 1 and "not inside a git repository" in result.stderr


def test_a_push_asks_every_time_and_no_grant_answers_it(repo: Path, remote: Path) -> None:
    layout = state_layout(repo)
    held = Grants(session=SessionGrants([SessionGrant(tool=PUSH_TOOL, grant_class="external")]))
    for grants in (None, held):
        decision = push_decision(str(remote), layout, grants)
        assert (decision.verdict, decision.rule) == ("ask", "external-write")
        assert not decision.grantable
    with pytest.raises(ValueError, match="not eligible for a durable grant"):
        DurableGrant.model_validate(
            {
                "id": "g-1",
                "kind": "external-tool",
                "workspace": str(repo),
                "tool": PUSH_TOOL,
                "createdAt": "2026-01-01T00:00:00Z",
            }
        )


def test_a_blocked_host_is_refused_before_it_is_reached(
    run_cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    # ssh to a blocked host: were ls-remote run, this "ssh" would leave its marker.
    marker = tmp_path / "reached"
    git(repo, "config", "core.sshCommand", f"touch '{marker}'; false", env=env)
    git(repo, "remote", "set-url", "origin", "git@git.blocked.example:r.git", env=env)
    (repo / ".ax").mkdir()
    (repo / ".ax" / "config.json").write_text('{"blockedHosts": ["*.blocked.example"]}')
    result = push_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1 and "blocks" in result.stderr
    assert not marker.exists() and pushes(repo) == []


def test_the_terminal_push_asks_and_records(
    repo: Path, remote: Path, env: dict[str, str], tmp_path: Path
) -> None:
    session = open_session(repo, write_script(tmp_path / "s.json", []), tools=[], environ=env)
    screen, _, err = make(tty=False)
    asked: list[str] = []

    def yes(question: str) -> bool:
        asked.append(question)
        return True

    context = commands.Context(session, None, screen, None, yes)  # type: ignore[arg-type]
    assert commands.run_line(context, "/push") is None
    assert asked and asked[0].startswith("Push ") and remote_head(remote, env) is not None
    kinds = [e["type"] for e in events_of(session) if str(e["type"]).startswith("push.")]
    assert kinds == ["push.started", "push.completed"], err.getvalue()


def test_a_bare_repository_has_nothing_to_push_from(run_cli, remote: Path) -> None:
    layout = state_layout(remote)
    grant_trust(layout)
    append_events(layout, SID, [{"type": "custom", "kind": "test", "data": {}}])
    result = run_cli(main, ["push", "-C", str(remote), "--session", SID, "--yes"])
    assert result.exit_code == 1 and "bare repository" in result.stderr
