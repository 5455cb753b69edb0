"""Finding the project the way its tools do, through the installed ax-check.

Each case builds its own small project in the test: a run from a subfolder, a
crate with a cargo-fuzz satellite, whole-workspace runs, nox sessions and tox
factors, TypeScript project references, and what a blocked kind would run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
PY_FACTOR = f"py{sys.version_info[0]}{sys.version_info[1]}"
TYPESCRIPT = "typescript@5"


def write(root: Path, relative: str, text: str = "") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def ax_check(tool_path: Callable[[str], str]) -> Callable[..., tuple[int, dict[str, Any], str]]:
    """``ax_check("test", cwd=..., env=...)``: the installed CLI, with --json parsed."""

    def run(
        *argv: str, cwd: Path, env: dict[str, str] | None = None, as_json: bool = True
    ) -> tuple[int, dict[str, Any], str]:
        done = subprocess.run(
            [tool_path("check"), *argv, *(["--json"] if as_json else [])],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )
        parsed = json.loads(done.stdout) if as_json and done.stdout else {}
        return done.returncode, parsed, done.stderr if as_json else done.stdout + done.stderr

    return run


Run = Callable[..., tuple[int, dict[str, Any], str]]


def git_init(folder: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed on this machine")
    subprocess.run([git, "init", "-q", str(folder)], check=True)


def kinds_of(report: dict[str, Any], unit: str) -> dict[str, dict[str, Any]]:
    found = next(item for item in report["units"] if item["id"] == unit)
    return {item["kind"]: item for item in found["kinds"]}


def unit_of(report: dict[str, Any], unit: str) -> dict[str, Any]:
    return next(item for item in report["units"] if item["id"] == unit)


# --- running from a subfolder ---------------------------------------------------------


def python_project(root: Path) -> Path:
    write(root, "pyproject.toml", "[project]\nname = 'calc'\nversion = '0'\n")
    write(root, "tests/test_calc.py", "def test_adds():\n    assert 1 + 1 == 2\n")
    return root


def test_a_subfolder_walks_up_to_the_nearest_unit_root(tmp_path: Path, ax_check: Run) -> None:
    root = python_project(tmp_path / "calc")
    git_init(root)
    code, result, stderr = ax_check("test", cwd=root / "tests")
    assert (code, result["verdict"], result["project"]) == (0, "passed", "."), stderr
    assert result["workspace"] == str(root)
    assert "walking up from the current directory" in result["selection"]
    assert f"the walk stops at the git root {root}" in result["selection"]
    assert "unit .: the current directory" in stderr
    code, report, _ = ax_check("detect", cwd=root / "tests")
    assert (report["workspace"], report["defaultUnit"]) == (str(root), ".")
    assert "walking up" in report["located"]


def test_finding_paths_from_a_subfolder_are_relative_to_the_workspace_found(
    tmp_path: Path, ax_check: Run, needs_module: Callable[[str], None]
) -> None:
    """The walk's workspace, not the current folder, is what finding paths are relative to."""
    needs_module("ruff")
    root = python_project(tmp_path / "calc")
    write(root, "calc/ops.py", "import os\n")
    git_init(root)
    code, result, stderr = ax_check("lint", cwd=root / "calc")
    assert (code, result["verdict"], result["workspace"]) == (1, "failed", str(root)), stderr
    assert ("calc/ops.py", 1, "F401") in {
        (item["path"], item["line"], item["code"]) for item in result["findings"]
    }


def test_a_named_workspace_is_pinned_and_says_where_the_unit_is(
    tmp_path: Path, ax_check: Run
) -> None:
    """-C names the workspace: nothing above it is taken, whatever the current directory."""
    root = python_project(tmp_path / "calc")
    git_init(root)
    code, result, _ = ax_check("test", "-C", ".", cwd=root / "tests")
    assert (code, result["reason"], result["workspace"]) == (5, "no-recipe", str(root / "tests"))
    assert result["cure"] == f"run with -C {root}, or without -C from inside it"
    assert f"the nearest folder above it with one, {root}" in result["selection"]
    code, result, _ = ax_check("test", "-C", str(root), cwd=tmp_path)
    assert (code, result["verdict"]) == (0, "passed")


