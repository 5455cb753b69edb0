"""libcommon.git: the one hardened git runner (a repository's config never runs a program)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from libcommon.git import run_git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for index in range(50):
        (root / f"file-{index:02}.txt").write_text("x\n")
    return root


def test_a_planted_fsmonitor_never_runs(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {canary}; false"\n')
    # Plain git runs it: the plant is live, so its absence below is the runner's doing.
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["status", "--porcelain"], os.environ)
    assert done is not None and done.ok
    assert not canary.exists()


def test_git_variables_pointing_elsewhere_are_dropped(repo: Path) -> None:
    environ = {**os.environ, "GIT_DIR": "/nonexistent", "GIT_WORK_TREE": "/"}
    done = run_git(repo, ["ls-files", "-z", "--others"], environ)
    assert done is not None and done.ok
    assert done.stdout.count(b"\0") == 50


def test_output_is_read_up_to_the_cap(repo: Path) -> None:
    done = run_git(repo, ["ls-files", "-z", "--others"], os.environ, max_output_bytes=100)
    assert done is not None
    assert (done.truncated, len(done.stdout), done.ok) == (True, 100, False)


def test_no_git_and_a_hung_git_are_none(repo: Path, tmp_path: Path) -> None:
    assert run_git(repo, ["status"], {**os.environ, "PATH": str(tmp_path / "empty")}) is None
    # A stand-in named git that never answers: the runner gives up at its timeout.
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 30\n")
    stand_in.chmod(0o755)
    started = time.monotonic()
    environ = {**os.environ, "PATH": str(stand_in.parent)}
    assert run_git(repo, ["status"], environ, timeout_s=0.5) is None
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("program", ["clean", "process", "smudge"])
def test_a_planted_filter_driver_never_runs(repo: Path, tmp_path: Path, program: str) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("* filter=evil.v2\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil.v2"]\n\t{program} = "touch {canary}; cat"\n')
    (repo / "file-00.txt").write_text("changed\n")
    # status hashes the changed file through the filter, and checkout smudges it: plain
    # git runs the plant, so its absence below is the runner's doing.
    plain = ["checkout", "--", "file-00.txt"] if program == "smudge" else ["status"]
    subprocess.run(["git", *plain], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    (repo / "file-00.txt").write_text("changed again\n")
    for args in (["status", "--porcelain"], ["diff", "--stat"], ["checkout", "--", "file-01.txt"]):
        run_git(repo, args, os.environ)
    assert not canary.exists()


def test_a_planted_textconv_never_runs(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[diff "evil"]\n\ttextconv = "touch {canary}; cat"\n')
    (repo / "file-00.txt").write_text("changed\n")
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["diff"], os.environ)
    assert done is not None and done.ok and b"changed" in done.stdout
    assert not canary.exists()


def test_a_config_git_cannot_read_is_no_answer(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write("[broken\n")
    assert run_git(repo, ["status", "--porcelain"], os.environ) is None


def test_a_planted_external_diff_never_runs_and_a_plain_diff_works(
    repo: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    (repo / "file-00.txt").write_text("changed\n")
    plain = run_git(repo, ["diff"], os.environ)
    assert plain is not None and plain.ok and b"+changed" in plain.stdout
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[diff]\n\texternal = "touch {canary}; true"\n')
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["diff"], os.environ)
    assert done is not None and not done.ok
    assert not canary.exists()
