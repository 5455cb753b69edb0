"""Is a Python project installed for the interpreter that would run its tests, and the cure.

What the project declares, what an environment holds and the cure are
libcommon.pyproject_env's (the rule ax-preview applies before a dev server);
this adds what only tests need. The project is *ready* for its tests when, for
the interpreter that would run them:

- pytest is importable;
- the project's own distribution is installed, or its package is importable
  from the source tree anyway (a flat layout, which ``python -m pytest``
  finds from the unit folder, or a folder pytest's ``pythonpath``, a
  ``conftest.py`` that edits ``sys.path`` or ``PYTHONPATH`` adds); only a
  package found under a folder nothing puts on ``sys.path`` (``src/``) counts
  as not importable, so a name ax-check cannot map to a folder never blocks;
- every distribution its tests need is installed: ``[project]
  dependencies`` (or poetry's), its first test extra or dependency group
  (``test``, ``tests``, ``testing``) and the requirements files tests read
  (``requirements.txt`` and those named for tests); a requirement with an
  environment marker is left out (whether it is needed depends on the
  interpreter), and so are dependencies declared ``dynamic``. A project whose
  name cannot be read (a ``setup.py`` without ``setup.cfg`` metadata) is
  checked for pytest and its requirements files only.

A listing that cannot be complete (a venv that also sees its base
interpreter's site-packages) never blocks. What is checked is presence, not
versions.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ax_check.toolchains import PythonEnv
from libcommon import pyproject_env
from libcommon.pyproject_env import (
    MAX_SITE_ENTRIES,
    Group,
    PythonProject,
    dig,
    installed_distributions,
    parse_setup_cfg,
    read_small,
    strings,
)

TEST_GROUP_NAMES: tuple[str, ...] = ("test", "tests", "testing")
# Folders whose conftest.py may put the source folder on sys.path.
CONFTEST_FOLDERS: tuple[str, ...] = (".", "tests", "test")


@dataclass(frozen=True)
class ProjectForTests(PythonProject):
    """A Python project as its tests see it: what puts its source on ``sys.path``."""

    pythonpath: tuple[str, ...] = ()
    conftest_edits_path: bool = False

    @property
    def test_groups(self) -> tuple[Group, ...]:
        """The first test extra or group, and the requirements files tests read."""
        named = [g for g in self.groups if g.kind != "file" and g.name in TEST_GROUP_NAMES]
        files = [g for g in self.groups if g.kind == "file" and _tests_read(g.name)]
        return (*named[:1], *files)

    def source_importable(self, env_pythonpath: Iterable[Path]) -> bool:
        """False only when the package is found and nothing puts its folder on sys.path."""
        if self.name is None or self.conftest_edits_path:
            return True
        module = self.name.replace("-", "_")
        root = self.unit_dir
        if _holds_module(root, module):
            return True
        if not _holds_module(root / "src", module):
            return True
        extra = [root / entry for entry in self.pythonpath] + list(env_pythonpath)
        return any(_holds_module(folder, module) for folder in extra)


def _tests_read(requirements_file: str) -> bool:
    name = Path(requirements_file).name
    return name == "requirements.txt" or "test" in requirements_file


def _holds_module(folder: Path, module: str) -> bool:
    """A package folder or a module named ``module`` (case-insensitively) in ``folder``."""
    try:
        with os.scandir(folder) as entries:
            for index, entry in enumerate(entries):
                if index >= MAX_SITE_ENTRIES:
                    return False
                name = entry.name
                if name.lower() == module and entry.is_dir():
                    return True
                if name.lower() == f"{module}.py" and entry.is_file():
                    return True
    except OSError:
        return False
    return False


def _pytest_pythonpath(
    unit_dir: Path, pyproject: dict[str, Any], setup_cfg: configparser.ConfigParser | None
) -> tuple[str, ...]:
    entries: list[str] = []
    for table in (
        dig(pyproject, "tool", "pytest", "ini_options"),
        dig(pyproject, "tool", "pytest"),
    ):
        value = dig(table, "pythonpath")
        if isinstance(value, str):
            entries += value.split()
        else:
            entries += strings(value)
    sections = [("pytest.ini", "pytest"), ("tox.ini", "pytest")]
    for name, section in sections:
        text = read_small(unit_dir / name)
        if text is None:
            continue
        try:
            parser = parse_setup_cfg(text)
        except configparser.Error:
            continue
        if parser.has_option(section, "pythonpath"):
            entries += parser.get(section, "pythonpath").split()
    if setup_cfg is not None and setup_cfg.has_option("tool:pytest", "pythonpath"):
        entries += setup_cfg.get("tool:pytest", "pythonpath").split()
    return tuple(entries)


def read_project(
    unit_dir: Path,
    workspace: Path,
    pyproject: dict[str, Any],
    setup_cfg: configparser.ConfigParser | None,
) -> ProjectForTests:
    """What the unit's manifests say about its distribution, its needs and its installer."""
    declared = pyproject_env.read_project(unit_dir, workspace, pyproject, setup_cfg)
    conftest_edits_path = any(
        "sys.path" in (read_small(unit_dir / folder / "conftest.py") or "")
        for folder in CONFTEST_FOLDERS
    )
    return ProjectForTests(
        **{field.name: getattr(declared, field.name) for field in fields(declared)},
        pythonpath=_pytest_pythonpath(unit_dir, pyproject, setup_cfg),
        conftest_edits_path=conftest_edits_path,
    )


def _pythonpath_of(environ: Mapping[str, str]) -> list[Path]:
    return [Path(entry) for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]


def missing_for_tests(
    project: ProjectForTests, env: PythonEnv, environ: Mapping[str, str]
) -> list[str]:
    """What the interpreter lacks for the project's tests (empty: ready, or cannot tell)."""
    if not env.complete:
        return []
    missing: list[str] = []
    if not env.has("pytest"):
        missing.append("pytest")
    installed = installed_distributions(env.site_dirs)
    own = project.name
    if (
        own is not None
        and own not in installed
        and not project.source_importable(_pythonpath_of(environ))
    ):
        missing.append(f"{own} (the project itself)")
    needed = project.needs(project.test_groups)
    missing += [name for name in needed if name != "pytest" and name not in installed]
    return missing


def install_cure(
    project: PythonProject,
    env: PythonEnv,
    groups: Iterable[Group] = (),
    extra: tuple[str, ...] = (),
    create: str | None = None,
) -> str:
    """libcommon's cure for the environment ``env`` (``.venv`` created when it is ax-check's
    own interpreter and not the project's)."""
    venv = None if env.source == "ax-check" and not env.on_path else env.shown
    return pyproject_env.install_cure(
        project, venv, owned=env.source == "project", groups=groups, extra=extra, create=create
    )