def test_the_walk_stops_at_the_git_root_and_below_home(tmp_path: Path, ax_check: Run) -> None:
    outer = python_project(tmp_path / "outer")
    inner = outer / "vendored"
    write(inner, "src/notes.txt")
    git_init(inner)
    code, result, _ = ax_check("test", cwd=inner / "src")
    assert (code, result["reason"], result["workspace"]) == (5, "no-recipe", str(inner / "src"))
    assert f"up to the git root {inner}" in result["selection"]
    # Outside any repository the walk never takes a manifest from the home folder.
    home = tmp_path / "home"
    write(home, "package.json", '{"scripts": {"test": "exit 1"}}')
    write(home, "scratch/notes.txt")
    code, result, _ = ax_check("test", cwd=home / "scratch", env={"HOME": str(home)})
    assert (code, result["reason"], result["workspace"]) == (5, "no-recipe", str(home / "scratch"))


# --- satellites and the obvious default -------------------------------------------------


@pytest.fixture
def cargo_env(tmp_path: Path) -> dict[str, str]:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed on this machine")
    return {"CARGO_TARGET_DIR": str(tmp_path / "target"), "CARGO_NET_OFFLINE": "true"}


def crate(root: Path, name: str, test_name: str = "adds", extra: str = "") -> Path:
    write(root, "Cargo.toml", f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "Cargo.toml").write_text((root / "Cargo.toml").read_text() + extra)
    write(
        root,
        "src/lib.rs",
        "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n"
        f"    #[test]\n    fn {test_name}() {{\n"
        "        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
    )
    return root


CARGO_FUZZ_TOML = """[package]
name = "calc-fuzz"
version = "0.0.0"
publish = false
edition = "2021"

[package.metadata]
cargo-fuzz = true

[dependencies]
libfuzzer-sys = "0.4"

[workspace]
members = ["."]
"""


def test_a_cargo_fuzz_folder_is_a_satellite_not_a_second_unit(
    tmp_path: Path, ax_check: Run, cargo_env: dict[str, str]
) -> None:
    root = crate(tmp_path / "calc", "calc")
    write(root, "fuzz/Cargo.toml", CARGO_FUZZ_TOML)
    write(root, "fuzz/fuzz_targets/add.rs", "#![no_main]\n")
    code, result, stderr = ax_check("test", cwd=root, env=cargo_env)
    assert (code, result["verdict"], result["project"]) == (0, "passed", "."), stderr
    assert result["recipe"]["command"] == "cargo test"
    assert "fuzz is a cargo-fuzz target crate" in result["selection"]
    _, report, _ = ax_check("detect", cwd=root)
    assert report["defaultUnit"] == "."
    assert "package.metadata.cargo-fuzz" in unit_of(report, "fuzz")["satellite"]
    # A satellite is still a unit: naming it runs it.
    _, named, _ = ax_check("build", "--project", "fuzz", cwd=root, env=cargo_env)
    assert named["recipe"]["id"] == "rust.cargo-build@fuzz"


