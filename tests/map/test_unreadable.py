"""Files and folders the user cannot read are counted skips, never a traceback.

Root reads everything, so these run as uid 65534 ("nobody"), or skip saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from axtest import NOBODY, nobody_runner
from map.maptest import write

BUILD = """
import json, os, sys
from ax_map.build import build_index
from ax_map.index import load_snapshot
from libcommon.paths import state_layout
layout = state_layout(sys.argv[1])
result = build_index(layout)
snapshot = load_snapshot(layout)
print(json.dumps({
    "listed": result.coverage.listed,
    "indexed": sorted(f.path for f in snapshot.files if f.status == "indexed"),
    "git": result.git,
}))
"""


@pytest.fixture
def as_nobody(world_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    return nobody_runner(
        world_dir, ["ax_map.build", "ax_map.index", "ax_map.treesit", "tree_sitter_python"]
    )


def _own(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


@pytest.mark.parametrize("git_repo", [True, False])
def test_unreadable_files_and_folders_are_counted(
    world_dir: Path, as_nobody: Callable[..., subprocess.CompletedProcess[str]], git_repo: bool
) -> None:
    ws = world_dir / "ws"
    write(ws, {"ok.py": "def fine(): pass\n", "locked.py": "def hidden(): pass\n"})
    write(ws, {"closed/inner.py": "def inner(): pass\n"})
    if git_repo:
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(ws),
                "-c",
                "user.email=a@b.invalid",
                "-c",
                "user.name=n",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
            check=True,
        )
        subprocess.run(["git", "-C", str(ws), "add", "-A"], check=True)
    _own(ws)
    (ws / "locked.py").chmod(0o000)
    (ws / "closed").chmod(0o000)
    state = world_dir / "state"
    state.mkdir()
    _own(state)
    done = as_nobody(f"import os; os.environ['AX_STATE_DIR'] = {str(state)!r}\n" + BUILD, str(ws))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["git"] is git_repo
    assert found["indexed"] == ["ok.py"]
    if git_repo:
        # Tracked files git can no longer stat: the closed folder's and the locked file.
        assert found["listed"] == {"unreadable": 2}
    else:
        assert found["listed"] == {"unreadable": 1, "unreadable directory": 1}
