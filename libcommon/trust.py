"""A read-only view of the trust store (``<state root>/trust.json``).

ax-policy owns trust.json: it records, grants and revokes. Tools that must not
depend on ax-policy (ax-slate binding a closed slate to a workspace) only need
to ask "has the user trusted this folder?", so this reader lives here. It never
writes. The format is::

    {"version": 1, "workspaces": {"<workspace realpath>": {"grantedAt": "…", "source": "…"}}}

A missing file means nothing is trusted; a file that is not in this format is
a corrupt store and raises, never read as empty.

An executor's git worktree (``<state root>/projects/<slug>/worktrees/<session>.<group>/
<task>``, made by ``ax_agent.tasks.worktrees``) is trusted by derivation: its group's
owner file names the parent workspace, and the worktree is trusted exactly when that
workspace is. The derivation is never written to the store; it holds only for a
folder the owner file names (its project's slug, one of its tasks, the parent's
place below the repository's top), so no other folder under the state root derives
anything, and only while the process that made it lives (its pid and start time): an
orphan a dead parent left is nobody's workspace, neither trusted nor writable, until
the sweep removes it. A spare (a released worktree kept for the next group, under
``worktrees/spares/``) derives nothing: it has no owner, and an owner file planted in
the spares folder is not read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from libcommon import jsonio
from libcommon.errors import CorruptStore

TRUST_FILE_NAME = "trust.json"
TRUST_FORMAT_VERSION = 1
# Where executors' worktrees live below a project's state folder, and the file in each
# group's folder that names who made it (pid and start time) and for which workspace.
WORKTREES_DIR_NAME = "worktrees"
OWNER_FILE_NAME = "owner.json"
# Below WORKTREES_DIR_NAME: the released worktrees kept for reuse (``ax_agent.tasks.spares``).
# Nobody's workspace: no folder below it derives trust, whatever file sits there.
SPARES_DIR_NAME = "spares"
OWNER_FILE_MAX_BYTES = 64 * 1024


def _trusted_table(state_root: Path) -> dict[str, Any]:
    path = state_root / TRUST_FILE_NAME
    data = jsonio.read_json(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CorruptStore(str(path), "expected a JSON object")
    if data.get("version") != TRUST_FORMAT_VERSION:
        raise CorruptStore(str(path), f"unknown version {data.get('version')!r}")
    workspaces = data.get("workspaces")
    if not isinstance(workspaces, dict):
        raise CorruptStore(str(path), "'workspaces' is not an object")
    return workspaces


def is_trusted(state_root: Path, workspace: Path) -> bool:
    """True when the realpath of ``workspace`` is recorded as trusted, or ``workspace``
    is an executor's worktree of a workspace that is (``derived_parent``)."""
    table = _trusted_table(state_root)
    if os.path.realpath(workspace) in table:
        return True
    parent = derived_parent(state_root, workspace)
    return parent is not None and str(parent) in table


def derived_parent(state_root: Path, workspace: Path) -> Path | None:
    """The parent workspace whose trust ``workspace`` inherits, when ``workspace`` is the
    task folder of an executor's worktree its group's owner file names; else None.

    The owner file must sit in the project folder of the very workspace it names (its
    slug), list the task, and the worktree's folder plus the parent's place below its
    repository's top must be ``workspace`` exactly.
    """
    from libcommon.paths import project_slug

    real = Path(os.path.realpath(workspace))
    projects = Path(os.path.realpath(state_root)) / "projects"
    try:
        parts = real.relative_to(projects).parts
    except ValueError:
        return None
    if len(parts) < 4 or parts[1] != WORKTREES_DIR_NAME:
        return None
    slug, _, group_dir, task = parts[:4]
    if group_dir == SPARES_DIR_NAME:
        return None
    owner = read_owner(projects / slug / WORKTREES_DIR_NAME / group_dir / OWNER_FILE_NAME)
    if owner is None:
        return None
    parent, prefix, tasks = owner.get("workspace"), owner.get("prefix"), owner.get("tasks")
    if not isinstance(parent, str) or not isinstance(prefix, str) or not isinstance(tasks, list):
        return None
    if task not in tasks or project_slug(Path(parent)) != slug or not owner_alive(owner):
        return None
    expected = projects / slug / WORKTREES_DIR_NAME / group_dir / task
    if prefix:
        expected = expected / prefix
    return Path(parent) if real == expected else None


def owner_alive(owner: dict[str, Any]) -> bool:
    """Is the process the owner file names (pid and start time) alive? Only a positive
    identity counts: a missing or malformed field, a gone pid, a zombie or a recycled pid
    (another start time) is not the owner."""
    from libcommon.procfs import read_proc

    pid, start = owner.get("pid"), owner.get("startTime")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(start, int):
        return False
    info = read_proc(pid)
    return info is not None and info.alive and info.start_time == start


def read_owner(path: Path) -> dict[str, Any] | None:
    """An owner file's JSON object; None when it is missing, oversized or not one."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(OWNER_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > OWNER_FILE_MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def trusted_workspaces(state_root: Path) -> list[Path]:
    """Every trusted workspace, as recorded (realpaths), sorted."""
    return sorted(Path(key) for key in _trusted_table(state_root))
