"""libcommon.projectenv: the one rule ax-check and ax-preview share for "can this project run"."""

from __future__ import annotations

from pathlib import Path

import pytest

from libcommon.projectenv import NotFound, find_venv, node_env, program_not_found


@pytest.mark.parametrize(
    ("output", "status", "program"),
    [
        ("> dev\n> vite\n\nsh: 1: vite: not found\n", 127, "vite"),
        ("bash: tsc: command not found\n", 127, "tsc"),
        ("/bin/sh: line 1: next: command not found\n", 127, "next"),
        ("zsh:1: command not found: nodemon\n", 127, "nodemon"),
        ("env: 'node': No such file or directory\n", 127, "node"),
        # make exits 2, and says the recipe's command exited 127.
        (
            "make: mypy: No such file or directory\nmake: *** [Makefile:2: lint] Error 127\n",
            2,
            "mypy",
        ),
        ("make[1]: black: No such file or directory\nmake[1]: *** [x] Error 127\n", 2, "black"),
        # 127 without a line that names the program.
        ("something went wrong\n", 127, None),
    ],
)
def test_a_missing_program_is_recognised(output: str, status: int, program: str | None) -> None:
    assert program_not_found(output, status) == NotFound(program)


@pytest.mark.parametrize(
    ("output", "status"),
    [
        ("sh: 1: vite: not found\n", 1),  # named, but the command did not exit 127
        ("Error: Cannot find module 'express'\n", 1),
        ("Module not found: Error: Can't resolve './App'\n", 1),
        ("make: *** [Makefile:2: test] Error 1\n", 2),
        ("", 0),
    ],
)
def test_other_failures_are_not_a_missing_program(output: str, status: int) -> None:
    assert program_not_found(output, status) is None


def test_node_manager_from_package_manager_then_the_nearest_lockfile(tmp_path: Path) -> None:
    ws = tmp_path
    unit = ws / "packages" / "web"
    unit.mkdir(parents=True)
    deps = {"dependencies": {"express": "^4"}}
    env = node_env(unit, ws, deps)
    assert (env.manager, env.lockfile, env.needs_install, env.install_cure) == (
        "npm",
        None,
        True,
        "run npm install",
    )
    (ws / "bun.lock").write_text("")
    env = node_env(unit, ws, deps)
    assert (env.manager, env.lockfile, env.install_cure) == (
        "bun",
        "bun.lock",
        "run bun install --frozen-lockfile",
    )
    (unit / "package-lock.json").write_text("{}")
    assert node_env(unit, ws, deps).install_cure == "run npm ci"
    assert node_env(unit, ws, {**deps, "packageManager": "yarn@4.1.0"}).manager == "yarn"
    (ws / "node_modules").mkdir()
    assert node_env(unit, ws, deps).needs_install is False
    # Nothing declared, nothing to install.
    assert node_env(tmp_path / "elsewhere", tmp_path / "elsewhere", {}).needs_install is False


def test_a_lockfile_above_the_workspace_is_not_the_projects(tmp_path: Path) -> None:
    (tmp_path / "pnpm-lock.yaml").write_text("")
    ws = tmp_path / "ws"
    ws.mkdir()
    assert node_env(ws, ws, {}).manager == "npm"


def test_the_venv_of_the_unit_else_the_workspace_root(tmp_path: Path) -> None:
    unit = tmp_path / "app"
    unit.mkdir()
    assert find_venv(unit, tmp_path) is None
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    assert find_venv(unit, tmp_path) is None  # no interpreter in it: not a venv
    (tmp_path / "venv" / "bin" / "python").write_text("")
    assert find_venv(unit, tmp_path) == tmp_path / "venv"
    (unit / ".venv" / "bin").mkdir(parents=True)
    (unit / ".venv" / "bin" / "python").write_text("")
    assert find_venv(unit, tmp_path) == unit / ".venv"
