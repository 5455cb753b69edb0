"""Real git repositories for the git tests: made with the real git binary, never mocked.

Set-up runs git directly (the code under test goes through ``libcommon.git``). The
environment gives git a private HOME and global config holding a test identity, so
nothing reads or writes the user's own, and a test can take the identity away.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

IDENTITY = ("Test Person", "person@example.test")


def need_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine; the git tests cannot run")


def git_env(home: Path, *, identity: bool = True) -> dict[str, str]:
    """An environment with a private HOME whose global config holds the test identity."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / ".gitconfig"
    lines = ["[init]\n\tdefaultBranch = main\n"]
    if identity:
        lines.append(f"[user]\n\tname = {IDENTITY[0]}\n\temail = {IDENTITY[1]}\n")
    config.write_text("".join(lines))
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in ("EMAIL",)
    }
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")
    return env


def git(repo: Path, *args: str, env: dict[str, str], check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def init_repo(root: Path, env: dict[str, str], *, commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", env=env)
    if commit:
        (root / "README.md").write_text("hello\n")
        git(root, "add", "README.md", env=env)
        git(root, "commit", "-q", "-m", "first commit", env=env)
    return root


def plant_marker_hooks(repo: Path, marker: Path) -> None:
    """A hook for every event a git read or commit could fire, each appending to ``marker``."""
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in (
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-index-change",
        "reference-transaction",
        "post-checkout",
        "pre-push",
    ):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 0\n")
        hook.chmod(0o755)


def plant_fsmonitor(repo: Path, marker: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = \"echo fsmonitor >> '{marker}'; false\"\n")
