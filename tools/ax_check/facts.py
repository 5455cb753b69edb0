"""What the recipe table needs to know about one unit, read from its files.

Everything here is stat or a read of a small file: the project's own tasks
(justfile recipes, Makefile targets, tox envs, nox sessions, hatch/pdm scripts,
package.json scripts) with the text each one runs, which linters and type
checkers the project configures, its virtualenv and its Node package manager
(the last two by libcommon.projectenv's rule, which ax-preview shares).
A noxfile is parsed, never imported or run.
"""

from __future__ import annotations

import ast
import configparser
import itertools
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ax_check.installation import ProjectForTests, read_project
from ax_check.toolchains import PythonEnv, Toolchains, child_env, python_env
from ax_check.units import Unit, load_json_object, load_toml
from libcommon.projectenv import ChildEnv, NodeEnv, node_env
from libcommon.pyproject_env import (
    MAX_MANIFEST_BYTES,
    installed_distributions,
    parse_setup_cfg,
    read_small,
)

JUSTFILE_NAMES: tuple[str, ...] = ("justfile", "Justfile", ".justfile")
MAKEFILE_NAMES: tuple[str, ...] = ("GNUmakefile", "makefile", "Makefile")
_JUST_HEADER = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:\s+[^:=]*)?:(?!=)")
_JUST_KEYWORDS = frozenset({"set", "alias", "export", "import", "mod"})
_MAKE_HEADER = re.compile(r"^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*::?(?!=)")
NOXFILE = "noxfile.py"
# A tox factor naming a CPython version: py, py3, py311, py3.11, python3.11, cpython311.
_PY_FACTOR = re.compile(r"^(?:py|python|cpython)(?:(?P<major>[23])(?:\.?(?P<minor>\d+))?)?$")
_PYPY_FACTOR = re.compile(r"^pypy\d*(?:\.?\d+)?$")
_ENV_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
# Names shown for one group of passed-over tasks before the rest is counted.
PASSED_OVER_NAMES_SHOWN = 6


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
    nox: dict[str, Task] = field(default_factory=dict)
    hatch: dict[str, Task] = field(default_factory=dict)
    pdm: dict[str, Task] = field(default_factory=dict)
    npm_scripts: dict[str, Task] = field(default_factory=dict)
    tool_config: set[str] = field(default_factory=set)
    python: PythonEnv | None = None
    project: ProjectForTests | None = None
    node: NodeEnv | None = None
    # What every command of the unit sees (its PATH is also what `toolchains` searches).
    child: ChildEnv | None = None
    # Tasks that were seen and not offered under any name, each with why (a tox env or
    # nox session for another Python, a noxfile that could not be parsed, ...).
    passed_over: list[str] = field(default_factory=list)
    # A Cargo workspace root with member units: its recipes cover the whole workspace.
    cargo_workspace: bool = False
    # A Node workspace root: each member unit's id and its package.json scripts.
    node_members: dict[str, dict[str, Task]] = field(default_factory=dict)

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


def _split_outside_braces(text: str) -> list[str]:
    """Items separated by commas or newlines that are not inside ``{...}``."""
    items: list[str] = []
    depth = 0
    current = ""
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char in ",\n" and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return [item for item in items if item and not item.startswith("#")]


def expand_env_names(expression: str) -> list[str] | None:
    """tox's generative names: ``py3{10,11}-tests`` -> py310-tests, py311-tests.

    Brace groups hold comma-separated alternatives or a closed numeric range
    (``{10-13}``); None for what is not interpreted (an open range, nested braces).
    """
    choices: list[list[str]] = []
    for part in re.split(r"(\{[^{}]*\})", expression.strip()):
        if part.startswith("{") and part.endswith("}"):
            alternatives: list[str] = []
            for raw in part[1:-1].split(","):
                item = raw.strip()
                bounds = re.fullmatch(r"(\d+)-(\d+)", item)
                if bounds is not None:
                    first, last = int(bounds.group(1)), int(bounds.group(2))
                    step = 1 if first <= last else -1
                    alternatives += [str(n) for n in range(first, last + step, step)]
                elif re.fullmatch(r"\d*-\d*", item):
                    return None
                else:
                    alternatives.append(item)
            choices.append(alternatives)
        elif "{" in part or "}" in part:
            return None
        else:
            choices.append([part])
    names = ["".join(combination) for combination in itertools.product(*choices)]
    return names if all(_ENV_NAME.match(name) for name in names) else None


