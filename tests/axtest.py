"""Helpers shared by tests (importable as ``axtest``; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = ["policy", "exec", "log", "slate", "check", "preview", "report", "mcp", "agent", "map"]


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


# Fake secrets with the shapes of real ones, built by concatenation so that no scanner
# takes a test file for a leak.
_BODY = "Q7xK2mP9vR4tL8nB3cD6fG1hJ5wZ0yS"
PLANTED_SECRETS = {
    "anthropic": "sk-" + "ant-api03-" + _BODY * 3,
    "github": "gh" + "p_" + _BODY + "1234",
    "private-key-body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _BODY,
}


def secrets_file(filler_bytes: int) -> str:
    """A ``.env``-style file planting every PLANTED_SECRETS value at its start, in its
    middle and at its end, among ``filler_bytes`` of ordinary settings."""
    secrets = (
        f"ANTHROPIC_API_KEY={PLANTED_SECRETS['anthropic']}\n"
        f"# the deploy token: {PLANTED_SECRETS['github']}\n"
        "-----BEGIN " + "PRIVATE KEY-----\n"
        f"{PLANTED_SECRETS['private-key-body']}\n"
        "-----END " + "PRIVATE KEY-----\n"
    )
    filler = "".join(f"SETTING_{i:05d}=plain value {i}\n" for i in range(filler_bytes // 60))
    half = len(filler) // 2
    return secrets + filler[:half] + secrets + filler[half:] + secrets


def files_holding_secrets(root: Path) -> list[str]:
    """Every file under ``root`` (all of it, read as bytes) that holds a planted secret."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [
                f"{path.relative_to(root)}: {name}"
                for name, value in PLANTED_SECRETS.items()
                if value.encode() in data
            ]
    return found
