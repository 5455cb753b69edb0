"""Executors' isolation: one base per group, a git worktree per task, capture, release.

The interface the delegation side calls (issue 21):

- ``prepare_group(layout, session_id, group_id, task_ids, environ, record=None) ->
  GroupBase``: one hidden-ref checkpoint of kind ``task-base`` for the whole group,
  taken before any task starts, so the parent's working tree, dirty state included, is
  what every member starts from; then per task a worktree at ``<state root>/projects/
  <slug>/worktrees/<session>.<group>/<task>`` (never inside the repository: a state
  root inside it is refused): one of the project's spare worktrees (``tasks.spares``:
  a released worktree kept for reuse) when one is left, claimed by ``git worktree
  move`` into the task's place, else ``git worktree add --detach --no-checkout``. The
  claims and adds run one at a time under a lock of the repository held by every ax
  process (``<state root>/locks/worktrees-<key>.lock``): an add reads every entry of
  ``.git/worktrees`` and fails on one a concurrent add is still writing, and the move
  out of the spares is the claim. The checkouts then run side by side: ``reset
  --hard`` in a fresh worktree; ``reset --hard <commit>`` (only the files that differ
  are written) and ``clean -ffdxq`` (untracked and ignored files alike) in a claimed
  spare. A spare is the previous task's leftovers: it is claimed only when its
  ``.git`` and admin folder pass ``spares.layout_problem``, and after its checkout
  every file is compared with the commit's blob (with its kind, executable bit, link
  target, and nothing else in the tree: the stat cache ``reset --hard`` trusts is the
  previous task's to forge), hashed unless the spare's record from its last proof
  vouches for it (``tasks.records``); one that fails is discarded and the task
  gets a fresh worktree, never a refusal of the group (``record`` gets a
  ``worktree.discarded`` body per spare refused). Before anything is returned the
  end-of-line check compares the first fresh worktree's files, and the workspace's,
  with the checkpoint's blobs byte for byte: a checkout or a checkpoint that converts
  line endings (``core.autocrlf``, ``core.eol``, ``.gitattributes`` ``eol``/``text``)
  would make every file of every task drift at apply, so any difference refuses the
  group, with the files named, and nothing is left behind. Every worktree is checked
  out from the same commit under the same config and attributes, so the first one
  stands for all (a verified spare's files are the blobs' bytes already).
  ``GroupBase.workspace(task)`` is the
  folder the task works in (the parent's place below the repository's top), and
  ``GITIGNORED_NOTE`` is the text the executor's prompt carries: gitignored files
  (and what the checkpoint left out: dependency folders, big untracked files,
  submodules) are absent there. The group's folder holds ``owner.json``: this
  process's pid and start time, the parent workspace and the tasks; trust reads it
  (``libcommon.trust.derived_parent``: a worktree of a trusted workspace is trusted,
  never written to the trust store) and so does the sweep.
- ``capture_task(group_base, task_id, record) -> Capture``: at the task's end, whatever
  its status (partial work is evidence). The worktree's changes are staged in its own
  index (``add -A``) and read back with ``status --porcelain=v1 -z`` (renames kept
  whole, as one entry), filtered to the parent workspace's place; each file's base
  bytes (the checkpoint's blob) and after bytes (the worktree's file) go into the
  content-addressed object store (``<project>/objects/<sha256>``). Bounded by
  ``CAPTURE_MAX_FILES``, ``CAPTURE_FILE_MAX_BYTES`` and ``CAPTURE_TASK_MAX_BYTES``:
  every file left out is counted (``omitted``) and the first ``OMISSIONS_SHOWN`` are
  named with why; a rename pair is kept or left out whole. ``record`` gets the
  ``task.captured`` event body (a dict) to append.
- ``release_group(group_base, record) -> Release``: every worktree parked or removed,
  to be called in a ``finally``. Parked: moved into the project's spares (``git
  worktree move`` under the lock) while it holds fewer than ``MAX_SPARE_WORKTREES`` and
  the worktree passes ``spares.layout_problem`` (a refusal is a ``worktree.discarded``
  body). Removed, every other: renamed aside inside its group folder (instant), then
  ``git worktree prune`` under the same lock (one that cannot be renamed: ``git worktree
  remove --force``); the owner file then names only the tasks whose worktree is left, and
  the set-aside files and the group folder are deleted in a background thread
  (``Release.deleting``); a process that exits first leaves the folder to the sweep.
  ``record`` gets one ``worktree.removed`` event body per task (the session's
  ``record``, so listeners see them as they happen). A removal that fails is recorded
  (``worktree.removed {ok: false}``) and left for the sweep, never raised; a parked one
  is ``worktree.removed {parked: true}``. Each task's child sessions are filed beside
  the parent's first (``_retire_children``).
- ``sweep_orphans(layout) -> Sweep``: removes the group folders whose owner is dead by
  positive identity (no process with the owner's pid, or one with another start time:
  the pid was recycled). A live owner's group is never swept, however old; a folder
  with no readable owner file is left alone and reported. Spares are swept under the
  repository lock (never one another process is claiming): those parked more than
  ``SPARE_MAX_AGE_S`` ago, failing ``spares.layout_problem``, or the oldest sound ones
  over the cap.

Every git call goes through ``libcommon.git`` (no hooks, no fsmonitor, no content
drivers): a worktree add would otherwise run the repository's ``post-checkout`` hook
and smudge filters.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from libcommon.errors import AxError, OperationFailed, Unsupported, UsageError
from libcommon.git import (
    GIT_WRITE_TIMEOUT_S,
    MAX_BATCH_COMMANDS,
    GitOutput,
    GitRunner,
    git_problem,
    git_said,
    parse_status_z,
)
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout, is_within
from libcommon.procfs import read_proc
from libcommon.trust import OWNER_FILE_NAME, SPARES_DIR_NAME, WORKTREES_DIR_NAME, read_owner

from .records import Record, entries, record_path, take_record, write_record
from .spares import (
    DISCARDED_PREFIX,
    MAX_SPARE_WORKTREES,
    layout_problem,
    list_spares,
    named_common,
    new_name,
    spares_folder,
    too_old,
)

# The most tasks one group runs (the delegate tool's schema maximum).
MAX_GROUP_TASKS = 3
# Capture's bounds: files one task's capture holds, bytes one file may have (base or
# after), and the base and after bytes of all of a task's files together.
CAPTURE_MAX_FILES = 500
CAPTURE_FILE_MAX_BYTES = 4 * 1024 * 1024
CAPTURE_TASK_MAX_BYTES = 64 * 1024 * 1024
# Files over the file cap kept out of the worktree's index by name (git add pathspecs).
CAPTURE_EXCLUDED_MAX = 1000
# Omitted paths named in a capture (the count covers the rest).
OMISSIONS_SHOWN = 20
# Files an end-of-line refusal names (the count covers the rest).
EOL_DRIFT_SHOWN = 10
# Paths one ``git hash-object`` call of the end-of-line check hashes (its argv stays far
# below the system's limit; the calls run side by side).
EOL_PATHS_PER_HASH = 1000
# A file is binary (no merge offered) when this many leading bytes hold a NUL, as git judges.
BINARY_SNIFF_BYTES = 8000
# Hex characters of the common git folder's sha256 naming its worktree lock.
LOCK_KEY_CHARS = 16
# Blobs one ``git show`` reads back at a time.
BLOBS_PER_READ = 200
# A removed worktree's folder is renamed to this prefix plus its task's name, inside its
# group folder, while its files are deleted in the background.
ASIDE_PREFIX = ".removed-"
# Below a parent's session folder: the logs of the executors it ran, once their worktrees
# are gone.
CHILD_LOGS_DIR_NAME = "tasks"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

GITIGNORED_NOTE = (
    "You work in a git worktree of the user's repository, checked out from a checkpoint "
    "of their working tree (uncommitted changes included). Files git ignores (build "
    "output, local settings, .env files, installed dependencies such as node_modules or "
    ".venv) and untracked files bigger than the checkpoint keeps are NOT here: install or "
    "generate what you need, and do not expect local configuration. Only your changes to "
    "files git tracks or would track are captured and offered to the parent. The "
    "repository itself is read-only to you: git reads (status, diff, log, show) work, git "
    "writes (add, commit, stash, branch, config) fail; leave your work as changed files."
)


@dataclass(frozen=True)
class GroupBase:
    """One group's base checkpoint and its tasks' worktrees."""

    layout: StateLayout
    session_id: str
    group_id: str
    checkpoint_ref: str
    commit: str
    # The repository's top and the workspace's place below it ("" or "sub/dir/").
    toplevel: Path
    prefix: str
    folder: Path
    trees: Mapping[str, Path]
    # Held while the repository's worktree entries are added, removed or pruned.
    lock: Path
    environ: Mapping[str, str] = field(repr=False, default_factory=dict)
    # The repository's common git folder, and the tasks whose worktree is a claimed spare
    # (its name in the spares folder).
    common: Path | None = None
    reused: Mapping[str, str] = field(default_factory=dict)

    def workspace(self, task_id: str) -> Path:
        """The folder task ``task_id`` works in: its worktree at the parent's place."""
        tree = self.trees[task_id]
        return tree / self.prefix if self.prefix else tree


