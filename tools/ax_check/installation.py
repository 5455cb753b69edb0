"""Is a Python project installed for the interpreter that would run its tests, and the cure.

Stat and small reads only: the names of the ``*.dist-info``/``*.egg-info``/
``*.egg-link`` entries of the interpreter's site-packages, and the project's
own manifests. The project is *ready* for its tests when, for that
interpreter:

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
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ax_check.toolchains import PythonEnv
from ax_check.units import read_small

MAX_SITE_ENTRIES = 20_000
MAX_MISSING_SHOWN = 6
TEST_GROUP_NAMES: tuple[str, ...] = ("test", "tests", "testing")
REQUIREMENTS_FILES: tuple[str, ...] = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements_dev.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements/dev.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
)
# Folders whose conftest.py may put the source folder on sys.path.
CONFTEST_FOLDERS: tuple[str, ...] = (".", "tests", "test")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str | None:
    """The distribution a PEP 508 requirement names; None when it carries a marker."""
    if ";" in spec:
        return None
    match = _REQUIREMENT_NAME.match(spec)
    return normalize(match.group(1)) if match else None


def installed_distributions(site_dirs: Iterable[Path]) -> set[str]:
    """The normalized names of the distributions installed in ``site_dirs``."""
    names: set[str] = set()
    for folder in site_dirs:
        try:
            with os.scandir(folder) as entries:
                for index, entry in enumerate(entries):
                    if index >= MAX_SITE_ENTRIES:
                        break
                    name = entry.name
                    if name.endswith(_METADATA_SUFFIXES):
                        names.add(normalize(name.rsplit(".", 1)[0].split("-", 1)[0]))
                    elif name.endswith(".egg-link"):
                        names.add(normalize(name[: -len(".egg-link")]))
        except OSError:
            continue
    return names


def _dig(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _names(specs: Iterable[str]) -> tuple[str, ...]:
    found = (requirement_name(spec) for spec in specs)
    return tuple(dict.fromkeys(name for name in found if name is not None))


def _group(groups: dict[str, Any], name: str, depth: int = 0) -> list[str]:
    """A PEP 735 dependency group's requirements, with ``include-group`` followed."""
    specs: list[str] = []
    entries = groups.get(name)
    if not isinstance(entries, list) or depth > len(groups):
        return specs
    for entry in entries:
        if isinstance(entry, str):
            specs.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            specs += _group(groups, entry["include-group"], depth + 1)
    return specs


def _poetry_names(table: Any) -> tuple[str, ...]:
    """Poetry's dependency table: plain entries only (no python, optional or marked ones)."""
    if not isinstance(table, dict):
        return ()
    names = []
    for name, value in table.items():
        if name.lower() == "python":
            continue
        if isinstance(value, dict) and (
            value.get("optional") or "markers" in value or "python" in value or "platform" in value
        ):
            continue
        if isinstance(value, list):
            continue
        names.append(normalize(name))
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Group:
    """A named set of requirements and how an installer is asked for it."""

    kind: Literal["extra", "group", "poetry-group", "file"]
    name: str  # the extra or group name, or the requirements file (unit-relative)
    requirements: tuple[str, ...]


