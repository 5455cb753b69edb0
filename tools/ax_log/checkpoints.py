"""Checkpoints: a session's recovery points as commits under hidden refs.

``create_checkpoint`` captures the working tree as git sees it (tracked files and
untracked ones ``.gitignore`` does not exclude) without touching anything the user's
own ``git status``, ``git log`` or ``git branch`` shows: a copy of ``.git/index`` (its
stat cache spares rehashing unchanged files) takes ``add -A`` in a temporary folder,
``write-tree`` and ``commit-tree`` make a commit with a fixed identity, and the commit
goes under ``refs/ax/checkpoints/<session>/<n>``. The ``checkpoint.created`` event is
appended between ``commit-tree`` and ``update-ref``; every reader goes by the live
refs, so an event whose ref was never written is a checkpoint that does not exist.

``restore_checkpoint`` writes only the working tree, and only through ax-log's own
snapshot machinery: each file it will change is snapshotted first under one synthetic
call id, written or removed by the no-link walk undo uses, and recorded as
``file.mutated``, so one ``undo --last`` reverts the whole restore. The index, HEAD
and every ref but the checkpoints' are never written.

Every git run goes through ``libcommon.git`` (no hooks, no fsmonitor, no content
drivers, no optional locks); ``commit-tree`` is told not to sign (``gpg.program`` is
a program from the repository's config) and nothing runs ``git gc``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

from ax_log.events import (
    CheckpointCreated,
    CheckpointKind,
    CheckpointPruned,
    CheckpointRefusal,
    CheckpointRestored,
    CheckpointSkip,
    CheckpointSkipReason,
    EventBody,
)
from ax_log.reader import read_events
from ax_log.snapshots import mutation_events, replace_if_unchanged, snapshot_events
from ax_log.writer import append_events, log_path
from libcommon import clock
from libcommon.errors import AxError, Fenced, OperationFailed, Unsupported, UsageError
from libcommon.git import (
    GIT_WRITE_TIMEOUT_S,
    MAX_BATCH_COMMANDS,
    MAX_CHECKPOINTS_PER_SESSION,
    GitOutput,
    GitRunner,
    git_problem,
    git_said,
    split_z,
)
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout, check_session_id
from libcommon.redact import redact
from libcommon.secretnames import secret_folder, secret_name_pattern

CHECKPOINT_REF_ROOT = "refs/ax/checkpoints"
# Untracked files bigger than this are left out of a checkpoint (and listed).
UNTRACKED_FILE_MAX_BYTES = 10 * 1024 * 1024
# An untracked folder holding this many files or more is left out whole (and listed).
UNTRACKED_FOLDER_MAX_FILES = 200
# Folders of installed dependencies: rebuilt by a package manager, never worth a blob.
DEPENDENCY_FOLDERS = frozenset(
    {
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        "target",
        ".gradle",
        ".terraform",
    }
)
# Paths one checkpoint may leave out by name (each is a pathspec argument to git add).
MAX_EXCLUDED_PATHS = 1000
LABEL_MAX_CHARS = 200
# The largest file a restore reads back from git; a larger one is refused by name.
RESTORE_BLOB_MAX_BYTES = 256 * 1024 * 1024
# Blobs one `git show` reads back for a restore (each an argument of 41 or 65 bytes).
BLOBS_PER_READ = 500
# Secret-named paths named in a refusal; the count says how many more there are.
SECRETS_SHOWN = 10
SESSION_SCOPED_KINDS = frozenset({"agent", "task-base", "pre-integration"})
CHECKPOINT_KINDS: tuple[str, ...] = get_args(CheckpointKind)
CHECKPOINT_AUTHOR = ("ax checkpoint", "checkpoint@ax.invalid")
# The first line of every checkpoint commit's message; the second paragraph is its JSON.
MESSAGE_TITLE = "ax checkpoint"
_REF_PATTERN = re.compile(r"^refs/ax/checkpoints/([A-Za-z0-9][A-Za-z0-9._-]*)/([1-9][0-9]*)$")
_FILE_MODES = {"100644": 0o644, "100755": 0o755}
_LEFT_OUT = "left out of checkpoints (skipped, a submodule or a nested repository)"


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: CheckpointSkipReason
    files: int = 1

    def contract(self) -> CheckpointSkip:
        return CheckpointSkip(path=self.path, reason=self.reason, files=self.files)


@dataclass(frozen=True)
class Checkpoint:
    """One live checkpoint ref and what its commit says about itself."""

    session: str
    n: int
    ref: str
    commit: str
    parent: str | None
    kind: str
    label: str | None
    created: str | None
    skipped: tuple[Skipped, ...] = ()
    submodules: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "n": self.n,
            "ref": self.ref,
            "commit": self.commit,
            "parent": self.parent,
            "kind": self.kind,
            "label": self.label,
            "created": self.created,
            "skipped": [item.contract() for item in self.skipped],
            "submodules": list(self.submodules),
        }

    def to_json(self) -> dict[str, Any]:
        from ax_log.models import CheckpointView

        return CheckpointView(**self.fields()).to_json()


@dataclass(frozen=True)
class CreateResult:
    checkpoint: Checkpoint
    tree: str
    # Repository states worth saying (mid-merge, detached HEAD, no commit yet).
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        from ax_log.models import CreatedView

        return CreatedView(
            **self.checkpoint.fields(), tree=self.tree, notes=list(self.notes)
        ).to_json()


@dataclass(frozen=True)
class RestoreResult:
    ref: str
    commit: str
    call_id: str
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    # Paths left as they are: skipped by the checkpoint's rules, or not files git restores.
    left: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_json(self) -> dict[str, Any]:
        from ax_log.models import RestoreView

        return RestoreView(
            ref=self.ref,
            commit=self.commit,
            call_id=self.call_id,
            restored=list(self.restored),
            removed=list(self.removed),
            refused=[CheckpointRefusal(path=p, reason=r) for p, r in self.refused],
            left=[CheckpointRefusal(path=p, reason=r) for p, r in self.left],
        ).to_json()


@dataclass(frozen=True)
class PruneResult:
    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    failed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        from ax_log.models import PruneView

        return PruneView(
            deleted=list(self.deleted), kept=list(self.kept), failed=list(self.failed)
        ).to_json()


# --- the repository --------------------------------------------------------------


@dataclass(frozen=True)
class _Repository:
    toplevel: Path
    git_dir: Path
    head: str | None
    branch: str | None
    # The workspace's path below the top of the work tree ("" or "sub/dir/").
    prefix: str
    # One read of the repository's drivers for the whole operation; every command runs
    # in the workspace and names paths from the top (``:/``, ``--full-name``).
    runner: GitRunner
    notes: tuple[str, ...] = field(default=())

    def git(self, args: Sequence[str], **options: Any) -> GitOutput | None:
        return self.runner.run(args, **options)

    def batch(self, commands: Sequence[Sequence[str]], **options: Any) -> list[GitOutput | None]:
        return self.runner.batch(commands, **options)


def _repository(
    workspace: Path, environ: Mapping[str, str], extra: Sequence[Sequence[str]] = ()
) -> tuple[_Repository, list[GitOutput | None]]:
    """The work tree holding ``workspace`` and the answers of ``extra`` commands, run in
    the same batch; Unsupported (exit 5) when there is no work tree."""
    problem = git_problem(environ)
    runner = None if problem is not None else GitRunner.open(workspace, environ)
    if runner is None:
        raise Unsupported(
            f"checkpoints need git: {problem or 'the repository config could not be read'}",
            reason="git-unavailable",
            hint="install git 2.15 or newer (the rest of ax works without it), or fix the "
            "repository's config (`git config --list` shows the problem)",
        )
    where, head, branch, *answers = runner.batch(
        [
            [
                "rev-parse",
                "--is-bare-repository",
                "--is-inside-work-tree",
                "--show-toplevel",
                "--absolute-git-dir",
            ],
            ["rev-parse", "--verify", "-q", "HEAD^{commit}"],
            ["symbolic-ref", "-q", "--short", "HEAD"],
            *extra,
        ]
    )
    # Outside a work tree rev-parse dies at --show-toplevel, after its first answers.
    lines = where.text().splitlines() if where is not None else []
    if lines[:1] == ["true"]:
        raise Unsupported(
            f"{workspace} is a bare repository: it has no working tree to checkpoint",
            reason="bare-repository",
            hint="run ax in a working tree (a clone or `git worktree add`)",
        )
    if where is None or not where.ok or len(lines) != 4 or lines[:2] != ["false", "true"]:
        raise Unsupported(
            f"{workspace} is not inside a git working tree",
            reason="not-a-repository",
            hint="checkpoints are git commits under hidden refs; `git init` first, or use "
            "`ax-log undo` for the typed tools' changes",
        )
    toplevel, git_dir = Path(os.path.realpath(lines[2])), Path(os.path.realpath(lines[3]))
    relative = workspace.relative_to(toplevel).as_posix() if workspace != toplevel else ""
    head_oid = head.text().strip() if head is not None and head.ok else None
    branch_name = branch.text().strip() if branch is not None and branch.ok else None
    notes: list[str] = []
    if head_oid is None:
        notes.append("the repository has no commit yet: the checkpoint has no parent")
    elif branch_name is None:
        notes.append(f"HEAD is detached at {head_oid[:12]}: the checkpoint's parent is it")
    for marker, what in (
        ("MERGE_HEAD", "a merge"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or am"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / marker).exists():
            notes.append(
                f"the repository is in the middle of {what}: the checkpoint holds the "
                "working tree as it is (conflict markers included); the merge state is "
                "not part of it"
            )
    repo = _Repository(
        toplevel=toplevel,
        git_dir=git_dir,
        head=head_oid,
        branch=branch_name,
        prefix=f"{relative}/" if relative else "",
        runner=runner,
        notes=tuple(notes),
    )
    return repo, answers


def _refuse_locked_index(repo: _Repository) -> None:
    lock = repo.git_dir / "index.lock"
    if lock.exists():
        raise Fenced(
            f"{lock} exists: another git command is changing the index (or one died and "
            "left its lock)",
            hint="wait for that git command to finish and retry; if none is running, "
            f"remove the stale {lock}",
        )


def _check_ref_safe(session_id: str) -> None:
    check_session_id(session_id)
    if ".." in session_id or session_id.endswith("."):
        raise UsageError(
            f"session id {session_id!r} cannot name a git ref (no '..', no trailing '.')",
            hint="checkpoints live under refs/ax/checkpoints/<session>/; use another id",
        )


def _ref(session_id: str, n: int) -> str:
    return f"{CHECKPOINT_REF_ROOT}/{session_id}/{n}"


# --- listing -------------------------------------------------------------------


def list_checkpoints(
    layout: StateLayout,
    session_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Checkpoint]:
    """The live checkpoint refs (of one session, or all), oldest first: the truth."""
    if session_id is not None:
        _check_ref_safe(session_id)
    _repo, (listing,) = _repository(
        layout.workspace, _environ(environ), [_for_each_ref(session_id)]
    )
    return _live(listing)


def _for_each_ref(session_id: str | None) -> list[str]:
    return [
        "for-each-ref",
        "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(creatordate:iso-strict)"
        "%00%(contents)%00",
        CHECKPOINT_REF_ROOT + (f"/{session_id}/" if session_id else "/"),
    ]


def _live(done: GitOutput | None) -> list[Checkpoint]:
    """The checkpoints a ``_for_each_ref`` listing names, oldest first."""
    if done is None or not done.ok:
        raise OperationFailed("git could not list the checkpoint refs")
    fields = done.stdout.split(b"\0")
    found: list[Checkpoint] = []
    for start in range(0, len(fields) - 5, 5):
        refname, kind, oid, created, contents = (
            item.decode("utf-8", "replace") for item in fields[start : start + 5]
        )
        match = _REF_PATTERN.match(refname.lstrip("\n"))
        if match is None or kind != "commit":
            continue
        found.append(_parse_checkpoint(match, oid, created, contents))
    return sorted(found, key=lambda item: (item.session, item.n))


def _parse_checkpoint(match: re.Match[str], oid: str, created: str, contents: str) -> Checkpoint:
    meta: dict[str, Any] = {}
    _title, _, body = contents.partition("\n\n")
    try:
        loaded = json.loads(body.strip() or "{}")
        if isinstance(loaded, dict):
            meta = loaded
    except ValueError:
        meta = {}
    skipped = tuple(
        Skipped(str(item.get("path")), item["reason"], int(item.get("files", 1)))
        for item in meta.get("skipped", [])
        if isinstance(item, dict) and item.get("reason") in get_args(CheckpointSkipReason)
    )
    label = meta.get("label")
    parent = meta.get("parent")
    return Checkpoint(
        session=match.group(1),
        n=int(match.group(2)),
        ref=match.group(0),
        commit=oid,
        parent=parent if isinstance(parent, str) else None,
        kind=str(meta.get("kind", "unknown")),
        label=label if isinstance(label, str) else None,
        created=created or None,
        skipped=skipped,
        submodules=tuple(str(path) for path in meta.get("submodules", [])),
    )


# --- creating -------------------------------------------------------------------


@dataclass
class _Capture:
    """What ``add -A`` must leave out, and what is refused outright."""

    skipped: list[Skipped] = field(default_factory=list)
    submodules: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    def excluded(self) -> list[str]:
        return [item.path for item in self.skipped] + self.submodules


def create_checkpoint(
    layout: StateLayout,
    session_id: str,
    *,
    kind: str = "agent",
    label: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> CreateResult:
    """Capture the working tree as a commit under ``refs/ax/checkpoints/<session>/<n>``."""
    _check_ref_safe(session_id)
    if kind not in CHECKPOINT_KINDS:
        raise UsageError(
            f"checkpoint kind {kind!r} is not one of {', '.join(CHECKPOINT_KINDS)}",
        )
    if label is not None and (len(label) > LABEL_MAX_CHARS or not label.strip()):
        raise UsageError(f"a checkpoint label is 1 to {LABEL_MAX_CHARS} characters")
    repo, _ = _repository(layout.workspace, _environ(environ))
    _refuse_locked_index(repo)
    layout.sessions_dir.mkdir(parents=True, exist_ok=True)
    lock = layout.sessions_dir / f".{session_id}.checkpoint.lock"
    with flock_lock(lock, what="checkpoint lock"):
        listing, untracked_out, staged_out = repo.batch(
            [_for_each_ref(session_id), _UNTRACKED_LISTING, _STAGE_LISTING]
        )
        live = _live(listing)
        if len(live) >= MAX_CHECKPOINTS_PER_SESSION:
            raise OperationFailed(
                f"session {session_id} already holds {len(live)} checkpoints, the most one "
                f"session keeps ({MAX_CHECKPOINTS_PER_SESSION})",
                hint=f"prune them (`ax-log checkpoint prune --session {session_id}`) first",
            )
        n = max((item.n for item in live), default=0) + 1
        capture = _plan_capture(repo, untracked_out, staged_out)
        if capture.secrets:
            shown = ", ".join(repr(path) for path in capture.secrets[:SECRETS_SHOWN])
            more = len(capture.secrets) - SECRETS_SHOWN
            raise OperationFailed(
                f"refused: a checkpoint would store secret-named files in git, where a blob "
                f"cannot be redacted: {shown}" + (f" and {more} more" if more > 0 else ""),
                hint="list them in .gitignore (or .git/info/exclude) and checkpoint again",
            )
        tree = _write_tree(repo, capture.excluded())
        ref = _ref(session_id, n)
        redacted_label = redact(label) if label is not None else None
        meta = {
            "session": session_id,
            "n": n,
            "kind": kind,
            "label": redacted_label,
            "parent": repo.head,
            "skipped": [vars(item) for item in capture.skipped],
            "submodules": capture.submodules,
        }
        commit = _commit_tree(repo, tree, f"{MESSAGE_TITLE} {session_id}/{n}", meta)
        event = CheckpointCreated(
            ref=ref,
            n=n,
            kind=cast(CheckpointKind, kind),
            commit=commit,
            tree=tree,
            parent=repo.head,
            label=redacted_label,
            skipped=[item.contract() for item in capture.skipped],
            submodules=capture.submodules,
        )
        # Event before ref: a crash from here on leaves an event whose ref never existed,
        # which every reader (going by the live refs) reads as no checkpoint.
        stored = append_events(layout, session_id, [event])[0]
        zero = "0" * len(commit)
        done = repo.git(
            [
                "-c",
                "core.logAllRefUpdates=false",
                "update-ref",
                "--no-deref",
                "-m",
                MESSAGE_TITLE,
                ref,
                commit,
                zero,
            ]
        )
        if done is None or not done.ok:
            raise OperationFailed(
                f"git could not write {ref}: the checkpoint.created event (seq "
                f"{stored['seq']}) names a ref that does not exist, so there is no checkpoint",
                hint="retry; `ax-log checkpoint list` shows the checkpoints that exist",
            )
    return CreateResult(
        checkpoint=Checkpoint(
            session=session_id,
            n=n,
            ref=ref,
            commit=commit,
            parent=repo.head,
            kind=kind,
            label=redacted_label,
            created=stored["ts"],
            skipped=tuple(capture.skipped),
            submodules=tuple(capture.submodules),
        ),
        tree=tree,
        notes=repo.notes,
    )


def _plan_capture(
    repo: _Repository, untracked_out: GitOutput | None, staged_out: GitOutput | None
) -> _Capture:
    """Which untracked paths to leave out, which submodules to report, which secrets refuse."""
    if untracked_out is None or not untracked_out.ok or staged_out is None or not staged_out.ok:
        raise OperationFailed("git could not list the working tree's files")
    listed = split_z(untracked_out.stdout)
    staged = _staged(staged_out.stdout)
    capture = _Capture()
    capture.submodules = sorted(path for path, (mode, _oid) in staged.items() if mode == "160000")
    # A nested repository is listed as its folder ("vendored/"), never entered.
    nested = [entry.rstrip("/") for entry in listed if entry.endswith("/")]
    untracked = [entry for entry in listed if not entry.endswith("/")]
    tracked_folders = {
        "/".join(parts[:depth])
        for parts in (path.split("/") for path in staged)
        for depth in range(1, len(parts))
    }
    taken: set[str] = set()

    def leave(path: str, reason: CheckpointSkipReason, files: int) -> None:
        capture.skipped.append(Skipped(path, reason, files))
        taken.add(path)

    def under_taken(path: str) -> bool:
        parts = path.split("/")
        return any("/".join(parts[:depth]) in taken for depth in range(1, len(parts) + 1))

    # Dependency folders first (at any depth), then nested repositories, then whole folders.
    for path in untracked:
        parts = path.split("/")
        for depth, part in enumerate(parts[:-1], start=1):
            if part in DEPENDENCY_FOLDERS:
                folder = "/".join(parts[:depth])
                if not under_taken(folder):
                    leave(folder, "dependency-folder", _count_under(untracked, folder))
                break
    for folder in nested:
        if not under_taken(folder) and os.path.lexists(repo.toplevel / folder / ".git"):
            capture.submodules.append(folder)
            taken.add(folder)
    # The topmost folders holding no tracked file (what ``ls-files --directory`` folds).
    untracked_folders: dict[str, int] = {}
    for path in untracked:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in tracked_folders:
                untracked_folders[folder] = untracked_folders.get(folder, 0) + 1
                break
    for folder, files in sorted(untracked_folders.items()):
        if files >= UNTRACKED_FOLDER_MAX_FILES and not under_taken(folder):
            leave(folder, "large-folder", files)
    for path in untracked:
        if under_taken(path):
            continue
        try:
            info = os.lstat(repo.toplevel / path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > UNTRACKED_FILE_MAX_BYTES:
            leave(path, "large-file", 1)
            continue
        if _secret(path):
            capture.secrets.append(path)
    capture.secrets += _changed_secrets(repo, staged)
    if len(capture.excluded()) > MAX_EXCLUDED_PATHS:
        raise OperationFailed(
            f"a checkpoint would leave out {len(capture.excluded())} paths by name, more "
            f"than {MAX_EXCLUDED_PATHS}",
            hint="ignore the generated files or folders in .gitignore and checkpoint again",
        )
    capture.secrets = sorted(set(capture.secrets))
    return capture


_UNTRACKED_LISTING = ["ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", ":/"]
_STAGE_LISTING = ["ls-files", "-z", "--stage", "--full-name", "--", ":/"]
# Tracked paths whose working bytes may differ from the index (paths are from the top).
_CHANGED_LISTING = ["diff-files", "-z", "--name-only", "--ignore-submodules=all"]


def _staged(listing: bytes) -> dict[str, tuple[str, str]]:
    """``ls-files --stage -z``: each path's mode and object id (an unmerged path's last
    stage; its worktree bytes are what a checkpoint takes anyway)."""
    found: dict[str, tuple[str, str]] = {}
    for record in listing.split(b"\0")[:-1]:
        info, _, path = record.partition(b"\t")
        mode, oid, _stage = info.decode("ascii").split(" ")
        found[os.fsdecode(path)] = (mode, oid)
    return found


def _changed_secrets(repo: _Repository, staged: Mapping[str, tuple[str, str]]) -> list[str]:
    """Tracked secret-named files whose working bytes differ from the index (a checkpoint
    would store them as a new blob); asked of git only when there are such files."""
    named = [path for path, (mode, _oid) in staged.items() if mode != "160000" and _secret(path)]
    if not named:
        return []
    done = repo.git(
        ["diff-files", "-z", "--name-only", "--", *(f":(top,literal){path}" for path in named)]
    )
    if done is None or not done.ok:
        raise OperationFailed("git could not say whether the secret-named files changed")
    return split_z(done.stdout)


def _count_under(paths: Iterable[str], folder: str) -> int:
    head = folder + "/"
    return sum(1 for path in paths if path.startswith(head))


def _secret(path: str) -> bool:
    parts = path.split("/")
    return secret_folder(parts[:-1]) is not None or any(
        secret_name_pattern(part) is not None for part in parts
    )


def _write_tree(repo: _Repository, excluded: Sequence[str]) -> str:
    """``add -A`` into a copy of the user's index, then ``write-tree``: the tree's id."""
    with tempfile.TemporaryDirectory(prefix="ax-checkpoint-") as scratch:
        index = Path(scratch) / "index"
        user_index = repo.git_dir / "index"
        if user_index.exists():
            # copy2 keeps the index's mtime, which git compares with file mtimes to decide
            # which stat entries are too recent to trust: the copy trusts exactly as much.
            shutil.copy2(user_index, index)
        set_env = {"GIT_INDEX_FILE": str(index)}
        pathspecs = [":/", *(f":(top,literal,exclude){path}" for path in excluded)]
        added = repo.git(
            ["-c", "gc.auto=0", "-c", "maintenance.auto=false", "add", "-A", "--", *pathspecs],
            set_env=set_env,
            timeout_s=GIT_WRITE_TIMEOUT_S,
        )
        if added is None or not added.ok:
            raise OperationFailed(
                "git add -A into the checkpoint's temporary index failed (an unreadable file "
                f"or a full disk?){git_said(added)}",
                hint="nothing of yours was changed; fix the cause and checkpoint again",
            )
        tree = repo.git(["write-tree"], set_env=set_env, timeout_s=GIT_WRITE_TIMEOUT_S)
        if tree is None or not tree.ok:
            raise OperationFailed(
                f"git write-tree failed for the checkpoint's temporary index{git_said(tree)}"
            )
        return tree.text().strip()


def _commit_tree(repo: _Repository, tree: str, title: str, meta: Mapping[str, Any]) -> str:
    stamp = f"@{int(clock.now().timestamp())} +0000"
    name, email = CHECKPOINT_AUTHOR
    identity = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": stamp,
    }
    message = f"{title}\n\n{json.dumps(meta, sort_keys=True)}\n"
    parents = ["-p", repo.head] if repo.head is not None else []
    done = repo.git(
        ["commit-tree", "--no-gpg-sign", tree, *parents, "-m", message], set_env=identity
    )
    if done is None or not done.ok:
        raise OperationFailed("git commit-tree failed for the checkpoint")
    return done.text().strip()


# --- restoring -------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    mode: str
    oid: str
    # The blob's size as ls-tree -l reports it (only a checkpoint's entries carry one).
    size: int | None = field(default=None, compare=False)


def resolve_checkpoint(
    layout: StateLayout,
    reference: str,
    session_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Checkpoint:
    """A live checkpoint named as ``refs/ax/checkpoints/S/N``, ``S/N`` or ``N`` (of
    ``session_id``); refused when no live ref has that name."""
    name, owner = _ref_name(reference, session_id)
    _repo, (listing,) = _repository(layout.workspace, _environ(environ), [_for_each_ref(owner)])
    return _find(_live(listing), name)


def _ref_name(reference: str, session_id: str | None) -> tuple[str, str]:
    """The full ref a checkpoint reference names, and its session."""
    name = reference
    if name.isdigit():
        if session_id is None:
            raise UsageError(f"checkpoint {reference!r} needs --session to say whose it is")
        name = f"{session_id}/{name}"
    if not name.startswith(CHECKPOINT_REF_ROOT + "/"):
        name = f"{CHECKPOINT_REF_ROOT}/{name}"
    match = _REF_PATTERN.match(name)
    if match is None:
        raise UsageError(
            f"{reference!r} does not name a checkpoint",
            hint="give N (with --session), SESSION/N or refs/ax/checkpoints/SESSION/N",
        )
    return name, match.group(1)


def _find(live: Sequence[Checkpoint], name: str) -> Checkpoint:
    for item in live:
        if item.ref == name:
            return item
    raise OperationFailed(
        f"there is no checkpoint {name}",
        hint="`ax-log checkpoint list` shows the ones that exist",
    )


def restore_checkpoint(
    layout: StateLayout,
    session_id: str,
    reference: str,
    environ: Mapping[str, str] | None = None,
) -> RestoreResult:
    """Put the workspace's files back as the checkpoint holds them, as one undo unit of
    ``session_id``; files changed since the session last recorded them are refused."""
    check_session_id(session_id)
    name, owner = _ref_name(reference, session_id)
    repo, (listing, *worktree) = _repository(
        layout.workspace,
        _environ(environ),
        [_for_each_ref(owner), _STAGE_LISTING, _CHANGED_LISTING, _UNTRACKED_LISTING],
    )
    checkpoint = _find(_live(listing), name)
    target, current, left = _compare(repo, checkpoint, worktree)
    expected = _session_left(layout, session_id)
    call_id = clock.new_id("restore")
    refused: list[tuple[str, str]] = []
    plan: dict[str, _Entry | None] = {}
    for path in sorted(set(target) | set(current)):
        want = target.get(path)
        have = current.get(path)
        if want == have or (want is None and path in left):
            continue
        if want is not None and want.mode not in _FILE_MODES:
            left.setdefault(path, "a symbolic link or submodule in the checkpoint: not restored")
            continue
        relative = path[len(repo.prefix) :]
        reason = _drift(layout, relative, expected)
        if reason is not None:
            refused.append((relative, reason))
            continue
        plan[relative] = want
    stored: dict[str, dict[str, Any]] = {}
    snapshots: list[EventBody] = []
    for relative in plan:
        try:
            event = snapshot_events(layout, [relative], call_id)[0]
        except AxError as exc:
            refused.append((relative, exc.message))
            continue
        snapshots.append(event)
    if snapshots:
        for record in append_events(layout, session_id, snapshots):
            stored[record["path"]] = record
    restored: list[str] = []
    removed: list[str] = []
    wanted = [entry for path, entry in plan.items() if entry is not None and path in stored]
    blobs = _read_blobs(repo, wanted)
    for relative, want in plan.items():
        if relative not in stored:
            continue
        reason = _apply(layout, relative, want, stored[relative], blobs)
        if reason is not None:
            refused.append((relative, reason))
        elif want is None:
            removed.append(relative)
        else:
            restored.append(relative)
    changed = restored + removed
    mutated = mutation_events(layout, session_id, changed, call_id, stored) if changed else []
    restore = CheckpointRestored(
        ref=checkpoint.ref,
        commit=checkpoint.commit,
        call_id=call_id,
        restored=restored,
        removed=removed,
        refused=[CheckpointRefusal(path=p, reason=r) for p, r in sorted(refused)],
    )
    append_events(layout, session_id, [*mutated, restore])
    return RestoreResult(
        ref=checkpoint.ref,
        commit=checkpoint.commit,
        call_id=call_id,
        restored=tuple(restored),
        removed=tuple(removed),
        refused=tuple(sorted(refused)),
        left=tuple(sorted((path[len(repo.prefix) :], why) for path, why in left.items())),
    )


def _compare(
    repo: _Repository, checkpoint: Checkpoint, worktree: Sequence[GitOutput | None]
) -> tuple[dict[str, _Entry], dict[str, _Entry], dict[str, str]]:
    """The checkpoint's files, the working tree's files now (as git would store them) and
    the paths a restore leaves alone with why, all below the workspace. ``worktree``:
    the answers of the stage, changed and untracked listings."""
    tree_out = repo.git(["ls-tree", "-r", "-z", "-l", "--full-tree", checkpoint.commit])
    staged_out, changed_out, untracked_out = worktree
    for done in (tree_out, staged_out, changed_out, untracked_out):
        if done is None or not done.ok:
            raise OperationFailed(f"git could not read {checkpoint.ref} or the working tree")
    assert tree_out and staged_out and changed_out and untracked_out
    inside = repo.prefix

    def mine(path: str) -> bool:
        return path.startswith(inside)

    target: dict[str, _Entry] = {}
    for record in tree_out.stdout.split(b"\0")[:-1]:
        info, _, path = record.partition(b"\t")
        mode, _kind, oid, size = info.decode("ascii").split()
        name = os.fsdecode(path)
        if mine(name):
            target[name] = _Entry(mode, oid, int(size) if size.isdigit() else None)
    left: dict[str, str] = {}
    protected = [item.path for item in checkpoint.skipped] + list(checkpoint.submodules)
    staged: dict[str, _Entry] = {}
    rehash: set[str] = set(split_z(changed_out.stdout))
    for record in staged_out.stdout.split(b"\0")[:-1]:
        info, _, path = record.partition(b"\t")
        mode, oid, stage = info.decode("ascii").split(" ")
        name = os.fsdecode(path)
        if mode == "160000":
            protected.append(name)
        elif stage != "0":
            rehash.add(name)
        else:
            staged[name] = _Entry(mode, oid)
    untracked = [entry for entry in split_z(untracked_out.stdout) if not entry.endswith("/")]
    protected += [
        entry.rstrip("/") for entry in split_z(untracked_out.stdout) if entry.endswith("/")
    ]
    capture = _untracked_rules(repo, untracked)
    protected += capture
    current: dict[str, _Entry] = {}
    algorithm = "sha256" if len(checkpoint.commit) == 64 else "sha1"
    for name in sorted(set(staged) | rehash | set(untracked)):
        if not mine(name):
            continue
        if _under(name, protected):
            left[name] = _LEFT_OUT
            continue
        if name in staged and name not in rehash:
            current[name] = staged[name]
            continue
        entry = _hash_worktree(repo.toplevel / name, algorithm)
        if entry is not None:
            current[name] = entry
    for name in list(target):
        if _under(name, protected) and name not in current:
            left.setdefault(name, _LEFT_OUT)
    return target, current, left


def _untracked_rules(repo: _Repository, untracked: Sequence[str]) -> list[str]:
    """Untracked paths the creation rules would leave out now (dependency folders, big
    files); a restore leaves them as they are rather than delete what it never held."""
    out: list[str] = []
    for path in untracked:
        parts = path.split("/")
        if any(part in DEPENDENCY_FOLDERS for part in parts[:-1]):
            out.append(path)
            continue
        try:
            info = os.lstat(repo.toplevel / path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > UNTRACKED_FILE_MAX_BYTES:
            out.append(path)
    return out


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(path == folder or path.startswith(folder + "/") for folder in folders)


def _hash_worktree(path: Path, algorithm: str) -> _Entry | None:
    """The mode and blob id git would give the file at ``path`` now; None when absent."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        data = os.fsencode(os.readlink(path))
        mode = "120000"
    elif stat.S_ISREG(info.st_mode):
        data = path.read_bytes()
        mode = "100755" if info.st_mode & 0o100 else "100644"
    else:
        return None
    digest = hashlib.new(algorithm)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return _Entry(mode, digest.hexdigest())


