"""The ``harness`` fixture: a workspace, its state and a seam over the real core functions."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent.tools.toolkit import Harness


@pytest.fixture
def harness(workspace: Path, state_dir: Path) -> Harness:
    return Harness(workspace, state_dir)