@dataclass(frozen=True)
class CapturedFile:
    path: str
    change: str  # created, modified, deleted, renamed
    source: str | None
    base: str | None  # sha256 of the base bytes (None: absent at the base)
    after: str | None  # sha256 of the bytes at the task's end (None: deleted)
    binary: bool
    mode: int
    size: int

    def record(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "path": self.path,
            "change": self.change,
            "base": self.base,
            "after": self.after,
            "binary": self.binary,
            "mode": f"{self.mode:o}",
            "size": self.size,
        }
        if self.source is not None:
            entry["from"] = self.source
        return entry


@dataclass(frozen=True)
class Capture:
    task_id: str
    files: tuple[CapturedFile, ...]
    omitted: int
    omissions: tuple[tuple[str, str], ...]

    def event(self, group_id: str) -> dict[str, Any]:
        from ax_log import TaskCaptured

        return TaskCaptured(
            group=group_id,
            task_id=self.task_id,
            files=[item.path for item in self.files],
            omitted=self.omitted,
            entries=[item.record() for item in self.files],
            omissions=[{"path": p, "reason": r} for p, r in self.omissions],
        ).to_json()


@dataclass(frozen=True)
class Release:
    removed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    # Deleting the removed worktrees' files, set aside in the group folder, and then the
    # folder (None: nothing was left to delete). Join it to wait for the disk.
    deleting: threading.Thread | None = None


@dataclass(frozen=True)
class Sweep:
    removed: tuple[str, ...]
    # Group folders left alone, with why (a live owner, no readable owner file).
    kept: tuple[tuple[str, str], ...]
    failed: tuple[tuple[str, str], ...] = ()


# --- preparing a group -------------------------------------------------------------


def prepare_group(
    layout: StateLayout,
    session_id: str,
    group_id: str,
    task_ids: Sequence[str],
    environ: Mapping[str, str],
    record: Callable[[dict[str, Any]], Any] | None = None,
) -> GroupBase:
    """The group's base checkpoint and a checked worktree per task (module docstring).
    ``record`` gets a ``worktree.discarded`` event body per spare refused on the way."""
    from ax_log import create_checkpoint

    _check_names(group_id, task_ids)
    runner = _runner(layout.workspace, environ)
    toplevel, prefix, common = _toplevel(runner, layout.workspace)
    root = layout.project_dir / WORKTREES_DIR_NAME
    folder = root / f"{session_id}.{group_id}"
    if is_within(Path(os.path.realpath(folder.parent.parent)), toplevel):
        raise Unsupported(
            f"the state root {layout.root} is inside the repository {toplevel}: executors' "
            "worktrees would be files of the workspace they must stay out of",
            reason="state-root-inside-repository",
            hint="set AX_STATE_DIR to a folder outside the repository",
        )
    if folder.exists():
        raise UsageError(
            f"group {group_id} of session {session_id} already has worktrees ({folder})",
            hint="give each group a new id",
        )
    created = create_checkpoint(
        layout, session_id, kind="task-base", label=f"group {group_id}", environ=environ
    )
    commit = created.checkpoint.commit
    folder.mkdir(mode=0o700, parents=True)
    _write_owner(folder, layout, session_id, group_id, task_ids, prefix, commit)
    reused: dict[str, str] = {}
    records: dict[str, Record | None] = {}
    base = GroupBase(
        layout=layout,
        session_id=session_id,
        group_id=group_id,
        checkpoint_ref=created.checkpoint.ref,
        commit=commit,
        toplevel=toplevel,
        prefix=prefix,
        folder=folder,
        trees={task: folder / task for task in task_ids},
        lock=_repository_lock(layout, common),
        environ=dict(environ),
        common=common,
        reused=reused,
    )
    discarded: list[tuple[str, Path, str]] = []
    aside: list[Path] = []
    try:
        # git worktree add reads every entry of .git/worktrees, and one being written by a
        # concurrent add reads as empty and fails it: the entries are made one at a time
        # under a lock of the repository (across ax processes), which a spare's claim (its
        # move into the group) takes too; the checkouts, each in its own worktree and
        # index, then run side by side.
        with flock_lock(base.lock, what="worktree lock"):
            for task in task_ids:
                spare = _claim_spare(runner, base, task, discarded, aside)
                if spare is not None:
                    reused[task], records[task] = spare
                else:
                    _add_tree(runner, base, task)
            if aside:
                runner.run(["worktree", "prune"], timeout_s=GIT_WRITE_TIMEOUT_S)
        listing = _tree(runner, commit, "")
        refused = _checkout(runner, base, task_ids)
        refused.update(
            _verify_reused(runner, base, [t for t in reused if t not in refused], listing, records)
        )
        if refused:
            # A spare that did not come out as the base exactly is discarded and the task
            # gets a fresh checkout, never the group a refusal.
            for task, why in refused.items():
                target = folder / f"{DISCARDED_PREFIX}{task}"
                os.rename(folder / task, target)
                aside.append(target)
                discarded.append((task, spares_folder(layout.project_dir) / reused.pop(task), why))
            with flock_lock(base.lock, what="worktree lock"):
                runner.run(["worktree", "prune"], timeout_s=GIT_WRITE_TIMEOUT_S)
                for task in refused:
                    _add_tree(runner, base, task)
            _checkout(runner, base, list(refused))
        _check_eol(runner, base, listing, frozenset(reused))
    except BaseException:
        _remove_all(base, runner)
        raise
    finally:
        _say_discarded(group_id, discarded, record)
        if aside:
            threading.Thread(
                target=_delete, args=(aside,), name="ax-worktree-delete", daemon=True
            ).start()
    return base


