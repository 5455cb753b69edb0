"""Stat-only toolchain probing: is a program on PATH, is a module installed.

Nothing here spawns a process. A presence probe is not a health check: a
``cargo`` found on PATH may still fail to run, and that failure is the check's
verdict (an error or a failure), never a pass.
"""

from __future__ import annotations

import glob
import os
import shutil
import site
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
    _found: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Toolchains:
        env = os.environ if environ is None else environ
        return cls(path=env.get("PATH", os.defpath))

    def find(self, name: str) -> str | None:
        if name not in self._found:
            self._found[name] = shutil.which(name, path=self.path)
        return self._found[name]


def site_dirs_of_venv(venv: Path) -> list[Path]:
    return [
        Path(found) for found in sorted(glob.glob(str(venv / "lib" / "python*" / "site-packages")))
    ]


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


@dataclass(frozen=True)
class PythonEnv:
    """The interpreter a unit's checks run with: its own virtualenv, else ax-check's own."""

    # argv[0] as it will be run (relative to the unit for a project venv).
    executable: str
    venv: Path | None
    site_dirs: tuple[Path, ...]

    def has(self, module: str) -> bool:
        return module_installed(list(self.site_dirs), module)


VENV_NAMES: tuple[str, ...] = (".venv", "venv")


def python_env(unit_dir: Path, workspace: Path) -> PythonEnv:
    """The unit's ``.venv``/``venv`` (or the workspace root's), else the running interpreter."""
    for folder in (unit_dir, workspace) if unit_dir != workspace else (unit_dir,):
        for name in VENV_NAMES:
            candidate = folder / name / "bin" / "python"
            if candidate.exists():
                venv = folder / name
                relative = os.path.relpath(candidate, unit_dir)
                executable = relative if relative.startswith("..") else f"./{relative}"
                return PythonEnv(executable, venv, tuple(site_dirs_of_venv(venv)))
    return PythonEnv(sys.executable, None, tuple(site_dirs_of_running_interpreter()))