SATELLITE_CASES = {
    "docs-site": (
        {
            "pyproject.toml": "[project]\nname = 'lib'\n",
            "site/package.json": '{"devDependencies": {"@docusaurus/core": "3"}}',
        },
        "site",
        "a documentation site (its package.json depends on @docusaurus/core)",
    ),
    "examples": (
        {"package.json": '{"name": "lib"}', "examples/package.json": '{"name": "demo"}'},
        "examples",
        "example code (its folder is named examples)",
    ),
    "benches": (
        {"Cargo.toml": "[package]\nname = 'lib'\n", "benches/Cargo.toml": "[package]\nname='b'\n"},
        "benches",
        "a benchmark harness (its folder is named benches)",
    ),
    "cargo-exclude": (
        {
            "Cargo.toml": "[package]\nname = 'lib'\n[workspace]\nexclude = ['tools']\n",
            "tools/Cargo.toml": "[package]\nname = 'tools'\n",
        },
        "tools",
        "excluded by the root's Cargo.toml [workspace] exclude ('tools')",
    ),
    "cargo-non-member": (
        {
            "Cargo.toml": "[package]\nname = 'lib'\n[workspace]\nmembers = ['crates/*']\n",
            "xtask/Cargo.toml": "[package]\nname = 'xtask'\n",
        },
        "xtask",
        "not a member of the workspace the root declares (Cargo.toml [workspace] members)",
    ),
    "npm-non-member": (
        {
            "package.json": '{"workspaces": ["packages/*"], "scripts": {"test": "x"}}',
            "packages/core/package.json": "{}",
            "playground/package.json": "{}",
        },
        "playground",
        "not a member of the workspace the root declares (package.json workspaces)",
    ),
    "ruff-exclude": (
        {
            "pyproject.toml": "[project]\nname = 'lib'\n"
            "[tool.ruff]\nextend-exclude = ['scratch']\n",
            "scratch/setup.py": "",
        },
        "scratch",
        "excluded by the root's pyproject.toml [tool.ruff] extend-exclude ('scratch')",
    ),
    "pytest-norecursedirs": (
        {
            "pyproject.toml": "[tool.pytest.ini_options]\nnorecursedirs = ['legacy*']\n",
            "legacy_v1/pyproject.toml": "",
        },
        "legacy_v1",
        "excluded by the root's pyproject.toml [tool.pytest.ini_options] norecursedirs ('legacy*')",
    ),
}


@pytest.mark.parametrize("case", sorted(SATELLITE_CASES))
def test_satellites_say_why_and_leave_one_obvious_default(
    case: str, workspace: Path, ax_check: Run
) -> None:
    files, satellite, why = SATELLITE_CASES[case]
    for relative, text in files.items():
        write(workspace, relative, text)
    code, report, _ = ax_check("detect", cwd=workspace)
    assert code == 0
    assert unit_of(report, satellite)["satellite"] == why
    # The root declares the npm workspace's members: they compete, so there is no default.
    expected = None if case == "npm-non-member" else "."
    assert report["defaultUnit"] == expected, report["selection"]


def test_two_real_units_still_need_a_project(workspace: Path, ax_check: Run) -> None:
    git_init(workspace)  # the root holds no manifest: the walk must not look above it
    write(workspace, "api/pyproject.toml", "[project]\nname = 'api'\n")
    write(workspace, "web/package.json", '{"scripts": {"test": "exit 0"}}')
    write(workspace, "docs/package.json", '{"devDependencies": {"vitepress": "1"}}')
    code, _, stderr = ax_check("test", cwd=workspace)
    assert code == 2
    assert "3 units (api, docs, web) (satellites: docs); name one with --project" in stderr


# --- whole-workspace runs ---------------------------------------------------------------


def test_a_cargo_workspace_root_named_with_project_runs_every_member(
    tmp_path: Path, ax_check: Run, cargo_env: dict[str, str]
) -> None:
    root = crate(tmp_path / "ws", "root", "root_adds", '\n[workspace]\nmembers = ["crates/*"]\n')
    crate(root / "crates" / "a", "a", "a_adds")
    crate(root / "crates" / "b", "b", "b_adds")
    code, _, stderr = ax_check("test", cwd=root, env=cargo_env)
    assert code == 2, stderr
    assert "--project . runs the whole workspace it declares" in stderr
    code, result, stderr = ax_check("test", "--project", ".", cwd=root, env=cargo_env)
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert result["recipe"] == {"id": "rust.cargo-test@.", "command": "cargo test --workspace"}
    assert result["summary"]["passed"] == 3
    code, result, _ = ax_check("test", "--project", "crates/a", cwd=root, env=cargo_env)
    assert (code, result["recipe"]["command"], result["summary"]["passed"]) == (0, "cargo test", 1)
    # From inside a member, the member is the unit, as cargo does.
    code, result, _ = ax_check("test", cwd=root / "crates" / "b" / "src", env=cargo_env)
    assert (code, result["project"], result["summary"]["passed"]) == (0, "crates/b", 1)
    assert "declares crates/b as a member" in result["selection"]
    _, report, _ = ax_check("detect", cwd=root)
    assert unit_of(report, ".")["members"] == ["crates/a", "crates/b"]
    assert kinds_of(report, ".")["format"]["recipe"]["command"] == "cargo fmt --all --check"


