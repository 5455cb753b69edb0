"""Project setup: the check inversion applied to installs, migrations and seeds.

The caller names an intent (``install``, ``migrate`` or ``seed``) and a unit;
the command comes from the project, never from the caller. ``install`` resolves
from the lockfile (or a declared ``packageManager``) and refuses rather than
guesses when there is neither. ``migrate`` and ``seed`` run only the
project's own script of a name on a fixed per-intent allowlist, so neither can
become "run any script". The rows are data, like the check recipes; for a unit
and an intent the first applicable row wins, and ``recipes.compose`` builds
every command line.

The replay key binds consent to what the install reads: the lockfile, the
manifest and every install-affecting configuration file (``INSTALL_FILES``),
from the unit up to the workspace root, where package managers look for them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ax_check.facts import (
    JUSTFILE_NAMES,
    MAKEFILE_NAMES,
    Task,
    _justfile_tasks,
    _makefile_tasks,
    _npm_tasks,
)
from ax_check.recipes import Blocker, Command, file_digest, replay_key
from ax_check.toolchains import Toolchains
from ax_check.units import Unit, load_json_object
from libcommon.projectenv import NODE_MANAGERS, find_venv
from libcommon.pyproject_env import read_small

Intent = Literal["install", "migrate", "seed"]
INTENTS: tuple[Intent, ...] = ("install", "migrate", "seed")

# The only script names each intent may run, in order of preference; the same names
# for package.json scripts, justfile recipes and Makefile targets.
SCRIPT_NAMES: dict[Intent, tuple[str, ...]] = {
    "install": (),
    "migrate": ("migrate", "db:migrate", "db-migrate"),
    "seed": ("seed", "db:seed", "db-seed"),
}

# Files that choose what an install fetches and runs, per ecosystem: manifests,
# lockfiles and the package managers' own project configuration. The replay key
# covers each one found in the unit's folder or a folder above it in the workspace.
INSTALL_FILES: dict[str, tuple[str, ...]] = {
    "node": (
        "package.json",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "pnpm-lock.yaml",
        "pnpm-workspace.yaml",
        "yarn.lock",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
    ),
    "python": (
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "requirements.lock",
        "requirements-lock.txt",
        "requirements.txt",
        "uv.lock",
        "poetry.lock",
        "pdm.lock",
        "uv.toml",
        "poetry.toml",
        "pdm.toml",
        ".python-version",
        "pip.conf",
        ".venv/pip.conf",
        "venv/pip.conf",
    ),
    "rust": (
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        ".cargo/config",
        "rust-toolchain.toml",
        "rust-toolchain",
    ),
    "go": ("go.mod", "go.sum", "go.work", "go.work.sum"),
}
# A migration or seed is decided by the file that declares its script.
SCRIPT_FILES: tuple[str, ...] = ("package.json", *JUSTFILE_NAMES, *MAKEFILE_NAMES)

# Requirements files read as a lock, in order. Every line must pin one version.
REQUIREMENTS_LOCKS: tuple[str, ...] = (
    "requirements.lock",
    "requirements-lock.txt",
    "requirements.txt",
)
# pip options a lock may carry: each is in the hashed file, and none names another file.
_LOCK_OPTIONS = frozenset(
    {
        "--hash",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--trusted-host",
        "--only-binary",
        "--no-binary",
        "--prefer-binary",
        "--require-hashes",
    }
)
_PINNED = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,\s-]*\])?\s*===?\s*[^\s;,<>=!~*]+\s*(;.*)?$"
)
# `yarnPath: .yarn/releases/yarn-4.cjs` and a plugin's `path: .yarn/plugins/x.cjs` in a
# .yarnrc.yml name code yarn runs at every install: the key covers those files too.
_YARN_CODE = re.compile(r"^\s*(?:yarnPath|-?\s*path)\s*:\s*[\"']?([^\"'\s#]+)", re.MULTILINE)
NODE_LOCKS: dict[str, tuple[str, ...]] = {
    "npm": ("package-lock.json", "npm-shrinkwrap.json"),
    "pnpm": ("pnpm-lock.yaml",),
    "yarn": ("yarn.lock",),
}


@dataclass
class SetupFacts:
    """What the setup rows ask about one unit (stat and small reads only)."""

    workspace: Path
    unit: Unit
    toolchains: Toolchains
    package_json: dict[str, Any] | None = None
    # package.json's `packageManager` name (npm, pnpm, yarn), from the unit or above.
    declared_manager: str | None = None
    declared_version: str = ""
    venv: Path | None = None
    scripts: dict[str, dict[str, Task]] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.unit.path

    def folders(self) -> list[Path]:
        """The unit's folder, then each folder above it up to the workspace root."""
        found = [self.directory]
        for parent in self.directory.parents:
            if parent == self.workspace or self.workspace in parent.parents:
                found.append(parent)
        return found

    def find_up(self, names: tuple[str, ...]) -> Path | None:
        """The first of ``names`` in the nearest folder holding one, up to the workspace."""
        for folder in self.folders():
            for name in names:
                if (folder / name).is_file():
                    return folder / name
        return None

    def here(self, names: tuple[str, ...]) -> Path | None:
        return next((self.directory / n for n in names if (self.directory / n).is_file()), None)


