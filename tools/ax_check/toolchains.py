"""Stat-only toolchain probing: is a program on PATH, is a module installed.

Nothing here spawns a process. A presence probe is not a health check: a
``cargo`` found on PATH may still fail to run, and that failure is the check's
verdict (an error or a failure), never a pass.
"""

from __future__ import annotations

import os
import shutil
import site
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ax_check.models import EnvironmentRef
from libcommon.projectenv import ChildEnv, find_venv, own_venv, same_path
from libcommon.projectenv import child_env as project_child_env
from libcommon.pyproject_env import includes_system_site, site_dirs_of_venv

# The programs `ax-check detect` reports, in this order.
REPORTED_TOOLCHAINS: tuple[str, ...] = (
    "python3",
    "node",
    "npm",
    "pnpm",
    "yarn",
    "cargo",
    "rustc",
    "cargo-clippy",
    "cargo-fmt",
    "go",
    "just",
    "make",
    "tox",
    "nox",
    "hatch",
    "pdm",
    "cmake",
)


@dataclass
class Toolchains:
    """Looks programs up on one PATH, remembering the answers for one resolution."""

    path: str
    # The environment the PATH came from (None: this process's).
    environ: Mapping[str, str] | None = None
    _found: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Toolchains:
        env = os.environ if environ is None else environ
        return cls(path=env.get("PATH", os.defpath), environ=environ)

    @property
    def variables(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def find(self, name: str) -> str | None:
        if name not in self._found:
            self._found[name] = shutil.which(name, path=self.path)
        return self._found[name]


def site_dirs_of_running_interpreter() -> list[Path]:
    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    dirs += site.getsitepackages()
    if site.ENABLE_USER_SITE and site.USER_SITE:
        dirs.append(site.USER_SITE)
    unique: list[Path] = []
    for entry in dirs:
        path = Path(entry)
        if path not in unique:
            unique.append(path)
    return unique


def module_installed(site_dirs: list[Path], module: str) -> bool:
    """True when ``module`` is a package folder or a ``.py`` file in one of ``site_dirs``."""
    return any(
        (folder / module / "__init__.py").is_file()
        or (folder / module).is_dir()
        or (folder / f"{module}.py").is_file()
        for folder in site_dirs
    )


EnvSource = Literal["project", "active", "ax-check"]


@dataclass(frozen=True)
class PythonEnv:
    """The interpreter a unit's Python checks run with, and where it came from.

    ``project``: the unit's (or the workspace root's) ``.venv``/``venv``;
    ``active``: the virtualenv named by ``VIRTUAL_ENV`` (not ax-check's own);
    ``ax-check``: the interpreter ax-check itself runs under.
    """

    # argv[0] as it will be run (relative to the unit for a venv inside the workspace).
    executable: str
    venv: Path | None
    site_dirs: tuple[Path, ...]
    source: EnvSource
    # False when the venv also sees its base interpreter's site-packages, which are
    # not listed here: a module not found may still be importable.
    complete: bool = True
    # Its bin folder goes first on the child's PATH, with VIRTUAL_ENV set to it.
    on_path: bool = False
    # How people see the venv: unit-relative inside the workspace, else absolute.
    shown: str = ""

    def has(self, module: str) -> bool:
        return module_installed(list(self.site_dirs), module)


def _pythonpath_dirs(environ: Mapping[str, str]) -> list[Path]:
    return [Path(entry) for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]


def _venv_env(
    venv: Path, source: EnvSource, executable: str, shown: str, extra: list[Path]
) -> PythonEnv:
    return PythonEnv(
        executable=executable,
        venv=venv,
        site_dirs=(*site_dirs_of_venv(venv), *extra),
        source=source,
        complete=not includes_system_site(venv),
        on_path=True,
        shown=shown,
    )


def python_env(
    unit_dir: Path, workspace: Path, environ: Mapping[str, str] | None = None
) -> PythonEnv:
    """The unit's ``.venv``/``venv`` (or the workspace root's), else the active
    ``VIRTUAL_ENV`` unless it is ax-check's own, else the running interpreter."""
    env = os.environ if environ is None else environ
    extra = _pythonpath_dirs(env)
    venv = find_venv(unit_dir, workspace)
    if venv is not None:
        relative = os.path.relpath(venv / "bin" / "python", unit_dir)
        executable = relative if relative.startswith("..") else f"./{relative}"
        shown = os.path.relpath(venv, unit_dir)
        return _venv_env(venv, "project", executable, shown, extra)
    active = env.get("VIRTUAL_ENV")
    own = own_venv()
    if active and (own is None or not same_path(active, own)):
        candidate = Path(active) / "bin" / "python"
        if candidate.exists():
            return _venv_env(Path(active), "active", str(candidate), active, extra)
    return PythonEnv(
        executable=sys.executable,
        venv=own,
        site_dirs=(*site_dirs_of_running_interpreter(), *extra),
        source="ax-check",
        complete=own is None or not includes_system_site(own),
        shown=str(own) if own is not None else sys.executable,
    )


def child_env(environ: Mapping[str, str] | None, python: PythonEnv | None) -> ChildEnv:
    """What a unit's commands see: its chosen environment first, ax-check's own venv gone."""
    chosen = python.venv if python is not None and python.on_path else None
    return project_child_env(os.environ if environ is None else environ, chosen, own_venv())


def environment_ref(python: PythonEnv | None) -> EnvironmentRef | None:
    if python is None:
        return None
    return EnvironmentRef(
        source=python.source,
        path=str(python.venv) if python.venv is not None else None,
        python=python.executable,
        on_path=python.on_path,
    )