@dataclass(frozen=True)
class PythonProject:
    unit_dir: Path
    # The distribution name as declared (None: not declared, or only in setup.py code).
    name: str | None = None
    # Plain runtime requirements; None when ax-check cannot know them (dynamic).
    dependencies: tuple[str, ...] | None = ()
    # Every extra, dependency group, poetry group and requirements file, in that order.
    groups: tuple[Group, ...] = ()
    # What manages the environment: "uv", "poetry", "pdm" or None (pip).
    manager: str | None = None
    installable: bool = False
    pythonpath: tuple[str, ...] = ()
    conftest_edits_path: bool = False

    @property
    def test_groups(self) -> tuple[Group, ...]:
        """The first test extra or group, and the requirements files tests read."""
        named = [g for g in self.groups if g.kind != "file" and g.name in TEST_GROUP_NAMES]
        files = [g for g in self.groups if g.kind == "file" and _tests_read(g.name)]
        return (*named[:1], *files)

    def declares(self, program: str) -> bool:
        """True when the project names a distribution called ``program`` anywhere."""
        wanted = normalize(program)
        return wanted in (self.dependencies or ()) or self.group_naming(program) is not None

    def group_naming(self, program: str) -> Group | None:
        wanted = normalize(program)
        return next((group for group in self.groups if wanted in group.requirements), None)

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
        _dig(pyproject, "tool", "pytest", "ini_options"),
        _dig(pyproject, "tool", "pytest"),
    ):
        value = _dig(table, "pythonpath")
        if isinstance(value, str):
            entries += value.split()
        else:
            entries += _strings(value)
    sections = [("pytest.ini", "pytest"), ("tox.ini", "pytest")]
    for name, section in sections:
        text = read_small(unit_dir / name)
        if text is None:
            continue
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        if parser.has_option(section, "pythonpath"):
            entries += parser.get(section, "pythonpath").split()
    if setup_cfg is not None and setup_cfg.has_option("tool:pytest", "pythonpath"):
        entries += setup_cfg.get("tool:pytest", "pythonpath").split()
    return tuple(entries)


def _requirements_file_names(text: str) -> list[str]:
    """The named requirements of a requirements file.

    Options and includes (``-r``, ``-e``), paths, URLs without a name and archive
    files are left out: what they install cannot be told from the line.
    """
    names = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-", ".", "/")):
            continue
        if " @ " not in line and ("/" in line or "\\" in line or line.endswith(_ARCHIVES)):
            continue
        name = requirement_name(line)
        if name is not None:
            names.append(name)
    return names


def read_project(
    unit_dir: Path,
    workspace: Path,
    pyproject: dict[str, Any],
    setup_cfg: configparser.ConfigParser | None,
) -> PythonProject:
    """What the unit's manifests say about its distribution, its needs and its installer."""
    project = _dig(pyproject, "project")
    poetry = _dig(pyproject, "tool", "poetry")
    name: str | None = None
    dependencies: tuple[str, ...] | None = ()
    if isinstance(project, dict):
        if isinstance(project.get("name"), str):
            name = normalize(project["name"])
        if "dependencies" in _strings(project.get("dynamic")):
            dependencies = None
        else:
            dependencies = _names(_strings(project.get("dependencies")))
    if isinstance(poetry, dict):
        if name is None and isinstance(poetry.get("name"), str):
            name = normalize(poetry["name"])
        if dependencies == ():
            dependencies = _poetry_names(poetry.get("dependencies"))
    if name is None and setup_cfg is not None and setup_cfg.has_option("metadata", "name"):
        name = normalize(setup_cfg.get("metadata", "name"))

    groups: list[Group] = []
    extras = _dig(project, "optional-dependencies")
    dependency_groups = _dig(pyproject, "dependency-groups")
    poetry_groups = _dig(poetry, "group")
    if isinstance(extras, dict):
        groups += [Group("extra", str(k), _names(_strings(v))) for k, v in extras.items()]
    if isinstance(dependency_groups, dict):
        groups += [
            Group("group", str(k), _names(_group(dependency_groups, k))) for k in dependency_groups
        ]
    if isinstance(poetry_groups, dict):
        groups += [
            Group("poetry-group", str(k), _poetry_names(_dig(v, "dependencies")))
            for k, v in poetry_groups.items()
        ]
    for relative in REQUIREMENTS_FILES:
        text = read_small(unit_dir / relative)
        if text is not None:
            groups.append(Group("file", relative, tuple(_requirements_file_names(text))))

    manager = None
    for folder in dict.fromkeys((unit_dir, workspace)):
        for lockfile, owner in (("uv.lock", "uv"), ("poetry.lock", "poetry"), ("pdm.lock", "pdm")):
            if manager is None and (folder / lockfile).is_file():
                manager = owner
    if manager is None and isinstance(poetry, dict) and not isinstance(project, dict):
        manager = "poetry"

    conftest_edits_path = any(
        "sys.path" in (read_small(unit_dir / folder / "conftest.py") or "")
        for folder in CONFTEST_FOLDERS
    )
    return PythonProject(
        unit_dir=unit_dir,
        name=name,
        dependencies=dependencies,
        groups=tuple(groups),
        manager=manager,
        installable=isinstance(project, dict)
        or isinstance(poetry, dict)
        or (unit_dir / "setup.py").is_file()
        or name is not None,
        pythonpath=_pytest_pythonpath(unit_dir, pyproject, setup_cfg),
        conftest_edits_path=conftest_edits_path,
    )


