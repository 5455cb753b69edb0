"""Shared fixtures: a private state root per test and an in-process CLI runner."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import axtest
import pytest
from axtest import CliResult, CliRunner

from libcommon.cliapp import Environment


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


@pytest.fixture(name="tool_path")
def tool_path_fixture() -> Callable[[str], str]:
    """``tool_path("log")`` is the installed ``ax-log`` script."""
    return axtest.tool_path


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A folder "nobody" can reach (pytest's tmp_path sits under a root-only folder)."""
    folder = Path(tempfile.mkdtemp(prefix="ax-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