def gather_setup_facts(workspace: Path, unit: Unit, toolchains: Toolchains) -> SetupFacts:
    facts = SetupFacts(workspace=workspace, unit=unit, toolchains=toolchains)
    for folder in facts.folders():
        package = load_json_object(folder / "package.json")
        if package is None:
            continue
        if facts.package_json is None and folder == facts.directory:
            facts.package_json = package
        declared = package.get("packageManager")
        if facts.declared_manager is None and isinstance(declared, str):
            name, _, version = declared.partition("@")
            if name in NODE_MANAGERS:
                facts.declared_manager, facts.declared_version = name, version
    if facts.package_json is not None:
        facts.scripts["package.json script"] = _npm_tasks(facts.package_json)
    for names, reader, source in (
        (JUSTFILE_NAMES, _justfile_tasks, "justfile recipe"),
        (MAKEFILE_NAMES, _makefile_tasks, "Makefile target"),
    ):
        for name in names:
            text = read_small(facts.directory / name)
            if text is not None:
                facts.scripts[source] = reader(text)
                break
    facts.venv = find_venv(facts.directory, workspace)
    return facts


Applies = Callable[[SetupFacts], bool]
Precondition = Callable[[SetupFacts], "Blocker | None"]
Builder = Callable[[SetupFacts], Command]


@dataclass(frozen=True)
class SetupRow:
    id: str
    intent: Intent
    ecosystem: str
    applies: Applies
    applies_text: str
    precondition: Precondition
    build: Builder
    command_text: str


def _needs(program: str) -> Precondition:
    def check(facts: SetupFacts) -> Blocker | None:
        if facts.toolchains.find(program) is None:
            return Blocker("toolchain-unavailable", f"{program} is not on PATH")
        return None

    return check


def _fixed(*argv: str) -> Builder:
    return lambda facts: Command(tuple(argv))


# --- install: Node --------------------------------------------------------------


def _yarn_berry(facts: SetupFacts) -> bool:
    """Yarn 2+ (berry): a .yarnrc.yml, or a packageManager naming yarn 2 or later."""
    if facts.find_up((".yarnrc.yml",)) is not None:
        return True
    version = facts.declared_version
    return facts.declared_manager == "yarn" and version[:1].isdigit() and version[0] != "1"


def _node_lock_row(
    row_id: str, manager: str, argv: tuple[str, ...], applies: Applies, text: str
) -> SetupRow:
    def precondition(facts: SetupFacts) -> Blocker | None:
        declared = facts.declared_manager
        if declared is not None and declared != manager:
            lock = facts.find_up(NODE_LOCKS[manager])
            assert lock is not None
            return Blocker(
                "precondition",
                f"package.json declares packageManager {declared}, but the lockfile is "
                f"{lock.name} ({manager}'s); ax does not choose between them",
                cure=f"remove the stale lockfile, or fix packageManager to {manager}",
            )
        return _needs(manager)(facts)

    return SetupRow(
        row_id,
        "install",
        "node",
        applies,
        text,
        precondition,
        _fixed(*argv),
        " ".join(argv),
    )


def _has_lock(manager: str) -> Applies:
    return lambda facts: facts.find_up(NODE_LOCKS[manager]) is not None


def _declared_row() -> SetupRow:
    def applies(facts: SetupFacts) -> bool:
        return facts.package_json is not None and facts.declared_manager is not None

    def build(facts: SetupFacts) -> Command:
        assert facts.declared_manager is not None
        return Command((facts.declared_manager, "install"))

    def precondition(facts: SetupFacts) -> Blocker | None:
        assert facts.declared_manager is not None
        return _needs(facts.declared_manager)(facts)

    return SetupRow(
        "setup.node-declared",
        "install",
        "node",
        applies,
        "package.json declares packageManager (npm, pnpm or yarn) and no lockfile exists",
        precondition,
        build,
        "<packageManager> install",
    )


# --- install: Python --------------------------------------------------------------


