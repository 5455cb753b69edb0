"""The recipe table: how each kind of check runs in each kind of project.

Each row is data: an id, the kind and ecosystem it serves, when it applies,
what must hold before it can run (and which typed reason says so when it does
not), and how its command line is built. For a unit and a kind the first
applicable row wins, and the project's own task rows come before the guessed
tool rows, so a project's declared ``test`` always beats a bare ``pytest``.
A row without a command is a hole: a deliberate "no recipe", with the reason.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_check.facts import JUSTFILE_NAMES, MAKEFILE_NAMES, Task, UnitFacts
from ax_check.installation import install_cure, missing_for_tests
from ax_check.models import KINDS, Ecosystem, Kind, Reason, RecipeRow
from ax_check.toolchains import PythonEnv
from ax_check.units import load_jsonc
from libcommon.pyproject_env import MAX_MANIFEST_BYTES, shown_list

# The task names that stand for each kind, in order of preference.
TASK_NAMES: dict[Kind, tuple[str, ...]] = {
    "build": ("build",),
    "test": ("test", "tests"),
    "test-targeted": (),
    "typecheck": ("typecheck", "type-check", "typing", "check-types", "types", "mypy", "tsc"),
    "lint": ("lint",),
    # Only names that promise a check: a bare `format` task usually rewrites files.
    "format": ("format-check", "fmt-check", "check-format", "format:check", "fmt:check"),
    "static-analysis": ("static-analysis", "analyze", "analyse"),
}
TARGET_PLACEHOLDER = "<target>"
# tsconfig files read (references and relative extends followed) to find tsc --build's outputs.
MAX_TSCONFIGS = 64
# The files of a unit that the table reads to choose a row of each ecosystem and build
# its command: manifests, task files and tool configuration. The replay key covers
# every one that exists (a Makefile without a `test` target is why pytest was guessed).
DECIDING_FILES: dict[Ecosystem, tuple[str, ...]] = {
    "python": (
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        *JUSTFILE_NAMES,
        *MAKEFILE_NAMES,
        "tox.ini",
        "tox.toml",
        "noxfile.py",
        "ruff.toml",
        ".ruff.toml",
        ".flake8",
        "mypy.ini",
        ".mypy.ini",
        "pyrightconfig.json",
    ),
    # pnpm-workspace.yaml makes a root's members count: their scripts run the whole workspace.
    "node": ("package.json", "tsconfig.json", "pnpm-workspace.yaml"),
    "rust": ("Cargo.toml",),
    "go": ("go.mod",),
    "cmake": ("CMakeLists.txt",),
}


@dataclass(frozen=True)
class Blocker:
    """Why a kind cannot run here, as a typed reason, a message and (maybe) a cure."""

    reason: Reason
    message: str
    cure: str | None = None
    recipe_id: str | None = None
    # The chosen row's command, had its precondition held: what runs once it is cured.
    command: Command | None = None


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    # The text that decides what the command does (a script, a recipe, a tox env);
    # empty for a guessed tool, whose behaviour is the tool's own.
    body: str = ""
    # Unit-relative folders a guessed command writes by design (tsc --build's outDirs):
    # what it writes there is build output, not a change to the sources (tree.py).
    outputs: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return compose(self.argv)


def compose(argv: tuple[str, ...]) -> str:
    """One shell-quoted command line; an argument a shell cannot show faithfully is refused."""
    for argument in argv:
        if any(ord(char) < 32 or ord(char) == 127 for char in argument):
            raise ValueError(f"argument {argument!r} holds a control character")
    return shlex.join(argv)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def replay_key(
    recipe_id: str, command: str, body: str, manifests: Sequence[tuple[str, str]]
) -> str:
    """``sha256(recipeId + command + sha256(body) + sha256(manifests))``, hex.

    Consent binds to exactly what runs, in exactly this project: ``manifests`` are
    the (workspace-relative path, content digest) pairs of the files that chose the
    recipe, listed one ``path NUL digest`` line each, sorted by path.
    """
    listing = "".join(f"{path}\0{digest}\n" for path, digest in sorted(manifests))
    return sha256_text(recipe_id + command + sha256_text(body) + sha256_text(listing))


def file_digest(path: Path) -> str | None:
    """The sha256 of a regular file's bytes, its size past the read cap, None when absent."""
    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            # Never read for the recipe either (facts treat it as missing), so its size says it.
            return f"size:{size}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def deciding_manifests(facts: UnitFacts, ecosystem: Ecosystem) -> tuple[tuple[str, str], ...]:
    """(workspace-relative path, digest) of each file of the unit that chose the recipe."""
    prefix = "" if facts.unit.id == "." else f"{facts.unit.id}/"
    found = []
    for name in DECIDING_FILES[ecosystem]:
        digest = file_digest(facts.directory / name)
        if digest is not None:
            found.append((f"{prefix}{name}", digest))
    return tuple(found)


