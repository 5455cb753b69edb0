"""Undo never writes or removes through a link, nor inside .git or .ax (the installed ax-log).

The attack: the session changed ``x/config``; a sandboxed command then swaps
``x`` for a symlink to ``.git``. An undo that opened the recorded path would
write the session's pre-image (bytes the repository chose) into
``.git/config``, and the user's next ``git status`` would run the
``core.fsmonitor`` they plant. Undo walks the recorded path from the
workspace root with O_NOFOLLOW instead, and refuses.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from axtest import tool_path

from libcommon import jsonio

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed on this machine")


def ax_log(
    workspace: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [tool_path("log"), *args, "-C", str(workspace)],
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def undo_all(workspace: Path) -> tuple[int, dict[str, Any], str]:
    done = ax_log(workspace, "undo", "--session", "s", "--all", "--json")
    return done.returncode, orjson.loads(done.stdout), done.stderr.decode()


def change(workspace: Path, relative: str, data: bytes) -> None:
    """What a typed file tool does, through the installed ax-log: snapshot, write, record."""
    shot = ax_log(workspace, "snapshot", "--session", "s", relative)
    assert shot.returncode == 0, shot.stderr
    target = workspace / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    done = ax_log(workspace, "mutated", "--session", "s", relative)
    assert done.returncode == 0, done.stderr


def git(workspace: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert GIT is not None
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workspace.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        [GIT, *args], cwd=workspace, env=env, capture_output=True, timeout=60, check=False
    )


@needs_git
@pytest.mark.parametrize("swap", ["folder", "file"])
def test_undo_does_not_write_a_planted_fsmonitor_into_git_config(
    workspace: Path, tmp_path: Path, swap: str
) -> None:
    assert git(workspace, "init", "-q", ".").returncode == 0
    git_config = workspace / ".git" / "config"
    real_config = git_config.read_bytes()
    canary = tmp_path / "CANARY"
    planted = f'[core]\n\tfsmonitor = "touch {canary}; false"\n'.encode()
    (workspace / "x").mkdir()
    (workspace / "x" / "config").write_bytes(planted)
    # The model copies the repository's config over x/config: the post hash undo
    # checks is then exactly what .git/config holds.
    change(workspace, "x/config", real_config)
    if swap == "folder":
        shutil.rmtree(workspace / "x")
        (workspace / "x").symlink_to(".git")
    else:
        (workspace / "x" / "config").unlink()
        (workspace / "x" / "config").symlink_to("../.git/config")

    code, event, _ = undo_all(workspace)

    assert code == 1
    assert event["reverted"] == []
    [refusal] = event["refused"]
    assert refusal["path"] == "x/config"
    assert "symbolic link" in refusal["reason"]
    assert git_config.read_bytes() == real_config
    assert git(workspace, "status").returncode == 0
    assert not canary.exists(), "undo wrote the planted fsmonitor into .git/config"


def test_refusals_are_printed_with_the_file_and_the_reason(workspace: Path) -> None:
    (workspace / "x").mkdir()
    (workspace / "x" / "config").write_bytes(b"old")
    (workspace / "elsewhere").mkdir()
    change(workspace, "x/config", b"new")
    (workspace / "elsewhere" / "config").write_bytes(b"new")
    shutil.rmtree(workspace / "x")
    (workspace / "x").symlink_to("elsewhere")

    done = ax_log(workspace, "undo", "--session", "s", "--all")

    assert done.returncode == 1
    line = done.stdout.decode().strip()
    assert line.startswith("refused   seq ") and " x/config: " in line
    assert "x is a symbolic link (to elsewhere), not a folder" in line
    assert (workspace / "elsewhere" / "config").read_bytes() == b"new"


@pytest.mark.parametrize("where", ["workspace", "outside"])
def test_a_created_folder_swapped_for_a_link_does_not_make_undo_remove_files_there(
    workspace: Path, tmp_path: Path, where: str
) -> None:
    change(workspace, "new/made.txt", b"made by the session")
    victim_dir = workspace / "keep" if where == "workspace" else tmp_path / "outside"
    victim_dir.mkdir()
    victim = victim_dir / "made.txt"
    victim.write_bytes(b"made by the session")
    shutil.rmtree(workspace / "new")
    (workspace / "new").symlink_to(victim_dir)

    code, event, _ = undo_all(workspace)

    assert code == 1
    assert [r["path"] for r in event["refused"]] == ["new/made.txt"]
    assert victim.read_bytes() == b"made by the session"
    assert victim_dir.is_dir()
    assert (workspace / "new").is_symlink()


def test_a_created_file_swapped_for_a_link_is_refused_and_its_target_kept(
    workspace: Path,
) -> None:
    change(workspace, "made.txt", b"same bytes")
    (workspace / "other.txt").write_bytes(b"same bytes")
    (workspace / "made.txt").unlink()
    (workspace / "made.txt").symlink_to("other.txt")

    code, event, _ = undo_all(workspace)

    assert code == 1
    assert "symbolic link (to other.txt)" in event["refused"][0]["reason"]
    assert (workspace / "other.txt").read_bytes() == b"same bytes"


@pytest.mark.parametrize(
    "path", [".git/config", ".ax/config.json", "vendor/lib/.git/config", "sub/.GIT/HEAD"]
)
def test_a_forged_mutation_of_a_protected_file_is_refused(workspace: Path, path: str) -> None:
    target = workspace / path
    target.parent.mkdir(parents=True)
    target.write_bytes(b"current")
    post = hashlib.sha256(b"current").hexdigest()
    # A pre-image in the object store, so only the protected target can stop the undo.
    (workspace / "seed.txt").write_bytes(b"[core]\n\tfsmonitor = evil\n")
    shot = ax_log(workspace, "snapshot", "--session", "s", "seed.txt")
    pre = orjson.loads(shot.stdout)["sha256"]
    forged = {"type": "file.mutated", "callId": None, "path": path, "pre": pre, "post": post}
    appended = ax_log(workspace, "append", "--session", "s", stdin=jsonio.dumps(forged))
    assert appended.returncode == 0, appended.stderr

    code, event, _ = undo_all(workspace)

    assert code == 1
    [refusal] = event["refused"]
    assert refusal["path"] == path
    assert "folder, which ax never writes" in refusal["reason"]
    assert target.read_bytes() == b"current"


def test_snapshot_refuses_a_protected_path(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_bytes(b"x")
    (workspace / "link").symlink_to(".git")
    for raw in [".git/config", "link/config"]:
        done = ax_log(workspace, "snapshot", "--session", "s", raw)
        assert done.returncode == 2
        assert "inside a .git folder" in done.stderr.decode()
    assert ax_log(workspace, "events", "--session", "s").returncode == 1
