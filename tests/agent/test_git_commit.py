"""Deliberate commits: ``ax-agent commit`` and ``/commit`` stage only what this session
changed, as the person, with their hooks, and leave everything else alone. Real git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from agenttest import events_of, open_session, write_script
from gittest import (
    IDENTITY,
    git,
    git_env,
    init_repo,
    need_git,
    plant_fsmonitor,
    plant_marker_hooks,
)

from ax_agent.cli import main
from ax_agent.terminal import commands
from ax_log import append_events, read_events
from ax_policy import grant_trust
from libcommon.paths import StateLayout, state_layout

from .terminal.test_units import make

SID = "s-commit"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The test's git world, also set on this process (the CLI reads os.environ)."""
    need_git()
    found = git_env(tmp_path / "home")
    for key in list(os.environ):
        if key.startswith("GIT_") or key == "EMAIL":
            monkeypatch.delenv(key)
    for key in ("HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(key, found[key])
    return found


@pytest.fixture
def repo(workspace: Path, env: dict[str, str]) -> Path:
    init_repo(workspace, env)
    grant_trust(state_layout(workspace))
    return workspace


def wrote(layout: StateLayout, path: str, data: bytes | None, session: str = SID) -> None:
    """The session's typed tool wrote ``data`` to ``path`` (None: removed it)."""
    target = layout.workspace / path
    if data is None:
        target.unlink()
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    post = None if data is None else hashlib.sha256(data).hexdigest()
    event = {"type": "file.mutated", "callId": "c1", "path": path, "pre": None, "post": post}
    append_events(layout, session, [event])


def head(repo: Path, env: dict[str, str]) -> str:
    return git(repo, "rev-parse", "HEAD", env=env).strip()


def committed(repo: Path, env: dict[str, str]) -> list[str]:
    out = git(repo, "show", "--name-only", "-z", "--format=", "HEAD", env=env)
    return sorted(name for name in out.split("\0") if name)


def commit_cli(run_cli, repo: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli(main, ["commit", "-C", str(repo), "--session", SID, *extra])


def test_commits_only_the_session_paths_as_the_person_with_their_hooks(
    run_cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    layout = state_layout(repo)
    marker = tmp_path / "hooks-ran"
    plant_marker_hooks(repo, marker)
    fsmonitor = tmp_path / "fsmonitor-ran"
    plant_fsmonitor(repo, fsmonitor)
    (repo / "README.md").write_text("the user's own edit\n")
    (repo / "notes.txt").write_text("the user's own untracked file\n")
    wrote(layout, "src/app.py", b"print('hi')\n")
    wrote(layout, "odd\nname.txt", b"x\n")
    before = head(repo, env)

    result = commit_cli(run_cli, repo, "--yes", "-m", "add the app")
    assert result.exit_code == 0, result.stderr
    assert committed(repo, env) == sorted(["odd\nname.txt", "src/app.py"])
    author = git(repo, "log", "-1", "--format=%an <%ae>|%s", env=env).strip()
    assert author == f"{IDENTITY[0]} <{IDENTITY[1]}>|add the app"
    ran = marker.read_text().split()
    assert "pre-commit" in ran and "commit-msg" in ran and "post-commit" in ran
    assert not fsmonitor.exists()
    # The user's own changes are exactly as they were.
    status = git(repo, "status", "--porcelain", env=env)
    assert status == " M README.md\n?? notes.txt\n"
    assert (repo / "README.md").read_text() == "the user's own edit\n"
    # Nobody set an identity: the repository's config holds none.
    assert "user" not in (repo / ".git" / "config").read_text()
    events = [e for e in read_events(layout.session_log(SID), SID) if e["type"] == "commit.created"]
    assert len(events) == 1
    assert events[0]["oid"] == head(repo, env) and events[0]["parent"] == before
    assert events[0]["branch"] == "main"
    assert sorted(events[0]["paths"]) == sorted(["odd\nname.txt", "src/app.py"])
    assert "Commit on branch main" in result.stderr and '"odd\\nname.txt"' in result.stderr


def test_off_a_terminal_it_needs_yes_and_commits_nothing_without(
    run_cli, repo: Path, env: dict[str, str]
) -> None:
    wrote(state_layout(repo), "a.txt", b"a\n")
    before = head(repo, env)
    result = commit_cli(run_cli, repo)
    assert result.exit_code == 2
    assert "?? a.txt" in result.stderr and "--yes" in result.stderr
    assert head(repo, env) == before
    assert git(repo, "status", "--porcelain", env=env) == "?? a.txt\n"


def test_a_deletion_and_a_modification_are_committed(
    run_cli, repo: Path, env: dict[str, str]
) -> None:
    (repo / "gone.txt").write_text("bye\n")
    git(repo, "add", "gone.txt", env=env)
    git(repo, "commit", "-q", "-m", "add gone", env=env)
    layout = state_layout(repo)
    wrote(layout, "gone.txt", None)
    wrote(layout, "README.md", b"better\n")
    assert commit_cli(run_cli, repo, "--yes").exit_code == 0
    assert committed(repo, env) == ["README.md", "gone.txt"]
    assert git(repo, "status", "--porcelain", env=env) == ""


def test_no_identity_blocks_and_none_is_set(
    run_cli, repo: Path, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare_home = git_env(tmp_path / "nobody", identity=False)
    monkeypatch.setenv("HOME", bare_home["HOME"])
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", bare_home["GIT_CONFIG_GLOBAL"])
    wrote(state_layout(repo), "a.txt", b"a\n")
    before = (tmp_path / "nobody" / ".gitconfig").read_text()
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1
    assert "no identity configured" in result.stderr and "never sets one" in result.stderr
    assert (tmp_path / "nobody" / ".gitconfig").read_text() == before
    assert "user" not in (repo / ".git" / "config").read_text()


def test_a_pre_staged_index_blocks(run_cli, repo: Path, env: dict[str, str]) -> None:
    (repo / "mine.txt").write_text("staged by the user\n")
    git(repo, "add", "mine.txt", env=env)
    wrote(state_layout(repo), "a.txt", b"a\n")
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1 and "already staged" in result.stderr
    assert git(repo, "status", "--porcelain", env=env) == "A  mine.txt\n?? a.txt\n"


def test_mid_merge_and_mid_rebase_block(run_cli, repo: Path, env: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", "side", env=env)
    (repo / "README.md").write_text("side\n")
    git(repo, "commit", "-q", "-am", "side", env=env)
    git(repo, "checkout", "-q", "main", env=env)
    (repo / "README.md").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main", env=env)
    wrote(state_layout(repo), "a.txt", b"a\n")
    git(repo, "merge", "-q", "side", env=env, check=False)
    merging = commit_cli(run_cli, repo, "--yes")
    assert merging.exit_code == 1 and "a merge is in progress" in merging.stderr
    git(repo, "merge", "--abort", env=env)
    git(repo, "checkout", "-q", "side", env=env)
    git(repo, "rebase", "-q", "main", env=env, check=False)
    rebasing = commit_cli(run_cli, repo, "--yes")
    assert (
        rebasing.exit_code == 1 and "rebase" in rebasing.stderr and "in progress" in rebasing.stderr
    )


def test_a_locked_index_blocks(run_cli, repo: Path) -> None:
    wrote(state_layout(repo), "a.txt", b"a\n")
    (repo / ".git" / "index.lock").write_bytes(b"")
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1 and "index is locked" in result.stderr


def test_a_refusing_hook_leaves_the_index_as_it_was_and_records_nothing(
    run_cli, repo: Path, env: dict[str, str]
) -> None:
    layout = state_layout(repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    wrote(layout, "a.txt", b"a\n")
    wrote(layout, "README.md", b"edited\n")
    before = head(repo, env)
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 1
    assert "lint says no" in result.stderr and "nothing was committed" in result.stderr
    assert head(repo, env) == before
    assert git(repo, "status", "--porcelain", env=env) == " M README.md\n?? a.txt\n"
    assert not [
        e for e in read_events(layout.session_log(SID), SID) if e["type"] == "commit.created"
    ]


def test_warnings_for_outside_edits_and_unattributed_commands(
    run_cli, repo: Path, env: dict[str, str]
) -> None:
    layout = state_layout(repo)
    wrote(layout, "a.txt", b"a\n")
    (repo / "a.txt").write_text("changed by someone else\n")
    append_events(
        layout,
        SID,
        [
            {
                "type": "command.started",
                "callId": "c2",
                "command": "sed -i s/x/y/ b",
                "cwd": ".",
                "sandbox": None,
            }
        ],
    )
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 0
    assert "'a.txt' changed outside this session" in result.stderr
    assert "1 command(s) ran that could change files no event names" in result.stderr
    event = [e for e in read_events(layout.session_log(SID), SID) if e["type"] == "commit.created"]
    assert len(event[0]["warnings"]) == 2


def test_an_empty_repository_gets_its_first_commit(
    run_cli, workspace: Path, env: dict[str, str]
) -> None:
    init_repo(workspace, env, commit=False)
    grant_trust(state_layout(workspace))
    wrote(state_layout(workspace), "a.txt", b"a\n")
    (workspace / "other.txt").write_text("not the session's\n")
    assert commit_cli(run_cli, workspace, "--yes").exit_code == 0
    assert committed(workspace, env) == ["a.txt"]
    assert git(workspace, "status", "--porcelain", env=env) == "?? other.txt\n"
    layout = state_layout(workspace)
    event = [e for e in read_events(layout.session_log(SID), SID) if e["type"] == "commit.created"]
    assert event[0]["parent"] is None


def test_not_a_repository_and_a_bare_one_say_so(
    run_cli, workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    grant_trust(state_layout(workspace))
    wrote(state_layout(workspace), "a.txt", b"a\n")
    result = commit_cli(run_cli, workspace, "--yes")
    assert result.exit_code == 1 and "not inside a git repository" in result.stderr
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], env=env, check=True)
    grant_trust(state_layout(bare))
    append_events(state_layout(bare), SID, [{"type": "custom", "kind": "x", "data": {}}])
    result = run_cli(main, ["commit", "-C", str(bare), "--session", SID, "--yes"])
    assert result.exit_code == 1 and "bare repository" in result.stderr


def test_an_untrusted_workspace_is_refused(run_cli, workspace: Path, env: dict[str, str]) -> None:
    init_repo(workspace, env)
    wrote(state_layout(workspace), "a.txt", b"a\n")
    assert commit_cli(run_cli, workspace, "--yes").exit_code == 3


def test_the_terminal_command_shows_asks_and_records(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    session = open_session(repo, write_script(tmp_path / "s.json", []), tools=[], environ=env)
    wrote(session.layout, "a.txt", b"a\n", session=session.id)
    screen, _, err = make(tty=False)
    asked: list[str] = []

    def no(question: str) -> bool:
        asked.append(question)
        return False

    context = commands.Context(session, None, screen, None, no)  # type: ignore[arg-type]
    before = head(repo, env)
    assert commands.run_line(context, "/commit first try") is None
    assert asked == ["Commit these 1 path(s)?"] and head(repo, env) == before
    assert "Nothing was committed." in err.getvalue()
    context.confirm = lambda question: True
    assert commands.run_line(context, "/commit add a") is None
    assert git(repo, "log", "-1", "--format=%s", env=env).strip() == "add a"
    made = [e for e in events_of(session) if e["type"] == "commit.created"]
    assert made and made[0]["paths"] == ["a.txt"]


def test_a_detached_head_commits_with_a_warning(run_cli, repo: Path, env: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD", env=env)
    wrote(state_layout(repo), "a.txt", b"a\n")
    result = commit_cli(run_cli, repo, "--yes")
    assert result.exit_code == 0, result.stderr
    assert "HEAD is detached: the commit will be on no branch" in result.stderr
    assert committed(repo, env) == ["a.txt"]
    layout = state_layout(repo)
    made = [e for e in read_events(layout.session_log(SID), SID) if e["type"] == "commit.created"]
    assert made[0]["branch"] is None


def test_a_workspace_below_the_repository_top(run_cli, tmp_path: Path, env: dict[str, str]) -> None:
    top = init_repo(tmp_path / "top", env)
    workspace = top / "pkg"
    workspace.mkdir()
    (top / "elsewhere.txt").write_text("not the session's\n")
    grant_trust(state_layout(workspace))
    wrote(state_layout(workspace), "mod.py", b"x = 1\n")
    assert commit_cli(run_cli, workspace, "--yes").exit_code == 0
    assert committed(top, env) == ["pkg/mod.py"]
    assert git(top, "status", "--porcelain", env=env) == "?? elsewhere.txt\n"