Applies = Callable[[UnitFacts], bool]
Precondition = Callable[[UnitFacts], "Blocker | None"]
Builder = Callable[[UnitFacts, tuple[str, ...]], Command]


@dataclass(frozen=True)
class Recipe:
    id: str
    kind: Kind
    ecosystem: Ecosystem
    applies: Applies
    applies_text: str
    precondition: Precondition
    precondition_text: str
    build: Builder | None
    command_text: str

    def describe(self) -> RecipeRow:
        return RecipeRow(
            id=self.id,
            kind=self.kind,
            ecosystem=self.ecosystem,
            applies=self.applies_text,
            precondition=self.precondition_text,
            command=self.command_text,
        )


def _always(facts: UnitFacts) -> bool:
    return True


def _nothing(facts: UnitFacts) -> Blocker | None:
    return None


def _needs(*programs: str) -> Precondition:
    def check(facts: UnitFacts) -> Blocker | None:
        for program in programs:
            if facts.toolchains.find(program) is None:
                return Blocker("toolchain-unavailable", f"{program} is not on PATH")
        return None

    return check


def _hole(row_id: str, kind: Kind, ecosystem: Ecosystem, why: str) -> Recipe:
    return Recipe(
        row_id, kind, ecosystem, _always, f"a {ecosystem} unit", _nothing, "-", None, f"none: {why}"
    )


# --- the project's own tasks --------------------------------------------------


@dataclass(frozen=True)
class Runner:
    name: str
    program: str
    source: str
    tasks: Callable[[UnitFacts], dict[str, Task]]
    argv: Callable[[str], tuple[str, ...]]


RUNNERS: tuple[Runner, ...] = (
    Runner("just", "just", "justfile recipe", lambda f: f.just, lambda n: ("just", n)),
    Runner("make", "make", "Makefile target", lambda f: f.make, lambda n: ("make", n)),
    # A missing interpreter must fail, never skip: tox and nox exit 0 when every env or
    # session they were asked for is skipped.
    Runner(
        "tox",
        "tox",
        "tox env",
        lambda f: f.tox,
        lambda n: ("tox", "--skip-missing-interpreters=false", "-e", n),
    ),
    Runner(
        "nox",
        "nox",
        "nox session",
        lambda f: f.nox,
        lambda n: ("nox", "--error-on-missing-interpreters", "-s", n),
    ),
    Runner("hatch", "hatch", "hatch script", lambda f: f.hatch, lambda n: ("hatch", "run", n)),
    Runner("pdm", "pdm", "pdm script", lambda f: f.pdm, lambda n: ("pdm", "run", n)),
)


def _task_for(tasks: dict[str, Task], kind: Kind) -> Task | None:
    """The task for ``kind``, by the name of what it does (a tox env's factors, a session)."""
    for name in TASK_NAMES[kind]:
        if name in tasks:
            return tasks[name]
    return None