def npm_workspace(root: Path) -> Path:
    write(root, "package.json", json.dumps({"name": "mono", "workspaces": ["packages/*"]}))
    write(root, "packages/a/package.json", json.dumps({"scripts": {"test": "node --test"}}))
    write(root, "packages/a/test/a.test.js", "require('node:test')('adds', () => {});\n")
    write(root, "packages/b/package.json", json.dumps({"scripts": {"lint": "node -e 0"}}))
    return root


def test_an_npm_workspace_root_named_with_project_runs_every_member(
    tmp_path: Path, ax_check: Run, require: Callable[[str], str]
) -> None:
    require("npm")
    root = npm_workspace(tmp_path / "mono")
    code, _, _ = ax_check("test", cwd=root)
    assert code == 2
    code, result, stderr = ax_check("test", "-p", ".", cwd=root)
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert result["recipe"] == {
        "id": "node.workspaces-test@.",
        "command": "npm run test --workspaces --if-present",
    }
    assert "1 passed" in stderr
    # A kind no member declares has no whole-workspace run (--if-present would pass it).
    code, result, _ = ax_check("build", "-p", ".", cwd=root)
    assert (code, result["reason"]) == (5, "no-recipe")


def test_a_pnpm_workspace_root_runs_recursively(workspace: Path, ax_check: Run) -> None:
    npm_workspace(workspace)
    package = json.loads((workspace / "package.json").read_text())
    del package["workspaces"]
    package["packageManager"] = "pnpm@9.0.0"
    write(workspace, "package.json", json.dumps(package))
    write(workspace, "pnpm-workspace.yaml", "packages:\n  - 'packages/*'\n")
    _, report, _ = ax_check("detect", cwd=workspace)
    test = kinds_of(report, ".")["test"]
    shown = test["recipe"] or test["wouldRun"]
    assert shown == {"id": "node.workspaces-test@.", "command": "pnpm -r run test"}


# --- nox sessions, tox factors and typecheck names --------------------------------------


TYPECHECK_NAMES = ("typing", "types", "mypy", "typecheck", "type-check", "check-types")


@pytest.mark.parametrize("name", TYPECHECK_NAMES)
def test_typecheck_names_across_runners(name: str, workspace: Path, ax_check: Run) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n")
    write(workspace, "Makefile", f"{name}:\n\tmypy src\n")
    write(workspace, "web/package.json", json.dumps({"scripts": {name: "tsc -p ."}}))
    write(workspace, "tox/pyproject.toml", "")
    write(workspace, "tox/tox.ini", f"[tox]\nenvlist = {name}\n[testenv:{name}]\ncommands = x\n")
    write(workspace, "just/pyproject.toml", "")
    write(workspace, "just/justfile", f"{name}:\n    mypy src\n")
    write(workspace, "nox/pyproject.toml", "")
    write(
        workspace,
        "nox/noxfile.py",
        f"import nox\n\n@nox.session(name={name!r})\ndef session(s):\n    s.run('mypy')\n",
    )
    _, report, _ = ax_check("detect", cwd=workspace)
    shown = {
        unit: kinds_of(report, unit)["typecheck"] for unit in (".", "web", "tox", "nox", "just")
    }
    commands = {
        unit: (item["recipe"] or item["wouldRun"])["command"] for unit, item in shown.items()
    }
    assert commands == {
        ".": f"make {name}",
        "web": f"npm run {name}",
        "tox": f"tox --skip-missing-interpreters=false -e {name}",
        "nox": f"nox --error-on-missing-interpreters -s {name}",
        "just": f"just {name}",
    }