def _pythonpath_of(environ: Mapping[str, str]) -> list[Path]:
    return [Path(entry) for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]


def missing_for_tests(
    project: PythonProject, env: PythonEnv, environ: Mapping[str, str]
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
    needed = list(project.dependencies or ())
    for group in project.test_groups:
        needed += group.requirements
    for name in dict.fromkeys(needed):
        if name not in (own, "pytest") and name not in installed:
            missing.append(name)
    return missing


def shown_list(names: list[str]) -> str:
    if len(names) <= MAX_MISSING_SHOWN:
        return ", ".join(names)
    return ", ".join(names[:MAX_MISSING_SHOWN]) + f" and {len(names) - MAX_MISSING_SHOWN} more"


def install_cure(
    project: PythonProject,
    env: PythonEnv,
    groups: Iterable[Group] = (),
    extra: tuple[str, ...] = (),
    create: str | None = None,
) -> str:
    """The command that installs the project, ``groups`` and ``extra`` where it will be used.

    The project's own manager when a lockfile (or a poetry-only pyproject) names
    one; otherwise pip into the environment, creating ``.venv`` when the project
    has none (the next check then finds and uses it), or into the venv folder
    ``create`` (a task runs ``create/bin/...``), creating it unless it is the
    project's. A dependency group needs pip 25.1 or newer (``--group``).
    """
    chosen = list(groups)
    extras = [g.name for g in chosen if g.kind == "extra"]
    dependency_groups = [g.name for g in chosen if g.kind == "group"]
    poetry_groups = [g.name for g in chosen if g.kind == "poetry-group"]
    files = [word for g in chosen if g.kind == "file" for word in ("-r", g.name)]
    manager_argv: list[str] | None = None
    then: list[str] = []
    if project.manager == "uv":
        manager_argv = ["uv", "sync"]
        manager_argv += [w for g in dependency_groups if g != "dev" for w in ("--group", g)]
        manager_argv += [w for e in extras for w in ("--extra", e)]
        then = ["uv", "pip", "install"]
    elif project.manager == "poetry":
        manager_argv = ["poetry", "install"]
        manager_argv += [w for g in poetry_groups for w in ("--with", g)]
        manager_argv += [w for e in extras for w in ("--extras", e)]
        then = ["poetry", "run", "pip", "install"]
    elif project.manager == "pdm":
        manager_argv = ["pdm", "install"]
        manager_argv += [w for g in (*dependency_groups, *extras) for w in ("-G", g)]
        then = ["pdm", "run", "pip", "install"]
    if manager_argv is not None:
        more = [*files, *extra]
        return shlex.join(manager_argv) + (f" && {shlex.join([*then, *more])}" if more else "")
    prefix = ""
    if create is not None and not (env.source == "project" and Path(env.shown).name == create):
        prefix = f"python3 -m venv {shlex.quote(create)} && "
        pip = f"{create}/bin/pip"
    elif env.source == "ax-check" and not env.on_path:
        prefix = "python3 -m venv .venv && "
        pip = ".venv/bin/pip"
    else:
        pip = str(Path(env.shown) / "bin" / "pip")
    argv = [pip, "install"]
    if project.installable:
        argv += ["-e", "." + (f"[{','.join(extras)}]" if extras else "")]
    argv += [w for g in dependency_groups for w in ("--group", g)]
    argv += [*files, *extra]
    return prefix + shlex.join(argv)