def _task_row(runner: Runner, kind: Kind) -> Recipe:
    def applies(facts: UnitFacts) -> bool:
        return _task_for(runner.tasks(facts), kind) is not None

    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        task = _task_for(runner.tasks(facts), kind)
        assert task is not None
        return Command(runner.argv(task.name), task.body)

    names = "/".join(TASK_NAMES[kind])
    return Recipe(
        f"python.{runner.name}-{kind}",
        kind,
        "python",
        applies,
        f"the project declares a {runner.source} named {names}",
        _needs(runner.program),
        f"{runner.program} on PATH",
        build,
        " ".join(runner.argv("<task>")),
    )


# --- guessed Python tools -----------------------------------------------------


def _python_tool(facts: UnitFacts, module: str, program: str) -> tuple[str, ...] | Blocker:
    """How to run a Python tool: with the unit's interpreter, else from PATH (no venv only)."""
    python = facts.python
    assert python is not None
    if python.has(module) or not python.complete:
        return (python.executable, "-m", module)
    if python.source == "ax-check":
        found = facts.toolchains.find(program)
        if found is not None:
            return (program,)
        return Blocker(
            "toolchain-unavailable",
            f"{program} is neither installed for {python.executable} nor on PATH",
        )
    venv = python.shown
    return Blocker(
        "precondition-curable",
        f"{module} is not installed in {_env_words(python)}",
        cure=f"install {module} into {venv} (e.g. {venv}/bin/pip install {module})",
    )


def _env_words(python: PythonEnv) -> str:
    if python.source == "project":
        return f"the project's {python.shown}"
    if python.source == "active":
        return f"the active virtualenv {python.shown}"
    return f"ax-check's own environment {python.shown}"


def _tests_ready(facts: UnitFacts) -> Blocker | None:
    """A project's tests run only where the project is installed (installation.py says how)."""
    python, project = facts.python, facts.project
    assert python is not None and project is not None
    missing = missing_for_tests(project, python, facts.toolchains.variables)
    if not missing:
        return None
    groups = project.test_groups
    extra = () if any("pytest" in group.requirements for group in groups) else ("pytest",)
    lacks = shown_list(missing)
    if python.source == "ax-check" and not python.on_path:
        message = (
            "the project is not installed: it has no environment (.venv, venv or an active "
            f"VIRTUAL_ENV), and ax-check's own interpreter {python.executable} lacks {lacks}"
        )
    else:
        message = f"{_env_words(python)} lacks what the tests need: {lacks}"
    return Blocker(
        "precondition-curable", message, cure=install_cure(project, python, groups, extra)
    )


def _pytest_row(row_id: str, kind: Kind, with_targets: bool) -> Recipe:
    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        assert facts.python is not None
        return Command((facts.python.executable, "-m", "pytest", *targets))

    suffix = f" {TARGET_PLACEHOLDER}..." if with_targets else ""
    return Recipe(
        row_id,
        kind,
        "python",
        _always,
        "a Python unit",
        _tests_ready,
        "the project installed for the unit's interpreter (its .venv/venv, the active "
        "VIRTUAL_ENV, else ax-check's own): pytest, the project itself and its declared "
        "dependencies and test extra/group",
        build,
        f"python -m pytest{suffix}",
    )


Args = tuple[str, ...] | Callable[[UnitFacts], tuple[str, ...]]


def _python_tool_row(
    row_id: str,
    kind: Kind,
    module: str,
    args: Args,
    applies: Applies = _always,
    applies_text: str = "a Python unit",
    command_text: str | None = None,
) -> Recipe:
    def precondition(facts: UnitFacts) -> Blocker | None:
        found = _python_tool(facts, module, module)
        return found if isinstance(found, Blocker) else None

    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        found = _python_tool(facts, module, module)
        if isinstance(found, Blocker):
            # What runs once the module is installed for the unit's interpreter.
            assert facts.python is not None
            found = (facts.python.executable, "-m", module)
        fixed = args(facts) if callable(args) else args
        return Command((*found, *fixed))

    if command_text is None:
        shown = args if isinstance(args, tuple) else ()
        command_text = " ".join(("python", "-m", module, *shown))
    return Recipe(
        row_id,
        kind,
        "python",
        applies,
        applies_text,
        precondition,
        f"{module} installed for the unit's interpreter (its .venv/venv, the active "
        "VIRTUAL_ENV, else ax-check's own)",
        build,
        command_text,
    )


