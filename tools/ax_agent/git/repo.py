"""What the repository looks like, read with harness-composed git: the shared half of
``git_status``, ``/commit`` and ``/push``.

Every command goes through ``libcommon.git`` (fsmonitor, hooks and content drivers
off, no optional locks, no prompts) and parses ``-z`` output: a path is the bytes git
printed, decoded with ``os.fsdecode`` so it round-trips back into a pathspec, and a
file name holding a newline is one name, not two rows. ``probe`` says what kind of
place the workspace is (not a repository, bare, empty, detached, mid-merge or
mid-rebase, locked index), so every caller can refuse with the reason rather than
with git's error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from libcommon.errors import OperationFailed
from libcommon.git import GitOutput, run_git_batch
from libcommon.paths import StateLayout

GIT_READ_TIMEOUT_S = 10.0

# The commands that say what kind of place the workspace is. A bare repository and a
# folder inside .git are not work trees; --show-toplevel fails there, so it runs alone.
PROBE_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("rev-parse", "--is-inside-work-tree", "--is-bare-repository", "--absolute-git-dir"),
    ("rev-parse", "--show-toplevel"),
    ("rev-parse", "--verify", "-q", "HEAD^{commit}"),
)
# Submodules keep out (git would run in each with that repository's config); renames
# off, so every changed path is its own row.
STATUS_COMMAND: tuple[str, ...] = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--no-renames",
    "--untracked-files=all",
    "--ignore-submodules=all",
)
# Files in the git folder that say an operation is half done, and its name.
_IN_PROGRESS: tuple[tuple[str, str], ...] = (
    ("MERGE_HEAD", "a merge"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase or am"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
    ("BISECT_LOG", "a bisect"),
)


class NotARepository(OperationFailed):
    """The workspace is not a git work tree (or git cannot be run)."""


@dataclass(frozen=True)
class Repo:
    toplevel: Path
    git_dir: Path
    # HEAD's commit, None in a repository with no commit yet.
    head: str | None

    def in_progress(self) -> str | None:
        """The half-done operation the git folder records (a merge, a rebase…), or None."""
        for name, what in _IN_PROGRESS:
            if os.path.lexists(self.git_dir / name):
                return what
        return None

    def index_locked(self) -> bool:
        return os.path.lexists(self.git_dir / "index.lock")


@dataclass(frozen=True)
class Change:
    """One row of ``git status``: ``xy`` is its two status letters (``??`` untracked,
    ``UU``… conflicted), ``path`` relative to the top of the work tree."""

    xy: str
    path: str

    @property
    def staged(self) -> bool:
        return self.xy[0] not in ".?"

    @property
    def conflicted(self) -> bool:
        return self.xy == "UU" or "U" in self.xy or self.xy in ("AA", "DD")


@dataclass
class Status:
    oid: str | None = None
    # The branch HEAD names, None when detached.
    branch: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    changes: list[Change] = field(default_factory=list)
    # True when git's output reached the runner's cap and only its start was read.
    truncated: bool = False


def run_many(
    repo_dir: Path, commands: Sequence[Sequence[str]], environ: Mapping[str, str]
) -> list[GitOutput | None]:
    return run_git_batch(repo_dir, commands, environ, timeout_s=GIT_READ_TIMEOUT_S)


def probe_from(workspace: Path, answers: Sequence[GitOutput | None]) -> Repo:
    """The repository from the answers to ``PROBE_COMMANDS``; NotARepository says why not."""
    kind, top, head = answers
    if kind is None:
        raise NotARepository(
            "git could not be run here (not installed, too slow, or the repository's "
            "config cannot be read)"
        )
    words = kind.text().split("\n")
    if not kind.ok or len(words) < 3:
        raise NotARepository(f"{workspace} is not inside a git repository")
    if words[1] == "true":
        raise NotARepository(
            f"{words[2]} is a bare repository: it has no work tree to look at or commit from"
        )
    if words[0] != "true" or top is None or not top.ok:
        raise NotARepository(f"{workspace} is inside a git folder, not a work tree")
    oid = head.text().strip() if head is not None and head.ok else None
    return Repo(Path(top.text().rstrip("\n")), Path(words[2]), oid or None)


def probe(workspace: Path, environ: Mapping[str, str]) -> Repo:
    return probe_from(workspace, run_many(workspace, PROBE_COMMANDS, environ))


def parse_status(done: GitOutput | None) -> Status:
    """``git status --porcelain=v2 -z --branch`` read into rows (see STATUS_COMMAND)."""
    if done is None or done.returncode != 0:
        raise OperationFailed("git status failed here (is the index locked or damaged?)")
    status = Status(truncated=done.truncated)
    entries = done.stdout.split(b"\0")
    if done.truncated:
        entries = entries[:-1]  # the last entry was cut mid-way
    for entry in entries:
        if not entry:
            continue
        if entry.startswith(b"# "):
            _header(status, os.fsdecode(entry[2:]))
            continue
        kind = entry[:2]
        if kind == b"? ":
            status.changes.append(Change("??", os.fsdecode(entry[2:])))
        elif kind in (b"1 ", b"u "):
            # 1 XY sub mH mI mW hH hI path / u XY sub m1 m2 m3 mW h1 h2 h3 path
            fields = 9 if kind == b"1 " else 11
            parts = entry.split(b" ", fields - 1)
            if len(parts) != fields:
                raise OperationFailed("git status printed a row ax cannot read")
            status.changes.append(
                Change(parts[1].decode("ascii", "replace"), os.fsdecode(parts[-1]))
            )
        elif kind != b"! ":
            raise OperationFailed("git status printed a row ax cannot read")
    return status


def _header(status: Status, text: str) -> None:
    key, _, value = text.partition(" ")
    if key == "branch.oid":
        status.oid = None if value == "(initial)" else value
    elif key == "branch.head":
        status.branch = None if value == "(detached)" else value
    elif key == "branch.upstream":
        status.upstream = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        status.ahead, status.behind = int(ahead.lstrip("+")), int(behind.lstrip("-"))


@dataclass
class SessionChanges:
    """What this session's log attributes to it: each file its typed tools changed
    (workspace-relative path -> the last post hash recorded, None when removed), and the
    commands that could have written files no event names."""

    files: dict[str, str | None] = field(default_factory=dict)
    unattributed_commands: int = 0


def session_changes(layout: StateLayout, session_id: str) -> SessionChanges:
    from ax_log import log_path, read_events

    found = SessionChanges()
    log = log_path(layout, session_id)
    if not log.exists():  # a session that has recorded nothing yet changed nothing
        return found
    for record in read_events(log, session_id):
        kind = record.get("type")
        if kind == "file.mutated":
            path, post = record.get("path"), record.get("post")
            if isinstance(path, str):
                found.files[path] = post if isinstance(post, str) else None
        elif kind == "command.started" and not _read_only(record.get("sandbox")):
            found.unattributed_commands += 1
    return found


def _read_only(sandbox: object) -> bool:
    """True for a command an enforced read-only sandbox confined: it wrote nothing."""
    return (
        isinstance(sandbox, dict)
        and sandbox.get("profile") == "read-only"
        and sandbox.get("enforced") is True
    )