def _session_left(layout: StateLayout, session_id: str) -> dict[str, str | None]:
    """What the session left in each file it recorded (undo folded in): sha256 or None."""
    log = log_path(layout, session_id)
    left: dict[str, str | None] = {}
    if not log.exists():
        return left
    mutations: dict[int, tuple[str, str | None]] = {}
    for record in read_events(log, session_id):
        if record["type"] == "file.mutated":
            mutations[record["seq"]] = (record["path"], record["pre"])
            left[record["path"]] = record["post"]
        elif record["type"] == "undo.applied":
            # Newest first: the last one set is the oldest reverted change's pre-image.
            for seq in record["reverted"]:
                if seq in mutations:
                    path, pre = mutations[seq]
                    left[path] = pre
    return left


def _drift(layout: StateLayout, relative: str, expected: Mapping[str, str | None]) -> str | None:
    if relative not in expected:
        return None
    from ax_log.snapshots import hash_recorded

    try:
        now = hash_recorded(layout, relative)
    except AxError as exc:
        return exc.message
    if now == expected[relative]:
        return None
    return (
        "drifted: changed since this session last recorded it "
        f"({'absent' if now is None else now[:12]} now, "
        f"{'absent' if expected[relative] is None else str(expected[relative])[:12]} recorded)"
    )


