"""Checkpoints on the repositories people actually have: odd states, planted programs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from axtest import CliResult
from checkpointgit import git, make_repo, needs_git, tree_files, user_state

from ax_log.checkpoints import (
    create_checkpoint,
    list_checkpoints,
    prune_session,
    restore_checkpoint,
)
from ax_log.cli import main
from ax_log.revert import undo
from ax_log.writer import log_path
from libcommon.paths import StateLayout

pytestmark = needs_git


def test_not_a_repository_is_unsupported_and_writes_nothing(
    layout: StateLayout, run_cli: Callable[..., CliResult]
) -> None:
    (layout.workspace / "a.txt").write_text("a")
    ws = str(layout.workspace)
    for verb in (["create", "--session", "s1"], ["list"], ["restore", "1", "--session", "s1"]):
        result = run_cli(main, ["checkpoint", *verb, "-C", ws])
        assert result.exit_code == 5, result.stderr
        assert "not inside a git working tree" in result.stderr
    assert not log_path(layout, "s1").exists()
    # The rest of ax-log works there.
    assert run_cli(main, ["snapshot", "--session", "s1", "a.txt", "-C", ws]).exit_code == 0


def test_a_bare_repository_is_unsupported(
    layout: StateLayout, run_cli: Callable[..., CliResult]
) -> None:
    git(layout.workspace, "init", "-q", "--bare")
    result = run_cli(main, ["checkpoint", "create", "--session", "s1", "-C", str(layout.workspace)])
    assert result.exit_code == 5 and "bare repository" in result.stderr
    assert not log_path(layout, "s1").exists()


def test_a_detached_head_is_the_parent_and_stays_detached(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace)
    (repo / "a.txt").write_text("second\n")
    git(repo, "commit", "-qam", "second")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    (repo / "a.txt").write_text("dirty\n")
    before = user_state(repo)
    result = create_checkpoint(layout, "s1")
    assert user_state(repo) == before
    assert result.checkpoint.parent == git(repo, "rev-parse", "HEAD").strip()
    assert any("detached" in note for note in result.notes)


def test_an_empty_repository_gets_a_parentless_checkpoint(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace, commit=False)
    assert not (repo / ".git" / "index").exists()
    before = user_state(repo)
    result = create_checkpoint(layout, "s1")
    assert user_state(repo) == before
    assert not (repo / ".git" / "index").exists()
    assert result.checkpoint.parent is None
    assert git(repo, "log", "--format=%P", result.checkpoint.ref).strip() == ""
    assert sorted(tree_files(repo, result.checkpoint.commit)) == ["a.txt", "src/b.txt"]
    (repo / "a.txt").write_text("changed\n")
    assert restore_checkpoint(layout, "s1", "1").restored == ("a.txt",)
    # An empty folder as an empty repository: nothing to capture is still a checkpoint.
    empty = layout.workspace / "empty"
    empty.mkdir()
    git(empty, "init", "-q")


def _conflict(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-qam", "main")


def test_a_repository_mid_merge_is_captured_and_its_merge_state_untouched(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    _conflict(repo)
    git(repo, "merge", "-q", "other", check=False)
    assert (repo / ".git" / "MERGE_HEAD").exists()
    before = user_state(repo)
    merge_head = (repo / ".git" / "MERGE_HEAD").read_bytes()
    result = create_checkpoint(layout, "s1")
    assert user_state(repo) == before
    assert (repo / ".git" / "MERGE_HEAD").read_bytes() == merge_head
    assert "<<<<<<<" in git(repo, "show", f"{result.checkpoint.ref}:a.txt")
    assert any("merge" in note for note in result.notes)


def test_a_repository_mid_rebase_is_captured(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace)
    _conflict(repo)
    git(repo, "rebase", "other", check=False)
    assert (repo / ".git" / "rebase-merge").is_dir()
    before = user_state(repo)
    result = create_checkpoint(layout, "s1")
    assert user_state(repo) == before
    assert any("rebase" in note for note in result.notes)
    assert result.checkpoint.parent == git(repo, "rev-parse", "HEAD").strip()


def test_a_locked_index_is_fenced_and_nothing_is_written(
    layout: StateLayout, run_cli: Callable[..., CliResult]
) -> None:
    repo = make_repo(layout.workspace)
    (repo / ".git" / "index.lock").write_text("")
    result = run_cli(main, ["checkpoint", "create", "--session", "s1", "-C", str(repo)])
    assert result.exit_code == 4 and "index.lock" in result.stderr
    assert git(repo, "for-each-ref", "refs/ax") == ""
    assert not log_path(layout, "s1").exists()


def test_submodules_and_nested_repositories_are_reported_not_captured(
    layout: StateLayout, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    upstream = make_repo(tmp_path / "upstream")
    repo = make_repo(layout.workspace)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-qm", "sub")
    # The submodule's own config plants a filter; git would run it inside the submodule.
    sub_config = repo / ".git" / "modules" / "sub" / "config"
    with sub_config.open("a") as handle:
        handle.write(f'[filter "evil"]\n\tclean = "touch {canary}; cat"\n')
    (repo / "sub" / ".gitattributes").write_text("* filter=evil\n")
    (repo / "sub" / "a.txt").write_text("changed in the submodule\n")
    nested = repo / "vendored"
    make_repo(nested)
    # Plain git status (inside user_state) runs the submodule's filter: the plant is live.
    before = user_state(repo)
    assert canary.exists()
    canary.unlink()
    result = create_checkpoint(layout, "s1")
    assert not canary.exists()
    assert user_state(repo) == before
    canary.unlink()
    assert result.checkpoint.submodules == ("sub", "vendored")
    files = tree_files(repo, result.checkpoint.commit)
    assert "sub" in files and not any(name.startswith("vendored") for name in files)
    assert (
        git(repo, "rev-parse", f"{result.checkpoint.ref}:sub").strip()
        == git(repo, "rev-parse", "HEAD:sub").strip()
    )
    (repo / "a.txt").write_text("x\n")
    restored = restore_checkpoint(layout, "s1", "1")
    assert not canary.exists()
    assert restored.restored == ("a.txt",) and restored.removed == ()
    assert (repo / "sub" / "a.txt").read_text() == "changed in the submodule\n"


def test_git_lfs_patterns_store_the_working_bytes_and_never_run_the_filter(
    layout: StateLayout, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    repo = make_repo(layout.workspace, {".gitattributes": "*.bin filter=lfs -text\n"})
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(
            '[filter "lfs"]\n'
            f'\tclean = "touch {canary}; cat"\n\tsmudge = "touch {canary}; cat"\n'
            f'\tprocess = "touch {canary}; false"\n\trequired = true\n'
        )
    (repo / "model.bin").write_bytes(b"\x00weights\xff")
    result = create_checkpoint(layout, "s1")
    assert not canary.exists()
    blob = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "blob", f"{result.checkpoint.ref}:model.bin"],
        capture_output=True,
        check=True,
    ).stdout
    assert blob == b"\x00weights\xff"
    (repo / "model.bin").write_bytes(b"retrained")
    assert restore_checkpoint(layout, "s1", "1").restored == ("model.bin",)
    assert (repo / "model.bin").read_bytes() == b"\x00weights\xff"
    assert not canary.exists()
    # Plain git runs the plant: its absence above is the runner's doing.
    (repo / "model.bin").write_bytes(b"again")
    git(repo, "add", "model.bin", check=False)
    assert canary.exists()


def test_file_names_with_newlines_and_tabs_survive_create_and_restore(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    odd = ["line\nbreak.txt", "tab\there.txt", 'quote"d.txt', "dir\nname/inner.txt"]
    for name in odd:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    result = create_checkpoint(layout, "s1")
    assert set(odd) <= set(tree_files(repo, result.checkpoint.commit))
    for name in odd:
        (repo / name).write_text("changed")
    (repo / "new\nfile.txt").write_text("created later")
    restored = restore_checkpoint(layout, "s1", "1")
    assert set(restored.restored) == set(odd) and restored.removed == ("new\nfile.txt",)
    for name in odd:
        assert (repo / name).read_text() == name
    assert undo(layout, "s1", everything=False).ok
    assert (repo / "new\nfile.txt").read_text() == "created later"


def test_a_planted_fsmonitor_hooks_and_gpg_program_never_run(
    layout: StateLayout, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    repo = make_repo(layout.workspace)
    program = tmp_path / "planted"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(0o755)
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(
            f'[core]\n\tfsmonitor = "{program}"\n'
            f'[gpg]\n\tprogram = "{program}"\n[commit]\n\tgpgSign = true\n'
        )
    hooks = repo / ".git" / "hooks"
    for hook in ("reference-transaction", "post-index-change", "pre-commit", "post-checkout"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    point = create_checkpoint(layout, "s1").checkpoint
    list_checkpoints(layout, "s1")
    (repo / "a.txt").write_text("again\n")
    restore_checkpoint(layout, "s1", point.ref)
    prune_session(layout, "s1")
    assert not marker.exists()
    # Plain git runs each plant: their absence above is the runner's doing.
    quiet = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
    git(repo, "status", check=False)
    assert marker.exists()
    marker.unlink()
    git(repo, "-c", "core.fsmonitor=false", "update-ref", "refs/heads/x", "HEAD", check=False)
    assert marker.exists()
    marker.unlink()
    git(repo, *quiet, "commit", "-qam", "signed", check=False)
    assert marker.exists()


def test_git_variables_in_the_environment_cannot_retarget_a_checkpoint(
    layout: StateLayout, tmp_path: Path
) -> None:
    repo = make_repo(layout.workspace)
    elsewhere = make_repo(tmp_path / "elsewhere")
    environ = {
        **os.environ,
        "GIT_DIR": str(elsewhere / ".git"),
        "GIT_WORK_TREE": str(elsewhere),
        "GIT_INDEX_FILE": str(elsewhere / ".git" / "index"),
    }
    point = create_checkpoint(layout, "s1", environ=environ).checkpoint
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/ax").split() == [point.ref]
    assert git(elsewhere, "for-each-ref", "refs/ax") == ""