def _env_names(expression: str, source: str, notes: list[str]) -> list[str]:
    names: list[str] = []
    for item in _split_outside_braces(expression):
        expanded = expand_env_names(item)
        if expanded is None:
            notes.append(f"{source}: env name {item!r} is not interpreted; its envs are not used")
        names += expanded or []
    return names


def _tox_ini_tasks(text: str, notes: list[str], core: str = "tox") -> dict[str, Task]:
    """Every env tox.ini defines (its env list and its [testenv:...] sections) by name.

    ``core`` is the section holding the env list: ``tox``, or ``tox:tox`` in setup.cfg.
    """
    try:
        parser = parse_setup_cfg(text)
    except configparser.Error:
        return {}
    base = dict(parser["testenv"]) if parser.has_section("testenv") else {}
    tasks: dict[str, Task] = {}
    for section in parser.sections():
        if section.startswith("testenv:"):
            for env in _env_names(section[len("testenv:") :], "tox.ini section", notes):
                body = _canonical({"base": base, "env": dict(parser[section])})
                tasks.setdefault(env, Task(env, body))
    if parser.has_section(core):
        listed = parser[core].get("envlist", parser[core].get("env_list", ""))
        for env in _env_names(listed, "tox.ini envlist", notes):
            tasks.setdefault(env, Task(env, _canonical({"base": base, "env": {}})))
    return tasks


def _toml_env_list(items: Any, notes: list[str]) -> list[str]:
    """A TOML ``env_list``: names, and product tables of lists or closed ranges."""
    names: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str):
            names += _env_names(item, "tox env_list", notes)
            continue
        groups: list[list[str]] = []
        product = item.get("product") if isinstance(item, dict) else None
        for group in product if isinstance(product, list) else [None]:
            if isinstance(group, list) and all(isinstance(value, str) for value in group):
                groups.append(list(group))
            elif (
                isinstance(group, dict)
                and isinstance(group.get("prefix"), str)
                and isinstance(group.get("start"), int)
                and isinstance(group.get("stop"), int)
            ):
                prefix, start, stop = group["prefix"], group["start"], group["stop"]
                groups.append([f"{prefix}{n}" for n in range(start, stop + 1)])
            else:
                notes.append(f"tox env_list: entry {item!r} is not interpreted; its envs not used")
                groups = []
                break
        excluded = item.get("exclude") if isinstance(item, dict) else None
        for combination in itertools.product(*groups) if groups else ():
            name = "-".join(combination)
            if not (isinstance(excluded, list) and name in excluded):
                names.append(name)
    return names


def _tox_table_tasks(config: dict[str, Any], notes: list[str]) -> dict[str, Task]:
    envs = config.get("env")
    base = config.get("env_run_base", {})
    tasks = {
        name: Task(name, _canonical({"base": base, "env": table}))
        for name, table in (envs.items() if isinstance(envs, dict) else ())
        if isinstance(table, dict)
    }
    for name in _toml_env_list(config.get("env_list"), notes):
        tasks.setdefault(name, Task(name, _canonical({"base": base, "env": {}})))
    return tasks


def _python_factor(factor: str) -> tuple[int | None, int | None] | None:
    """(major, minor) a tox factor asks for (None for "any"), or None if it names no Python."""
    match = _PY_FACTOR.match(factor)
    if match is None:
        return None
    major = match.group("major")
    minor = match.group("minor")
    return (int(major) if major else None, int(minor) if minor else None)


