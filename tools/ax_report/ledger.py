"""Per-file history of a session, with undo folded in.

Both the report's Files section and ``ax-report diff`` fold ``file.mutated``
and ``undo.applied`` through one ``FileLedger``. Memory grows with the files a
session touched and the mutations not (yet) undone, one small tuple each; the
rest of the event stream leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FileHistory:
    path: str
    first_pre: str | None  # the bytes before the session's first change (sha256; None = absent)
    current: str | None  # what the events say the file holds now (sha256; None = absent)
    changes: int = 0
    reverted: int = 0
    last_change: int = 0  # stream position of the newest change or revert
    last_change_seq: int | None = None
    # (seq, pre) of each change no undo has reverted, oldest first
    pending: list[tuple[int, str | None]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """created / modified / deleted / reverted / unchanged, judged from hashes only."""
        if self.changes == self.reverted and self.reverted:
            return "reverted"
        if self.current == self.first_pre:
            return "unchanged"
        if self.first_pre is None:
            return "created"
        if self.current is None:
            return "deleted"
        return "modified"


@dataclass
class UndoOutcome:
    """What one undo.applied event did to the ledger."""

    reverted: list[tuple[int, str]]  # (seq, path)
    unknown: list[int]  # reverted seqs that name no pending mutation in the stream


class FileLedger:
    def __init__(self) -> None:
        self.files: dict[str, FileHistory] = {}
        # seq of each pending mutation -> its path, so undo (which names seqs) finds the file
        self._path_of: dict[int, str] = {}

    def mutated(
        self, path: str, pre: str | None, post: str | None, seq: int | None, position: int
    ) -> FileHistory:
        history = self.files.get(path)
        if history is None:
            history = FileHistory(path=path, first_pre=pre, current=post)
            self.files[path] = history
        history.current = post
        history.changes += 1
        history.last_change = position
        history.last_change_seq = seq
        if seq is not None:
            history.pending.append((seq, pre))
            self._path_of[seq] = path
        return history

    def undone(self, reverted: list[int], seq: int | None, position: int) -> UndoOutcome:
        """Fold one undo.applied: its ``reverted`` seqs are listed newest first."""
        outcome = UndoOutcome([], [])
        for mutation in reverted:
            path = self._path_of.pop(mutation, None) if type(mutation) is int else None
            history = self.files.get(path) if path is not None else None
            entry = _take(history.pending, mutation) if history is not None else None
            if history is None or entry is None:
                outcome.unknown.append(mutation)
                continue
            history.current = entry[1]
            history.reverted += 1
            # Restoring bytes is a change too: an earlier check saw different bytes.
            history.last_change = position
            history.last_change_seq = seq
            outcome.reverted.append((mutation, history.path))
        return outcome

    def sorted(self) -> list[FileHistory]:
        return [self.files[path] for path in sorted(self.files)]


def _take(pending: list[tuple[int, str | None]], seq: int) -> tuple[int, str | None] | None:
    # Undo works newest first, so the entry is almost always at the end.
    for index in range(len(pending) - 1, -1, -1):
        if pending[index][0] == seq:
            return pending.pop(index)
    return None
