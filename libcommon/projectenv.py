"""What a project needs installed before its own commands can run: one rule for every tool.

ax-check (before a check) and ax-preview (before a dev server) ask the same
questions of a unit, and must answer them the same way:

- Node: which package manager the project uses (``packageManager`` in
  package.json, else the lockfile found from the unit up to the workspace root,
  else npm), whether ``node_modules`` is installed there, and, when declared
  dependencies are not installed, the cure.
- Python: the project's own virtualenv (``.venv`` or ``venv`` in the unit, else
  at the workspace root); whether what the project declares is installed in an
  environment, and the cure, is libcommon.pyproject_env's.

Everything here is stat or a read of text already in hand; nothing is spawned.
"""

from __future__ import annotations

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
