"""Helpers shared by tests (importable as ``axtest``; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = [
    "policy",
    "exec",
    "log",
    "slate",
    "check",
    "preview",
    "report",
    "mcp",
    "agent",
    "map",
    "mesh",
]


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


NOBODY = 65534

_LIST_IMPORTED = """
import importlib, sys, sysconfig
stdlib = sysconfig.get_paths()["stdlib"]
for name in sys.argv[1:]:
    importlib.import_module(name)
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None)
    if path and not path.startswith(stdlib) and "." not in module.__name__:
        print(path)
"""


def _copy_imported(modules: list[str], target: Path) -> None:
    """Copy every top-level package or module that importing ``modules`` loads."""
    listed = subprocess.run(
        [sys.executable, "-c", _LIST_IMPORTED, *modules], capture_output=True, text=True, check=True
    ).stdout.split()
    for path in map(Path, listed):
        if path.name == "__init__.py":
            shutil.copytree(
                path.parent,
                target / path.parent.name,
                ignore=shutil.ignore_patterns("__pycache__"),
                dirs_exist_ok=True,
            )
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / path.name)
    for folder in [target, *target.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)


def nobody_runner(
    world_dir: Path, modules: list[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run Python code as uid/gid 65534 with ``modules`` importable, or skip saying why.

    ``world_dir`` is a folder "nobody" can reach (the ``world_dir`` fixture). The
    installed packages may sit where "nobody" cannot read (tox keeps its environments
    in a root-only .tox): it gets a readable copy of what importing ``modules`` loads.
    """
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to uid 65534 (already unprivileged here)")
    setpriv = shutil.which("setpriv")
    system_python = shutil.which("python3", path="/usr/bin")
    if setpriv is None or system_python is None:
        pytest.skip("needs setpriv and /usr/bin/python3 to drop privileges")
    version = subprocess.run(
        [system_python, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version}, cannot load this venv's packages")
    site = world_dir / "site"
    _copy_imported(modules, site)
    drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(world_dir), "PYTHONPATH": str(site)}
    readable = subprocess.run(
        [*drop, system_python, "-c", f"import {', '.join(modules)}"],
        capture_output=True,
        env=env,
        check=False,
    )
    if readable.returncode != 0:
        pytest.skip(f"uid {NOBODY} cannot import a copy of the installed packages in {site}")

    def run(
        script: str, *args: str, prefix: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*(prefix or []), *drop, system_python, "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
            cwd=world_dir,
        )

    return run
