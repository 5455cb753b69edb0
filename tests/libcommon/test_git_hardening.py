"""libcommon.git: where git comes from, what reaches it, which git it accepts, -z parsing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from libcommon.git import (
    GIT_ENV_KEPT,
    MIN_GIT_VERSION,
    StatusEntry,
    find_git,
    git_environment,
    git_problem,
    parse_git_version,
    parse_status_z,
    run_git,
    run_git_deliberate,
    split_z,
)

REAL_GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(REAL_GIT is None, reason="git is not installed on this machine")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    return root


def _plant_git(folder: Path, marker: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    planted = folder / "git"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\necho 'git version 9.9.9'\n")
    planted.chmod(0o755)
    return planted


@pytest.mark.parametrize("entry", ["", "bin", "./bin"])
def test_an_empty_or_relative_path_entry_never_finds_a_planted_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    marker = tmp_path / "planted-ran"
    _plant_git(repo / "bin", marker)
    _plant_git(repo, marker)
    monkeypatch.chdir(repo)
    assert REAL_GIT is not None
    environ = {**os.environ, "PATH": f"{entry}:{os.path.dirname(REAL_GIT)}"}
    # shutil.which would answer with the planted one: the cwd-relative entry comes first.
    assert shutil.which("git", path=environ["PATH"]) not in (None, REAL_GIT)
    assert find_git(environ) == os.path.realpath(REAL_GIT)
    done = run_git(repo, ["ls-files", "-z", "--others"], environ)
    assert done is not None and done.ok and "a.txt" in split_z(done.stdout)
    assert not marker.exists()


def test_every_git_variable_but_the_kept_ones_is_dropped() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "GIT_DIR": "/elsewhere",
        "GIT_COMMON_DIR": "/elsewhere",
        "GIT_NAMESPACE": "other",
        "GIT_CEILING_DIRECTORIES": "/",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1",
        "GIT_EXEC_PATH": "/tmp/programs",
        "GIT_ATTR_SOURCE": "HEAD~3",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_TRACE": "/tmp/trace",
        "GIT_CONFIG_KEY_0": "core.pager",
        "Git_Dir": "/elsewhere",
        "GIT_AUTHOR_NAME": "A Person",
        "GIT_CONFIG_GLOBAL": "/home/x/.gitconfig",
    }
    env = git_environment(environ)
    assert {key for key in env if key.upper().startswith("GIT_")} == {
        "GIT_AUTHOR_NAME",
        "GIT_CONFIG_GLOBAL",
        "GIT_OPTIONAL_LOCKS",
        "GIT_TERMINAL_PROMPT",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_ASKPASS",
    }
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert {"GIT_AUTHOR_NAME", "GIT_CONFIG_GLOBAL"} <= GIT_ENV_KEPT


@pytest.mark.parametrize(
    "variable",
    ["GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"],
)
def test_repository_targeting_variables_do_not_retarget_a_run(
    repo: Path, tmp_path: Path, variable: str
) -> None:
    _git(repo, "add", "a.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (tmp_path / "empty").mkdir()
    environ = {**os.environ, variable: str(tmp_path / "empty")}
    done = run_git(repo, ["for-each-ref", "--format=%(refname)"], environ)
    assert done is not None and done.ok
    # Retargeted, git would fail: no common dir, no objects, an empty index.
    assert done.text().splitlines() == [
        "refs/heads/" + _git(repo, "branch", "--show-current").decode().strip()
    ]
    listed = run_git(repo, ["ls-files", "-z"], environ)
    assert listed is not None and split_z(listed.stdout) == ["a.txt"]


def test_a_variable_the_runner_does_not_set_is_refused(repo: Path) -> None:
    with pytest.raises(ValueError, match="GIT_DIR"):
        run_git(repo, ["status"], os.environ, set_env={"GIT_DIR": "/elsewhere"})


def test_stdin_is_closed(repo: Path) -> None:
    # hash-object --stdin would wait for input on an open stdin; closed, it hashes nothing.
    done = run_git(repo, ["hash-object", "--stdin"], os.environ, timeout_s=3)
    assert done is not None and done.ok
    assert done.text().strip() == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("git version 2.39.5\n", (2, 39, 5)),
        ("git version 2.37.1 (Apple Git-137.1)\n", (2, 37, 1)),
        ("git version 2.41.0.windows.1\n", (2, 41, 0)),
        ("git version 2.45.0.rc1\n", (2, 45, 0)),
        ("hub version 2.14\n", None),
        ("git version x\n", None),
        ("", None),
    ],
)
def test_versions_are_parsed(text: str, version: tuple[int, ...] | None) -> None:
    assert parse_git_version(text) == version


def _old_git(folder: Path, version: str) -> dict[str, str]:
    """A git that says it is ``version`` and otherwise is the real one."""
    folder.mkdir()
    stand_in = folder / "git"
    stand_in.write_text(
        f'#!/bin/sh\n[ "$1" = version ] && {{ echo "git version {version}"; exit 0; }}\n'
        f'exec {REAL_GIT} "$@"\n'
    )
    stand_in.chmod(0o755)
    return {**os.environ, "PATH": str(folder)}


def test_a_git_older_than_the_features_used_is_refused_with_what_it_lacks(
    repo: Path, tmp_path: Path
) -> None:
    environ = _old_git(tmp_path / "old", "2.12.0")
    assert run_git(repo, ["status", "--porcelain"], environ) is None
    problem = git_problem(environ)
    assert problem is not None
    assert "git 2.12.0" in problem and "older than 2.15" in problem
    assert "GIT_OPTIONAL_LOCKS" in problem and "core.hooksPath" not in problem
    assert MIN_GIT_VERSION == (2, 15)
    # A person's deliberate run is gated too: it runs hooks, so it needs the same git.
    assert run_git_deliberate(repo, ["status", "--porcelain"], environ) is None


def test_a_new_enough_git_runs(repo: Path, tmp_path: Path) -> None:
    environ = _old_git(tmp_path / "new", "2.15.0")
    assert git_problem(environ) is None
    done = run_git(repo, ["status", "--porcelain"], environ)
    assert done is not None and done.ok


def test_status_z_keeps_renames_and_odd_names_whole(repo: Path) -> None:
    (repo / "old name.txt").write_text("same content for a rename\n" * 20)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    _git(repo, "mv", "old name.txt", "new\nname.txt")
    (repo / "a.txt").write_text("changed\n")
    (repo / "tab\there.txt").write_text("x")
    done = run_git(repo, ["status", "--porcelain=v1", "-z"], os.environ)
    assert done is not None and done.ok
    assert sorted(parse_status_z(done.stdout), key=lambda entry: entry.path) == [
        StatusEntry(" M", "a.txt"),
        StatusEntry("R ", "new\nname.txt", "old name.txt"),
        StatusEntry("??", "tab\there.txt"),
    ]


def test_status_z_refuses_what_is_not_its_shape() -> None:
    assert parse_status_z(b"") == []
    for bad in (b" M a.txt", b"R  only-one\0", b"garbage\0"):
        with pytest.raises(ValueError):
            parse_status_z(bad)


def test_split_z_round_trips_names_that_are_not_utf8() -> None:
    assert split_z(b"") == []
    assert split_z(b"a\0b\xff\0") == ["a", os.fsdecode(b"b\xff")]
