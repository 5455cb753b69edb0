"""A read-only view of the trust store (``<state root>/trust.json``).

ax-policy owns trust.json: it records, grants and revokes. Tools that must not
depend on ax-policy (ax-slate binding a closed slate to a workspace) only need
to ask "has the user trusted this folder?", so this reader lives here. It never
writes. The format is::

    {"version": 1, "workspaces": {"<workspace realpath>": {"grantedAt": "…", "source": "…"}}}

A missing file means nothing is trusted; a file that is not in this format is
a corrupt store and raises, never read as empty.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from libcommon import jsonio
from libcommon.errors import CorruptStore

TRUST_FILE_NAME = "trust.json"
TRUST_FORMAT_VERSION = 1


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
    """True when the realpath of ``workspace`` is recorded as trusted."""
    return os.path.realpath(workspace) in _trusted_table(state_root)


def trusted_workspaces(state_root: Path) -> list[Path]:
    """Every trusted workspace, as recorded (realpaths), sorted."""
    return sorted(Path(key) for key in _trusted_table(state_root))
