"""Undo: revert a session's recorded file mutations, newest first.

A file is restored only when it still holds the post hash its mutation
recorded; anything else is drift, refused and left untouched. Every undo
appends ``undo.applied``, including one that had nothing to do; the log is
never rewritten, so already-reverted mutations are read from earlier
``undo.applied`` events.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_log.events import UndoApplied, UndoRefusal
from ax_log.reader import Record, read_events
from ax_log.snapshots import hash_stream, load_object
from ax_log.writer import append_events, log_path
from libcommon.atomic import write_at
from libcommon.errors import AxError, OperationFailed
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout
from libcommon.safeopen import (
    UnsafePath,
    entry_mode,
    open_parent,
    open_regular,
    remove_empty_folder,
)

RESTORED_FILE_MODE = 0o644


@dataclass(frozen=True)
class Mutation:
    seq: int
    call_id: str | None
    path: str
    pre: str | None
    post: str | None
    created_dirs: tuple[str, ...]


def pending_mutations(layout: StateLayout, session_id: str) -> list[Mutation]:
    """The session's file mutations that no earlier undo reverted, oldest first."""
    log = log_path(layout, session_id)
    if not log.exists():
        raise OperationFailed(f"no event log for session {session_id}")
    mutations: list[Mutation] = []
    reverted: set[int] = set()
    for record in read_events(log, session_id):
        if record["type"] == "file.mutated":
            mutations.append(
                Mutation(
                    seq=record["seq"],
                    call_id=record["callId"],
                    path=record["path"],
                    pre=record["pre"],
                    post=record["post"],
                    created_dirs=tuple(record.get("createdDirs", ())),
                )
            )
        elif record["type"] == "undo.applied":
            reverted.update(record["reverted"])
    return [item for item in mutations if item.seq not in reverted]


def select(pending: list[Mutation], everything: bool) -> list[Mutation]:
    """Newest first. ``--last`` is the newest mutation with every other of its call."""
    if everything or not pending:
        return list(reversed(pending))
    newest = pending[-1]
    if newest.call_id is None:
        return [newest]
    return [item for item in reversed(pending) if item.call_id == newest.call_id]


@dataclass(frozen=True)
class UndoOutcome:
    event: Record
    reverted_paths: dict[int, str]

    @property
    def ok(self) -> bool:
        return not self.event["refused"]

    def describe(self) -> list[str]:
        """Lines for people: what was reverted and what was refused, with why."""
        lines = [f"reverted  seq {seq} {path}" for seq, path in self.reverted_paths.items()]
        refusal: dict[str, Any]
        for refusal in self.event["refused"]:
            lines.append(f"refused   seq {refusal['seq']} {refusal['path']}: {refusal['reason']}")
        return lines or ["nothing to undo"]


def undo(layout: StateLayout, session_id: str, everything: bool) -> UndoOutcome:
    """Revert the last action (or all) and append ``undo.applied``."""
    lock = layout.sessions_dir / f".{log_path(layout, session_id).stem}.undo.lock"
    with flock_lock(lock, what="undo lock"):
        targets = select(pending_mutations(layout, session_id), everything)
        paths: list[str] = []
        reverted: dict[int, str] = {}
        refused: list[UndoRefusal] = []
        refused_paths: set[str] = set()
        for mutation in targets:
            if mutation.path not in paths:
                paths.append(mutation.path)
            reason: str | None
            if mutation.path in refused_paths:
                reason = "a newer change to this path could not be reverted"
            else:
                reason = _revert(layout, mutation)
            if reason is None:
                reverted[mutation.seq] = mutation.path
            else:
                refused.append(UndoRefusal(seq=mutation.seq, path=mutation.path, reason=reason))
                refused_paths.add(mutation.path)
        event = UndoApplied(paths=paths, reverted=list(reverted), refused=refused)
        return UndoOutcome(append_events(layout, session_id, [event])[0], reverted)


def _revert(layout: StateLayout, mutation: Mutation) -> str | None:
    """Put one file back; the reason it was refused, or None when it was reverted.

    The recorded path is walked from the workspace root without following a
    link (libcommon.safeopen), and the check of the current bytes and the write
    or removal act on the same open folder, so a folder swapped for a symlink
    (to ``.git`` or anywhere) is refused instead of written through.
    """
    root = layout.workspace
    try:
        with open_parent(root, mutation.path) as (folder, name):
            current, mode = _current(folder, name, mutation.path)
            if current != mutation.post:
                return (
                    f"drifted: the file holds {_describe(current)}, "
                    f"but the change left {_describe(mutation.post)}"
                )
            if mutation.pre is None:
                if folder is not None and current is not None:
                    os.unlink(name, dir_fd=folder)
                _remove_empty_dirs(root, mutation.created_dirs)
                return None
            data = load_object(layout, mutation.pre)
            if folder is not None:
                write_at(folder, name, data, RESTORED_FILE_MODE if mode is None else mode)
                return None
        # The change removed the folders too: make them again, still never through a link.
        with open_parent(root, mutation.path, create=True) as (folder, name):
            assert folder is not None  # create=True makes every folder on the way
            if entry_mode(folder, name, mutation.path) is not None:
                return "drifted: a file appeared at this path while undo was restoring it"
            write_at(folder, name, data, RESTORED_FILE_MODE)
        return None
    except UnsafePath as exc:
        return exc.reason
    except OperationFailed as exc:
        return exc.message
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"


def _current(folder: int | None, name: str, relative: str) -> tuple[str | None, int | None]:
    """The sha256 and permission bits of the file now there, or (None, None) if there is none."""
    fd = None if folder is None else open_regular(folder, name, relative)
    if fd is None:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        return hash_stream(handle), stat.S_IMODE(os.fstat(handle.fileno()).st_mode)


def _remove_empty_dirs(root: Path, created: tuple[str, ...]) -> None:
    for relative in created:
        try:
            remove_empty_folder(root, relative)
        except (AxError, OSError):
            # A folder on the way is now a link, or no longer ours: it is left alone.
            continue


def _describe(sha: str | None) -> str:
    return "no file" if sha is None else f"sha256 {sha[:12]}"