def _configures(tool: str) -> Applies:
    return lambda facts: tool in facts.tool_config


def _prefers(tool: str, alternative: str) -> Applies:
    # The default tool runs unless the project configures only the alternative.
    return lambda facts: tool in facts.tool_config or alternative not in facts.tool_config


def _mypy_args(facts: UnitFacts) -> tuple[str, ...]:
    # With files/packages in its config mypy knows what to check; otherwise check the unit.
    return () if "mypy-targets" in facts.tool_config else (".",)


def _has_build_module(facts: UnitFacts) -> bool:
    return facts.python is not None and facts.python.has("build")


# --- Node ---------------------------------------------------------------------


def _node_precondition(facts: UnitFacts) -> Blocker | None:
    node = facts.node
    assert node is not None
    for program in ("node", node.manager):
        if facts.toolchains.find(program) is None:
            return Blocker("toolchain-unavailable", f"{program} is not on PATH")
    if node.needs_install:
        return Blocker(
            "precondition-curable",
            "package.json declares dependencies and no node_modules is installed",
            cure=node.install_cure,
        )
    return None


def _script_row(kind: Kind) -> Recipe:
    names = TASK_NAMES["test"] if kind == "test-targeted" else TASK_NAMES[kind]

    def script(facts: UnitFacts) -> Task | None:
        for name in names:
            if name in facts.npm_scripts:
                return facts.npm_scripts[name]
        return None

    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        task = script(facts)
        assert task is not None and facts.node is not None
        extra = ("--", *targets) if kind == "test-targeted" else ()
        return Command((facts.node.manager, "run", task.name, *extra), task.body)

    suffix = f" -- {TARGET_PLACEHOLDER}..." if kind == "test-targeted" else ""
    return Recipe(
        f"node.script-{kind}",
        kind,
        "node",
        lambda facts: script(facts) is not None,
        f"package.json has a script named {'/'.join(names)}",
        _node_precondition,
        "node and the lockfile's package manager on PATH; dependencies installed",
        build,
        f"<npm|pnpm|yarn> run <script>{suffix}",
    )


def _tsc_precondition(facts: UnitFacts) -> Blocker | None:
    node = facts.node
    assert node is not None
    if node.local_bin("tsc") is not None:
        return _needs("node")(facts)
    return Blocker(
        "precondition-curable",
        "tsconfig.json exists but node_modules/.bin/tsc is not installed",
        cure=node.install_cure if node.needs_install else "add typescript to devDependencies",
    )


def _tsc(facts: UnitFacts) -> str:
    assert facts.node is not None
    # Before the install, the path it will have in the unit.
    return facts.node.local_bin("tsc") or "./node_modules/.bin/tsc"


def _tsc_build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
    return Command((_tsc(facts), "--noEmit"))


class _Tsconfigs:
    """tsconfig files read on a budget of ``MAX_TSCONFIGS`` (each read once)."""

    def __init__(self) -> None:
        self.left = MAX_TSCONFIGS
        self.read: dict[Path, dict[str, Any] | None] = {}

    def load(self, path: Path) -> dict[str, Any] | None:
        if path not in self.read:
            if self.left <= 0:
                return None
            self.left -= 1
            self.read[path] = load_jsonc(path)
        return self.read[path]

    def option(self, path: Path, key: str, seen: frozenset[Path] = frozenset()) -> Path | None:
        """``compilerOptions[key]`` as tsc reads it: the file's own, else what it extends.

        The value is relative to the file that sets it; only relative ``extends`` are
        followed (a package's base config sets no project folders).
        """
        config = self.load(path)
        if config is None or path in seen:
            return None
        options = config.get("compilerOptions")
        value = options.get(key) if isinstance(options, dict) else None
        if isinstance(value, str) and value:
            return path.parent / value
        extends = config.get("extends")
        bases = [extends] if isinstance(extends, str) else extends
        # The last of several bases wins, as in tsc.
        for base in reversed(bases) if isinstance(bases, list) else ():
            if isinstance(base, str) and base.startswith(("./", "../")):
                target = path.parent / base
                if not target.is_file() and target.suffix != ".json":
                    target = target.with_name(f"{target.name}.json")
                found = self.option(target, key, seen | {path})
                if found is not None:
                    return found
        return None


