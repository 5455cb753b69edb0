"""ax-log checkpoint: commits under hidden refs that leave what the user sees of git alone."""

from __future__ import annotations

import os
from collections.abc import Callable

import orjson
import pytest
from axtest import CliResult
from checkpointgit import git, make_repo, needs_git, tree_files, user_state

from ax_log import checkpoints
from ax_log.checkpoints import (
    MAX_CHECKPOINTS_PER_SESSION,
    create_checkpoint,
    list_checkpoints,
    prune_session,
    restore_checkpoint,
)
from ax_log.cli import main
from ax_log.reader import read_events
from ax_log.revert import undo
from ax_log.snapshots import record_mutations, snapshot_paths
from ax_log.writer import log_path
from libcommon.paths import StateLayout

pytestmark = needs_git


def events(layout: StateLayout, session: str) -> list[dict[str, object]]:
    return list(read_events(log_path(layout, session), session))


def test_a_checkpoint_is_a_commit_on_head_under_a_hidden_ref_and_changes_nothing_visible(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "new.txt")
    (repo / "untracked.txt").write_text("u\n")
    git(repo, "stash", "list")
    before = user_state(repo)
    result = create_checkpoint(layout, "s1", label="before the formatter")
    assert user_state(repo) == before
    point = result.checkpoint
    assert point.ref == "refs/ax/checkpoints/s1/1" and point.kind == "agent"
    assert git(repo, "cat-file", "-t", point.ref).strip() == "commit"
    assert git(repo, "rev-parse", f"{point.ref}^").strip() == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn", point.ref).strip() == (
        "ax checkpoint <checkpoint@ax.invalid>|ax checkpoint"
    )
    assert sorted(tree_files(repo, point.commit)) == [
        "a.txt",
        "new.txt",
        "src/b.txt",
        "untracked.txt",
    ]
    assert git(repo, "show", f"{point.ref}:a.txt") == "changed\n"
    assert [e["type"] for e in events(layout, "s1")] == ["checkpoint.created"]
    created = events(layout, "s1")[0]
    assert (created["ref"], created["commit"], created["label"]) == (
        point.ref,
        point.commit,
        "before the formatter",
    )
    second = create_checkpoint(layout, "s1", kind="task-base").checkpoint
    assert second.n == 2
    assert [(c.n, c.kind, c.label) for c in list_checkpoints(layout, "s1")] == [
        (1, "agent", "before the formatter"),
        (2, "task-base", None),
    ]
    assert user_state(repo) == before


def test_the_event_comes_before_the_ref_and_readers_trust_the_refs(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace)
    # A lock on the ref makes update-ref fail after the event went in.
    lock = repo / ".git" / "refs" / "ax" / "checkpoints" / "s1" / "1.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    with pytest.raises(Exception, match="names a ref that does not exist"):
        create_checkpoint(layout, "s1")
    assert [e["type"] for e in events(layout, "s1")] == ["checkpoint.created"]
    assert list_checkpoints(layout, "s1") == []
    lock.unlink()
    assert create_checkpoint(layout, "s1").checkpoint.n == 1


def test_big_untracked_files_big_folders_and_dependency_folders_are_skipped_and_listed(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    with (repo / "big.bin").open("wb") as handle:
        handle.truncate(checkpoints.UNTRACKED_FILE_MAX_BYTES + 1)
    (repo / "small.bin").write_bytes(b"x" * 100)
    many = repo / "generated"
    many.mkdir()
    for index in range(checkpoints.UNTRACKED_FOLDER_MAX_FILES):
        (many / f"f{index}.txt").write_text("x")
    few = repo / "few"
    few.mkdir()
    (few / "one.txt").write_text("1")
    for deps in ("node_modules/pkg", "src/.venv/lib", "crate/target/debug"):
        (repo / deps).mkdir(parents=True)
        (repo / deps / "x.js").write_text("x")
    result = create_checkpoint(layout, "s1")
    skipped = {(item.path, item.reason, item.files) for item in result.checkpoint.skipped}
    assert skipped == {
        ("big.bin", "large-file", 1),
        ("generated", "large-folder", 200),
        ("node_modules", "dependency-folder", 1),
        ("src/.venv", "dependency-folder", 1),
        ("crate/target", "dependency-folder", 1),
    }
    files = tree_files(repo, result.checkpoint.commit)
    assert "small.bin" in files and "few/one.txt" in files
    assert not any(
        name.startswith(("generated/", "node_modules/", "src/.venv/", "crate/target/"))
        or name == "big.bin"
        for name in files
    )
    recorded = events(layout, "s1")[0]["skipped"]
    assert {"path": "big.bin", "reason": "large-file", "files": 1} in recorded  # type: ignore[operator]


@pytest.mark.parametrize("name", [".env", "deploy/id_rsa", ".aws/config", "certs/server.PEM"])
def test_secret_named_files_git_does_not_ignore_refuse_the_checkpoint(
    layout: StateLayout, name: str
) -> None:
    repo = make_repo(layout.workspace)
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text("SECRET=1\n")
    objects_before = git(repo, "count-objects", "-v")
    with pytest.raises(Exception, match="secret-named") as refused:
        create_checkpoint(layout, "s1")
    assert name in str(refused.value)
    assert git(repo, "count-objects", "-v") == objects_before
    assert git(repo, "for-each-ref", "refs/ax") == ""
    assert not log_path(layout, "s1").exists()
    # Ignored by .gitignore, it is not captured and not refused.
    (repo / ".gitignore").write_text(name + "\n")
    point = create_checkpoint(layout, "s1").checkpoint
    assert name not in tree_files(repo, point.commit)


def test_a_tracked_secret_named_file_that_changed_is_refused_too(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace, {".env.example": "A=\n"})
    create_checkpoint(layout, "s1")
    (repo / ".env.example").write_text("A=real\n")
    with pytest.raises(Exception, match=r"\.env\.example"):
        create_checkpoint(layout, "s1")


def test_restore_is_one_undo_unit_removes_later_files_and_never_touches_the_index(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    (repo / "a.txt").write_text("at the checkpoint\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    point = create_checkpoint(layout, "s1").checkpoint
    # What a formatter run by run_command might do: rewrite, delete, create.
    (repo / "a.txt").write_text("formatted\n")
    (repo / "src" / "b.txt").unlink()
    (repo / "src" / "new.txt").write_text("generated\n")
    git(repo, "add", "src/new.txt")
    index_before = (repo / ".git" / "index").read_bytes()
    result = restore_checkpoint(layout, "s1", str(point.n))
    assert result.ok
    assert (result.restored, result.removed) == (("a.txt", "src/b.txt"), ("src/new.txt",))
    assert (repo / "a.txt").read_text() == "at the checkpoint\n"
    assert (repo / "src" / "b.txt").read_text() == "b\n"
    assert not (repo / "src" / "new.txt").exists()
    assert (repo / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (repo / ".git" / "index").read_bytes() == index_before
    recorded = events(layout, "s1")
    mutated = [e for e in recorded if e["type"] == "file.mutated"]
    assert {e["callId"] for e in mutated} == {result.call_id}
    assert recorded[-1]["type"] == "checkpoint.restored"
    # One undo reverts the whole restore.
    outcome = undo(layout, "s1", everything=False)
    assert outcome.ok and len(outcome.reverted_paths) == 3
    assert (repo / "a.txt").read_text() == "formatted\n"
    assert not (repo / "src" / "b.txt").exists()
    assert (repo / "src" / "new.txt").read_text() == "generated\n"


def test_restore_refuses_by_name_a_file_changed_since_the_session_left_it(
    layout: StateLayout,
) -> None:
    repo = make_repo(layout.workspace)
    point = create_checkpoint(layout, "s1").checkpoint
    # The session's typed tool wrote a.txt (recorded), then the user edited it.
    snapshot_paths(layout, "s1", ["a.txt"], "call-1")
    (repo / "a.txt").write_text("session wrote\n")
    record_mutations(layout, "s1", ["a.txt"], "call-1")
    (repo / "a.txt").write_text("the user's edit\n")
    (repo / "src" / "b.txt").write_text("command output\n")
    result = restore_checkpoint(layout, "s1", f"s1/{point.n}")
    assert not result.ok
    assert [path for path, _ in result.refused] == ["a.txt"]
    assert "drifted" in result.refused[0][1]
    assert (repo / "a.txt").read_text() == "the user's edit\n"
    assert result.restored == ("src/b.txt",)


def test_restore_leaves_skipped_and_ignored_paths_alone(layout: StateLayout) -> None:
    repo = make_repo(layout.workspace)
    (repo / ".gitignore").write_text("build/\n")
    (repo / "node_modules" / "x").mkdir(parents=True)
    (repo / "node_modules" / "x" / "i.js").write_text("1")
    point = create_checkpoint(layout, "s1").checkpoint
    (repo / "node_modules" / "y").mkdir()
    (repo / "node_modules" / "y" / "j.js").write_text("2")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("o")
    result = restore_checkpoint(layout, "s1", point.ref)
    assert result.removed == () and result.refused == ()
    assert (repo / "node_modules" / "y" / "j.js").exists() and (repo / "build" / "out.o").exists()


def test_prune_keeps_delivery_and_the_cap_refuses_past_it(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(layout.workspace)
    create_checkpoint(layout, "s1")
    create_checkpoint(layout, "s1", kind="delivery")
    create_checkpoint(layout, "s1", kind="pre-integration")
    create_checkpoint(layout, "other")
    monkeypatch.setattr(checkpoints, "MAX_CHECKPOINTS_PER_SESSION", 3)
    with pytest.raises(Exception, match="already holds 3 checkpoints"):
        create_checkpoint(layout, "s1")
    result = prune_session(layout, "s1")
    assert result.deleted == ("refs/ax/checkpoints/s1/1", "refs/ax/checkpoints/s1/3")
    assert result.kept == ("refs/ax/checkpoints/s1/2",)
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/ax").split()
    assert refs == ["refs/ax/checkpoints/other/1", "refs/ax/checkpoints/s1/2"]
    assert events(layout, "s1")[-1]["type"] == "checkpoint.pruned"
    # A new checkpoint numbers after the live one.
    assert create_checkpoint(layout, "s1").checkpoint.n == 3
    assert MAX_CHECKPOINTS_PER_SESSION == 20


def test_the_cli_verbs_print_json_and_exit_as_documented(
    layout: StateLayout, run_cli: Callable[..., CliResult]
) -> None:
    repo = make_repo(layout.workspace)
    ws = str(layout.workspace)
    made = run_cli(main, ["checkpoint", "create", "--session", "s1", "--label", "x", "-C", ws])
    assert made.exit_code == 0, made.stderr
    body = orjson.loads(made.stdout)
    assert (body["ref"], body["label"], body["kind"]) == ("refs/ax/checkpoints/s1/1", "x", "agent")
    listed = run_cli(main, ["checkpoint", "list", "--json", "-C", ws])
    assert [item["ref"] for item in orjson.loads(listed.stdout)] == [body["ref"]]
    (repo / "a.txt").write_text("z\n")
    restored = run_cli(main, ["checkpoint", "restore", "1", "--session", "s1", "-C", ws])
    assert restored.exit_code == 0 and "restored  a.txt" in restored.stdout
    bad_kind = run_cli(main, ["checkpoint", "create", "--session", "s1", "--kind", "x", "-C", ws])
    assert bad_kind.exit_code == 2 and "kind" in bad_kind.stderr
    missing = run_cli(main, ["checkpoint", "restore", "9", "--session", "s1", "-C", ws])
    assert missing.exit_code == 1 and "no checkpoint refs/ax/checkpoints/s1/9" in missing.stderr
    bad_id = run_cli(main, ["checkpoint", "create", "--session", "a..b", "-C", ws])
    assert bad_id.exit_code == 2
    pruned = run_cli(main, ["checkpoint", "prune", "--session", "s1", "-C", ws])
    assert pruned.exit_code == 0 and orjson.loads(pruned.stdout)["deleted"] == [body["ref"]]
    assert os.path.exists(repo / "a.txt")
