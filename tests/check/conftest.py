"""Fixture projects for ax-check, copied into a scratch folder so runs leave the tree clean."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "check"


@pytest.fixture
def project(tmp_path: Path) -> Callable[[str], Path]:
    """``project("pyproj")``: a fresh copy of tests/fixtures/check/pyproj."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        return Path(os.path.realpath(target))

    return copy


def _require(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        pytest.skip(f"{program} is not installed on this machine")
    return found


def _path_without(*programs: str) -> str:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(
        folder
        for folder in folders
        if not any(os.path.exists(os.path.join(folder, name)) for name in programs)
    )


@pytest.fixture
def require() -> Callable[[str], str]:
    """``require("cargo")``: its path, or skip the test saying it is not installed."""
    return _require


@pytest.fixture
def path_without() -> Callable[..., str]:
    """``path_without("go")``: PATH minus every folder holding one of the programs."""
    return _path_without


def _needs_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed for this interpreter (it is in the lint group)")


@pytest.fixture
def needs_module() -> Callable[[str], None]:
    """``needs_module("ruff")``: skip unless the running interpreter can import it."""
    return _needs_module


@pytest.fixture(autouse=True)
def _no_active_virtualenv(monkeypatch: pytest.MonkeyPatch) -> None:
    """An activated virtualenv (tox sets VIRTUAL_ENV) would be the projects' environment."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