def _fits(wanted: tuple[int | None, int | None], version: tuple[int, int]) -> bool:
    return all(part is None or part == have for part, have in zip(wanted, version, strict=True))


def _shown(names: list[str]) -> str:
    extra = len(names) - PASSED_OVER_NAMES_SHOWN
    listed = ", ".join(names[:PASSED_OVER_NAMES_SHOWN])
    return f"{listed} and {extra} more" if extra > 0 else listed


def _tox_roles(
    envs: dict[str, Task], version: tuple[int, int], passed_over: list[str]
) -> dict[str, Task]:
    """tox envs by the name of what they do (``py311-tests`` does ``tests``).

    Of the envs that do the same thing, the one without a Python factor wins, else the
    one for the unit's interpreter; envs only for other Pythons are passed over. Envs
    named by a Python factor alone (``py311``) run the tests, tox's own convention.
    """
    groups: dict[str, list[tuple[str, int]]] = {}
    for name in envs:
        what: list[str] = []
        rank = 0  # 0: no Python factor, 1: this interpreter exactly, 2: any Python, 3: other
        for factor in name.split("-"):
            wanted = _python_factor(factor)
            if wanted is not None:
                fits = _fits(wanted, version)
                rank = max(rank, 3 if not fits else 1 if None not in wanted else 2)
            elif _PYPY_FACTOR.match(factor):
                rank = 3
            else:
                what.append(factor)
        groups.setdefault("-".join(what), []).append((name, rank))
    python = f"{version[0]}.{version[1]}"
    roles: dict[str, Task] = {}
    for role, members in groups.items():
        usable = sorted(((rank, name) for name, rank in members if rank < 3), key=lambda x: x[0])
        label = role or "the tests (tox's default env)"
        if not usable:
            names = [name for name, _rank in members]
            passed_over.append(
                f"tox envs {_shown(names)}: none is for Python {python}, the unit's interpreter"
            )
            continue
        chosen = usable[0][1]
        others = [name for name, _rank in members if name != chosen]
        if others:
            passed_over.append(f"tox envs {_shown(others)}: {chosen} runs {label} instead")
        roles[role] = envs[chosen]
    version_only = roles.pop("", None)
    if version_only is not None:
        if "test" in roles or "tests" in roles:
            passed_over.append(f"tox env {version_only.name}: a test env is named explicitly")
        else:
            roles["test"] = version_only
    return roles


def _session_decorator(node: ast.expr) -> ast.Call | bool:
    """The call of ``@nox.session(...)``, True for a bare ``@nox.session``, else False."""
    target = node.func if isinstance(node, ast.Call) else node
    named = (isinstance(target, ast.Attribute) and target.attr == "session") and (
        isinstance(target.value, ast.Name) and target.value.id == "nox"
    )
    if not (named or (isinstance(target, ast.Name) and target.id == "session")):
        return False
    return node if isinstance(node, ast.Call) else True


def _literal(node: ast.expr, constants: dict[str, Any]) -> tuple[bool, Any]:
    if isinstance(node, ast.Name):
        return (node.id in constants, constants.get(node.id))
    try:
        return True, ast.literal_eval(node)
    except ValueError:
        return False, None


