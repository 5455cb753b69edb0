"""Shared fixtures: a private state root per test and an in-process CLI runner."""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from libcommon.cliapp import Environment

TOOLS = ["policy", "exec", "log", "slate", "check", "preview", "report", "mcp", "agent"]


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state root, so nothing touches the user's."""
    root = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("AX_STATE_DIR", str(root))
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Path(os.path.realpath(ws))


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


CliRunner = Callable[..., CliResult]


@pytest.fixture
def run_cli() -> CliRunner:
    """Run a tool's ``main`` in-process: ``run_cli(main, ["verb", ...], stdin="...")``."""

    def run(
        main: Callable[..., int], argv: list[str], stdin: str = "", isatty: bool = False
    ) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        env = Environment(
            stdin=io.StringIO(stdin),
            stdout=out,
            stderr=err,
            stdin_isatty=isatty,
            stdout_isatty=isatty,
            stderr_isatty=isatty,
        )
        code = main(argv, env)
        return CliResult(int(code), out.getvalue(), err.getvalue())

    return run


def tool_path(name: str) -> str:
    """The installed console script ``ax-<name>``; its absence is a failure, not a skip."""
    beside = Path(sys.executable).parent / f"ax-{name}"
    found = str(beside) if beside.exists() else shutil.which(f"ax-{name}")
    if found is None:
        pytest.fail(f"ax-{name} is not installed in this environment (pip install the project)")
    return found
