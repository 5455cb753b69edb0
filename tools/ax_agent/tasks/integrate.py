"""Applying an executor's captured changes to the workspace, file by file (issue 21).

``apply_captured`` is the engine of the parent-only ``apply_task_changes`` tool. It
reads the task's ``task.captured`` record (paths, change kinds, base and after blobs
in the object store) and writes only the paths the call names; the loop has
snapshotted exactly those paths before the call and records what changed as
``file.mutated`` after it, all under the call's one id, so one undo reverts the
whole apply. The rule per captured file:

- the workspace must still hold the task's base bytes (then the task's bytes are
  written, or the file removed for a delete), or already hold the result (nothing
  to write: applied), or have nothing there for a create; a rename is applied whole
  (both paths named) and moves the file;
- anything else refuses that file, named with why; a refused text file that was
  modified or created gets a three-way merge offer: ``git merge-file`` (through the
  hardened runner) of the base, the workspace's bytes and the task's, run at once so
  the refusal says whether it merges cleanly or in how many places it conflicts;
- a second call with ``merge: true`` for files an earlier apply refused writes each
  clean merge and reports each conflict (its conflicted regions, bounded), never
  resolving one: nothing is written for a conflicting file.

Each file is re-hashed in its folder (walked without following links) just before it
is written, so a change made since the check refuses it rather than being lost. A
task is applied at most once: an attempt the fold says is integrated refuses the call
whole, and a file an earlier apply applied is refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from libcommon.errors import AxError
from libcommon.paths import StateLayout

from .fold import Attempt, attempts
from .merge import Merged, three_way

_MODES = {"644": 0o644, "755": 0o755}


class ApplyRefused(Exception):
    """The call as a whole cannot be applied (no such capture, already applied)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Outcome:
    group: str
    task_id: str
    applied: list[str] = field(default_factory=list)
    # (path, reason); a merge offer or a conflict is in the reason.
    refused: list[tuple[str, str]] = field(default_factory=list)
    # Captured paths this call did not name (still to apply).
    pending: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)

    def event(self) -> dict[str, Any]:
        from ax_log import TaskApplied

        return TaskApplied(
            group=self.group,
            task_id=self.task_id,
            applied=self.applied,
            refused=[{"path": p, "reason": r} for p, r in self.refused],
        ).to_json()


@dataclass(frozen=True)
class _Entry:
    path: str
    change: str
    source: str | None
    base: str | None
    after: str | None
    binary: bool
    mode: int

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> _Entry:
        return cls(
            path=str(raw["path"]),
            change=str(raw["change"]),
            source=raw.get("from"),
            base=raw.get("base"),
            after=raw.get("after"),
            binary=bool(raw.get("binary")),
            mode=_MODES.get(str(raw.get("mode")), 0o644),
        )


def find_capture(
    events: Sequence[Mapping[str, Any]], task_id: str, group: str | None
) -> tuple[Attempt, list[_Entry]]:
    """The task's latest captured attempt (in ``group`` when given) and its entries."""
    found = [
        a
        for a in attempts(events)
        if a.task_id == task_id and (not group or a.group == group) and a.captured is not None
    ]
    if not found:
        where = f" in group {group}" if group else ""
        raise ApplyRefused(
            f"task {task_id}{where} has no captured changes to apply (no executor attempt of "
            "it recorded task.captured)"
        )
    attempt = found[-1]
    if attempt.discarded:
        raise ApplyRefused(f"task {task_id}'s captured changes were discarded")
    if attempt.integrated:
        raise ApplyRefused(
            f"task {task_id} (group {attempt.group}) is already applied: a task's changes are "
            "applied at most once"
        )
    captured: list[Mapping[str, Any]] = []
    for event in events:
        if (
            event.get("type") == "task.captured"
            and event.get("group") == attempt.group
            and event.get("taskId") == task_id
            and int(event.get("seq") or 0) >= attempt.started_seq
        ):
            captured = list(event.get("entries") or [])
    return attempt, [_Entry.parse(raw) for raw in captured]


def apply_captured(
    layout: StateLayout,
    events: Sequence[Mapping[str, Any]],
    task_id: str,
    group: str | None,
    files: Sequence[str],
    *,
    merge: bool,
    environ: Mapping[str, str],
) -> Outcome:
    """Write the named captured files that pass the rule (module docstring)."""
    attempt, entries = find_capture(events, task_id, group)
    outcome = Outcome(group=attempt.group, task_id=task_id)
    named = list(dict.fromkeys(files))
    by_path = {entry.path: entry for entry in entries}
    by_source = {entry.source: entry for entry in entries if entry.source}
    done_before = set(attempt.applied)
    refused_before = {str(item.get("path")) for item in attempt.refused}
    handled: set[str] = set()
    for path in named:
        if path in handled:
            continue
        entry = by_path.get(path) or by_source.get(path)
        if entry is None:
            outcome.refused.append((path, "not among the task's captured files"))
            continue
        paths = [entry.path] + ([entry.source] if entry.source else [])
        handled.update(paths)
        if entry.path in done_before:
            outcome.refused.append((entry.path, "already applied by an earlier call"))
            continue
        if entry.change == "renamed" and not set(paths) <= set(named):
            outcome.refused.append(
                (entry.path, f"a rename is applied whole: name {entry.source} and {entry.path}")
            )
            continue
        if merge:
            if entry.path not in refused_before:
                outcome.refused.append(
                    (entry.path, "merge: true is for files an earlier apply refused")
                )
                continue
            _merge_one(layout, entry, outcome, environ)
        else:
            _apply_one(layout, entry, outcome, environ)
    outcome.pending = [
        entry.path
        for entry in entries
        if entry.path not in handled and entry.path not in done_before
    ]
    return outcome