def _tsc_build_outputs(facts: UnitFacts) -> tuple[str, ...]:
    """The unit-relative ``outDir``/``declarationDir`` of the project and its references."""
    tsconfigs = _Tsconfigs()
    pending = [facts.directory / "tsconfig.json"]
    done: set[Path] = set()
    found: set[str] = set()
    while pending:
        path = Path(os.path.normpath(pending.pop(0)))
        config = tsconfigs.load(path)
        if config is None or path in done:
            continue
        done.add(path)
        for key in ("outDir", "declarationDir"):
            folder = tsconfigs.option(path, key)
            relative = os.path.relpath(os.path.normpath(folder), facts.directory) if folder else ""
            # The unit folder itself, or a folder outside it, is never taken out of the watch.
            if relative and relative != "." and not relative.startswith(".."):
                found.add(relative.replace(os.sep, "/"))
        references = config.get("references")
        for reference in references if isinstance(references, list) else ():
            target = reference.get("path") if isinstance(reference, dict) else None
            if isinstance(target, str):
                linked = path.parent / target
                pending.append(linked / "tsconfig.json" if linked.is_dir() else linked)
    return tuple(sorted(found))


def _uses_references(facts: UnitFacts) -> bool:
    config = load_jsonc(facts.directory / "tsconfig.json")
    references = config.get("references") if config is not None else None
    return isinstance(references, list) and bool(references)


def _workspace_script(facts: UnitFacts, kind: Kind) -> str | None:
    """The first name for ``kind`` that a member of this Node workspace root declares."""
    for name in TASK_NAMES[kind]:
        if any(name in scripts for scripts in facts.node_members.values()):
            return name
    return None


def _workspaces_row(kind: Kind) -> Recipe:
    def applies(facts: UnitFacts) -> bool:
        return _workspace_script(facts, kind) is not None

    def precondition(facts: UnitFacts) -> Blocker | None:
        assert facts.node is not None
        if facts.node.manager == "yarn":
            return Blocker(
                "no-recipe",
                "ax-check has no whole-workspace recipe for yarn workspaces; "
                "name a member with --project",
            )
        return _node_precondition(facts)

    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        name = _workspace_script(facts, kind)
        assert name is not None and facts.node is not None
        body = _canonical_scripts(facts, name)
        if facts.node.manager == "pnpm":
            return Command(("pnpm", "-r", "run", name), body)
        return Command((facts.node.manager, "run", name, "--workspaces", "--if-present"), body)

    return Recipe(
        f"node.workspaces-{kind}",
        kind,
        "node",
        applies,
        "a workspace root named with --project, without its own script; "
        f"a member has a script named {'/'.join(TASK_NAMES[kind])}",
        precondition,
        "node and npm or pnpm on PATH (not yarn); dependencies installed",
        build,
        "npm run <script> --workspaces --if-present | pnpm -r run <script>",
    )


def _canonical_scripts(facts: UnitFacts, name: str) -> str:
    """Every member's script of that name: what the whole-workspace run runs."""
    return "\n".join(
        f"{member}: {scripts[name].body}"
        for member, scripts in sorted(facts.node_members.items())
        if name in scripts
    )


# --- Rust and Go ----------------------------------------------------------------


def _fixed(*argv: str) -> Builder:
    return lambda facts, targets: Command(tuple(argv))


