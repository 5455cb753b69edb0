"""What a Python project declares, what an environment holds, and the cure: one rule.

ax-check (before a project's tests) and ax-preview (before a project's dev
server) ask the same questions of a Python unit and must answer them the same
way; each tool adds only what its own job needs (ax-check: pytest and the test
extras; ax-preview: which interpreter the server runs):

- What the project declares (:func:`read_project`): its distribution name,
  its plain runtime requirements (``[project] dependencies`` or poetry's; None
  when declared ``dynamic``, which cannot be known without building it), every
  extra, dependency group, poetry group and requirements file, and the
  installer its lockfile names (uv, poetry, pdm; else pip). A requirement with
  an environment marker is left out: whether it is needed depends on the
  interpreter.
- What an environment holds (:func:`installed_distributions`): the names of
  the ``*.dist-info``/``*.egg-info``/``*.egg-link`` entries of its
  site-packages. Presence, not versions. A virtualenv that also sees its base
  interpreter's site-packages (:func:`includes_system_site`) cannot be listed
  completely, and a listing that cannot be complete never proves a
  distribution missing.
- The cure (:func:`install_cure`): the project's own installer, or pip into
  the environment, creating ``.venv`` when the project has none (the tools
  then find and use it).

Everything here is stat or a read of a small file; nothing is spawned.
"""

from __future__ import annotations

import configparser
import glob
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

MAX_MANIFEST_BYTES = 1024 * 1024
MAX_SITE_ENTRIES = 20_000
MAX_MISSING_SHOWN = 6
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
# The requirements file that lists what the project needs to run (the others are for
# development and tests).
RUNTIME_REQUIREMENTS = "requirements.txt"
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2")


def read_small(path: Path) -> str | None:
    """A manifest's text, or None when it is missing, too large or unreadable."""
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_setup_cfg(text: str) -> configparser.ConfigParser:
    """setup.cfg (or pytest.ini, tox.ini) as setuptools reads it; raises configparser.Error."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return parser


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


def shown_list(names: list[str]) -> str:
    """Missing distributions as a message names them: the first few, then a count."""
    if len(names) <= MAX_MISSING_SHOWN:
        return ", ".join(names)
    return ", ".join(names[:MAX_MISSING_SHOWN]) + f" and {len(names) - MAX_MISSING_SHOWN} more"


def site_dirs_of_venv(venv: Path) -> list[Path]:
    return [
        Path(found) for found in sorted(glob.glob(str(venv / "lib" / "python*" / "site-packages")))
    ]


def includes_system_site(venv: Path) -> bool:
    """True when the venv also sees its base interpreter's site-packages (not listed here)."""
    try:
        text = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False


def dig(document: Any, *keys: str) -> Any:
    """``document[k1][k2]...``, or None where a level is missing or not a table."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def strings(value: Any) -> list[str]:
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
    # Plain runtime requirements; None when they cannot be known (dynamic).
    dependencies: tuple[str, ...] | None = ()
    # Every extra, dependency group, poetry group and requirements file, in that order.
    groups: tuple[Group, ...] = ()
    # What manages the environment: "uv", "poetry", "pdm" or None (pip).
    manager: str | None = None
    installable: bool = False

    def declares(self, program: str) -> bool:
        """True when the project names a distribution called ``program`` anywhere."""
        wanted = normalize(program)
        return wanted in (self.dependencies or ()) or self.group_naming(program) is not None

    def group_naming(self, program: str) -> Group | None:
        wanted = normalize(program)
        return next((group for group in self.groups if wanted in group.requirements), None)

    @property
    def runtime_groups(self) -> tuple[Group, ...]:
        """The requirements file that lists what the project needs to run, if it has one."""
        return tuple(g for g in self.groups if g.kind == "file" and g.name == RUNTIME_REQUIREMENTS)

    def needs(self, groups: Iterable[Group] = ()) -> tuple[str, ...]:
        """Its plain dependencies and those of ``groups`` (its own name left out)."""
        needed = list(self.dependencies or ())
        for group in groups:
            needed += group.requirements
        return tuple(name for name in dict.fromkeys(needed) if name != self.name)


def read_project(
    unit_dir: Path,
    workspace: Path,
    pyproject: dict[str, Any],
    setup_cfg: configparser.ConfigParser | None,
) -> PythonProject:
    """What the unit's manifests say about its distribution, its needs and its installer."""
    project = dig(pyproject, "project")
    poetry = dig(pyproject, "tool", "poetry")
    name: str | None = None
    dependencies: tuple[str, ...] | None = ()
    if isinstance(project, dict):
        if isinstance(project.get("name"), str):
            name = normalize(project["name"])
        if "dependencies" in strings(project.get("dynamic")):
            dependencies = None
        else:
            dependencies = _names(strings(project.get("dependencies")))
    if isinstance(poetry, dict):
        if name is None and isinstance(poetry.get("name"), str):
            name = normalize(poetry["name"])
        if dependencies == ():
            dependencies = _poetry_names(poetry.get("dependencies"))
    if name is None and setup_cfg is not None and setup_cfg.has_option("metadata", "name"):
        name = normalize(setup_cfg.get("metadata", "name"))

    groups: list[Group] = []
    extras = dig(project, "optional-dependencies")
    dependency_groups = dig(pyproject, "dependency-groups")
    poetry_groups = dig(poetry, "group")
    if isinstance(extras, dict):
        groups += [Group("extra", str(k), _names(strings(v))) for k, v in extras.items()]
    if isinstance(dependency_groups, dict):
        groups += [
            Group("group", str(k), _names(_group(dependency_groups, k))) for k in dependency_groups
        ]
    if isinstance(poetry_groups, dict):
        groups += [
            Group("poetry-group", str(k), _poetry_names(dig(v, "dependencies")))
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
    )


def install_cure(
    project: PythonProject,
    venv: str | None,
    *,
    owned: bool = False,
    groups: Iterable[Group] = (),
    extra: tuple[str, ...] = (),
    create: str | None = None,
) -> str:
    """The command that installs the project, ``groups`` and ``extra`` where it will be used.

    The project's own manager when a lockfile (or a poetry-only pyproject) names
    one; otherwise pip into ``venv`` (the environment as people see it, ``owned``
    when it is the project's own ``.venv``/``venv``), creating ``.venv`` when
    ``venv`` is None, or into the venv folder ``create`` (a task runs
    ``create/bin/...``), creating it unless it is the project's. A dependency
    group needs pip 25.1 or newer (``--group``).
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
    if create is not None and not (owned and venv is not None and Path(venv).name == create):
        prefix = f"python3 -m venv {shlex.quote(create)} && "
        pip = f"{create}/bin/pip"
    elif venv is None:
        prefix = "python3 -m venv .venv && "
        pip = ".venv/bin/pip"
    else:
        pip = str(Path(venv) / "bin" / "pip")
    argv = [pip, "install"]
    if project.installable:
        argv += ["-e", "." + (f"[{','.join(extras)}]" if extras else "")]
    argv += [w for g in dependency_groups for w in ("--group", g)]
    argv += [*files, *extra]
    return prefix + shlex.join(argv)
