"""The ``harness`` fixture (a workspace, its state and a seam over the real core functions)
and the ``backend`` fixture that runs a grep test on ripgrep and on the Python fallback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness


@pytest.fixture
def harness(workspace: Path, state_dir: Path) -> Harness:
    return Harness(workspace, state_dir)


@pytest.fixture(params=["ripgrep", "python"])
def backend(request: pytest.FixtureRequest, harness: Harness, tmp_path: Path) -> str:
    """Point the call's PATH at ripgrep, or at a folder without it (the fallback)."""
    if request.param == "ripgrep":
        if shutil.which("rg") is None:
            pytest.skip("ripgrep (rg) is not installed on this machine; the rg branch is untested")
        harness.environ = {"PATH": os.environ.get("PATH", os.defpath)}
    else:
        empty = tmp_path / "no-rg-bin"
        empty.mkdir()
        harness.environ = {"PATH": str(empty)}
    return str(request.param)
