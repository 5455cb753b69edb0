"""What the recipe table needs to know about one unit, read from its files.

Everything here is stat or a read of a small file: the project's own tasks
(justfile recipes, Makefile targets, tox envs, hatch/pdm scripts, package.json
scripts) with the text each one runs, which linters and type checkers the
project configures, its virtualenv and its Node package manager (the last two by
libcommon.projectenv's rule, which ax-preview shares).
"""

from __future__ import annotations

import configparser
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ax_check.installation import PythonProject, installed_distributions, read_project
from ax_check.toolchains import ChildEnv, PythonEnv, Toolchains, child_env, python_env
from ax_check.units import MAX_MANIFEST_BYTES, Unit, load_json_object, load_toml, read_small
from libcommon.projectenv import NodeEnv, node_env

JUSTFILE_NAMES: tuple[str, ...] = ("justfile", "Justfile", ".justfile")
MAKEFILE_NAMES: tuple[str, ...] = ("GNUmakefile", "makefile", "Makefile")
_JUST_HEADER = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:\s+[^:=]*)?:(?!=)")
_JUST_KEYWORDS = frozenset({"set", "alias", "export", "import", "mod"})
_MAKE_HEADER = re.compile(r"^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*::?(?!=)")


@dataclass(frozen=True)
class Task:
    """A project-declared task: the name to run and the text that decides what it does."""

    name: str
    body: str


@dataclass
class UnitFacts:
    workspace: Path
    unit: Unit
    toolchains: Toolchains
    # Ecosystem -> why its manifest could not be read (the rows of that ecosystem refuse).
    problems: dict[str, str] = field(default_factory=dict)
    pyproject: dict[str, Any] = field(default_factory=dict)
    setup_cfg: configparser.ConfigParser | None = None
    package_json: dict[str, Any] | None = None
    just: dict[str, Task] = field(default_factory=dict)
    make: dict[str, Task] = field(default_factory=dict)
    tox: dict[str, Task] = field(default_factory=dict)
    hatch: dict[str, Task] = field(default_factory=dict)
    pdm: dict[str, Task] = field(default_factory=dict)
    npm_scripts: dict[str, Task] = field(default_factory=dict)
    tool_config: set[str] = field(default_factory=set)
    python: PythonEnv | None = None
    project: PythonProject | None = None
    node: NodeEnv | None = None
    # What every command of the unit sees (its PATH is also what `toolchains` searches).
    child: ChildEnv | None = None

    @property
    def ecosystems(self) -> tuple[str, ...]:
        return self.unit.ecosystems

    @property
    def directory(self) -> Path:
        return self.unit.path


def _justfile_tasks(text: str) -> dict[str, Task]:
    # The whole file is the body: a recipe can call others and read variables and settings.
    tasks: dict[str, Task] = {}
    for line in text.splitlines():
        if not line or line[0].isspace() or line.startswith(("#", "[")):
            continue
        match = _JUST_HEADER.match(line)
        if match and match.group(1) not in _JUST_KEYWORDS:
            tasks.setdefault(match.group(1), Task(match.group(1), text))
    return tasks


def _makefile_tasks(text: str) -> dict[str, Task]:
    # The whole file is the body: prerequisites, variables and includes change what runs.
    tasks: dict[str, Task] = {}
    for line in text.splitlines():
        if not line or line[0] in "\t #":
            continue
        match = _MAKE_HEADER.match(line)
        if not match:
            continue
        for name in match.group(1).split():
            if not name.startswith("."):
                tasks.setdefault(name, Task(name, text))
    return tasks


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _tox_ini_tasks(text: str) -> dict[str, Task]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return {}
    base = dict(parser["testenv"]) if parser.has_section("testenv") else {}
    tasks: dict[str, Task] = {}
    for section in parser.sections():
        if section.startswith("testenv:"):
            for name in section[len("testenv:") :].split(","):
                env = name.strip()
                body = _canonical({"base": base, "env": dict(parser[section])})
                tasks.setdefault(env, Task(env, body))
    return tasks


def _tox_table_tasks(config: dict[str, Any]) -> dict[str, Task]:
    envs = config.get("env")
    base = config.get("env_run_base", {})
    if not isinstance(envs, dict):
        return {}
    return {
        name: Task(name, _canonical({"base": base, "env": table}))
        for name, table in envs.items()
        if isinstance(table, dict)
    }


def _script_tasks(table: Any) -> dict[str, Task]:
    if not isinstance(table, dict):
        return {}
    return {str(name): Task(str(name), _canonical(value)) for name, value in table.items()}


def _dig(document: dict[str, Any], *keys: str) -> Any:
    value: Any = document
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _npm_tasks(package: dict[str, Any]) -> dict[str, Task]:
    scripts = package.get("scripts")
    if not isinstance(scripts, dict):
        return {}
    tasks: dict[str, Task] = {}
    for name, value in scripts.items():
        if not isinstance(value, str):
            continue
        # `npm run x` also runs prex and postx: they are part of what x does.
        body = _canonical({stage: scripts.get(f"{stage}{name}") for stage in ("pre", "", "post")})
        tasks[name] = Task(name, body)
    return tasks


