"""The attributable session diff: each file's first pre-image against its bytes now.

The session's log says, per file, which bytes it started from (the ``pre``
hash of its first ``file.mutated``, whose bytes the snapshot store keeps) and
which bytes it should hold now (the newest change, with undo folded in). The
diff runs from the first to what is on disk; when the disk no longer holds what
the log says it should, something outside the session changed the file and it
is flagged DRIFTED, because the diff then shows more than the session did.

Output is git's unified format, so it pipes into ``git apply --check`` or a
pager. Remarks (DRIFTED, binary, missing pre-image) are lines starting with
``#`` before a file's patch, which ``git apply`` skips as commentary.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from ax_report.ledger import FileHistory, FileLedger
from ax_report.scope import relative
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout

# Unchanged lines shown around each change, as git and diff -u do.
DIFF_CONTEXT_LINES = 3


@dataclass(frozen=True)
class FileDiff:
    path: str
    patch: str  # unified diff text, empty when there is nothing to show
    remarks: tuple[str, ...] = ()
    drifted: bool = False
    incomplete: bool = False  # the pre-image or the file could not be read

    def text(self) -> str:
        return "".join(f"# {remark}\n" for remark in self.remarks) + self.patch


def fold_files(records: Iterator[dict[str, object]], workspace: str) -> FileLedger:
    """Fold a session's file.mutated and undo.applied events into a ledger."""
    ledger = FileLedger()
    for position, record in enumerate(records, start=1):
        seq = record.get("seq")
        seq = seq if type(seq) is int else None
        if record.get("type") == "file.mutated":
            raw = str(record["path"])
            path = relative(raw, workspace) or raw
            pre, post = record.get("pre"), record.get("post")
            ledger.mutated(
                path,
                pre if isinstance(pre, str) else None,
                post if isinstance(post, str) else None,
                seq,
                position,
            )
        elif record.get("type") == "undo.applied":
            reverted = record.get("reverted")
            ledger.undone(list(reverted) if isinstance(reverted, list) else [], seq, position)
    return ledger


def session_diff(layout: StateLayout, session_id: str) -> list[FileDiff]:
    """One FileDiff per file the session changed, sorted by path (a strict read of the log)."""
    import ax_log

    log = ax_log.require_log(layout, session_id)
    ledger = fold_files(ax_log.read_events(log, session_id), str(layout.workspace))
    return [file_diff(layout, history) for history in ledger.sorted()]


def file_diff(layout: StateLayout, history: FileHistory) -> FileDiff:
    import ax_log

    try:
        target, path = ax_log.workspace_path(layout, history.path)
    except UsageError:
        return FileDiff(history.path, "", ("outside the workspace: not diffed",), incomplete=True)
    try:
        after = _read_current(target)
    except OSError as exc:
        return FileDiff(path, "", (f"{path}: cannot read it now ({exc})",), incomplete=True)
    now = hashlib.sha256(after).hexdigest() if after is not None else None
    remarks = []
    drifted = now != history.current
    if drifted:
        remarks.append(
            f"DRIFTED: {path} changed on disk after the session's last change to it; "
            "the diff shows its current bytes, which include changes the session did not make"
        )
    before: bytes | None = None
    if history.first_pre is not None:
        try:
            before = ax_log.load_object(layout, history.first_pre)
        except OperationFailed as exc:
            remarks.append(f"{path}: {exc.message}; no diff")
            return FileDiff(path, "", tuple(remarks), drifted, incomplete=True)
    mode = _mode(target) if after is not None else "100644"
    patch = unified_diff(path, before, after, mode)
    if patch is None:
        remarks.append(f"{path}: binary content changed; not shown")
        patch = ""
    return FileDiff(path, patch, tuple(remarks), drifted)


def _read_current(target: Path) -> bytes | None:
    try:
        info = target.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{target} is not a regular file")
    return target.read_bytes()


def _mode(target: Path) -> str:
    return "100755" if os.access(target, os.X_OK) else "100644"


def _lines(text: str) -> list[str]:
    # Split on "\n" only, as git does (str.splitlines would also split on \r, \f, …).
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _decode(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if b"\0" in data:
        raise ValueError("binary")
    return data.decode("utf-8")


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def unified_diff(path: str, before: bytes | None, after: bytes | None, mode: str) -> str | None:
    """Git-style unified diff of one file; None when either side is not UTF-8 text.

    ``None`` bytes mean the file is absent on that side (created or deleted).
    """
    if before == after:
        return ""
    try:
        old, new = _lines(_decode(before) or ""), _lines(_decode(after) or "")
    except (UnicodeDecodeError, ValueError):
        return None
    header = [f"diff --git a/{path} b/{path}\n"]
    if before is None:
        header.append(f"new file mode {mode}\n")
    elif after is None:
        header.append("deleted file mode 100644\n")
    hunks: list[str] = []
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunks.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                hunks.extend(_marked(" ", old[a1:a2]))
                continue
            hunks.extend(_marked("-", old[a1:a2]))
            hunks.extend(_marked("+", new[b1:b2]))
    if not hunks:
        # An empty file created or deleted: git writes the header alone.
        return "".join(header)
    names = [
        f"--- {'/dev/null' if before is None else 'a/' + path}\n",
        f"+++ {'/dev/null' if after is None else 'b/' + path}\n",
    ]
    return "".join(header + names + hunks)


def _marked(sign: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        if line.endswith("\n"):
            yield sign + line
        else:
            yield sign + line + "\n\\ No newline at end of file\n"