def _apply_one(
    layout: StateLayout, entry: _Entry, outcome: Outcome, environ: Mapping[str, str]
) -> None:
    try:
        now = _hash(layout, entry.path)
        source_now = _hash(layout, entry.source) if entry.source else None
    except AxError as exc:
        outcome.refused.append((entry.path, exc.message))
        return
    if entry.change == "renamed" and entry.source:
        if now == entry.after and source_now is None:
            outcome.applied += [entry.path, entry.source]
        elif source_now != entry.base:
            outcome.refused.append(
                (entry.path, f"{entry.source} drifted: it no longer holds the task's base bytes")
            )
        elif now is not None and now != entry.after:
            outcome.refused.append((entry.path, "the workspace already has another file there"))
        else:
            why = _write(layout, entry.path, _load(layout, entry.after), entry.mode, now)
            why = why or _write(layout, entry.source, None, 0, source_now)
            _done(outcome, entry.path, why, also=entry.source)
        return
    if now == entry.after:
        outcome.applied.append(entry.path)
        return
    if now == entry.base:
        data = None if entry.after is None else _load(layout, entry.after)
        _done(outcome, entry.path, _write(layout, entry.path, data, entry.mode, now))
        return
    if entry.change == "created":
        why = "the workspace already has another file there"
    elif now is None:
        why = "drifted: the workspace deleted it since the task's base"
    else:
        why = "drifted: the workspace changed it since the task's base"
    outcome.refused.append((entry.path, why + _offer(layout, entry, environ)))


def _offer(layout: StateLayout, entry: _Entry, environ: Mapping[str, str]) -> str:
    """What a three-way merge of the refused file would give, as a sentence to append."""
    if entry.binary or entry.after is None or entry.change not in ("modified", "created"):
        return "; no merge offered (binary, deleted or renamed)"
    try:
        merged = _merge(layout, entry, environ)
    except AxError as exc:
        return f"; no merge offered ({exc.message})"
    if merged is None:
        return "; no merge offered (the workspace's file is gone)"
    if merged.conflicts == 0:
        return (
            "; a three-way merge applies cleanly: call apply_task_changes again with "
            "merge: true and this file"
        )
    return f"; a three-way merge conflicts in {merged.conflicts} place(s): merge it by hand"


def _merge_one(
    layout: StateLayout, entry: _Entry, outcome: Outcome, environ: Mapping[str, str]
) -> None:
    if entry.binary or entry.after is None or entry.change not in ("modified", "created"):
        outcome.refused.append((entry.path, "not mergeable (binary, deleted or renamed)"))
        return
    try:
        now = _hash(layout, entry.path)
        merged = _merge(layout, entry, environ)
    except AxError as exc:
        outcome.refused.append((entry.path, exc.message))
        return
    if merged is None:
        outcome.refused.append((entry.path, "the workspace's file is gone: nothing to merge"))
        return
    if merged.conflicts:
        outcome.refused.append(
            (
                entry.path,
                f"merge conflict in {merged.conflicts} place(s), nothing written; the "
                f"conflicted regions (workspace, base, task):\n{merged.shown()}",
            )
        )
        return
    why = _write(layout, entry.path, merged.data, entry.mode, now)
    _done(outcome, entry.path, why)
    if why is None:
        outcome.merged.append(entry.path)


def _merge(layout: StateLayout, entry: _Entry, environ: Mapping[str, str]) -> Merged | None:
    """The three-way merge of (workspace, base, task); None when the workspace has none."""
    ours = _read(layout, entry.path)
    if ours is None:
        return None
    base = _load(layout, entry.base) if entry.base is not None else b""
    theirs = _load(layout, entry.after) if entry.after is not None else b""
    return three_way(ours, base, theirs, environ)


def _done(outcome: Outcome, path: str, why: str | None, also: str | None = None) -> None:
    if why is None:
        outcome.applied += [path] + ([also] if also else [])
    else:
        outcome.refused.append((path, why))


def _hash(layout: StateLayout, relative: str) -> str | None:
    from ax_log import hash_recorded

    return hash_recorded(layout, relative)


def _read(layout: StateLayout, relative: str) -> bytes | None:
    from libcommon.safeopen import open_parent, open_regular

    with open_parent(layout.workspace, relative) as (folder, name):
        fd = None if folder is None else open_regular(folder, name, relative)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read()


def _load(layout: StateLayout, sha256: str | None) -> bytes:
    from ax_log import load_object

    assert sha256 is not None
    return load_object(layout, sha256)


def _write(
    layout: StateLayout, relative: str, data: bytes | None, mode: int, expected: str | None
) -> str | None:
    """Write (or, for None, remove) one file if it still holds ``expected``; else why not."""
    from ax_log import replace_if_unchanged

    return replace_if_unchanged(layout, relative, data, mode, expected, "the apply")
