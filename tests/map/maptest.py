"""Helpers for ax-map's tests: real git repositories, files, and builds."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from axtest import tool_path

from libcommon import jsonio

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
GIT_IDENTITY = ["-c", "user.email=ax@example.invalid", "-c", "user.name=ax tests"]


def git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, "-C", str(repo), *args],
        input=input,
        capture_output=True,
        check=True,
    )
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def age_files(root: Path) -> None:
    """Date the files written in the last half minute a minute back: past the window in
    which a build reads a file again in case a same-tick edit hid in its mtime."""
    now = time.time()
    for path in root.rglob("*"):
        if ".git" in path.parts or path.is_symlink():
            continue
        if path.stat().st_mtime > now - 30:
            os.utime(path, (now - 60, now - 60))


def commit_all(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fixture")


def ax_map(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``ax-map`` script, run for real."""
    return subprocess.run(
        [tool_path("map"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def build_json(workspace: Path, *args: str) -> dict[str, object]:
    done = ax_map("build", "-C", str(workspace), *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    document = jsonio.loads(done.stdout)
    assert isinstance(document, dict)
    return document