def _nox_tasks(text: str, version: tuple[int, int], passed_over: list[str]) -> dict[str, Task]:
    """The sessions a noxfile declares, read from its syntax tree (never imported or run).

    A session parametrized over Pythons runs as ``NAME-X.Y`` for the unit's interpreter;
    one whose list leaves that version out is passed over.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        passed_over.append(f"{NOXFILE}: not valid Python ({exc}); its sessions are not read")
        return {}
    constants: dict[str, Any] = {}
    python = f"{version[0]}.{version[1]}"
    tasks: dict[str, Task] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            known, value = _literal(node.value, {})
            if isinstance(target, ast.Name) and known:
                constants[target.id] = value
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            call = _session_decorator(decorator)
            if call is False:
                continue
            name, pythons = node.name, None
            for keyword in call.keywords if isinstance(call, ast.Call) else []:
                known, value = _literal(keyword.value, constants)
                if keyword.arg == "name":
                    if not (known and isinstance(value, str)):
                        passed_over.append(
                            f"{NOXFILE}: the session at line {node.lineno} has a computed name"
                        )
                        name = ""
                    else:
                        name = value
                elif keyword.arg in ("python", "py") and known and isinstance(value, list | tuple):
                    pythons = [str(item) for item in value]
            if not name:
                continue
            if pythons is None or len(pythons) <= 1:
                tasks.setdefault(name, Task(name, text))
            elif python in pythons:
                tasks.setdefault(name, Task(f"{name}-{python}", text))
            else:
                passed_over.append(
                    f"nox session {name}: runs on Python {', '.join(pythons)}, "
                    f"not {python}, the unit's interpreter"
                )
    return tasks


def interpreter_version(python: PythonEnv) -> tuple[int, int]:
    """The unit interpreter's (major, minor): its venv's pyvenv.cfg, else ax-check's own."""
    if python.venv is not None:
        config = read_small(python.venv / "pyvenv.cfg") or ""
        for line in config.splitlines():
            key, _, value = line.partition("=")
            match = re.match(r"\s*(\d+)\.(\d+)", value)
            if key.strip() in ("version", "version_info") and match is not None:
                return int(match.group(1)), int(match.group(2))
    return sys.version_info[0], sys.version_info[1]


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
        try:
            facts.setup_cfg = parse_setup_cfg(cfg_text)
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
    version = interpreter_version(facts.python)
    tox_toml = load_toml(directory / "tox.toml")
    tox_ini = read_small(directory / "tox.ini")
    tox_in_pyproject = _dig(facts.pyproject, "tool", "tox")
    legacy = _dig(facts.pyproject, "tool", "tox", "legacy_tox_ini")
    envs: dict[str, Task] = {}
    if tox_toml is not None:
        envs = _tox_table_tasks(tox_toml, facts.passed_over)
    elif tox_ini is not None:
        envs = _tox_ini_tasks(tox_ini, facts.passed_over)
    elif facts.setup_cfg is not None and facts.setup_cfg.has_section("tox:tox"):
        envs = _tox_ini_tasks(cfg_text or "", facts.passed_over, core="tox:tox")
    elif isinstance(legacy, str):
        envs = _tox_ini_tasks(legacy, facts.passed_over)
    elif isinstance(tox_in_pyproject, dict):
        envs = _tox_table_tasks(tox_in_pyproject, facts.passed_over)
    facts.tox = _tox_roles(envs, version, facts.passed_over)
    noxfile = read_small(directory / NOXFILE)
    if noxfile is not None:
        facts.nox = _nox_tasks(noxfile, version, facts.passed_over)
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
    declares = "workspaces" in package or (facts.directory / "pnpm-workspace.yaml").is_file()
    for member in facts.unit.members if declares else ():
        if "package.json" in member.manifests:
            member_package = load_json_object(member.path / "package.json") or {}
            facts.node_members[member.id] = _npm_tasks(member_package)


def gather_facts(workspace: Path, unit: Unit, toolchains: Toolchains) -> UnitFacts:
    """Read what the recipe rows of the unit's ecosystems ask about (stat and small reads)."""
    facts = UnitFacts(workspace=workspace, unit=unit, toolchains=toolchains)
    if "python" in unit.ecosystems:
        _python_facts(facts)
    if "node" in unit.ecosystems:
        _node_facts(facts)
    if "rust" in unit.ecosystems:
        notes: list[str] = []
        cargo = load_toml(unit.path / "Cargo.toml", notes)
        if cargo is None:
            facts.problems["rust"] = _read_failure(notes, "Cargo.toml")
        facts.cargo_workspace = isinstance((cargo or {}).get("workspace"), dict) and any(
            "Cargo.toml" in member.manifests for member in unit.members
        )
    facts.child = child_env(toolchains.environ, facts.python)
    facts.toolchains = Toolchains(path=facts.child.path, environ=toolchains.environ)
    return facts