def _fixed_row(
    row_id: str, kind: Kind, ecosystem: Ecosystem, argv: tuple[str, ...], programs: tuple[str, ...]
) -> Recipe:
    return Recipe(
        row_id,
        kind,
        ecosystem,
        _always,
        f"a {ecosystem} unit",
        _needs(*programs),
        " and ".join(programs) + " on PATH",
        _fixed(*argv),
        " ".join(argv),
    )


def _cargo_row(
    row_id: str,
    kind: Kind,
    verb: tuple[str, ...],
    rest: tuple[str, ...],
    programs: tuple[str, ...],
) -> Recipe:
    # cargo fmt spells "every package of the workspace" --all; the other verbs --workspace.
    every = "--all" if verb == ("fmt",) else "--workspace"

    def build(facts: UnitFacts, targets: tuple[str, ...]) -> Command:
        scope = (every,) if facts.cargo_workspace else ()
        return Command(("cargo", *verb, *scope, *rest))

    shown = " ".join(("cargo", *verb, f"[{every}]", *rest))
    return Recipe(
        row_id,
        kind,
        "rust",
        _always,
        f"a rust unit ({every} on a workspace root named with --project)",
        _needs(*programs),
        " and ".join(programs) + " on PATH",
        build,
        shown,
    )


def _table() -> tuple[Recipe, ...]:
    rows: list[Recipe] = []
    for kind in KINDS:
        if kind != "test-targeted":
            rows += [_task_row(runner, kind) for runner in RUNNERS]
    rows += [
        _pytest_row("python.pytest", "test", with_targets=False),
        _pytest_row("python.pytest-targeted", "test-targeted", with_targets=True),
        _python_tool_row(
            "python.ruff-check",
            "lint",
            "ruff",
            # --no-fix: a project's `fix = true` would otherwise rewrite the sources.
            ("check", "--no-fix", "."),
            _prefers("ruff", "flake8"),
            "ruff is configured, or flake8 is not",
        ),
        _python_tool_row(
            "python.flake8", "lint", "flake8", (), _configures("flake8"), "flake8 is configured"
        ),
        _python_tool_row(
            "python.mypy",
            "typecheck",
            "mypy",
            _mypy_args,
            _prefers("mypy", "pyright"),
            "mypy is configured, or pyright is not",
            command_text="python -m mypy [.] (no path when its config names files or packages)",
        ),
        _python_tool_row(
            "python.pyright",
            "typecheck",
            "pyright",
            (),
            _configures("pyright"),
            "pyright is configured",
        ),
        _python_tool_row(
            "python.ruff-format",
            "format",
            "ruff",
            ("format", "--check", "."),
            _prefers("ruff", "black"),
            "ruff is configured, or black is not",
        ),
        _python_tool_row(
            "python.black",
            "format",
            "black",
            ("--check", "."),
            _configures("black"),
            "black is configured",
        ),
        _python_tool_row(
            "python.build",
            "build",
            "build",
            (),
            _has_build_module,
            "the build package is installed for the unit's interpreter",
        ),
        _python_tool_row(
            "python.wheel",
            "build",
            "pip",
            ("wheel", "--no-deps", "--wheel-dir", "dist", "."),
        ),
    ]
    rows += [_script_row(kind) for kind in KINDS]
    rows += [_workspaces_row(kind) for kind in KINDS if kind != "test-targeted"]
    rows.append(
        Recipe(
            "node.tsc-build",
            "typecheck",
            "node",
            _uses_references,
            "tsconfig.json has project references",
            _tsc_precondition,
            "node_modules/.bin/tsc installed",
            lambda facts, targets: Command(
                (_tsc(facts), "--build"), outputs=_tsc_build_outputs(facts)
            ),
            "node_modules/.bin/tsc --build",
        )
    )
    rows.append(
        Recipe(
            "node.tsc",
            "typecheck",
            "node",
            lambda facts: (facts.directory / "tsconfig.json").is_file(),
            "tsconfig.json exists",
            _tsc_precondition,
            "node_modules/.bin/tsc installed",
            _tsc_build,
            "node_modules/.bin/tsc --noEmit",
        )
    )
    rows += [
        _cargo_row("rust.cargo-build", "build", ("build",), (), ("cargo", "rustc")),
        _cargo_row("rust.cargo-test", "test", ("test",), (), ("cargo", "rustc")),
        _hole(
            "rust.no-test-targeted",
            "test-targeted",
            "rust",
            "cargo selects tests by a name filter, and a filter that matches nothing passes",
        ),
        _cargo_row(
            "rust.cargo-check", "typecheck", ("check",), ("--all-targets",), ("cargo", "rustc")
        ),
        _cargo_row(
            "rust.clippy",
            "lint",
            ("clippy",),
            ("--all-targets", "--", "-D", "warnings"),
            ("cargo", "cargo-clippy"),
        ),
        _cargo_row("rust.fmt", "format", ("fmt",), ("--check",), ("cargo", "cargo-fmt")),
        _fixed_row("go.build", "build", "go", ("go", "build", "./..."), ("go",)),
        _fixed_row("go.test", "test", "go", ("go", "test", "./..."), ("go",)),
        _hole(
            "go.no-test-targeted",
            "test-targeted",
            "go",
            "go test -run takes a name pattern, and a pattern that matches nothing passes",
        ),
        _fixed_row("go.vet-lint", "lint", "go", ("go", "vet", "./..."), ("go",)),
        _fixed_row("go.vet", "static-analysis", "go", ("go", "vet", "./..."), ("go",)),
        _hole(
            "go.no-format",
            "format",
            "go",
            "gofmt -l exits 0 whether or not files need formatting",
        ),
    ]
    rows += [
        _hole(
            f"cmake.no-{kind}",
            kind,
            "cmake",
            "CMake projects are detected, but ax-check has no CMake recipes",
        )
        for kind in KINDS
    ]
    return tuple(rows)


