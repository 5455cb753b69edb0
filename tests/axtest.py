"""Helpers shared by tests (importable as ``axtest``; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = ["policy", "exec", "log", "slate", "check", "preview", "report", "mcp", "agent"]


def tool_path(name: str) -> str:
    """The installed console script ``ax-<name>``; its absence is a failure, not a skip."""
    beside = Path(sys.executable).parent / f"ax-{name}"
    found = str(beside) if beside.exists() else shutil.which(f"ax-{name}")
    if found is None:
        pytest.fail(f"ax-{name} is not installed in this environment (pip install the project)")
    return found


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


CliRunner = Callable[..., CliResult]