def _read_blobs(repo: _Repository, entries: Sequence[_Entry]) -> dict[str, bytes | None]:
    """Each blob's bytes from git, no filter or conversion: ``show --no-textconv`` of many
    blobs at once writes them back to back, cut apart by the sizes ls-tree gave and each
    checked against its object id (a blob that does not hash to its id is not used)."""
    found: dict[str, bytes | None] = {}
    sizes = {entry.oid: entry.size for entry in entries}
    chunk: list[str] = []
    total = 0
    for oid in sorted(sizes):
        size = sizes[oid]
        if size is None or size > RESTORE_BLOB_MAX_BYTES:
            found[oid] = None
            continue
        if chunk and (total + size > RESTORE_BLOB_MAX_BYTES or len(chunk) >= BLOBS_PER_READ):
            found.update(_show_blobs(repo, chunk, sizes))
            chunk, total = [], 0
        chunk.append(oid)
        total += size
    if chunk:
        found.update(_show_blobs(repo, chunk, sizes))
    return found


def _show_blobs(
    repo: _Repository, oids: Sequence[str], sizes: Mapping[str, int | None]
) -> dict[str, bytes | None]:
    expected = sum(sizes[oid] or 0 for oid in oids)
    done = repo.git(
        ["show", "--no-textconv", *oids],
        timeout_s=GIT_WRITE_TIMEOUT_S,
        max_output_bytes=max(expected, 1),
    )
    if done is None or done.returncode != 0 or len(done.stdout) != expected:
        return dict.fromkeys(oids)
    found: dict[str, bytes | None] = {}
    offset = 0
    for oid in oids:
        size = sizes[oid] or 0
        data = done.stdout[offset : offset + size]
        offset += size
        algorithm = "sha256" if len(oid) == 64 else "sha1"
        digest = hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()
        found[oid] = data if digest == oid else None
    return found


