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

import os
import sys
from collections.abc import Mapping
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


def own_venv() -> Path | None:
    """The virtualenv the running ax tool is installed in, or None under a base interpreter."""
    if sys.prefix == sys.base_prefix:
        return None
    return Path(os.path.realpath(sys.prefix))


def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


@dataclass(frozen=True)
class ChildEnv:
    """What a project's command sees: PATH, and the variables set and removed."""

    path: str
    set: dict[str, str]
    unset: tuple[str, ...]


def child_env(environ: Mapping[str, str], chosen: Path | None, own: Path | None) -> ChildEnv:
    """The child's PATH with the project's environment ``chosen`` first and ``own`` gone.

    ax's own virtualenv (``own``) never reaches a project's PATH (its ``pytest``,
    ``mypy`` or ``python`` would run the project's command with ax's packages)
    unless it is the project's chosen environment; a ``VIRTUAL_ENV`` naming it is
    removed likewise. With a chosen environment its ``bin`` goes first,
    ``VIRTUAL_ENV`` names it and ``PYTHONHOME`` is removed (it would point the
    venv's interpreter at another standard library), as its ``activate`` would.
    """
    entries = environ.get("PATH", os.defpath).split(os.pathsep)
    dropped = [own / "bin"] if own is not None else []
    if chosen is not None:
        dropped.append(chosen / "bin")
    kept = [e for e in entries if not (e and any(same_path(e, d) for d in dropped))]
    overrides: dict[str, str] = {}
    unset: list[str] = []
    if chosen is not None:
        kept.insert(0, str(chosen / "bin"))
        overrides["VIRTUAL_ENV"] = str(chosen)
        unset.append("PYTHONHOME")
    elif own is not None and environ.get("VIRTUAL_ENV") and same_path(environ["VIRTUAL_ENV"], own):
        unset.append("VIRTUAL_ENV")
    path = os.pathsep.join(kept)
    overrides["PATH"] = path
    return ChildEnv(path=path, set=overrides, unset=tuple(unset))