def _lock_problem(text: str) -> str | None:
    """Why a requirements file is not a lock (every requirement pinned ``==``), or None."""
    joined = text.replace("\\\n", " ")
    for number, raw in enumerate(joined.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if line.startswith("-"):
            option = words[0].split("=", 1)[0]
            if option not in _LOCK_OPTIONS:
                return f"line {number} ({words[0]}) names another source or file"
            continue
        requirement = " ".join(w for w in words if not w.startswith("--hash"))
        if not _PINNED.match(requirement):
            return f"line {number} ({line[:80]}) does not pin one version with =="
    return None


def _requirements_lock(facts: SetupFacts) -> Path | None:
    return facts.here(REQUIREMENTS_LOCKS)


def _pip_precondition(facts: SetupFacts) -> Blocker | None:
    lock = _requirements_lock(facts)
    assert lock is not None
    text = read_small(lock)
    problem = "it cannot be read" if text is None else _lock_problem(text)
    if problem is not None:
        return Blocker(
            "precondition",
            f"{lock.name} is not a lock: {problem}; ax installs only pinned requirements",
            cure="pin every requirement (e.g. pip-compile, uv pip compile or pip freeze)",
        )
    if facts.venv is None:
        return Blocker(
            "precondition-curable",
            "the project has no virtualenv (.venv or venv in the unit or the workspace "
            "root); ax installs only into the project's own environment",
            cure="python3 -m venv .venv",
        )
    return None


def _pip_build(facts: SetupFacts) -> Command:
    lock = _requirements_lock(facts)
    assert lock is not None
    venv = facts.venv if facts.venv is not None else facts.directory / ".venv"
    # Relative to the unit, where it runs: the key then holds no checkout's absolute path.
    python = os.path.relpath(venv / "bin" / "python", facts.directory)
    python = python if python.startswith("..") else f"./{python}"
    return Command((python, "-m", "pip", "install", "--no-input", "-r", lock.name))


def _python_row(row_id: str, lock: str, argv: tuple[str, ...]) -> SetupRow:
    return SetupRow(
        row_id,
        "install",
        "python",
        lambda facts: facts.find_up((lock,)) is not None,
        f"{lock} exists",
        _needs(argv[0]),
        _fixed(*argv),
        " ".join(argv),
    )


# --- migrate and seed: the project's own scripts -------------------------------------


def _own_script(facts: SetupFacts, intent: Intent) -> tuple[str, Task] | None:
    """The first allowlisted script for ``intent``: package.json, then justfile, then make."""
    for source in ("package.json script", "justfile recipe", "Makefile target"):
        tasks = facts.scripts.get(source, {})
        for name in SCRIPT_NAMES[intent]:
            if name in tasks:
                return source, tasks[name]
    return None


def _script_argv(facts: SetupFacts, source: str, name: str) -> tuple[str, ...]:
    if source == "justfile recipe":
        return ("just", name)
    if source == "Makefile target":
        return ("make", name)
    manager = facts.declared_manager
    if manager is None:
        lock = facts.find_up(tuple(n for names in NODE_LOCKS.values() for n in names))
        owner = {n: m for m, names in NODE_LOCKS.items() for n in names}
        manager = owner[lock.name] if lock is not None else "npm"
    return (manager, "run", name)


def _script_row(intent: Intent) -> SetupRow:
    def build(facts: SetupFacts) -> Command:
        found = _own_script(facts, intent)
        assert found is not None
        source, task = found
        return Command(_script_argv(facts, source, task.name), task.body)

    def precondition(facts: SetupFacts) -> Blocker | None:
        return _needs(build(facts).argv[0])(facts)

    names = "/".join(SCRIPT_NAMES[intent])
    return SetupRow(
        f"setup.script-{intent}",
        intent,
        "script",
        lambda facts: _own_script(facts, intent) is not None,
        f"package.json has a script, the justfile a recipe, or the Makefile a target named {names}",
        precondition,
        build,
        "<npm|pnpm|yarn> run <name> | just <name> | make <name>",
    )


def _table() -> tuple[SetupRow, ...]:
    return (
        _node_lock_row(
            "setup.pnpm",
            "pnpm",
            ("pnpm", "install", "--frozen-lockfile"),
            _has_lock("pnpm"),
            "pnpm-lock.yaml in the unit or above it",
        ),
        _node_lock_row(
            "setup.yarn-berry",
            "yarn",
            ("yarn", "install", "--immutable"),
            lambda facts: _has_lock("yarn")(facts) and _yarn_berry(facts),
            "yarn.lock and yarn 2+ (a .yarnrc.yml, or packageManager yarn@2 or later)",
        ),
        _node_lock_row(
            "setup.yarn-classic",
            "yarn",
            ("yarn", "install", "--frozen-lockfile"),
            _has_lock("yarn"),
            "yarn.lock (yarn 1)",
        ),
        _node_lock_row(
            "setup.npm-ci",
            "npm",
            ("npm", "ci"),
            _has_lock("npm"),
            "package-lock.json or npm-shrinkwrap.json in the unit or above it",
        ),
        _declared_row(),
        _python_row("setup.uv", "uv.lock", ("uv", "sync", "--locked")),
        _python_row("setup.poetry", "poetry.lock", ("poetry", "install")),
        _python_row("setup.pdm", "pdm.lock", ("pdm", "sync")),
        SetupRow(
            "setup.pip-lock",
            "install",
            "python",
            lambda facts: _requirements_lock(facts) is not None,
            f"{', '.join(REQUIREMENTS_LOCKS)} in the unit, every requirement pinned with ==",
            _pip_precondition,
            _pip_build,
            "<venv>/bin/python -m pip install --no-input -r <lock>",
        ),
        SetupRow(
            "setup.cargo-fetch",
            "install",
            "rust",
            lambda facts: facts.find_up(("Cargo.lock",)) is not None,
            "Cargo.lock in the unit or above it",
            _needs("cargo"),
            _fixed("cargo", "fetch", "--locked"),
            "cargo fetch --locked",
        ),
        SetupRow(
            "setup.go-download",
            "install",
            "go",
            lambda facts: facts.here(("go.sum",)) is not None,
            "go.sum in the unit",
            _needs("go"),
            _fixed("go", "mod", "download"),
            "go mod download",
        ),
        _script_row("migrate"),
        _script_row("seed"),
    )


SETUP_ROWS: tuple[SetupRow, ...] = _table()


@dataclass(frozen=True)
class SetupResolved:
    row: SetupRow
    unit_id: str
    command: Command
    # (workspace-relative path, digest) of every file the key covers.
    files: tuple[tuple[str, str], ...]

    @property
    def recipe_id(self) -> str:
        return f"{self.row.id}@{self.unit_id}"

    @property
    def replay_key(self) -> str:
        return replay_key(self.recipe_id, self.command.display, self.command.body, self.files)


def _yarn_code(config: Path, workspace: Path) -> list[Path]:
    """The files a .yarnrc.yml runs at install: its ``yarnPath`` release and plugin paths."""
    text = read_small(config)
    found = []
    for match in _YARN_CODE.finditer(text or ""):
        target = Path(os.path.normpath(config.parent / match.group(1)))
        if workspace in target.parents:
            found.append(target)
    return found


def covered_files(facts: SetupFacts, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(workspace-relative path, digest) of each of ``names`` from the unit up to the root,
    and of the code a ``.yarnrc.yml`` among them points yarn at."""
    found: dict[str, str] = {}
    for folder in facts.folders():
        paths = [folder / name for name in names]
        if ".yarnrc.yml" in names:
            paths += _yarn_code(folder / ".yarnrc.yml", facts.workspace)
        for path in paths:
            digest = file_digest(path)
            if digest is not None:
                found[path.relative_to(facts.workspace).as_posix()] = digest
    return tuple(found.items())


def _no_install(facts: SetupFacts) -> Blocker:
    locks = [
        *(n for names in NODE_LOCKS.values() for n in names),
        "uv.lock",
        "poetry.lock",
        "pdm.lock",
        *REQUIREMENTS_LOCKS,
        "Cargo.lock",
        "go.sum",
    ]
    declared = (
        "package.json declares no packageManager"
        if facts.package_json is not None
        else "no package.json declares a packageManager"
    )
    return Blocker(
        "no-recipe",
        f"unit {facts.unit.id} has no lockfile ({', '.join(locks)}) and {declared}; "
        "ax does not guess an install command",
        cure="commit a lockfile (npm install --package-lock-only, uv lock, poetry lock, "
        "cargo generate-lockfile, ...) or declare packageManager in package.json",
    )


def resolve_setup(facts: SetupFacts, intent: Intent) -> SetupResolved | Blocker:
    """The first applicable row for ``intent`` in this unit, or why nothing may run."""
    for row in SETUP_ROWS:
        if row.intent != intent or not row.applies(facts):
            continue
        qualified = f"{row.id}@{facts.unit.id}"
        blocker = row.precondition(facts)
        command = row.build(facts)
        if blocker is not None:
            return Blocker(blocker.reason, blocker.message, blocker.cure, qualified, command)
        names = SCRIPT_FILES if row.ecosystem == "script" else INSTALL_FILES[row.ecosystem]
        return SetupResolved(row, facts.unit.id, command, covered_files(facts, names))
    if intent == "install":
        return _no_install(facts)
    allowed = "/".join(SCRIPT_NAMES[intent])
    return Blocker(
        "no-recipe",
        f"unit {facts.unit.id} declares no {intent} script: ax runs only a package.json "
        f"script, justfile recipe or Makefile target named {allowed}, never another",
        cure=f"add a script named {SCRIPT_NAMES[intent][0]} to the project",
    )
