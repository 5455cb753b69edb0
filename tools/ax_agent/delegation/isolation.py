"""Where an executor works: the one adapter between delegation and the isolation modules.

The interface is the exec branch's (``ax_agent.tasks.worktree`` and
``ax_agent.tasks.capture``): ``prepare_group(layout, session_id, group_id,
task_ids, environ) -> GroupBase`` (the group's base and one folder per task),
``capture_task(group_base, task_id) -> Capture`` (records ``task.captured``),
``release_group(group_base)`` (removes the folders; never raises) and
``sweep_orphans(layout)``. Delegation calls only these four.

Until those modules are merged, this adapter gives each executor a plain copy
of the workspace in the system's temporary folder, without ``.git`` (every
other file is copied, ignored ones too), and captures by comparing the copy's
bytes with those it started from. Not under the state root: ax-policy refuses
every write inside ax's state root, so an executor working there could change
nothing. There is no base checkpoint then (``GroupBase.base`` is None) and no
orphan sweep by owner identity: the copies of a killed parent stay in the
temporary folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from libcommon.paths import StateLayout

# The most files one executor's copy may hold, and the most a capture names.
COPY_MAX_FILES = 20_000
CAPTURE_MAX_FILES = 200
_SKIPPED = frozenset({".git"})


@dataclass
class GroupBase:
    layout: StateLayout
    session_id: str
    group_id: str
    # The base checkpoint's ref (None: the interim copy has none).
    base: str | None
    worktrees: dict[str, Path]
    # Each file's sha256 at the base, by workspace-relative path.
    hashes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Capture:
    files: list[str]
    omitted: int

    def event(self, group: str, task_id: str) -> dict[str, Any]:
        return {
            "type": "task.captured",
            "group": group,
            "taskId": task_id,
            "files": self.files,
            "omitted": self.omitted,
        }


def _walk(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(files):
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            if len(found) >= COPY_MAX_FILES:
                from libcommon.errors import OperationFailed

                raise OperationFailed(
                    f"the workspace holds more than {COPY_MAX_FILES} files; the interim "
                    "executor copy refuses it",
                    hint="run the task yourself, or wait for worktree isolation",
                )
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def prepare_group(
    layout: StateLayout,
    session_id: str,
    group_id: str,
    task_ids: Sequence[str],
    environ: Mapping[str, str],
) -> GroupBase:
    import tempfile

    hashes = _walk(layout.workspace)
    worktrees: dict[str, Path] = {}
    group = GroupBase(layout, session_id, group_id, None, worktrees, hashes)
    try:
        for task_id in task_ids:
            target = Path(tempfile.mkdtemp(prefix=f"ax-task-{group_id}-"))
            worktrees[task_id] = target
            for relative in hashes:
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(layout.workspace / relative, destination)
    except BaseException:
        release_group(group)
        raise
    return group


def capture_task(group_base: GroupBase, task_id: str) -> Capture:
    from ax_log import append_events

    after = _walk(group_base.worktrees[task_id])
    changed = sorted(
        path
        for path in set(after) | set(group_base.hashes)
        if after.get(path) != group_base.hashes.get(path)
    )
    capture = Capture(changed[:CAPTURE_MAX_FILES], max(0, len(changed) - CAPTURE_MAX_FILES))
    append_events(
        group_base.layout,
        group_base.session_id,
        [capture.event(group_base.group_id, task_id)],
    )
    return capture


def release_group(group_base: GroupBase) -> None:
    for folder in group_base.worktrees.values():
        shutil.rmtree(folder, ignore_errors=True)


def sweep_orphans(layout: StateLayout) -> None:
    """Nothing to sweep by identity in the interim copy (see the module docstring)."""