def _apply(
    layout: StateLayout,
    relative: str,
    want: _Entry | None,
    snapshot: Mapping[str, Any],
    blobs: Mapping[str, bytes | None],
) -> str | None:
    """Write or remove one file, if it still holds the bytes just snapshotted."""
    data = blobs.get(want.oid) if want is not None else None
    if want is not None and data is None:
        return (
            f"git could not read its blob {want.oid[:12]} (missing, or over "
            f"{RESTORE_BLOB_MAX_BYTES} bytes)"
        )
    return replace_if_unchanged(
        layout,
        relative,
        data,
        _FILE_MODES[want.mode] if want is not None else 0,
        snapshot["sha256"],
        "the restore",
    )


# --- pruning ---------------------------------------------------------------------


def prune_session(
    layout: StateLayout,
    session_id: str,
    environ: Mapping[str, str] | None = None,
    *,
    include_delivery: bool = False,
) -> PruneResult:
    """Delete the session's checkpoint refs but ``delivery`` ones (the audit anchor) and
    append ``checkpoint.pruned``. The objects stay until git's own gc; ax never runs it."""
    _check_ref_safe(session_id)
    repo, (listing,) = _repository(layout.workspace, _environ(environ), [_for_each_ref(session_id)])
    live = _live(listing)
    doomed = [item for item in live if include_delivery or item.kind in SESSION_SCOPED_KINDS]
    kept = [item.ref for item in live if item not in doomed]
    deleted: list[str] = []
    failed: list[str] = []
    for start in range(0, len(doomed), MAX_BATCH_COMMANDS):
        chunk = doomed[start : start + MAX_BATCH_COMMANDS]
        answers = repo.batch(
            [["update-ref", "--no-deref", "-d", item.ref, item.commit] for item in chunk]
        )
        for item, done in zip(chunk, answers, strict=True):
            (deleted if done is not None and done.ok else failed).append(item.ref)
    if deleted or kept:
        append_events(layout, session_id, [CheckpointPruned(refs=deleted, kept=kept)])
    return PruneResult(deleted=tuple(deleted), kept=tuple(kept), failed=tuple(failed))


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ
