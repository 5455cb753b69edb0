"""Executors' isolation on real git worktrees: the group's base, the EOL check, capture
(creates, edits, deletes, renames, binaries, the caps), release, the orphan sweep by
identity, and trust by derivation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent.tasks.recording import Recorder
from checkpointgit import git, make_repo, needs_git, user_state

from ax_agent.tasks import worktrees
from ax_agent.tasks.worktrees import (
    GITIGNORED_NOTE,
    capture_task,
    prepare_group,
    release_group,
    sweep_orphans,
)
from ax_log.snapshots import load_object
from libcommon.errors import OperationFailed, Unsupported
from libcommon.paths import StateLayout
from libcommon.trust import OWNER_FILE_NAME, is_trusted

pytestmark = needs_git
ENV = dict(os.environ)


def _layout(workspace: Path, state_dir: Path) -> StateLayout:
    return StateLayout(root=state_dir, workspace=workspace)


def _dirty_repo(workspace: Path) -> Path:
    repo = make_repo(
        workspace,
        {
            "a.txt": "a\n",
            "src/b.txt": "b\n",
            "old.txt": "rename me, a file long enough to be found again as a rename\n",
            "gone.txt": "delete me\n",
            ".gitignore": "*.log\n",
        },
    )
    (repo / "a.txt").write_text("a, changed but not committed\n")
    (repo / "new-untracked.txt").write_text("untracked, not ignored\n")
    (repo / "debug.log").write_text("ignored\n")
    return repo


def test_two_tasks_start_from_the_dirty_tree_outside_the_repository(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No room for spares: every worktree is removed (tests/agent/tasks/test_spares.py).
    monkeypatch.setattr(worktrees, "MAX_SPARE_WORKTREES", 0)
    repo = _dirty_repo(workspace)
    before = user_state(repo)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["lexer", "parser"], ENV)
    try:
        for task in ("lexer", "parser"):
            tree = base.workspace(task)
            assert tree.is_relative_to(state_dir) and not tree.is_relative_to(repo)
            assert (tree / "a.txt").read_text() == "a, changed but not committed\n"
            assert (tree / "new-untracked.txt").exists()
            assert not (tree / "debug.log").exists()
        kinds = git(repo, "for-each-ref", "--format=%(refname)", "refs/ax").split()
        assert kinds == [base.checkpoint_ref]
        assert "gitignore" in GITIGNORED_NOTE or "ignores" in GITIGNORED_NOTE
    finally:
        release = release_group(base, Recorder())
    assert release.failed == () and set(release.removed) == {"lexer", "parser"}
    # The worktrees are gone at once (git's entries pruned, the paths free); their files
    # are deleted in the background, the group folder last.
    assert not any(tree.exists() for tree in base.trees.values())
    assert release.deleting is not None
    release.deleting.join(30)
    assert not base.folder.exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    # The user's index, HEAD, branches and status are as they were.
    after = user_state(repo)
    assert {k: v for k, v in after.items() if k != "refs"} == {
        k: v for k, v in before.items() if k != "refs"
    }


def test_capture_holds_creates_edits_deletes_renames_and_binaries(
    workspace: Path, state_dir: Path
) -> None:
    repo = _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    try:
        tree = base.workspace("t1")
        (tree / "a.txt").write_text("a, by the task\n")
        (tree / "created.txt").write_text("new\n")
        (tree / "gone.txt").unlink()
        (tree / "old.txt").rename(tree / "moved.txt")
        (tree / "blob.bin").write_bytes(b"\x00\x01\x02binary")
        (tree / "x.log").write_text("ignored output\n")
        recorder = Recorder()
        capture = capture_task(base, "t1", recorder)
    finally:
        release_group(base, Recorder())
    by_path = {item.path: item for item in capture.files}
    assert {p: f.change for p, f in by_path.items()} == {
        "a.txt": "modified",
        "created.txt": "created",
        "gone.txt": "deleted",
        "moved.txt": "renamed",
        "blob.bin": "created",
    }
    assert by_path["moved.txt"].source == "old.txt"
    assert by_path["blob.bin"].binary and not by_path["a.txt"].binary
    assert load_object(layout, by_path["a.txt"].base or "") == b"a, changed but not committed\n"
    assert load_object(layout, by_path["a.txt"].after or "") == b"a, by the task\n"
    assert by_path["gone.txt"].after is None and by_path["created.txt"].base is None
    assert capture.omitted == 0
    (event,) = recorder.events
    assert event["type"] == "task.captured" and event["taskId"] == "t1"
    assert sorted(event["files"]) == sorted(by_path)
    # The recorded diff outlives the worktree.
    assert load_object(layout, by_path["moved.txt"].after or "").startswith(b"rename me")
    del repo


def test_the_caps_count_every_omission_and_keep_a_rename_whole(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    monkeypatch.setattr(worktrees, "CAPTURE_MAX_FILES", 2)
    monkeypatch.setattr(worktrees, "CAPTURE_FILE_MAX_BYTES", 100)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    try:
        tree = base.workspace("t1")
        (tree / "old.txt").rename(tree / "moved.txt")
        (tree / "big.txt").write_text("x" * 500)
        for n in range(4):
            (tree / f"n{n}.txt").write_text(f"{n}\n")
        capture = capture_task(base, "t1", Recorder())
    finally:
        release_group(base, Recorder())
    kept = {item.path for item in capture.files}
    assert len(kept) == 2
    reasons = dict(capture.omissions)
    assert "big.txt" in reasons and "file cap" in reasons["big.txt"]
    # Kept out of the index too, so never hashed into the repository's shared objects.
    big = (
        subprocess.run(
            ["git", "hash-object", "--stdin"], input=b"x" * 500, capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )
    assert subprocess.run(["git", "-C", str(workspace), "cat-file", "-e", big]).returncode != 0
    # Six changes: two kept, the rest counted (the rename is one entry, kept or not whole).
    assert capture.omitted == 4 and len(kept) + capture.omitted == 6
    if "moved.txt" in kept:
        assert next(f for f in capture.files if f.path == "moved.txt").source == "old.txt"


def test_capture_is_bounded_by_the_task_byte_cap(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    monkeypatch.setattr(worktrees, "CAPTURE_TASK_MAX_BYTES", 150)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    try:
        tree = base.workspace("t1")
        for n in range(3):
            (tree / f"n{n}.txt").write_text(str(n) * 60)
        capture = capture_task(base, "t1", Recorder())
    finally:
        release_group(base, Recorder())
    assert len(capture.files) == 2 and capture.omitted == 1
    assert "task cap" in capture.omissions[0][1]


@pytest.mark.parametrize("hashing", ["git", "python"])
def test_checkout_normalisation_refuses_the_group_and_leaves_nothing(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, hashing: str
) -> None:
    if hashing == "python":
        # hash-object's answers missing (a call failed): every file is hashed here instead.
        monkeypatch.setattr(worktrees, "_hash_files", lambda runner, sides: [{} for _ in sides])
    repo = make_repo(workspace, {"a.txt": "one\ntwo\n", "b.txt": "x\n"})
    git(repo, "config", "core.autocrlf", "true")
    layout = _layout(workspace, state_dir)
    with pytest.raises(OperationFailed) as caught:
        prepare_group(layout, "s1", "g1", ["t1", "t2"], ENV)
    assert "line-ending" in caught.value.message and "a.txt" in caught.value.message
    assert not (layout.project_dir / "worktrees" / "s1.g1").exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_an_eol_attribute_is_caught_too(workspace: Path, state_dir: Path) -> None:
    repo = make_repo(workspace, {"a.txt": "one\n", ".gitattributes": "*.txt text eol=crlf\n"})
    layout = _layout(workspace, state_dir)
    with pytest.raises(OperationFailed, match="line-ending"):
        prepare_group(layout, "s1", "g1", ["t1"], ENV)
    del repo


def test_a_workspace_converted_on_add_is_caught(workspace: Path, state_dir: Path) -> None:
    repo = make_repo(workspace, {"a.txt": "one\n"})
    (repo / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    git(repo, "config", "core.autocrlf", "input")
    layout = _layout(workspace, state_dir)
    with pytest.raises(OperationFailed, match="workspace's file"):
        prepare_group(layout, "s1", "g1", ["t1"], ENV)


def test_outside_a_repository_executors_are_refused(workspace: Path, state_dir: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    with pytest.raises(Unsupported, match="git working tree"):
        prepare_group(_layout(workspace, state_dir), "s1", "g1", ["t1"], ENV)


def test_a_group_folder_is_never_inside_the_repository(workspace: Path) -> None:
    make_repo(workspace)
    inside = StateLayout(root=workspace / ".state", workspace=workspace)
    with pytest.raises(Unsupported, match="inside the repository"):
        prepare_group(inside, "s1", "g1", ["t1"], ENV)


def _dead_pid() -> tuple[int, int]:
    """A pid that existed and is gone, and its start time."""
    from libcommon.procfs import read_proc

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    info = read_proc(child.pid)
    child.wait()
    assert info is not None
    return child.pid, info.start_time


def test_a_crashed_group_is_swept_by_identity_and_a_live_one_never(
    workspace: Path, state_dir: Path
) -> None:
    repo = _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    live = prepare_group(layout, "s1", "live", ["t1"], ENV)
    crashed = prepare_group(layout, "s1", "crashed", ["t1", "t2"], ENV)
    owner_file = crashed.folder / OWNER_FILE_NAME
    owner = json.loads(owner_file.read_text())
    pid, start = _dead_pid()
    owner.update(pid=pid, startTime=start)
    owner_file.write_text(json.dumps(owner))
    # A live pid whose start time is not the owner's: the pid was recycled, so it is dead.
    recycled = prepare_group(layout, "s1", "recycled", ["t1"], ENV)
    recycled_file = recycled.folder / OWNER_FILE_NAME
    mine = json.loads(recycled_file.read_text())
    recycled_file.write_text(json.dumps({**mine, "startTime": mine["startTime"] - 1}))
    # Until the sweep, a dead owner's worktree derives no trust: nobody's workspace.
    from ax_policy.trust import grant_trust

    grant_trust(layout)
    assert is_trusted(state_dir, live.workspace("t1"))
    assert not is_trusted(state_dir, crashed.workspace("t1"))
    assert not is_trusted(state_dir, recycled.workspace("t1"))
    # Old as it may be, a live owner's group stays.
    os.utime(live.folder / OWNER_FILE_NAME, (0, 0))
    (layout.project_dir / "worktrees" / "stray").mkdir()
    # An owner file that names no process proves no death: never swept.
    nameless = prepare_group(layout, "s1", "nameless", ["t1"], ENV)
    nameless_file = nameless.folder / OWNER_FILE_NAME
    nameless_file.write_text(json.dumps({**mine, "pid": "1234", "tasks": ["t1"]}))
    swept = sweep_orphans(layout, ENV)
    assert sorted(swept.removed) == ["s1.crashed", "s1.recycled"]
    kept = dict(swept.kept)
    assert "alive" in kept["s1.live"] and "owner file" in kept["stray"]
    assert "no pid" in kept["s1.nameless"] and nameless.workspace("t1").exists()
    assert live.workspace("t1").exists() and not crashed.folder.exists()
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 3 and str(live.trees["t1"]) in listed
    release_group(live, Recorder())
    release_group(nameless, Recorder())


def test_a_failed_removal_is_recorded_and_not_raised(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    monkeypatch.setattr(
        worktrees, "_remove_trees", lambda runner, trees: ["it would not go" for _ in trees]
    )
    recorder = Recorder()
    release = release_group(base, recorder)
    assert release.failed == (("t1", "it would not go"),) and base.folder.exists()
    removed = [e for e in recorder.events if e["type"] == "worktree.removed"]
    assert [(e["taskId"], e["ok"], e["reason"]) for e in removed] == [
        ("t1", False, "it would not go")
    ]
    monkeypatch.undo()
    assert release_group(base, Recorder()).failed == ()


def test_a_worktree_git_cannot_add_is_refused_in_gits_words(
    workspace: Path, state_dir: Path
) -> None:
    from dataclasses import replace

    _dirty_repo(workspace)
    base = prepare_group(_layout(workspace, state_dir), "s1", "g1", ["t1"], ENV)
    try:
        # A base commit the repository does not have: git refuses the add and says why.
        broken = replace(base, commit="0" * 40, trees={"t2": base.folder / "t2"})
        with pytest.raises(OperationFailed) as refused:
            worktrees._add_tree(worktrees._runner(workspace, ENV), broken, "t2")
        assert "could not add the worktree of task t2" in refused.value.message
        assert ": fatal: " in refused.value.message and "0" * 40 in refused.value.message
    finally:
        release_group(base, Recorder())


def test_a_worktree_of_a_trusted_workspace_is_trusted_and_never_stored(
    workspace: Path, state_dir: Path
) -> None:
    from ax_policy.trust import check_trust, grant_trust

    _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    try:
        child = StateLayout(root=state_dir, workspace=base.workspace("t1"))
        assert not check_trust(child).trusted and not is_trusted(state_dir, child.workspace)
        grant_trust(layout)
        stored = (state_dir / "trust.json").read_text()
        status = check_trust(child)
        assert status.trusted and status.basis == "derived"
        assert is_trusted(state_dir, child.workspace)
        assert (state_dir / "trust.json").read_text() == stored
        # Only the task's own folder derives: its parent folder and a stranger do not.
        assert not is_trusted(state_dir, base.folder)
        assert not is_trusted(state_dir, base.trees["t1"] / "src")
    finally:
        release_group(base, Recorder())
    assert not is_trusted(state_dir, base.workspace("t1"))


def test_a_workspace_below_the_top_works_at_its_own_place(workspace: Path, state_dir: Path) -> None:
    from ax_policy.trust import check_trust, grant_trust

    repo = make_repo(workspace, {"pkg/a.txt": "a\n", "other.txt": "o\n"})
    inner = repo / "pkg"
    layout = _layout(inner, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    try:
        tree = base.workspace("t1")
        assert tree == base.trees["t1"] / "pkg" and (tree / "a.txt").exists()
        (tree / "a.txt").write_text("a2\n")
        (base.trees["t1"] / "other.txt").write_text("outside the workspace\n")
        capture = capture_task(base, "t1", Recorder())
        grant_trust(layout)
        assert check_trust(StateLayout(root=state_dir, workspace=tree)).basis == "derived"
    finally:
        release_group(base, Recorder())
    assert [f.path for f in capture.files] == ["a.txt"]
    assert capture.omissions == (("other.txt", "outside the workspace"),)


CRASHING_CHILD = """
import os, signal, sys
from pathlib import Path
from ax_agent.tasks.worktrees import prepare_group
from libcommon.paths import StateLayout

