"""Real git repositories for the checkpoint tests, and the user-visible state to compare
(tests/gittest.py is the git-person tests' kit: a private HOME and identity)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# The test's own identity for the user's commits: the checkpoint's is ax's, never this.
USER_ENV = {
    "GIT_AUTHOR_NAME": "A User",
    "GIT_AUTHOR_EMAIL": "user@example.com",
    "GIT_COMMITTER_NAME": "A User",
    "GIT_COMMITTER_EMAIL": "user@example.com",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Plain git, as the user runs it (hooks, fsmonitor and all): tests arrange with it."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        check=check,
        env={**os.environ, **USER_ENV},
    )
    return done.stdout.decode("utf-8", "surrogateescape")


def make_repo(root: Path, files: dict[str, str] | None = None, *, commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in (files or {"a.txt": "a\n", "src/b.txt": "b\n"}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "first")
    return root


def user_state(repo: Path) -> dict[str, object]:
    """Everything a user can see of git: index bytes, HEAD, branches, stash, status.

    Read with optional locks off: a plain ``git status`` refreshes the index itself, and
    the index's mtime is part of what is compared.
    """
    git_dir = repo / ".git"
    index = git_dir / "index"
    stash_log = git_dir / "logs" / "refs" / "stash"
    return {
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else None,
        "index_mtime": index.stat().st_mtime_ns if index.exists() else None,
        "HEAD": (git_dir / "HEAD").read_text(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads",
                    "refs/tags", "refs/stash", "refs/remotes"),
        "stash": stash_log.read_text() if stash_log.exists() else None,
        "status": git(repo, "--no-optional-locks", "status", "--porcelain=v2", "--branch",
                      "-z", "--untracked-files=all"),
        "log": git(repo, "log", "--oneline", check=False),
        "branch": git(repo, "branch", "-vv"),
        "head_log": (git_dir / "logs" / "HEAD").read_text()
        if (git_dir / "logs" / "HEAD").exists()
        else None,
    }  # fmt: skip


def tree_files(repo: Path, commit: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-z", "--name-only", commit],
        capture_output=True,
        check=True,
    ).stdout
    return [os.fsdecode(item) for item in out.split(b"\0")[:-1]]


def loose_objects(repo: Path) -> int:
    objects = repo / ".git" / "objects"
    return sum(1 for folder in objects.iterdir() if len(folder.name) == 2 for _ in folder.iterdir())