def _add_tree(runner: GitRunner, base: GroupBase, task: str) -> None:
    """``git worktree add --no-checkout`` of the task's folder; the caller holds the lock."""
    path = base.trees[task]
    added = runner.run(
        ["worktree", "add", "--detach", "--no-checkout", "--quiet", str(path), base.commit],
        timeout_s=GIT_WRITE_TIMEOUT_S,
    )
    if added is None or not added.ok:
        raise OperationFailed(
            f"git could not add the worktree of task {task} at {path}{git_said(added)}",
            hint="`git worktree list` shows the repository's worktrees",
        )


def _claim_spare(
    runner: GitRunner,
    base: GroupBase,
    task: str,
    discarded: list[tuple[str, Path, str]],
    aside: list[Path],
) -> tuple[str, Record | None] | None:
    """Move the newest sound spare into the task's place (the caller holds the lock: the
    move is the claim); the spares refused on the way are set aside. Its name and its
    record (``records``), or None."""
    assert base.common is not None
    folder = spares_folder(base.layout.project_dir)
    target = base.trees[task]
    for spare in list_spares(folder)[0]:
        why = layout_problem(spare.path, base.common)
        if why is None:
            moved = runner.run(
                ["worktree", "move", str(spare.path), str(target)], timeout_s=GIT_WRITE_TIMEOUT_S
            )
            if moved is not None and moved.ok and target.is_dir() and not spare.path.exists():
                return spare.path.name, take_record(record_path(folder, spare.path.name))
            why = f"git could not move it into the group{git_said(moved)}"
            if target.exists():
                # Half moved: its place in the group is set aside as well.
                aside.append(_set_aside(target, base.folder / f"{DISCARDED_PREFIX}{task}"))
        if spare.path.exists():
            aside.append(_set_aside(spare.path, folder / f"{DISCARDED_PREFIX}{spare.path.name}"))
        discarded.append((task, spare.path, why))
    return None


def _set_aside(path: Path, target: Path) -> Path:
    """Rename ``path`` to ``target`` (instant; its files are deleted later); one that cannot
    be renamed is deleted now."""
    try:
        os.rename(path, target)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return path
    return target


def _checkout(runner: GitRunner, base: GroupBase, tasks: Sequence[str]) -> dict[str, str]:
    """Check every task's worktree out at the base, side by side: a fresh one by ``reset
    --hard`` (its index is empty), a claimed spare by ``reset --hard <base>`` (only the
    files that differ are written) and ``clean -ffdxq`` (what the previous task left,
    untracked and ignored). A fresh checkout that fails refuses the group; a spare's,
    why it is discarded."""
    resets = runner.batch(
        [
            ["-C", str(base.trees[task]), "reset", "--hard", "--quiet"]
            + ([base.commit] if task in base.reused else [])
            for task in tasks
        ],
        timeout_s=GIT_WRITE_TIMEOUT_S,
    )
    refused: dict[str, str] = {}
    for task, done in zip(tasks, resets, strict=True):
        if done is not None and done.ok:
            continue
        if task not in base.reused:
            raise OperationFailed(
                f"git could not check out the worktree of task {task} at {base.trees[task]}"
                + git_said(done),
                hint="a full disk or a file git cannot write there refuses",
            )
        refused[task] = f"git could not reset it to the group's base{git_said(done)}"
    cleaning = [task for task in tasks if task in base.reused and task not in refused]
    cleans = runner.batch(
        [["-C", str(base.trees[task]), "clean", "-ffdxq"] for task in cleaning],
        timeout_s=GIT_WRITE_TIMEOUT_S,
    )
    for task, done in zip(cleaning, cleans, strict=True):
        if done is None or not done.ok:
            refused[task] = f"git could not clean what its previous task left{git_said(done)}"
    return refused


def _verify_reused(
    runner: GitRunner,
    base: GroupBase,
    tasks: Sequence[str],
    listing: Mapping[str, tuple[str, str, int]],
    records: Mapping[str, Record | None],
) -> dict[str, str]:
    """Why each claimed spare, reset and cleaned, is not the base commit exactly: every
    file's bytes (hashed, unless the spare's record vouches for them: the stat cache
    ``reset --hard`` trusts is the previous task's to forge, the record is not), each
    file's kind and executable bit, each link's target, and nothing else in the tree (the
    worktree's ``.git`` file aside). A spare that passes is recorded for its next claim."""
    if not tasks:
        return {}
    algorithm = "sha256" if len(base.commit) == 64 else "sha1"
    blobs = {path: oid for path, (mode, oid, _size) in listing.items() if mode in _FILE_MODES}
    walks = [_walk(base.trees[task]) for task in tasks]
    made = [entries(found, blobs) for found in walks]
    vouched: list[set[str]] = []
    for task, found, now in zip(tasks, walks, made, strict=True):
        record = records.get(task)
        vouched.append(set() if record is None else record.vouched(now, found))
    hashed = _hash_files(
        runner,
        [
            (base.trees[task], [path for path in blobs if path not in skip])
            for task, skip in zip(tasks, vouched, strict=True)
        ],
        walks,
    )
    expected = _expected_folders(listing)
    refused: dict[str, str] = {}
    for task, known, found, skip, now in zip(tasks, hashed, walks, vouched, made, strict=True):
        tree = base.trees[task]
        wrong: list[str] = []
        for path, (mode, oid, _size) in listing.items():
            info = found.get(path)
            kind = None if info is None else info.st_mode
            if mode in _FILE_MODES:
                if path in skip:
                    blob: str | None = oid
                else:
                    blob = known[path] if path in known else _blob_id(tree / path, algorithm)
                executable = kind is not None and bool(kind & 0o100)
                if blob != oid or kind is None or executable != (mode == "100755"):
                    wrong.append(path)
            elif mode == "120000":
                if (
                    kind is None
                    or not stat.S_ISLNK(kind)
                    or _link_id(tree / path, algorithm) != oid
                ):
                    wrong.append(path)
            elif kind is None or not stat.S_ISDIR(kind):
                wrong.append(path)
        left = sorted(path for path in found if path not in listing and path not in expected)
        problems = []
        if wrong:
            problems.append(f"{len(wrong)} file(s) differ from the base ({_some(wrong)})")
        if left:
            problems.append(f"{len(left)} path(s) the base does not have are left ({_some(left)})")
        if problems:
            refused[task] = "after its reset and clean, " + "; ".join(problems)
        else:
            write_record(record_path(base.folder, task), now)
    return refused


