"""Undo: revert a session's recorded file mutations, newest first.

A file is restored only when it still holds the post hash its mutation
recorded; anything else is drift, refused and left untouched. Every undo
appends ``undo.applied``, including one that had nothing to do; the log is
never rewritten, so already-reverted mutations are read from earlier
``undo.applied`` events.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from typing import Any

from ax_log.events import UndoApplied, UndoRefusal
from ax_log.reader import Record, read_events
from ax_log.snapshots import hash_file, load_object, workspace_path
from ax_log.writer import append_events, log_path
from libcommon.atomic import atomic_write_bytes
from libcommon.errors import AxError, OperationFailed
from libcommon.locks import file_lock
from libcommon.paths import StateLayout

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
    with file_lock(lock):
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
    """Put one file back; the reason it was refused, or None when it was reverted."""
    try:
        target, _ = workspace_path(layout, mutation.path)
        current = hash_file(target)
    except AxError as exc:
        return exc.message
    if current != mutation.post:
        return (
            f"drifted: the file holds {_describe(current)}, "
            f"but the change left {_describe(mutation.post)}"
        )
    if mutation.pre is None:
        target.unlink(missing_ok=True)
        _remove_empty_dirs(layout, mutation.created_dirs)
        return None
    try:
        data = load_object(layout, mutation.pre)
    except OperationFailed as exc:
        return exc.message
    mode = RESTORED_FILE_MODE
    if current is not None:
        mode = stat.S_IMODE(target.stat().st_mode)
    atomic_write_bytes(target, data, mode)
    return None


def _remove_empty_dirs(layout: StateLayout, created: tuple[str, ...]) -> None:
    for relative in created:
        try:
            directory, _ = workspace_path(layout, relative)
            directory.rmdir()
        except (AxError, OSError):
            # Not empty (someone else put files there), already gone, or no longer ours.
            continue


def _describe(sha: str | None) -> str:
    return "no file" if sha is None else f"sha256 {sha[:12]}"
