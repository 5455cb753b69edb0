"""What a project needs installed before its own commands can run: one rule for every tool.

ax-check (before a check) and ax-preview (before a dev server) ask the same
questions of a unit, and must answer them the same way:

- Node: which package manager the project uses (``packageManager`` in
  package.json, else the lockfile found from the unit up to the workspace root,
  else npm), whether ``node_modules`` is installed there, and, when declared
  dependencies are not installed, the cure.
- Python: the project's own virtualenv (``.venv`` or ``venv`` in the unit, else
  at the workspace root).
- A command that ran and could not find a program: the shell's "not found"
  lines (``sh: 1: vite: not found``), and exit status 127.

Everything here is stat or a read of text already in hand; nothing is spawned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Lockfile -> package manager, in the order they are looked for in each folder.
NODE_LOCKFILES: tuple[tuple[str, str], ...] = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("bun.lockb", "bun"),
    ("bun.lock", "bun"),
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
)
NODE_MANAGERS: tuple[str, ...] = ("npm", "pnpm", "yarn", "bun")
NODE_DEPENDENCY_KEYS: tuple[str, ...] = ("dependencies", "devDependencies", "optionalDependencies")
NODE_NOT_INSTALLED = "package.json declares dependencies and no node_modules is installed"
VENV_NAMES: tuple[str, ...] = (".venv", "venv")
# What a POSIX shell exits with when it cannot find the command (and make reports as Error 127).
COMMAND_NOT_FOUND_STATUS = 127


@dataclass(frozen=True)
class NodeEnv:
    manager: str  # npm, pnpm, yarn or bun
    lockfile: str | None  # relative to the workspace
    installed: bool  # node_modules found in the unit or a folder above it in the workspace
    needs_install: bool  # dependencies are declared and nothing is installed
    unit_dir: Path
    workspace: Path

    def local_bin(self, name: str) -> str | None:
        """``node_modules/.bin/<name>`` relative to the unit, searching up to the workspace."""
        for folder in (self.unit_dir, *self.unit_dir.parents):
            candidate = folder / "node_modules" / ".bin" / name
            if candidate.exists():
                up = len(self.unit_dir.relative_to(folder).parts)
                return ("../" * up or "./") + f"node_modules/.bin/{name}"
            if folder == self.workspace:
                break
        return None

    @property
    def install_cure(self) -> str:
        if self.manager in ("pnpm", "yarn", "bun"):
            frozen = " --frozen-lockfile" if self.lockfile else ""
            return f"run {self.manager} install{frozen}"
        return "run npm ci" if self.lockfile else "run npm install"


def _folders_up(unit_dir: Path, workspace: Path) -> list[Path]:
    """The unit and each folder above it, up to and including the workspace root."""
    folders = [unit_dir]
    for parent in unit_dir.parents:
        if parent == workspace or workspace in parent.parents:
            folders.append(parent)
    return folders


def node_env(unit_dir: Path, workspace: Path, package: dict[str, Any]) -> NodeEnv:
    """The unit's package manager and install state, from its parsed package.json."""
    manager = None
    declared = package.get("packageManager")
    if isinstance(declared, str):
        name = declared.split("@", 1)[0]
        if name in NODE_MANAGERS:
            manager = name
    lockfile = None
    installed = False
    for folder in _folders_up(unit_dir, workspace):
        if lockfile is None:
            for name, owner in NODE_LOCKFILES:
                if (folder / name).is_file():
                    lockfile = str((folder / name).relative_to(workspace))
                    manager = manager or owner
                    break
        installed = installed or (folder / "node_modules").is_dir()
    needs = any(
        isinstance(package.get(key), dict) and package.get(key) for key in NODE_DEPENDENCY_KEYS
    )
    return NodeEnv(
        manager or "npm", lockfile, installed, needs and not installed, unit_dir, workspace
    )


def find_venv(unit_dir: Path, workspace: Path) -> Path | None:
    """The unit's ``.venv``/``venv`` (one holding ``bin/python``), else the workspace root's."""
    for folder in (unit_dir, workspace) if unit_dir != workspace else (unit_dir,):
        for name in VENV_NAMES:
            if (folder / name / "bin" / "python").exists():
                return folder / name
    return None


_NOT_FOUND_LINES = (
    # sh: 1: vite: not found / bash: vite: command not found / sh: line 1: vite: command not found
    re.compile(
        r"^(?:\S+:\s*)?(?:line \d+:\s*|\d+:\s*)?(?P<program>[^\s:]+): (?:command )?not found$"
    ),
    # zsh: command not found: vite
    re.compile(r"command not found: (?P<program>\S+)$"),
    # make: mypy: No such file or directory / env: 'node': No such file or directory
    re.compile(
        r"^(?:make(?:\[\d+\])?|env|xargs|nohup|exec): ['‘`]?(?P<program>[^\s:'’`]+)['’`]?: "
        r"No such file or directory$"
    ),
)
_MAKE_NOT_FOUND = re.compile(r"\bError 127\b")


@dataclass(frozen=True)
class NotFound:
    """A command that could not find a program; ``program`` when the output names it."""

    program: str | None


def program_not_found(output: str, status: int | None) -> NotFound | None:
    """Whether a command that exited with ``status`` failed because a program was missing.

    It did when it exited 127, or when make reports a recipe's ``Error 127``;
    the program is the last one a "not found" line names.
    """
    if status != COMMAND_NOT_FOUND_STATUS and not _MAKE_NOT_FOUND.search(output):
        return None
    program = None
    for line in output.splitlines():
        for pattern in _NOT_FOUND_LINES:
            match = pattern.search(line.strip())
            if match:
                program = match.group("program")
                break
    return NotFound(program)