def _some(paths: Sequence[str]) -> str:
    more = len(paths) - EOL_DRIFT_SHOWN
    return ", ".join(paths[:EOL_DRIFT_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _expected_folders(listing: Mapping[str, tuple[str, str, int]]) -> set[str]:
    folders: set[str] = set()
    for path in listing:
        parent = path.rpartition("/")[0]
        while parent and parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    return folders


def _walk(tree: Path) -> dict[str, os.stat_result | None]:
    """Every path below ``tree`` (the worktree's own ``.git`` file aside), relative, with
    its ``lstat``; links are not followed. A path that cannot be read is None, and a
    folder that cannot be listed is such a path (its content is unknown)."""
    found: dict[str, os.stat_result | None] = {}
    pending = [("", str(tree))]
    while pending:
        relative, folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            found[relative or "."] = None
            continue
        for entry in entries:
            name = f"{relative}{entry.name}"
            if name == ".git":
                continue
            try:
                info: os.stat_result | None = entry.stat(follow_symlinks=False)
            except OSError:
                info = None
            found[name] = info
            if info is not None and stat.S_ISDIR(info.st_mode):
                pending.append((f"{name}/", entry.path))
    return found


def _link_id(path: Path, algorithm: str) -> str | None:
    try:
        target = os.fsencode(os.readlink(path))
    except OSError:
        return None
    return hashlib.new(algorithm, b"blob %d\0" % len(target) + target).hexdigest()


def _say_discarded(
    group_id: str,
    discarded: Sequence[tuple[str, Path, str]],
    record: Callable[[dict[str, Any]], Any] | None,
) -> None:
    """One ``worktree.discarded`` per spare refused; said, never raised (a refusal never
    fails the group)."""
    from ax_log import WorktreeDiscarded

    if record is None:
        return
    for task, path, why in discarded:
        with contextlib.suppress(Exception):
            record(
                WorktreeDiscarded(
                    group=group_id, task_id=task, path=str(path), reason=why
                ).to_json()
            )


def _check_names(group_id: str, task_ids: Sequence[str]) -> None:
    for name in (group_id, *task_ids):
        if not _NAME.fullmatch(name):
            raise UsageError(
                f"{name!r} cannot name a group or task folder",
                hint="use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
                "or digit",
            )
    if not 1 <= len(task_ids) <= MAX_GROUP_TASKS or len(set(task_ids)) != len(task_ids):
        raise UsageError(
            f"a group holds 1 to {MAX_GROUP_TASKS} distinct tasks, not {list(task_ids)}"
        )


def _runner(directory: Path, environ: Mapping[str, str]) -> GitRunner:
    problem = git_problem(environ)
    runner = None if problem is not None else GitRunner.open(directory, environ)
    if runner is None:
        raise Unsupported(
            f"executors need git: {problem or 'the repository config could not be read'}",
            reason="git-unavailable",
            hint="install git 2.15 or newer, or fix the repository's config",
        )
    return runner


def _toplevel(runner: GitRunner, workspace: Path) -> tuple[Path, str, Path]:
    """The repository's top, the workspace's place below it, and its common git folder."""
    done = runner.run(["rev-parse", "--is-inside-work-tree", "--show-toplevel", "--git-common-dir"])
    lines = done.text().splitlines() if done is not None and done.ok else []
    if lines[:1] != ["true"] or len(lines) != 3:
        raise Unsupported(
            f"{workspace} is not inside a git working tree: executors work in git worktrees",
            reason="not-a-repository",
            hint="`git init` and commit first, or let the parent do the work itself",
        )
    toplevel = Path(os.path.realpath(lines[1]))
    common = Path(os.path.realpath(Path(workspace) / lines[2]))
    real = Path(os.path.realpath(workspace))
    relative = real.relative_to(toplevel).as_posix() if real != toplevel else ""
    return toplevel, f"{relative}/" if relative else "", common


def _repository_lock(layout: StateLayout, common: Path) -> Path:
    """The lock every ax process takes to add, remove or prune a repository's worktrees."""
    key = hashlib.sha256(os.fsencode(common)).hexdigest()[:LOCK_KEY_CHARS]
    return layout.root / "locks" / f"worktrees-{key}.lock"


def _write_owner(
    folder: Path,
    layout: StateLayout,
    session_id: str,
    group_id: str,
    task_ids: Sequence[str],
    prefix: str,
    commit: str,
) -> None:
    from libcommon.atomic import atomic_write_bytes

    me = read_proc(os.getpid())
    owner = {
        "pid": os.getpid(),
        "startTime": me.start_time if me is not None else None,
        "session": session_id,
        "group": group_id,
        "workspace": os.path.realpath(layout.workspace),
        "prefix": prefix.rstrip("/"),
        "tasks": list(task_ids),
        "commit": commit,
    }
    atomic_write_bytes(folder / OWNER_FILE_NAME, json.dumps(owner, indent=1).encode())


def _check_eol(
    runner: GitRunner,
    base: GroupBase,
    listing: Mapping[str, tuple[str, str, int]],
    verified: frozenset[str],
) -> None:
    """Refuse when the first fresh worktree's files or the workspace's differ from the
    blobs. A claimed spare (``verified``) was hashed whole already: every one of its files
    is the blob's bytes, so when every task has one only the workspace is hashed."""
    prefix = base.prefix
    tree = {
        path[len(prefix) :]: entry for path, entry in listing.items() if path.startswith(prefix)
    }
    algorithm = "sha256" if len(base.commit) == 64 else "sha1"
    fresh = [task for task in base.trees if task not in verified]
    files = sorted(path for path, (mode, _oid, _size) in tree.items() if mode in _FILE_MODES)
    sides = [base.workspace(fresh[0]) if fresh else None, base.layout.workspace]
    hashed = _hash_files(runner, [(side, files) for side in sides if side is not None])
    if sides[0] is None:
        hashed.insert(0, {})

    def blob(side: int, path: str) -> str | None:
        folder = sides[side]
        if folder is None:
            return tree[path][1]
        known = hashed[side]
        return known[path] if path in known else _blob_id(folder / path, algorithm)

    drift: list[tuple[str, str]] = []
    for path in files:
        oid = tree[path][1]
        if blob(0, path) != oid:
            drift.append((path, "the worktree's checkout"))
        elif blob(1, path) not in (oid, None):
            drift.append((path, "the workspace's file"))
    if not drift:
        return
    shown = ", ".join(f"{path} ({where})" for path, where in drift[:EOL_DRIFT_SHOWN])
    more = len(drift) - EOL_DRIFT_SHOWN
    raise OperationFailed(
        f"refused: {len(drift)} file(s) differ between the group's base checkpoint and the "
        f"bytes on disk: {shown}"
        + (f" and {more} more" if more > 0 else "")
        + ". This is line-ending normalisation (core.autocrlf, core.eol or a .gitattributes "
        "eol/text rule converts on checkout or on add): every task's files would drift at "
        "apply",
        hint="set `git config core.autocrlf false` (and no eol conversion in .gitattributes) "
        "for this repository, or let the parent do the work itself",
    )


def _tree(
    runner: GitRunner, commit: str, prefix: str, paths: Sequence[str] | None = None
) -> dict[str, tuple[str, str, int]]:
    """The commit's files below ``prefix`` (only ``paths``, workspace-relative, when given):
    {workspace-relative path: (mode, oid, size)}. Sizes are read only for named paths
    (``-l`` costs an object lookup per file); the whole listing has size 0."""
    argv = ["ls-tree", "-r", "-z", "--full-tree"]
    if paths is not None:
        if not paths:
            return {}
        argv += ["-l", commit, "--", *(prefix + path for path in paths)]
    else:
        argv.append(commit)
    done = runner.run(argv, timeout_s=GIT_WRITE_TIMEOUT_S)
    if done is None or not done.ok:
        raise OperationFailed(f"git could not list the checkpoint {commit[:12]}")
    wanted = set(paths) if paths is not None else None
    found: dict[str, tuple[str, str, int]] = {}
    for record in done.stdout.split(b"\0")[:-1]:
        info, _, raw = record.partition(b"\t")
        mode, _kind, oid, *size = info.decode("ascii").split()
        name = os.fsdecode(raw)
        if not name.startswith(prefix):
            continue
        relative = name[len(prefix) :]
        if wanted is None or relative in wanted:
            known = size[0] if size and size[0].isdigit() else "0"
            found[relative] = (mode, oid, int(known))
    return found


_FILE_MODES = ("100644", "100755")


def _hash_files(
    runner: GitRunner,
    sides: Sequence[tuple[Path, Sequence[str]]],
    walks: Sequence[Mapping[str, os.stat_result | None]] | None = None,
) -> list[dict[str, str | None]]:
    """Per (folder, paths): each regular file's blob id as its bytes are, unconverted
    (``hash-object --no-filters``, many paths a call, every call of every side at once);
    not a regular file: None. A path missing from an answer (a call that failed: a file
    went away) is left to the caller's own hashing. ``walks``, one per side when given,
    are the sides' ``_walk``: each path's mode is read there, not by an lstat a path."""
    commands: list[list[str]] = []
    owners: list[tuple[int, list[str]]] = []
    found: list[dict[str, str | None]] = []
    for index, (folder, paths) in enumerate(sides):
        regular: list[str] = []
        known: dict[str, str | None] = {}
        where = os.path.join(folder, "")
        for path in paths:
            if walks is not None:
                info = walks[index].get(path)
                is_file = info is not None and stat.S_ISREG(info.st_mode)
            else:
                try:
                    is_file = stat.S_ISREG(os.lstat(where + path).st_mode)
                except OSError:
                    is_file = False
            if is_file:
                regular.append(path)
            else:
                known[path] = None
        found.append(known)
        for start in range(0, len(regular), EOL_PATHS_PER_HASH):
            chunk = regular[start : start + EOL_PATHS_PER_HASH]
            commands.append(["-C", str(folder), "hash-object", "--no-filters", "--", *chunk])
            owners.append((index, chunk))
    for start in range(0, len(commands), MAX_BATCH_COMMANDS):
        answers = runner.batch(
            commands[start : start + MAX_BATCH_COMMANDS], timeout_s=GIT_WRITE_TIMEOUT_S
        )
        for (index, chunk), done in zip(owners[start:], answers, strict=False):
            lines = done.text().split() if done is not None and done.ok else []
            if len(lines) == len(chunk):
                found[index].update(zip(chunk, lines, strict=True))
    return found


def _blob_id(path: Path, algorithm: str) -> str | None:
    """The blob id git would give the bytes of the regular file at ``path``, unconverted."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


# --- capture -----------------------------------------------------------------------


def capture_task(
    group_base: GroupBase, task_id: str, record: Callable[[dict[str, Any]], Any]
) -> Capture:
    """The task's changes as content-addressed blobs, bounded; ``record`` gets the event."""
    from ax_log import store_bytes

    tree = group_base.trees[task_id]
    runner = _runner(tree, group_base.environ)
    prefix = group_base.prefix
    # Files over the file cap are kept out of the worktree's index: staging hashes a file
    # into the object store the parent's repository shares, before any cap could apply.
    before = runner.run(_STATUS, timeout_s=GIT_WRITE_TIMEOUT_S)
    if before is None or not before.ok:
        raise OperationFailed(f"git could not read the changes of task {task_id} in {tree}")
    changed = parse_status_z(before.stdout)
    big = [item.path for item in changed if _over_cap(tree / item.path)]
    excluded = [f":(top,literal,exclude){path}" for path in big[:CAPTURE_EXCLUDED_MAX]]
    # Staging is only for rename pairs and the index column: a clean worktree has none.
    listed: GitOutput | None = before
    if changed:
        staged = runner.run(["add", "-A", "--", ":/", *excluded], timeout_s=GIT_WRITE_TIMEOUT_S)
        listed = runner.run(_STATUS, timeout_s=GIT_WRITE_TIMEOUT_S)
        if staged is None or not staged.ok:
            listed = None
    if listed is None or not listed.ok:
        raise OperationFailed(f"git could not read the changes of task {task_id} in {tree}")
    entries: list[tuple[str, str, str | None]] = []
    omissions: list[tuple[str, str]] = []
    for status in parse_status_z(listed.stdout):
        inside = status.path.startswith(prefix) and (
            status.orig_path is None or status.orig_path.startswith(prefix)
        )
        if not inside:
            omissions.append((status.path, "outside the workspace"))
            continue
        path = status.path[len(prefix) :]
        source = status.orig_path[len(prefix) :] if status.orig_path else None
        # Staged, a change is in the index column; a file kept out of the index (over the
        # file cap) shows in the worktree column, or as untracked.
        letter = status.xy[0] if status.xy[0] != " " else status.xy[1]
        change = {"A": "created", "?": "created", "D": "deleted", "R": "renamed"}.get(
            letter, "modified"
        )
        if letter == "C":
            change, source = "created", None
        entries.append((path, change, source))
    base_files = _tree(
        runner,
        group_base.commit,
        prefix,
        [source or path for path, change, source in entries if change != "created"],
    )
    wanted: dict[str, tuple[str, str, int]] = {}
    files: list[CapturedFile] = []
    total = 0
    plans: list[tuple[str, str, str | None, int]] = []
    for path, change, source in entries:
        if len(plans) >= CAPTURE_MAX_FILES:
            omissions.append((path, f"over the {CAPTURE_MAX_FILES}-file cap"))
            continue
        base_path = source if change == "renamed" and source is not None else path
        base_entry = base_files.get(base_path) if change != "created" else None
        after_size, after_mode, why = _after_size(tree / prefix / path, change)
        if why is not None:
            omissions.append((path, why))
            continue
        base_size = base_entry[2] if base_entry is not None else 0
        if base_entry is not None and base_entry[0] not in ("100644", "100755"):
            omissions.append((path, "a symbolic link or submodule at the base"))
            continue
        if max(base_size, after_size) > CAPTURE_FILE_MAX_BYTES:
            omissions.append((path, f"over the {CAPTURE_FILE_MAX_BYTES}-byte file cap"))
            continue
        if total + base_size + after_size > CAPTURE_TASK_MAX_BYTES:
            omissions.append((path, f"over the {CAPTURE_TASK_MAX_BYTES}-byte task cap"))
            continue
        total += base_size + after_size
        if base_entry is not None:
            wanted[base_path] = base_entry
        plans.append((path, change, source, after_mode))
    blobs = _read_blobs(runner, list(wanted.values()))
    for path, change, source, after_mode in plans:
        base_entry = wanted.get(source if change == "renamed" and source is not None else path)
        base_bytes = blobs.get(base_entry[1]) if base_entry is not None else None
        if base_entry is not None and base_bytes is None:
            omissions.append((path, "git could not read its base blob"))
            continue
        after_bytes = None
        if change != "deleted":
            try:
                after_bytes = (tree / prefix / path).read_bytes()
            except OSError as exc:
                omissions.append((path, f"unreadable at the task's end: {exc.strerror}"))
                continue
        binary = any(
            data is not None and b"\0" in data[:BINARY_SNIFF_BYTES]
            for data in (base_bytes, after_bytes)
        )
        files.append(
            CapturedFile(
                path=path,
                change=change,
                source=source,
                base=store_bytes(group_base.layout, base_bytes) if base_bytes is not None else None,
                after=(
                    store_bytes(group_base.layout, after_bytes) if after_bytes is not None else None
                ),
                binary=binary,
                mode=after_mode if change != "deleted" else 0,
                size=len(after_bytes) if after_bytes is not None else 0,
            )
        )
    capture = Capture(
        task_id=task_id,
        files=tuple(files),
        omitted=len(omissions),
        omissions=tuple(omissions[:OMISSIONS_SHOWN]),
    )
    record(capture.event(group_base.group_id))
    return capture


_STATUS = (
    "-c",
    "status.renames=true",
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=all",
    "--ignore-submodules=all",
)


def _over_cap(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size > CAPTURE_FILE_MAX_BYTES


def _after_size(path: Path, change: str) -> tuple[int, int, str | None]:
    """(size, permission bits, None) of the file at the task's end; why it is left out."""
    if change == "deleted":
        return 0, 0, None
    try:
        info = os.lstat(path)
    except OSError:
        return 0, 0, "gone at the task's end"
    if not stat.S_ISREG(info.st_mode):
        return 0, 0, "not a regular file (a symbolic link or a special file)"
    return info.st_size, 0o755 if info.st_mode & 0o100 else 0o644, None


def _read_blobs(
    runner: GitRunner, entries: Sequence[tuple[str, str, int]]
) -> dict[str, bytes | None]:
    """Each blob's bytes, unconverted, checked against its id (``show`` of many at once)."""
    sizes = {oid: size for _mode, oid, size in entries}
    found: dict[str, bytes | None] = {}
    oids = sorted(sizes)
    for start in range(0, len(oids), BLOBS_PER_READ):
        chunk = oids[start : start + BLOBS_PER_READ]
        expected = sum(sizes[oid] for oid in chunk)
        done: GitOutput | None = runner.run(
            ["show", "--no-textconv", *chunk],
            timeout_s=GIT_WRITE_TIMEOUT_S,
            max_output_bytes=max(expected, 1),
        )
        if done is None or done.returncode != 0 or len(done.stdout) != expected:
            found.update(dict.fromkeys(chunk))
            continue
        offset = 0
        for oid in chunk:
            data = done.stdout[offset : offset + sizes[oid]]
            offset += sizes[oid]
            algorithm = "sha256" if len(oid) == 64 else "sha1"
            digest = hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()
            found[oid] = data if digest == oid else None
    return found


# --- release and the sweep ---------------------------------------------------------


def release_group(group_base: GroupBase, record: Callable[[dict[str, Any]], Any]) -> Release:
    """Remove every worktree of the group; a failure is recorded, never raised. ``record``
    gets the ``worktree.removed`` event bodies, as ``capture_task``'s does: the session's
    own path to its log, so its listeners see them when they happen."""
    from ax_log import WorktreeRemoved

    try:
        runner: GitRunner | None = _runner(group_base.toplevel, group_base.environ)
    except Unsupported:
        runner = None
    failed: list[tuple[str, str]] = []
    for task in group_base.trees:
        why = _retire_children(
            group_base.layout, group_base.session_id, group_base.workspace(task), runner
        )
        if why is not None:
            failed.append((task, why))
    discarded: list[tuple[str, Path, str]] = []
    parked = _park(group_base, runner, discarded)
    removed, gone, deleting = _remove_all(group_base, runner, later=True)
    failed[:0] = gone
    events = [
        WorktreeRemoved(
            group=group_base.group_id,
            task_id=task,
            path=str(group_base.trees[task]),
            ok=task in removed,
            reason="; ".join(why for who, why in failed if who == task) or None,
            parked=task in parked,
        ).to_json()
        for task in group_base.trees
    ]
    try:
        for event in events:
            record(event)
    except Exception as exc:  # a release runs in a finally: it reports, never raises
        failed.append(("(log)", f"the worktree.removed events could not be appended: {exc}"))
    _say_discarded(group_base.group_id, discarded, record)
    return Release(removed=tuple(removed), failed=tuple(failed), deleting=deleting)


def _park(
    base: GroupBase, runner: GitRunner | None, discarded: list[tuple[str, Path, str]]
) -> set[str]:
    """Move task worktrees into the project's spares while it holds fewer than
    ``MAX_SPARE_WORKTREES``, each after ``spares.layout_problem`` found nothing (a refusal
    is added to ``discarded``): the tasks parked. Under the repository lock, so a count
    and a claim never interleave; a lock not taken parks nothing (all are removed)."""
    if runner is None or base.common is None:
        return set()
    folder = spares_folder(base.layout.project_dir)
    parked: set[str] = set()
    try:
        with flock_lock(base.lock, what="worktree lock"):
            room = MAX_SPARE_WORKTREES - len(list_spares(folder)[0])
            for task, tree in base.trees.items():
                if room <= 0:
                    break
                if not tree.is_dir():
                    continue
                why = layout_problem(tree, base.common)
                if why is None:
                    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                    target = folder / new_name()
                    moved = runner.run(
                        ["worktree", "move", str(tree), str(target)], timeout_s=GIT_WRITE_TIMEOUT_S
                    )
                    if moved is not None and moved.ok and not tree.exists():
                        with contextlib.suppress(OSError):
                            os.replace(
                                record_path(base.folder, task), record_path(folder, target.name)
                            )
                        parked.add(task)
                        room -= 1
                        continue
                    why = f"git could not move it to the spares{git_said(moved)}"
                discarded.append((task, tree, why))
    except AxError:
        return parked
    return parked


def _remove_all(
    base: GroupBase, runner: GitRunner | None, *, later: bool = False
) -> tuple[list[str], list[tuple[str, str]], threading.Thread | None]:
    """Remove the group's worktrees: (removed, failed with why, the deletion left running).

    ``later``: each worktree is first renamed aside inside the group folder, which is
    instant, so git's entry is pruned at once and the task's path is gone (nothing
    derives from it: ``derived_parent`` knows only the task names); deleting its files
    (thousands of files, seconds on a slow disk) then runs in a thread, and the group
    folder goes last. A process that exits first leaves the group folder with its owner
    file, which the orphan sweep removes by the owner's identity, as any other. A tree
    that cannot be renamed is removed in place by git, as without ``later``.
    """
    removed: list[str] = []
    failed: list[tuple[str, str]] = []
    tasks = list(base.trees)
    aside: list[Path] = []
    for tree in base.trees.values() if later else ():
        target = base.folder / f"{ASIDE_PREFIX}{tree.name}"
        try:
            os.rename(tree, target)
        except OSError:
            continue
        aside.append(target)
    try:
        with flock_lock(base.lock, what="worktree lock"):
            answers = _remove_trees(runner, list(base.trees.values()))
    except AxError as exc:
        answers = [f"the worktree lock was not taken: {exc.message}"] * len(tasks)
    for task, why in zip(tasks, answers, strict=True):
        if why is None:
            removed.append(task)
        else:
            failed.append((task, why))
    doomed = [*aside, *([base.folder] if not failed else [])]
    if not aside:
        for folder in doomed:
            shutil.rmtree(folder, ignore_errors=True)
        return removed, failed, None
    # The owner file outlives the trees by the deletion's time: it names only the tasks
    # whose worktree is still there, so a removed task's path derives nothing.
    _forget_tasks(base.folder, [task for task, _why in failed])
    deleting = threading.Thread(
        target=_delete, args=(doomed,), name="ax-worktree-delete", daemon=True
    )
    deleting.start()
    return removed, failed, deleting


def _forget_tasks(folder: Path, tasks: Sequence[str]) -> None:
    from libcommon.atomic import atomic_write_bytes

    owner = _owner(folder)
    if owner is not None:
        owner["tasks"] = list(tasks)
        atomic_write_bytes(folder / OWNER_FILE_NAME, json.dumps(owner, indent=1).encode())


def _delete(folders: Sequence[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _remove_trees(runner: GitRunner | None, trees: Sequence[Path]) -> list[str | None]:
    """Per worktree, why it could not be removed, or None when it is gone; then a prune.
    One at a time, under the repository's worktree lock: a removal, like an add, reads
    every entry of .git/worktrees."""
    out: list[str | None] = []
    for tree in trees:
        if tree.exists() and runner is not None:
            runner.run(["worktree", "remove", "--force", str(tree)], timeout_s=GIT_WRITE_TIMEOUT_S)
        if not tree.exists():
            out.append(None)
        elif runner is None:
            out.append("git is not usable to remove it")
        else:
            out.append(f"`git worktree remove --force {tree}` failed")
    if runner is not None:
        runner.run(["worktree", "prune"], timeout_s=GIT_WRITE_TIMEOUT_S)
    return out


def _retire_children(
    layout: StateLayout, session_id: str, tree_workspace: Path, runner: GitRunner | None
) -> str | None:
    """File the sessions an executor ran in ``tree_workspace`` beside their parent's, and
    remove the worktree's own project folder; why not, when something is left.

    A child session's state goes to the project folder of its workspace, the worktree:
    one folder per task that no session would ever open again once the worktree is gone.
    Its log and session folder are evidence and move to ``<parent's session folder>/
    tasks/`` (not a session of the project: its workspace no longer exists, so nothing
    lists, resumes or undoes it there); its checkpoint refs, which name the shared
    repository's objects for a tree that is gone, are deleted (``checkpoint.pruned`` in
    its log first); the rest (its objects, index, locks) goes with the folder. The
    folder is the worktree path's own slug, so a sweep finds it from the owner file.
    """
    from ax_log import append_events
    from libcommon.paths import SESSION_ID_PATTERN

    worktrees = Path(os.path.realpath(layout.project_dir / WORKTREES_DIR_NAME))
    real = Path(os.path.realpath(tree_workspace))
    if ".." in tree_workspace.parts or real == worktrees or not is_within(real, worktrees):
        # Only a worktree of this project's own group folders names a child's state.
        return None
    child = StateLayout(root=layout.root, workspace=tree_workspace)
    if child.project_dir == layout.project_dir or not child.project_dir.is_dir():
        return None
    target = layout.session_dir(session_id) / CHILD_LOGS_DIR_NAME
    problems: list[str] = []
    logs = sorted(child.sessions_dir.glob("*.jsonl")) if child.sessions_dir.is_dir() else []
    for log in logs:
        child_id = log.stem
        if not SESSION_ID_PATTERN.fullmatch(child_id):
            continue
        refs = _child_refs(runner, child_id)
        if refs:
            done = runner.batch([["update-ref", "-d", ref] for ref in refs]) if runner else []
            deleted = [r for r, d in zip(refs, done, strict=True) if d is not None and d.ok]
            try:
                append_events(child, child_id, [{"type": "checkpoint.pruned", "refs": deleted}])
            except Exception as exc:  # its log is evidence only: the move still happens
                problems.append(f"the pruned refs of {child_id} were not logged: {exc}")
        try:
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.replace(log, target / log.name)
            if child.session_dir(child_id).is_dir():
                os.replace(child.session_dir(child_id), target / child_id)
        except OSError as exc:
            problems.append(f"the log of {child_id} could not be filed: {exc.strerror}")
    if problems:
        return "; ".join(problems)
    shutil.rmtree(child.project_dir, ignore_errors=True)
    return None


def _child_refs(runner: GitRunner | None, child_id: str) -> list[str]:
    """A child's checkpoint refs: taken in its worktree, they land in the shared repository."""
    from ax_log import CHECKPOINT_REF_ROOT

    if runner is None:
        return []
    done = runner.run(["for-each-ref", "--format=%(refname)", f"{CHECKPOINT_REF_ROOT}/{child_id}/"])
    return done.text().split() if done is not None and done.ok else []


def sweep_orphans(layout: StateLayout, environ: Mapping[str, str] | None = None) -> Sweep:
    """Remove the groups whose owner process is gone (module docstring): never by age;
    and the spares that must go (``_sweep_spares``)."""
    root = layout.project_dir / WORKTREES_DIR_NAME
    environ = environ if environ is not None else os.environ
    spared, spare_failed = _sweep_spares(layout, environ)
    removed: list[str] = list(spared)
    kept: list[tuple[str, str]] = []
    failed: list[tuple[str, str]] = list(spare_failed)
    try:
        folders = sorted(
            entry for entry in root.iterdir() if entry.is_dir() and entry.name != SPARES_DIR_NAME
        )
    except OSError:
        folders = []
    for folder in folders:
        owner = _owner(folder)
        if owner is None:
            kept.append((folder.name, "no readable owner file: not removed"))
            continue
        pid, start = owner.get("pid"), owner.get("startTime")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            pid = None
        if pid is None or not isinstance(start, int | None):
            # Death is proved of a named process only: a malformed owner proves nothing.
            kept.append((folder.name, "its owner file names no pid and start time: not removed"))
            continue
        info = read_proc(pid)
        if info is not None and info.alive and (start is None or info.start_time == start):
            kept.append((folder.name, f"its owner (pid {pid}) is alive"))
            continue
        why = _sweep_group(layout, folder, owner, environ)
        if why is None:
            removed.append(folder.name)
        else:
            failed.append((folder.name, why))
    return Sweep(tuple(removed), tuple(kept), tuple(failed))


def _sweep_spares(
    layout: StateLayout, environ: Mapping[str, str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Remove the spares, of this project and of every other project of the state root
    (a project whose repository moved or was deleted never starts a session to sweep its
    own), that are parked more than ``SPARE_MAX_AGE_S`` ago or fail
    ``spares.layout_problem`` (a moved repository, a registration git pruned, a tampered
    ``.git`` or admin folder), the oldest of the sound ones over ``MAX_SPARE_WORKTREES``,
    and whatever else is in a spares folder (a discarded spare a process left, a stray).

    Each repository's spares under its lock, so a spare another process is claiming is
    never taken from it. This project's repository is its workspace's; another
    project's spare names its own (its ``.git`` file), and one that names none that
    exists, or this project's when its workspace is no longer a repository, goes
    without a lock: no process can claim it."""
    try:
        own: Path | None = _toplevel(_runner(layout.workspace, environ), layout.workspace)[2]
    except Unsupported:
        own = None
    removed: list[str] = []
    failed: list[tuple[str, str]] = []
    for project in _projects(layout):
        folder = spares_folder(project)
        if not folder.is_dir():
            continue
        mine = project == layout.project_dir
        label = SPARES_DIR_NAME if mine else f"{project.name}/{SPARES_DIR_NAME}"
        spares, doomed = list_spares(folder)
        commons: dict[Path, None] = {}
        for spare in spares:
            common = own if mine else named_common(spare.path)
            if common is None:
                doomed.append(spare.path)
            else:
                commons[common] = None
        for common in commons:
            try:
                doomed += _sweep_repository_spares(layout, folder, common, environ, mine)
            except AxError as exc:
                failed.append((label, exc.message))
        for path in doomed:
            name = f"{label}/{path.name.removeprefix(DISCARDED_PREFIX)}"
            if _delete_path(path):
                removed.append(name)
            else:
                failed.append((name, "its files could not be deleted"))
    return removed, failed


def _projects(layout: StateLayout) -> list[Path]:
    """This project's folder first, then every other of the state root."""
    try:
        others = sorted(
            entry
            for entry in (layout.root / "projects").iterdir()
            if entry.is_dir() and entry != layout.project_dir
        )
    except OSError:
        others = []
    return [layout.project_dir, *others]


def _sweep_repository_spares(
    layout: StateLayout, folder: Path, common: Path, environ: Mapping[str, str], mine: bool
) -> list[Path]:
    """Under the repository's lock, the spares of ``folder`` that belong to ``common``
    (all of them when ``mine``) and must go, set aside; git's registrations pruned."""
    runner = _runner(common, environ)
    doomed: list[Path] = []
    with flock_lock(_repository_lock(layout, common), what="worktree lock"):
        sound = 0
        for spare in list_spares(folder)[0]:
            if not mine and named_common(spare.path) != common:
                continue
            if not too_old(spare) and layout_problem(spare.path, common) is None:
                sound += 1
                if sound <= MAX_SPARE_WORKTREES:
                    continue
            doomed.append(_set_aside(spare.path, folder / f"{DISCARDED_PREFIX}{spare.path.name}"))
        if doomed:
            runner.run(["worktree", "prune"], timeout_s=GIT_WRITE_TIMEOUT_S)
    return doomed


def _delete_path(path: Path) -> bool:
    """Delete a folder (not following a link) or a file; whether it is gone."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    return not (path.exists() or path.is_symlink())


def _owner(folder: Path) -> dict[str, Any] | None:
    return read_owner(folder / OWNER_FILE_NAME)


def _sweep_group(
    layout: StateLayout, folder: Path, owner: Mapping[str, Any], environ: Mapping[str, str]
) -> str | None:
    tasks = owner.get("tasks")
    workspace = owner.get("workspace")
    if not isinstance(tasks, list) or not isinstance(workspace, str):
        return "the owner file does not name its tasks and workspace"
    runner: GitRunner | None = None
    lock: Path | None = None
    if Path(workspace).is_dir():
        try:
            runner = _runner(Path(workspace), environ)
            lock = _repository_lock(layout, _toplevel(runner, Path(workspace))[2])
        except Unsupported:
            runner = None
    named = [task for task in tasks if isinstance(task, str) and _NAME.fullmatch(task)]
    trees = [folder / task for task in named]
    problems = []
    session, prefix = owner.get("session"), owner.get("prefix")
    if isinstance(session, str) and _NAME.fullmatch(session) and isinstance(prefix, str):
        for task, tree in zip(named, trees, strict=True):
            why = _retire_children(layout, session, tree / prefix if prefix else tree, runner)
            if why is not None:
                problems.append(f"{task}: {why}")
    if lock is not None:
        with flock_lock(lock, what="worktree lock"):
            answers = _remove_trees(runner, trees)
    else:
        answers = _remove_trees(None, trees)
    for task, why in zip(named, answers, strict=True):
        if why is not None and runner is None:
            # The repository is gone or unusable: its worktree is plain files now.
            shutil.rmtree(folder / task, ignore_errors=True)
            why = None if not (folder / task).exists() else why
        if why is not None:
            problems.append(f"{task}: {why}")
    if problems:
        return "; ".join(problems)
    shutil.rmtree(folder, ignore_errors=True)
    return None