layout = StateLayout(root=Path(sys.argv[1]), workspace=Path(sys.argv[2]))
base = prepare_group(layout, "s1", "g1", ["t1", "t2"], dict(os.environ))
print(base.folder, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_between_add_and_remove_leaves_an_orphan_the_sweep_removes(
    workspace: Path, state_dir: Path
) -> None:
    repo = _dirty_repo(workspace)
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, str(state_dir), str(workspace)],
        capture_output=True,
        text=True,
        env={**os.environ, "AX_STATE_DIR": str(state_dir)},
        timeout=60,
    )
    assert done.returncode == -9, done.stderr
    folder = Path(done.stdout.strip())
    assert (folder / "t1").is_dir() and (folder / "t2").is_dir()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 3
    swept = sweep_orphans(_layout(workspace, state_dir), ENV)
    assert swept.removed == ("s1.g1",) and not folder.exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_worktree_entries_are_added_one_at_a_time_under_the_repository_lock(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git worktree add reads every .git/worktrees entry, and one a concurrent add is still
    # writing fails it ("failed to read .../commondir"): adds must never overlap.
    import fcntl

    from libcommon.git import GitRunner

    _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    seen: list[tuple[int, bool]] = []
    batch = GitRunner.batch

    def watched(self: GitRunner, commands: Any, **options: Any) -> Any:
        adds = [c for c in commands if list(c[:2]) == ["worktree", "add"]]
        if adds:
            locks = list((state_dir / "locks").glob("worktrees-*.lock"))
            held = False
            for lock in locks:
                with open(lock, "rb") as handle:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        fcntl.flock(handle, fcntl.LOCK_UN)
                    except BlockingIOError:
                        held = True
            seen.append((len(adds), held))
        return batch(self, commands, **options)

    monkeypatch.setattr(GitRunner, "batch", watched)
    base = prepare_group(layout, "s1", "g1", ["t1", "t2", "t3"], ENV)
    release_group(base, Recorder())
    assert seen == [(1, True)] * 3


def test_an_executors_commands_read_git_but_never_write_the_shared_repository(
    workspace: Path, state_dir: Path
) -> None:
    """The decision (docs/security.md): the repository a worktree shares (objects, refs,
    config, the worktree's own admin folder and index) is outside the worktree, so the
    sandbox keeps it read-only. git reads work; every git write fails and leaves the
    user's repository as it was; the capture, taken by the parent, still holds the work."""
    from ax_exec import ExecSpec, probe_sandbox, run_managed

    if not any(
        s.profile == "workspace-write" and s.enforced
        for backend in probe_sandbox().backends
        for s in backend.profiles
    ):
        pytest.skip("the workspace-write sandbox is not enforced here")
    repo = _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    environ = {**ENV, "AX_STATE_DIR": str(state_dir)}
    base = prepare_group(layout, "s1", "g1", ["t1"], environ)
    tree = base.workspace("t1")
    common = repo / ".git"
    admin = common / "worktrees" / "t1"

    def files(folder: Path) -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    before = files(common)
    try:
        (tree / "src" / "b.txt").write_text("b, by the executor\n")

        def run(command: str) -> tuple[int | None, str]:
            spec = ExecSpec(
                argv=["git", *command.split()],
                sandbox="workspace-write",
                cwd=str(tree),
                workspace=str(tree),
            )
            done = run_managed(spec, environ=environ)
            return done.exit_code, done.stdout.head + done.stderr.head

        assert run("status --porcelain")[1].count("src/b.txt") == 1
        assert run("diff --stat")[0] == 0
        for write in (
            "add src/b.txt",
            "commit -qam x",
            "checkout -b mine",
            "config user.name mine",
            "update-ref refs/heads/mine HEAD",
        ):
            code, said = run(write)
            assert code != 0 and "Read-only file system" in said, (write, said)
        assert files(common) == before and admin.is_dir()
        capture = capture_task(base, "t1", Recorder())
        assert "src/b.txt" in [f.path for f in capture.files]
    finally:
        release_group(base, Recorder())
    assert "git writes (add, commit" in GITIGNORED_NOTE


def test_a_release_whose_background_deletion_never_ran_is_swept_by_identity(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Release prunes git's entries and sets each worktree aside at once; the files go in
    the background. A process that dies first leaves the group folder, which the sweep
    removes by the owner's identity as any other orphan, and never while it lives."""
    repo = _dirty_repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1", "t2"], ENV)
    monkeypatch.setattr(worktrees, "_delete", lambda folders: None)
    monkeypatch.setattr(worktrees, "MAX_SPARE_WORKTREES", 0)
    release = release_group(base, Recorder())
    assert release.removed == ("t1", "t2") and release.failed == ()
    assert release.deleting is not None
    release.deleting.join(30)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert sorted(p.name for p in base.folder.iterdir()) == [
        ".removed-t1",
        ".removed-t2",
        OWNER_FILE_NAME,
    ]
    assert json.loads((base.folder / OWNER_FILE_NAME).read_text())["tasks"] == []
    assert sweep_orphans(layout, ENV).removed == ()  # its owner (this process) lives
    owner_file = base.folder / OWNER_FILE_NAME
    pid, _start = _dead_pid()
    owner_file.write_text(json.dumps({**json.loads(owner_file.read_text()), "pid": pid}))
    assert sweep_orphans(layout, ENV).removed == ("s1.g1",) and not base.folder.exists()


def test_a_worktree_left_clean_is_captured_empty_without_staging(
    workspace: Path, state_dir: Path
) -> None:
    _dirty_repo(workspace)
    base = prepare_group(_layout(workspace, state_dir), "s1", "g1", ["t1"], ENV)
    try:
        index = Path(git(base.trees["t1"], "rev-parse", "--git-path", "index").strip())
        index = index if index.is_absolute() else base.trees["t1"] / index
        before = index.read_bytes()
        recorder = Recorder()
        capture = capture_task(base, "t1", recorder)
        assert capture.files == () and capture.omitted == 0
        assert [e["files"] for e in recorder.events] == [[]]
        assert index.read_bytes() == before  # nothing was staged
    finally:
        release_group(base, Recorder())
