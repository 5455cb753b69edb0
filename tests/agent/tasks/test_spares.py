"""Spare worktrees on real git worktrees: a released worktree is parked and the next group
claims it; a claimed spare holds the new base exactly (whatever the previous task left or
forged); a spare whose .git or admin folder was tampered with is discarded and the task
gets a fresh checkout; concurrent groups never share one; the cap, the age limit, the
sweep, and trust (a spare derives none)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from agent.tasks.recording import Recorder
from checkpointgit import git, make_repo, needs_git

from ax_agent.tasks import spares, worktrees
from ax_agent.tasks.worktrees import GroupBase, prepare_group, release_group, sweep_orphans
from libcommon.paths import StateLayout
from libcommon.trust import OWNER_FILE_NAME, is_trusted

pytestmark = needs_git
ENV = dict(os.environ)


def _repo(workspace: Path) -> Path:
    repo = make_repo(
        workspace,
        {
            "a.txt": "a\n",
            "src/b.txt": "base b\n",
            "src/deep/c.txt": "c\n",
            "run.sh": "#!/bin/sh\n",
            ".gitignore": "*.log\n.env\nnode_modules/\n",
        },
    )
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-qm", "exec bit")
    return repo


def _layout(workspace: Path, state_dir: Path) -> StateLayout:
    return StateLayout(root=state_dir, workspace=workspace)


def _spares(layout: StateLayout) -> list[Path]:
    return [spare.path for spare in spares.list_spares(spares.spares_folder(layout.project_dir))[0]]


def _park(layout: StateLayout, group: str, tasks: list[str]) -> tuple[GroupBase, Recorder]:
    base = prepare_group(layout, "s1", group, tasks, ENV)
    recorder = Recorder()
    release_group(base, recorder)
    return base, recorder


def _admin(tree: Path) -> Path:
    return Path((tree / ".git").read_text().removeprefix("gitdir: ").strip())


def _registered(repo: Path) -> list[str]:
    listed = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")]


def _checked_out_exactly(base: GroupBase, task: str) -> None:
    """The task's worktree holds the base commit's files, byte for byte, and nothing else."""
    tree = base.trees[task]
    listed = git(tree, "ls-tree", "-r", "--name-only", base.commit).split("\n")
    expected = {name for name in listed if name}
    found = {
        str(path.relative_to(tree))
        for path in tree.rglob("*")
        if not path.is_dir() and path.relative_to(tree).parts[0] != ".git"
    }
    assert found == expected
    for name in expected:
        blob = git(tree, "cat-file", "blob", f"{base.commit}:{name}")
        assert (tree / name).read_text() == blob, name


def test_a_second_group_reuses_the_first_groups_worktrees(workspace: Path, state_dir: Path) -> None:
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    first = prepare_group(layout, "s1", "g1", ["t1", "t2"], ENV)
    inodes = {os.stat(first.trees[t] / "src" / "deep" / "c.txt").st_ino for t in first.trees}
    recorder = Recorder()
    release = release_group(first, recorder)
    assert release.removed == ("t1", "t2") and release.failed == ()
    assert [(e["taskId"], e["ok"], e["parked"]) for e in recorder.of("worktree.removed")] == [
        ("t1", True, True),
        ("t2", True, True),
    ]
    parked = _spares(layout)
    assert len(parked) == 2 and not first.folder.exists()
    # git's registration followed the move: the spares are the registered worktrees.
    assert sorted(_registered(repo)[1:]) == sorted(str(p) for p in parked)

    second = prepare_group(layout, "s1", "g2", ["u1", "u2", "u3"], ENV, Recorder())
    try:
        assert sorted(second.reused.values()) == sorted(p.name for p in parked)
        assert set(second.reused) == {"u1", "u2"}  # the third had none left: a fresh one
        reused = {os.stat(second.trees[t] / "src" / "deep" / "c.txt").st_ino for t in ("u1", "u2")}
        assert reused == inodes  # the unchanged file was not written again
        assert _spares(layout) == []
        for task in second.trees:
            _checked_out_exactly(second, task)
        assert sorted(_registered(repo)[1:]) == sorted(str(t) for t in second.trees.values())
    finally:
        release_group(second, Recorder())
    assert len(_spares(layout)) == 3


def test_a_reused_worktree_holds_the_new_base_exactly(workspace: Path, state_dir: Path) -> None:
    """What the previous task left or forged does not survive: a file it added, ignored
    files (a .env, node_modules), a mode change, a same-size same-mtime rewrite the stat
    cache cannot see; and the workspace's change between the groups arrives."""
    repo = _repo(workspace)
    # git compares only size and mtime here (core.checkStat minimal, as on filesystems
    # whose ctime or inode numbers are not stable): the rewrite below is invisible to it.
    git(repo, "config", "core.checkStat", "minimal")
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    tree = base.trees["t1"]
    forged = tree / "src" / "b.txt"
    # Time passes after the checkout (the index no longer calls the entry racily clean).
    os.utime(forged, (1_000_000_000, 1_000_000_000))
    git(tree, "update-index", "--refresh")
    # The task: same size, mtime put back (touch -r).
    kept = os.stat(forged)
    forged.write_text("EVIL b\n")
    os.utime(forged, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert git(tree, "status", "--porcelain") == ""  # git's stat cache sees nothing
    (tree / "added.txt").write_text("the task's new file\n")
    (tree / ".env").write_text("SECRET=1\n")
    (tree / "node_modules" / "x").mkdir(parents=True)
    (tree / "node_modules" / "x" / "index.js").write_text("planted\n")
    (tree / "debug.log").write_text("ignored\n")
    (tree / "src" / "deep" / "new").mkdir()
    (tree / "run.sh").chmod(0o644)
    release_group(base, Recorder())
    # Between the groups the user edits the workspace.
    (repo / "a.txt").write_text("a, changed in the workspace\n")

    recorder = Recorder()
    again = prepare_group(layout, "s1", "g2", ["t1"], ENV, recorder)
    try:
        tree = again.trees["t1"]
        assert (tree / "a.txt").read_text() == "a, changed in the workspace\n"
        assert (tree / "src" / "b.txt").read_text() == "base b\n"
        for leftover in ("added.txt", ".env", "node_modules", "debug.log", "src/deep/new"):
            assert not (tree / leftover).exists(), leftover
        assert os.stat(tree / "run.sh").st_mode & 0o100
        _checked_out_exactly(again, "t1")
    finally:
        release_group(again, Recorder())
    # The forged file is what git's reset would have kept: the hash caught it, so the
    # spare was discarded and the task got a fresh checkout, said in the log.
    [said] = recorder.of("worktree.discarded")
    assert said["taskId"] == "t1" and "src/b.txt" in said["reason"]
    assert "differ from the base" in said["reason"]


def test_a_spare_the_task_left_clean_is_claimed_and_kept(workspace: Path, state_dir: Path) -> None:
    """The usual case: untracked and ignored leftovers go by clean, a changed file by the
    reset, and the spare itself is used (nothing discarded)."""
    _repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    (base.trees["t1"] / "a.txt").write_text("the task's edit\n")
    (base.trees["t1"] / ".env").write_text("SECRET=1\n")
    (base.trees["t1"] / "scratch").mkdir()
    (base.trees["t1"] / "scratch" / "x.txt").write_text("x\n")
    release_group(base, Recorder())
    recorder = Recorder()
    again = prepare_group(layout, "s1", "g2", ["t1"], ENV, recorder)
    try:
        assert again.reused and recorder.of("worktree.discarded") == []
        _checked_out_exactly(again, "t1")
    finally:
        release_group(again, Recorder())


def _tamper_gitfile_folder(tree: Path) -> None:
    (tree / ".git").unlink()
    (tree / ".git").mkdir()
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def _tamper_gitfile_link(tree: Path) -> None:
    target = tree.parent / "elsewhere.git"
    target.write_text((tree / ".git").read_text())
    (tree / ".git").unlink()
    (tree / ".git").symlink_to(target)


def _tamper_other_admin(tree: Path) -> None:
    # An admin folder git registered for another folder (its gitdir names that one).
    admin = _admin(tree)
    other = admin.parent / "other"
    shutil.copytree(admin, other)
    (other / "gitdir").write_text(f"{tree.parent / 'elsewhere' / '.git'}\n")
    (tree / ".git").write_text(f"gitdir: {other}\n")


def _tamper_config_worktree(tree: Path) -> None:
    (_admin(tree) / "config.worktree").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")


def _tamper_hooks(tree: Path) -> None:
    (_admin(tree) / "hooks").mkdir()
    (_admin(tree) / "hooks" / "post-checkout").write_text("#!/bin/sh\n")


def _tamper_info(tree: Path) -> None:
    (_admin(tree) / "info").mkdir()
    (_admin(tree) / "info" / "sparse-checkout").write_text("/a.txt\n")


def _tamper_commondir(tree: Path) -> None:
    (_admin(tree) / "commondir").write_text("/tmp\n")


TAMPERINGS = {
    "git-folder": (_tamper_gitfile_folder, "its .git"),
    "git-link": (_tamper_gitfile_link, "its .git"),
    "other-admin": (_tamper_other_admin, "registered"),
    "config-worktree": (_tamper_config_worktree, "config.worktree"),
    "hooks": (_tamper_hooks, "hooks"),
    "info": (_tamper_info, "info"),
    "commondir": (_tamper_commondir, "commondir"),
}


@pytest.mark.parametrize("how", sorted(TAMPERINGS))
def test_a_tampered_spare_is_discarded_and_the_group_runs_on_a_fresh_worktree(
    workspace: Path, state_dir: Path, how: str
) -> None:
    tamper, named = TAMPERINGS[how]
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    _park(layout, "g1", ["t1"])
    [spare] = _spares(layout)
    tamper(spare)
    recorder = Recorder()
    base = prepare_group(layout, "s1", "g2", ["t1"], ENV, recorder)
    try:
        assert base.reused == {}
        [said] = recorder.of("worktree.discarded")
        assert said["path"] == str(spare) and named in said["reason"]
        _checked_out_exactly(base, "t1")
        assert not spare.exists()
        assert _registered(repo)[1:] == [str(base.trees["t1"])]
    finally:
        release_group(base, Recorder())


def test_a_worktree_tampered_with_during_its_task_is_not_parked(
    workspace: Path, state_dir: Path
) -> None:
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1", "t2"], ENV)
    _tamper_config_worktree(base.trees["t1"])
    recorder = Recorder()
    release = release_group(base, recorder)
    assert release.removed == ("t1", "t2")
    assert [(e["taskId"], e["parked"]) for e in recorder.of("worktree.removed")] == [
        ("t1", False),
        ("t2", True),
    ]
    [said] = recorder.of("worktree.discarded")
    assert said["taskId"] == "t1" and "config.worktree" in said["reason"]
    assert len(_spares(layout)) == 1 and len(_registered(repo)) == 2
    if release.deleting is not None:
        release.deleting.join(30)


def test_two_groups_preparing_at_once_never_share_a_spare(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    _park(layout, "g0", ["t1", "t2", "t3"])
    assert len(_spares(layout)) == 3
    listing = spares.list_spares

    def slow(folder: Path) -> Any:
        # Widen the window between seeing a spare and claiming it.
        found = listing(folder)
        time.sleep(0.1)
        return found

    monkeypatch.setattr(worktrees, "list_spares", slow)
    start = threading.Barrier(2)
    made: dict[str, GroupBase] = {}
    errors: list[BaseException] = []

    def group(name: str) -> None:
        try:
            start.wait()
            made[name] = prepare_group(layout, "s1", name, ["x1", "x2", "x3"], ENV)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=group, args=(name,)) for name in ("ga", "gb")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    try:
        claimed = [name for base in made.values() for name in base.reused.values()]
        assert len(claimed) == 3 and len(set(claimed)) == 3
        admins = {_admin(tree) for base in made.values() for tree in base.trees.values()}
        assert len(admins) == 6
        for base in made.values():
            for task in base.trees:
                _checked_out_exactly(base, task)
        assert len(_registered(repo)) == 7
    finally:
        for base in made.values():
            release_group(base, Recorder())


def test_the_cap_keeps_at_most_three_spares(workspace: Path, state_dir: Path) -> None:
    assert spares.MAX_SPARE_WORKTREES == worktrees.MAX_GROUP_TASKS == 3
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    first = prepare_group(layout, "s1", "g1", ["t1", "t2", "t3"], ENV)
    second = prepare_group(layout, "s1", "g2", ["u1"], ENV)
    release_group(first, Recorder())
    recorder = Recorder()
    release = release_group(second, recorder)
    assert [e["parked"] for e in recorder.of("worktree.removed")] == [False]
    assert recorder.of("worktree.discarded") == []  # the cap is no refusal: removed as before
    if release.deleting is not None:
        release.deleting.join(30)
    assert len(_spares(layout)) == 3 and len(_registered(repo)) == 4


def _age(layout: StateLayout, repo: Path, spare: Path, seconds: float) -> Path:
    """Move a spare (with git, so its registration follows) to a name parked ``seconds``
    ago."""
    import time

    older = spare.parent / spares.new_name(time.time() - seconds)
    git(repo, "worktree", "move", str(spare), str(older))
    return older


def test_the_sweep_removes_old_surplus_tampered_and_unregistered_spares(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    monkeypatch.setattr(worktrees, "MAX_SPARE_WORKTREES", 8)
    groups = [
        prepare_group(layout, "s1", g, tasks, ENV)
        for g, tasks in (
            ("g1", ["t1", "t2", "t3"]),
            ("g2", ["t1", "t2", "t3"]),
            ("g3", ["t1", "t2"]),
        )
    ]
    for group in groups:
        release_group(group, Recorder())
    monkeypatch.undo()
    listed = _spares(layout)
    assert len(listed) == 8
    old = _age(layout, repo, listed[0], spares.SPARE_MAX_AGE_S + 60)
    # Parked "in the future" (a clock set back since): as old as it is far.
    future = _age(layout, repo, listed[7], -spares.SPARE_MAX_AGE_S - 60)
    # Young enough, but the oldest of the four sound ones: over the cap.
    surplus = _age(layout, repo, listed[1], spares.SPARE_MAX_AGE_S - 3600)
    tampered, unregistered, *sound = listed[2:7]
    _tamper_hooks(tampered)
    shutil.rmtree(_admin(unregistered))
    leftover = spares.spares_folder(layout.project_dir) / f"{spares.DISCARDED_PREFIX}x"
    leftover.mkdir()
    (leftover / "f").write_text("half deleted\n")
    swept = sweep_orphans(layout, ENV)
    doomed = (old, future, surplus, tampered, unregistered)
    gone = {f"spares/{p.name}" for p in doomed} | {"spares/x"}
    assert set(swept.removed) == gone and swept.failed == ()
    assert sorted(_spares(layout)) == sorted(sound)
    assert sorted(_registered(repo)[1:]) == sorted(str(p) for p in sound)
    assert not leftover.exists()
    # Nothing more to do: a second sweep removes nothing.
    assert sweep_orphans(layout, ENV).removed == ()


def test_the_sweep_takes_the_repository_lock(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim holds the repository lock while it moves a spare: the sweep waits for it."""
    from libcommon.locks import flock_lock

    _repo(workspace)
    layout = _layout(workspace, state_dir)
    base, _ = _park(layout, "g1", ["t1"])
    [spare] = _spares(layout)
    _tamper_hooks(spare)
    done = threading.Event()
    with flock_lock(base.lock, what="test"):

        def sweep() -> None:
            sweep_orphans(layout, ENV)
            done.set()

        worker = threading.Thread(target=sweep)
        worker.start()
        assert not done.wait(0.5) and spare.exists()
    worker.join(30)
    assert done.is_set() and not spare.exists()


def test_without_a_repository_every_spare_goes(workspace: Path, state_dir: Path) -> None:
    _repo(workspace)
    layout = _layout(workspace, state_dir)
    _park(layout, "g1", ["t1"])
    shutil.rmtree(workspace / ".git")
    swept = sweep_orphans(layout, ENV)
    assert len(swept.removed) == 1 and _spares(layout) == []


def test_a_spare_derives_no_trust_whatever_sits_beside_it(workspace: Path, state_dir: Path) -> None:
    from ax_policy.trust import grant_trust
    from libcommon.procfs import read_proc

    _repo(workspace)
    layout = _layout(workspace, state_dir)
    grant_trust(layout)
    _park(layout, "g1", ["t1"])
    [spare] = _spares(layout)
    assert not is_trusted(state_dir, spare)
    # An owner file planted in the spares folder, naming this live process and the spare.
    me = read_proc(os.getpid())
    assert me is not None
    planted = {
        "pid": os.getpid(),
        "startTime": me.start_time,
        "workspace": os.path.realpath(workspace),
        "prefix": "",
        "tasks": [spare.name],
    }
    (spare.parent / OWNER_FILE_NAME).write_text(json.dumps(planted))
    assert not is_trusted(state_dir, spare)
    # A claimed spare is the task's worktree: trusted by derivation like a fresh one.
    base = prepare_group(layout, "s1", "g2", ["t1"], ENV)
    try:
        assert base.reused and is_trusted(state_dir, base.workspace("t1"))
    finally:
        release_group(base, Recorder())


def _release_beside(base: GroupBase, script: str, *args: str, cwd: Path) -> tuple[Recorder, int]:
    """Release ``base`` while a Python process running ``script`` in ``cwd`` lingers (it
    prints "ready" first); the release's recorder and the process's pid."""
    lingering = subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=cwd, stdout=subprocess.PIPE, text=True
    )
    try:
        assert lingering.stdout is not None and lingering.stdout.readline() == "ready\n"
        recorder = Recorder()
        release_group(base, recorder)
    finally:
        lingering.kill()
        lingering.wait()
    return recorder, lingering.pid


def test_a_worktree_a_process_still_works_in_is_not_parked(
    workspace: Path, state_dir: Path
) -> None:
    """A process a task left running (one ax-exec's kill missed) would write into the next
    task's worktree after its checks: that worktree is removed, never parked."""
    _repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    script = "import time; print('ready', flush=True); time.sleep(60)"
    recorder, pid = _release_beside(base, script, cwd=base.trees["t1"] / "src")
    [said] = recorder.of("worktree.discarded")
    assert f"process {pid}" in said["reason"]
    assert [e["parked"] for e in recorder.of("worktree.removed")] == [False]
    assert _spares(layout) == []


def test_a_worktree_a_process_still_maps_a_file_of_is_not_parked(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """A writable mapping outlives its file descriptor, and a write through it need not
    change the file's ctime (which a spare's record trusts): a process that maps a file
    of the worktree, from anywhere, keeps it from being parked."""
    _repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    # libc's mmap itself: Python's mmap module keeps a descriptor of its own open. The
    # process checks it holds no descriptor of the file before it says it is ready.
    script = (
        "import ctypes, mmap, os, sys, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.mmap.restype = ctypes.c_void_p\n"
        "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,"
        " ctypes.c_int, ctypes.c_long]\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "how = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED\n"
        "assert libc.mmap(None, 4096, *how, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
        "os.close(fd)\n"
        "held = []\n"
        "for n in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        held.append(os.readlink(f'/proc/self/fd/{n}'))\n"
        "    except OSError:\n"
        "        pass\n"
        "assert sys.argv[1] not in held, held\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    tree = base.trees["t1"]
    recorder, pid = _release_beside(base, script, str(tree / "src" / "b.txt"), cwd=tmp_path)
    [said] = recorder.of("worktree.discarded")
    assert f"process {pid}" in said["reason"] and "src/b.txt" in said["reason"]
    assert _spares(layout) == []


def test_a_tracked_folder_swapped_for_a_link_out_is_never_written_through(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """The previous task replaced a tracked folder with a link to a folder outside: the
    reset puts the folder back and writes nothing through the link."""
    _repo(workspace)
    layout = _layout(workspace, state_dir)
    base = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(base.trees["t1"] / "src")
    (base.trees["t1"] / "src").symlink_to(outside)
    release_group(base, Recorder())
    again = prepare_group(layout, "s1", "g2", ["t1"], ENV, Recorder())
    try:
        assert again.reused  # the spare itself, put right by the reset
        assert list(outside.iterdir()) == []
        assert not (again.trees["t1"] / "src").is_symlink()
        _checked_out_exactly(again, "t1")
    finally:
        release_group(again, Recorder())


def test_another_projects_spares_are_swept_too_and_all_once_its_repository_moved(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """A project whose repository moved (or was deleted) never starts a session to sweep
    its own spares: any project's sweep does, by the repository each spare names."""
    repo = _repo(workspace)
    layout = _layout(workspace, state_dir)
    _park(layout, "g1", ["t1", "t2"])
    young, aged = _spares(layout)
    aged = _age(layout, repo, aged, spares.SPARE_MAX_AGE_S + 60)
    other = _layout(make_repo(tmp_path / "other"), state_dir)
    swept = sweep_orphans(other, ENV)
    assert swept.removed == (f"{layout.slug}/spares/{aged.name}",) and swept.failed == ()
    assert _spares(layout) == [young]  # sound and young: its own project's to reuse
    assert len(_registered(repo)) == 2  # the aged one's registration pruned
    repo.rename(tmp_path / "moved")
    swept = sweep_orphans(other, ENV)
    assert swept.removed == (f"{layout.slug}/spares/{young.name}",) and _spares(layout) == []


def test_a_workspace_below_the_top_reuses_spares_at_its_own_place(
    workspace: Path, state_dir: Path
) -> None:
    repo = make_repo(workspace, {"pkg/a.txt": "a\n", "other.txt": "o\n"})
    layout = _layout(repo / "pkg", state_dir)
    first = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    (first.trees["t1"] / "other.txt").write_text("the task's, outside its place\n")
    release_group(first, Recorder())
    (repo / "pkg" / "a.txt").write_text("a, changed\n")
    again = prepare_group(layout, "s1", "g2", ["t1"], ENV, Recorder())
    try:
        assert again.reused
        assert again.workspace("t1") == again.trees["t1"] / "pkg"
        assert (again.workspace("t1") / "a.txt").read_text() == "a, changed\n"
        _checked_out_exactly(again, "t1")
    finally:
        release_group(again, Recorder())