NOXFILE = f"""
import nox
from nox import session

PYTHONS = ["2.7", "{PY}"]


@nox.session(python=PYTHONS)
def tests(session):
    session.run("pytest")


@session(python=["2.6", "2.7"])
def typing(session):
    session.run("mypy")


@nox.session(name="lint", python=False)
def run_the_linters(session):
    session.run("python", "-c", "print('linted')")


@nox.session
def docs(session):
    session.run("sphinx-build")


def not_a_session():
    pass
"""


def test_nox_sessions_are_read_statically_and_run_by_name(
    tmp_path: Path, workspace: Path, ax_check: Run
) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n")
    marker = tmp_path / "imported"
    # Importing this noxfile would leave the marker: the sessions must be read, not run.
    write(workspace, "noxfile.py", f"open({str(marker)!r}, 'w').close()\n{NOXFILE}")
    # A stand-in nox first on PATH records how it was called: this is about ax's logic.
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "calls"
    executable(bin_dir / "nox", f'#!/bin/sh\necho "$@" >> {calls}\n')
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    code, result, stderr = ax_check("test", cwd=workspace, env=env)
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert result["recipe"] == {
        "id": "python.nox-test@.",
        "command": f"nox --error-on-missing-interpreters -s tests-{PY}",
    }
    assert calls.read_text() == f"--error-on-missing-interpreters -s tests-{PY}\n"
    assert not marker.exists()
    _, report, _ = ax_check("detect", cwd=workspace, env=env)
    assert kinds_of(report, ".")["lint"]["recipe"]["command"].endswith("-s lint")
    unused = unit_of(report, ".")["unused"]
    assert "nox session docs: not a check kind" in unused
    assert (
        f"nox session typing: runs on Python 2.6, 2.7, not {PY}, the unit's interpreter" in unused
    )
    assert kinds_of(report, ".")["typecheck"]["recipe"]["id"] == "python.mypy@."


def test_a_real_nox_runs_the_session(workspace: Path, tmp_path: Path, ax_check: Run) -> None:
    nox = shutil.which("nox")
    if nox is None:
        pytest.skip("nox is not installed on this machine")
    # The test group installs nox beside ax-check, whose own venv never reaches a project's
    # PATH: give the command a folder of its own holding nox, as a pipx install would.
    own_bin = tmp_path / "nox-bin"
    own_bin.mkdir()
    (own_bin / "nox").symlink_to(nox)
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n")
    write(workspace, "noxfile.py", NOXFILE)
    path = os.pathsep.join([str(own_bin), os.environ.get("PATH", os.defpath)])
    code, result, stderr = ax_check("lint", cwd=workspace, env={"PATH": path})
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert "linted" in result["output"]["head"]


TOX_INI = f"""
[tox]
envlist =
    py3{{{sys.version_info[1] - 1},{sys.version_info[1]}}}-tests
    {PY_FACTOR}-lint
    docs
    py2{{6,7}}-typing

[testenv]
skip_install = true
commands = python -c "print('ran', '{{envname}}')"

[testenv:docs]
commands = sphinx-build docs out
"""


def test_tox_factors_pick_the_env_for_the_running_python(workspace: Path, ax_check: Run) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n")
    write(workspace, "tox.ini", TOX_INI)
    code, report, _ = ax_check("detect", cwd=workspace)
    kinds = kinds_of(report, ".")
    shown = {kind: (kinds[kind]["recipe"] or kinds[kind]["wouldRun"]) for kind in ("test", "lint")}
    flag = "tox --skip-missing-interpreters=false -e"
    assert shown["test"] == {"id": "python.tox-test@.", "command": f"{flag} {PY_FACTOR}-tests"}
    assert shown["lint"] == {"id": "python.tox-lint@.", "command": f"{flag} {PY_FACTOR}-lint"}
    unused = unit_of(report, ".")["unused"]
    assert "tox env docs: not a check kind" in unused
    assert (
        f"tox envs py26-typing, py27-typing: none is for Python {PY}, the unit's interpreter"
        in (unused)
    )
    if shutil.which("tox") is None:
        pytest.skip("tox is not installed on this machine")
    code, result, stderr = ax_check("test", cwd=workspace)
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert f"ran {PY_FACTOR}-tests" in result["output"]["head"] + result["output"]["tail"]


