"""Every ax-map test lists files as git would with no user configuration."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def no_user_git_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The user's global git config and ignore file never change what a test lists."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("HOME", str(home))
