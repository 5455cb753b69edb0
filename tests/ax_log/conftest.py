"""Fixtures for the ax-log tests: a layout, a log path and a subprocess environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from libcommon.paths import StateLayout, state_layout


@pytest.fixture
def layout(workspace: Path, state_dir: Path) -> StateLayout:
    return state_layout(workspace)


@pytest.fixture
def child_env(state_dir: Path) -> dict[str, str]:
    """The environment for a real child process: same state root, same interpreter paths."""
    env = dict(os.environ)
    env["AX_STATE_DIR"] = str(state_dir)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return env