def test_tox_toml_product_and_version_only_envs(workspace: Path, ax_check: Run) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n")
    minor = sys.version_info[1]
    write(
        workspace,
        "tox.toml",
        f"env_list = [{{ product = [{{ prefix = 'py3', start = {minor - 1}, stop = {minor} }}, "
        "['lint', 'typing']] }, 'py3" + str(minor) + "']\n",
    )
    _, report, _ = ax_check("detect", cwd=workspace)
    kinds = kinds_of(report, ".")
    commands = {
        kind: (kinds[kind]["recipe"] or kinds[kind]["wouldRun"])["command"].split()[-1]
        for kind in ("test", "lint", "typecheck")
    }
    assert commands == {
        "test": f"py3{minor}",
        "lint": f"py3{minor}-lint",
        "typecheck": f"py3{minor}-typing",
    }


# --- TypeScript project references --------------------------------------------------------


@pytest.fixture(scope="module")
def typescript(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """node_modules with TypeScript, installed once from the registry (skips when offline)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node and npm are not installed on this machine")
    root = tmp_path_factory.mktemp("typescript")
    write(root, "package.json", "{}")
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", TYPESCRIPT],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.skip(f"npm could not install {TYPESCRIPT}: {done.stderr.strip()[-300:]}")
    yield root / "node_modules"


def ts_project(root: Path, node_modules: Path) -> Path:
    """An app whose tsconfig references a core library (both composite)."""
    write(root, "package.json", json.dumps({"devDependencies": {"typescript": "5"}}))
    compiler = {"composite": True, "strict": True, "rootDir": "src"}
    write(
        root,
        "tsconfig.json",
        "{\n  // the app, built on the core library\n"
        f'  "compilerOptions": {json.dumps({**compiler, "outDir": "out"})},\n'
        '  "include": ["src"],\n  "references": [{"path": "./core"}],\n}\n',
    )
    write(
        root,
        "core/tsconfig.json",
        json.dumps({"compilerOptions": {**compiler, "outDir": "dist"}, "include": ["src"]}),
    )
    write(
        root,
        "core/src/index.ts",
        "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
    )
    write(
        root,
        "src/main.ts",
        'import { add } from "../core/src/index";\nexport const total: number = add(1, 2);\n',
    )
    os.symlink(node_modules, root / "node_modules")
    return root


def test_references_use_tsc_build_and_the_verdict_does_not_flip(
    tmp_path: Path, typescript: Path, ax_check: Run
) -> None:
    """`tsc --noEmit` fails before a build (TS6305) and passes a stale .d.ts after one."""
    root = ts_project(tmp_path / "app", typescript)
    code, result, _ = ax_check("typecheck", cwd=root)
    assert (code, result["verdict"]) == (0, "passed"), result["output"]
    assert result["recipe"] == {
        "id": "node.tsc-build@.",
        "command": "./node_modules/.bin/tsc --build",
    }
    # core now returns a string: the app's number no longer type-checks, though the
    # run above left a built core/dist/index.d.ts that still says number.
    write(
        root,
        "core/src/index.ts",
        "export function add(a: number, b: number): string {\n  return `${a + b}`;\n}\n",
    )
    code, result, _ = ax_check("typecheck", cwd=root)
    assert (code, result["verdict"]) == (1, "failed")
    assert "not assignable to type 'number'" in result["output"]["head"]


@pytest.mark.parametrize("script", ["typecheck", "type-check", "tsc", "check-types"])
def test_the_projects_own_typecheck_script_beats_tsc(
    script: str, workspace: Path, ax_check: Run
) -> None:
    write(workspace, "package.json", json.dumps({"scripts": {script: "tsc -b"}}))
    write(workspace, "tsconfig.json", '{"references": [{"path": "./core"}]}')
    _, report, _ = ax_check("detect", cwd=workspace)
    typecheck = kinds_of(report, ".")["typecheck"]
    assert (typecheck["recipe"] or typecheck["wouldRun"])["command"] == f"npm run {script}"


# --- what a blocked kind would run ------------------------------------------------------


def test_detect_before_install_shows_what_would_run(
    workspace: Path, ax_check: Run, require: Callable[[str], str]
) -> None:
    require("npm")
    package = {
        "scripts": {"test": "vitest run", "lint": "eslint ."},
        "devDependencies": {"vitest": "1", "eslint": "9", "typescript": "5"},
    }
    write(workspace, "package.json", json.dumps(package))
    write(workspace, "package-lock.json", "{}")
    write(workspace, "tsconfig.json", "{}")
    code, report, _ = ax_check("detect", cwd=workspace)
    kinds = kinds_of(report, ".")
    blocked = {
        kind: (item["reason"], item["cure"], item["wouldRun"]["command"])
        for kind, item in kinds.items()
        if item["wouldRun"] is not None
    }
    assert blocked == {
        "test": ("precondition-curable", "run npm ci", "npm run test"),
        "test-targeted": ("precondition-curable", "run npm ci", "npm run test -- <target>"),
        "lint": ("precondition-curable", "run npm ci", "npm run lint"),
        "typecheck": ("precondition-curable", "run npm ci", "./node_modules/.bin/tsc --noEmit"),
    }
    _, _, text = ax_check("detect", cwd=workspace, as_json=False)
    assert "blocked: node.script-test@.: npm run test" in text
    code, result, stderr = ax_check("test", cwd=workspace)
    assert (code, result["reason"], result["wouldRun"]["command"]) == (
        5,
        "precondition-curable",
        "npm run test",
    )
    assert "once cured, would run npm run test" in stderr


def test_a_tool_missing_from_the_project_venv_shows_its_command(
    workspace: Path, ax_check: Run
) -> None:
    write(workspace, "pyproject.toml", "[project]\nname = 'lib'\n[tool.mypy]\nstrict = true\n")
    (workspace / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, workspace / ".venv" / "bin" / "python")
    (workspace / ".venv" / "lib" / f"python{PY}" / "site-packages").mkdir(parents=True)
    _, report, _ = ax_check("detect", cwd=workspace)
    typecheck = kinds_of(report, ".")["typecheck"]
    assert (typecheck["reason"], typecheck["wouldRun"]) == (
        "precondition-curable",
        {"id": "python.mypy@.", "command": "./.venv/bin/python -m mypy ."},
    )


def test_tox_config_in_setup_cfg(workspace: Path, ax_check: Run) -> None:
    write(
        workspace,
        "setup.cfg",
        f"[metadata]\nname = lib\n\n[tox:tox]\nenvlist = py3{{9,{sys.version_info[1]}}}, lint\n\n"
        "[testenv:lint]\ncommands = ruff check .\n",
    )
    _, report, _ = ax_check("detect", cwd=workspace)
    kinds = kinds_of(report, ".")
    commands = {
        kind: (kinds[kind]["recipe"] or kinds[kind]["wouldRun"])["command"]
        for kind in ("test", "lint")
    }
    flag = "tox --skip-missing-interpreters=false -e"
    assert commands == {"test": f"{flag} {PY_FACTOR}", "lint": f"{flag} lint"}


def test_a_workspace_roots_own_script_beats_the_members(workspace: Path, ax_check: Run) -> None:
    npm_workspace(workspace)
    package = json.loads((workspace / "package.json").read_text())
    package["scripts"] = {"test": "turbo run test"}
    write(workspace, "package.json", json.dumps(package))
    _, report, _ = ax_check("detect", cwd=workspace)
    kinds = kinds_of(report, ".")
    shown = {kind: (kinds[kind]["recipe"] or kinds[kind]["wouldRun"]) for kind in ("test", "lint")}
    assert shown["test"]["command"] == "npm run test"
    assert shown["lint"]["command"] == "npm run lint --workspaces --if-present"
