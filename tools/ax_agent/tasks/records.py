"""What a verified worktree's files were, so its next verification hashes only what changed.

A claimed spare is proved file by file against its group's base commit
(``worktrees._verify_reused``): hashing every file of three spares is most of a warm
group's prepare and grows with the repository, while a task changes a handful. Once a
spare is proved, ax records each regular file's identity as the kernel keeps it (device,
inode, ctime, mtime, size, mode) with the blob its bytes were proved to be. The record
lives in the state root, beside the worktree (``.stat-<task>`` in the group folder,
``.stat-<spare>`` in the spares folder), where no task writes: an executor's sandbox
writes its worktree alone. At the next claim, a file whose identity is the recorded one
exactly, and whose recorded blob is the new base's, is not hashed again.

Why an unchanged identity proves unchanged bytes: every change of a file's bytes sets
its ctime to the time of the change, and no process sets a ctime (``utimensat`` sets
atime and mtime; only setting the system clock moves ctime, which a sandboxed task
cannot); a file replaced is another inode. A record vouches only for files whose ctime
is older than the record's own timestamp, taken from the file system once every file
was read: a change in the same clock tick as the reading could keep the ctime read
(git's racy-clean rule, for ctime). A write through a shared mapping made before the
record changes bytes without a new ctime until the page is written back, so a tree a
process still maps is refused before any of this (``spares._occupant``).

A record is a cache: missing, unreadable, over ``RECORD_MAX_BYTES`` or of another
version, it vouches for nothing and every file is hashed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from libcommon import jsonio
from libcommon.errors import AxError
from libcommon.safeopen import open_state_file

# A record bigger than this is neither written nor read (about 600,000 files).
RECORD_MAX_BYTES = 64 * 1024 * 1024
RECORD_PREFIX = ".stat-"
RECORD_VERSION = 1


def entries(found: Mapping[str, os.stat_result | None], blobs: Mapping[str, str]) -> dict[str, str]:
    """{path: entry} of the files of ``blobs`` that ``found`` (a walk of the tree) has as
    regular files: a file's identity (device, inode, ctime, mtime, size, mode: what a
    change of its bytes cannot keep) and the blob its bytes are, as one string."""
    made: dict[str, str] = {}
    for name, blob in blobs.items():
        info = found.get(name)
        if info is not None and stat.S_ISREG(info.st_mode):
            made[name] = (
                f"{info.st_dev}:{info.st_ino}:{info.st_ctime_ns}:{info.st_mtime_ns}:"
                f"{info.st_size}:{info.st_mode}:{blob}"
            )
    return made


@dataclass(frozen=True)
class Record:
    """{path: entry} of a proved tree, and when it was read."""

    files: Mapping[str, str]
    taken_ns: int

    def vouched(
        self, now: Mapping[str, str], found: Mapping[str, os.stat_result | None]
    ) -> set[str]:
        """The paths whose entry ``now`` (``entries`` of the tree as ``found`` has it) is the
        recorded one, changed no later than the record was taken: their bytes are the
        blob's."""
        vouched: set[str] = set()
        for path, made in now.items():
            info = found.get(path)
            if (
                info is not None
                and info.st_ctime_ns < self.taken_ns
                and self.files.get(path) == made
            ):
                vouched.add(path)
        return vouched


def record_path(folder: Path, name: str) -> Path:
    """The record of the worktree ``folder/name`` (a group's task, or a spare)."""
    return folder / f"{RECORD_PREFIX}{name}"


def write_record(path: Path, files: Mapping[str, str]) -> None:
    """Record ``files`` (``entries`` of a tree just proved, from a walk made after its last
    change). Best effort: a record not written only means a full hash next time."""
    scratch = path.with_name(f"{path.name}.tmp")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        with os.fdopen(open_state_file(scratch, flags), "wb") as out:
            # The file system's own clock, read after every file of the tree was: see
            # the module docstring.
            out.write(b"{}")
            out.flush()
            taken = os.fstat(out.fileno()).st_ctime_ns
            body = jsonio.dumps({"version": RECORD_VERSION, "taken": taken, "files": files})
            if len(body) > RECORD_MAX_BYTES:
                raise OSError("over RECORD_MAX_BYTES")
            out.seek(0)
            out.truncate()
            out.write(body)
        os.replace(scratch, path)
    except (OSError, AxError):
        with contextlib.suppress(OSError):
            scratch.unlink()


def take_record(path: Path) -> Record | None:
    """Read the record at ``path`` and delete it (a record serves one verification); None
    when there is none to use."""
    try:
        fd = open_state_file(path, os.O_RDONLY)
    except (OSError, AxError):
        return None
    try:
        with os.fdopen(fd, "rb") as source:
            raw = source.read(RECORD_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    if len(raw) > RECORD_MAX_BYTES:
        return None
    try:
        loaded = jsonio.loads(raw)
    except jsonio.JSONDecodeError:
        return None
    if not isinstance(loaded, dict) or loaded.get("version") != RECORD_VERSION:
        return None
    taken, files = loaded.get("taken"), loaded.get("files")
    if type(taken) is not int or not isinstance(files, dict):
        return None
    if not all(isinstance(value, str) for value in files.values()):
        return None
    return Record(files=files, taken_ns=taken)
