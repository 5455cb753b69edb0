"""Spare worktrees: a released executor's worktree kept for its project's next group.

A checkout of a 2,500-file repository is 2,500 new inodes, and creating an inode costs
more than rewriting a file's bytes (on an ext4 without a journal, for minutes after
many deletions nearby, some forty times more: its allocator skips recently freed
inodes one by one): three fresh checkouts per group are up to seconds of kernel time.
So ``release_group`` parks a task's worktree here,
``<project>/worktrees/spares/<parked at>.<random>`` (the name records when it was
parked, for the age limit), at most ``MAX_SPARE_WORKTREES`` of them, and
``prepare_group`` claims one per task before it adds any: a ``reset --hard <base>``
then rewrites only the files that differ, and ``clean -ffdxq`` removes what the
previous task left, untracked and ignored alike.

A spare is the untrusted leftovers of an earlier task. What this module proves of one
(``layout_problem``), before it is parked and again before it is claimed: its ``.git``
is a regular file (not a link, not a folder) whose ``gitdir:`` names exactly a
folder of the common git folder's ``worktrees/``, that folder's ``gitdir`` names the
spare's ``.git`` back and its ``commondir`` the common git folder, and the folder holds
only what git itself writes there for a detached worktree ax uses (``GIT_ADMIN_FILES``,
``logs/HEAD``): no ``config.worktree``, ``hooks``, ``info`` (sparse-checkout patterns,
excludes), per-worktree refs or a lock; and no process works in it (its current or root
folder or an open file there: one a task left running that ax-exec's kill missed would
write into the next task's tree after its checks). The files themselves are proved after the reset
by ``worktrees`` (every file hashed against the base commit's blobs, nothing else left
in the tree): a stat cache a task could forge proves nothing. Once proved, a spare is
recorded (``records``: each file's inode, ctime and the rest, kept in the state root),
and at its next claim only the files whose identity changed are hashed.

Spares are moved in and out with ``git worktree move`` under the repository lock every
ax process takes (``worktrees._repository_lock``): the move out is the claim, so two
processes never take the same spare, and git's registration follows the folder. A
spare has no owner file and no live owner: it is nobody's workspace, derives no trust
(``libcommon.trust.derived_parent`` refuses the spares folder by name) and is writable
by no tool. A spare refused or over the limits is renamed aside (``DISCARDED_PREFIX``)
under the lock, its registration pruned, and its files deleted later; the sweep
removes aside folders a process left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from libcommon.trust import SPARES_DIR_NAME, WORKTREES_DIR_NAME

from .records import RECORD_PREFIX

# The most spare worktrees a project keeps (one group's worth: MAX_GROUP_TASKS).
MAX_SPARE_WORKTREES = 3
# A spare parked longer ago than this is removed by the sweep (a week).
SPARE_MAX_AGE_S = 7 * 24 * 3600
# A worktree's ``.git`` file, and its admin folder's ``gitdir`` and ``commondir``: git
# writes one short line; anything longer is not git's.
GIT_LINK_MAX_BYTES = 4096
# A refused or surplus spare is renamed to this prefix plus its name inside the spares
# folder while its files are deleted.
DISCARDED_PREFIX = ".discarded-"
# What git writes in a detached worktree's admin folder through ax's life of it (add,
# reset, add -A, status, move): anything else (config.worktree, hooks, info, refs, a
# lock) could change how git behaves there and refuses the spare.
GIT_ADMIN_FILES = frozenset({"HEAD", "ORIG_HEAD", "commondir", "gitdir", "index"})
GIT_ADMIN_LOGS = frozenset({"HEAD"})
_SPARE_NAME = re.compile(r"^(\d{1,12})\.[0-9a-f]{16}$")


@dataclass(frozen=True)
class Spare:
    path: Path
    parked_at: int


def spares_folder(project_dir: Path) -> Path:
    return project_dir / WORKTREES_DIR_NAME / SPARES_DIR_NAME


def new_name(now: float | None = None) -> str:
    """A spare's folder name: when it was parked (epoch seconds) and 64 random bits."""
    return f"{int(time.time() if now is None else now)}.{secrets.token_hex(8)}"


def list_spares(folder: Path) -> tuple[list[Spare], list[Path]]:
    """(the spares, newest first; every other entry of the folder: aside folders, strays,
    the record of a spare that is gone). A spare is a real folder (not a link) with a
    spare's name; its record (``records``) is neither."""
    spares: list[Spare] = []
    others: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return [], []
    for entry in entries:
        named = _SPARE_NAME.fullmatch(entry.name)
        if named is not None and entry.is_dir(follow_symlinks=False):
            spares.append(Spare(Path(entry.path), int(named.group(1))))
        else:
            others.append(Path(entry.path))
    names = {spare.path.name for spare in spares}
    others = [
        path
        for path in others
        if not (path.name.startswith(RECORD_PREFIX) and path.name[len(RECORD_PREFIX) :] in names)
    ]
    spares.sort(key=lambda spare: (-spare.parked_at, spare.path.name))
    return spares, others