RECIPES: tuple[Recipe, ...] = _table()


def recipe_rows() -> list[RecipeRow]:
    return [row.describe() for row in RECIPES]


@dataclass(frozen=True)
class Resolved:
    recipe: Recipe
    unit_id: str
    command: Command
    # The files that chose this recipe, with their digests (see deciding_manifests).
    manifests: tuple[tuple[str, str], ...]

    @property
    def recipe_id(self) -> str:
        """Unit-qualified, so the same command in two units is two consents."""
        return f"{self.recipe.id}@{self.unit_id}"

    @property
    def replay_key(self) -> str:
        return replay_key(self.recipe_id, self.command.display, self.command.body, self.manifests)


def resolve(facts: UnitFacts, kind: Kind, targets: tuple[str, ...] = ()) -> Resolved | Blocker:
    """The first applicable row for ``kind`` in this unit, or why nothing can run."""
    for row in RECIPES:
        if row.kind != kind or row.ecosystem not in facts.ecosystems:
            continue
        problem = facts.problems.get(row.ecosystem)
        if problem is not None:
            return Blocker("precondition", problem, recipe_id=f"{row.id}@{facts.unit.id}")
        if not row.applies(facts):
            continue
        qualified = f"{row.id}@{facts.unit.id}"
        if row.build is None:
            return Blocker("no-recipe", row.command_text.removeprefix("none: "), None, qualified)
        blocker = row.precondition(facts)
        if blocker is not None:
            planned = row.build(facts, targets) if blocker.reason != "no-recipe" else None
            return Blocker(blocker.reason, blocker.message, blocker.cure, qualified, planned)
        command = row.build(facts, targets)
        return Resolved(row, facts.unit.id, command, deciding_manifests(facts, row.ecosystem))
    ecosystems = ", ".join(facts.ecosystems) or "no manifest"
    return Blocker("no-recipe", f"no recipe for {kind} in unit {facts.unit.id} ({ecosystems})")
