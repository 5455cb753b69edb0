"""Fixtures for the ax-slate tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from libcommon.paths import StateLayout, state_layout


@pytest.fixture
def layout(workspace: Path, state_dir: Path) -> StateLayout:
    return state_layout(workspace)


@pytest.fixture
def started(layout: StateLayout) -> str:
    """Session ``s1`` with its slate started, as a harness starts one."""
    from ax_slate import open_session

    open_session(layout, "s1")
    return "s1"


@pytest.fixture
def trust(state_dir: Path) -> Callable[..., None]:
    """``trust(ws, ...)`` writes trust.json in ax-policy's format, trusting exactly those."""

    def write(*workspaces: Path) -> None:
        table = {
            str(ws): {"grantedAt": "2026-11-30T10:00:00.000Z", "source": "test"}
            for ws in workspaces
        }
        (state_dir / "trust.json").write_text(json.dumps({"version": 1, "workspaces": table}))

    return write