def _python_tool_config(
    unit_dir: Path, pyproject: dict[str, Any], cfg: configparser.ConfigParser | None
) -> set[str]:
    """Which of ruff, flake8, black, mypy, pyright the project configures."""
    tools = _dig(pyproject, "tool") or {}
    found = {name for name in ("ruff", "black", "mypy", "pyright", "flake8") if name in tools}
    if (unit_dir / "ruff.toml").is_file() or (unit_dir / ".ruff.toml").is_file():
        found.add("ruff")
    if (unit_dir / ".flake8").is_file():
        found.add("flake8")
    if (unit_dir / "mypy.ini").is_file() or (unit_dir / ".mypy.ini").is_file():
        found.add("mypy")
    if (unit_dir / "pyrightconfig.json").is_file():
        found.add("pyright")
    if cfg is not None:
        if cfg.has_section("flake8"):
            found.add("flake8")
        if cfg.has_section("mypy"):
            found.add("mypy")
    tox_ini = read_small(unit_dir / "tox.ini")
    if tox_ini is not None and re.search(r"^\[flake8\]", tox_ini, re.MULTILINE):
        found.add("flake8")
    mypy = _dig(pyproject, "tool", "mypy")
    if isinstance(mypy, dict) and (mypy.get("files") or mypy.get("packages")):
        found.add("mypy-targets")
    return found


def _read_failure(notes: list[str], name: str) -> str:
    """The note a failed read left, or why a read can fail without one."""
    if notes:
        return notes[-1]
    return (
        f"{name} could not be read (missing, unreadable or larger than {MAX_MANIFEST_BYTES} bytes)"
    )


def _python_facts(facts: UnitFacts) -> None:
    directory = facts.directory
    notes: list[str] = []
    if "pyproject.toml" in facts.unit.manifests:
        pyproject = load_toml(directory / "pyproject.toml", notes)
        if pyproject is None:
            facts.problems["python"] = _read_failure(notes, "pyproject.toml")
        facts.pyproject = pyproject or {}
    cfg_text = read_small(directory / "setup.cfg")
    if cfg_text is not None:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(cfg_text)
            facts.setup_cfg = parser
        except configparser.Error as exc:
            facts.problems.setdefault("python", f"setup.cfg: not valid ({exc})")
    facts.tool_config = _python_tool_config(directory, facts.pyproject, facts.setup_cfg)
    python = python_env(directory, facts.workspace, facts.toolchains.variables)
    facts.project = read_project(directory, facts.workspace, facts.pyproject, facts.setup_cfg)
    name = facts.project.name
    if (
        python.source == "ax-check"
        and python.venv is not None
        and name is not None
        and name in installed_distributions(python.site_dirs)
    ):
        # ax-check runs in a venv the project is installed in: that venv is the project's.
        python = replace(python, on_path=True)
    facts.python = python
    for name in JUSTFILE_NAMES:
        text = read_small(directory / name)
        if text is not None:
            facts.just = _justfile_tasks(text)
            break
    for name in MAKEFILE_NAMES:
        text = read_small(directory / name)
        if text is not None:
            facts.make = _makefile_tasks(text)
            break
    tox_toml = load_toml(directory / "tox.toml")
    tox_ini = read_small(directory / "tox.ini")
    tox_in_pyproject = _dig(facts.pyproject, "tool", "tox")
    legacy = _dig(facts.pyproject, "tool", "tox", "legacy_tox_ini")
    if tox_toml is not None:
        facts.tox = _tox_table_tasks(tox_toml)
    elif tox_ini is not None:
        facts.tox = _tox_ini_tasks(tox_ini)
    elif isinstance(legacy, str):
        facts.tox = _tox_ini_tasks(legacy)
    elif isinstance(tox_in_pyproject, dict):
        facts.tox = _tox_table_tasks(tox_in_pyproject)
    facts.hatch = _script_tasks(
        _dig(facts.pyproject, "tool", "hatch", "envs", "default", "scripts")
    )
    pdm = _script_tasks(_dig(facts.pyproject, "tool", "pdm", "scripts"))
    # `_` holds options shared by pdm's scripts, not a script.
    facts.pdm = {name: task for name, task in pdm.items() if name != "_"}


def _node_facts(facts: UnitFacts) -> None:
    notes: list[str] = []
    package = load_json_object(facts.directory / "package.json", notes)
    if package is None:
        facts.problems["node"] = _read_failure(notes, "package.json")
        return
    facts.package_json = package
    facts.npm_scripts = _npm_tasks(package)
    facts.node = node_env(facts.directory, facts.workspace, package)


def gather_facts(workspace: Path, unit: Unit, toolchains: Toolchains) -> UnitFacts:
    """Read what the recipe rows of the unit's ecosystems ask about (stat and small reads)."""
    facts = UnitFacts(workspace=workspace, unit=unit, toolchains=toolchains)
    if "python" in unit.ecosystems:
        _python_facts(facts)
    if "node" in unit.ecosystems:
        _node_facts(facts)
    if "rust" in unit.ecosystems:
        notes: list[str] = []
        if load_toml(unit.path / "Cargo.toml", notes) is None:
            facts.problems["rust"] = _read_failure(notes, "Cargo.toml")
    facts.child = child_env(toolchains.environ, facts.python)
    facts.toolchains = Toolchains(path=facts.child.path, environ=toolchains.environ)
    return facts