def layout_problem(tree: Path, common: Path) -> str | None:
    """Why the worktree at ``tree`` may not be parked or reused (module docstring); None
    when its ``.git`` and its admin folder are git's own for a worktree of ``common``."""
    link = _read_link(tree / ".git", "its .git")
    if isinstance(link, Problem):
        return link.why
    if not link.startswith("gitdir: "):
        return "its .git does not name a git folder (`gitdir: …`)"
    named = Path(link.removeprefix("gitdir: "))
    admin = named if named.is_absolute() else tree / named
    registry = Path(os.path.realpath(common / "worktrees"))
    if os.path.normpath(admin.parent) != str(registry) or admin.name in ("", ".", ".."):
        return f"its .git names {admin}, not a worktree folder of {registry}"
    try:
        info = os.lstat(admin)
    except OSError:
        return f"its admin folder {admin} is gone: git's registration was pruned"
    if not stat.S_ISDIR(info.st_mode):
        return f"its admin folder {admin} is not a folder"
    back = _read_link(admin / "gitdir", "its admin folder's gitdir")
    if isinstance(back, Problem):
        return back.why
    if os.path.realpath(back) != os.path.realpath(tree / ".git"):
        return f"git registered {admin} for {back}, not for this folder"
    commondir = _read_link(admin / "commondir", "its admin folder's commondir")
    if isinstance(commondir, Problem):
        return commondir.why
    if os.path.realpath(admin / commondir) != os.path.realpath(common):
        return f"its admin folder's commondir names {commondir}, not {common}"
    return _admin_problem(admin) or _occupant(tree)


def _occupant(tree: Path) -> str | None:
    """A process that works in the folder (its current or root folder, a file it holds
    open or maps, is there): one a task left running, which ax-exec's kill did not find,
    would write into the next task's worktree after its checks (through a mapping, even
    without changing the file's ctime: ``records``)."""
    real = os.path.realpath(tree)
    inside = real + os.sep
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        targets: list[str] = []
        for link in (f"/proc/{pid}/cwd", f"/proc/{pid}/root"):
            with contextlib.suppress(OSError):
                targets.append(os.readlink(link))
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        targets += _mapped(pid)
        for target in targets:
            if target == real or target.startswith(inside):
                return f"process {pid} still works in it ({target})"
    return None


def _mapped(pid: str) -> list[str]:
    """The files process ``pid`` maps (``/proc/<pid>/maps``: the sixth field, a path)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths: list[str] = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith(b"/"):
            paths.append(os.fsdecode(fields[5]).removesuffix(" (deleted)"))
    return paths


def named_common(tree: Path) -> Path | None:
    """The common git folder the worktree's ``.git`` names (``<common>/worktrees/<id>``),
    when it is a folder that exists; else None."""
    link = _read_link(tree / ".git", "its .git")
    if isinstance(link, Problem) or not link.startswith("gitdir: "):
        return None
    named = Path(link.removeprefix("gitdir: "))
    admin = Path(os.path.normpath(named if named.is_absolute() else tree / named))
    common = admin.parent.parent
    if admin.parent.name != "worktrees" or not common.is_dir():
        return None
    return Path(os.path.realpath(common))


@dataclass(frozen=True)
class Problem:
    why: str


def _read_link(path: Path, what: str) -> str | Problem:
    """The one line of a small regular file git writes (``.git``, ``gitdir``,
    ``commondir``), read without following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return Problem(f"{what} cannot be read ({exc.strerror}): a link or nothing")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Problem(f"{what} is not a regular file")
        raw = os.read(fd, GIT_LINK_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > GIT_LINK_MAX_BYTES:
        return Problem(f"{what} is over {GIT_LINK_MAX_BYTES} bytes: not git's")
    text = os.fsdecode(raw)
    line = text.removesuffix("\n")
    if not line or "\n" in line or "\0" in line:
        return Problem(f"{what} is not one line")
    return line


def _admin_problem(admin: Path) -> str | None:
    try:
        entries = list(os.scandir(admin))
    except OSError as exc:
        return f"its admin folder cannot be listed ({exc.strerror})"
    for entry in entries:
        if entry.name == "logs" and entry.is_dir(follow_symlinks=False):
            try:
                logs = list(os.scandir(entry.path))
            except OSError as exc:
                return f"its admin folder's logs cannot be listed ({exc.strerror})"
            strange = [
                f"logs/{log.name}"
                for log in logs
                if log.name not in GIT_ADMIN_LOGS or not log.is_file(follow_symlinks=False)
            ]
            if strange:
                shown = ", ".join(sorted(strange))
                return f"its admin folder holds {shown}, which git does not write there for ax"
        elif entry.name not in GIT_ADMIN_FILES or not entry.is_file(follow_symlinks=False):
            return f"its admin folder holds {entry.name}, which could change how git behaves in it"
    return None


def too_old(spare: Spare, now: float | None = None) -> bool:
    """Parked more than ``SPARE_MAX_AGE_S`` ago, or as far in the future (a clock set back
    must not keep a spare for ever)."""
    return abs((time.time() if now is None else now) - spare.parked_at) > SPARE_MAX_AGE_S
