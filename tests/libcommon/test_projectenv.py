"""libcommon.projectenv: the one rule ax-check and ax-preview share for "can this project run"."""

from __future__ import annotations

from pathlib import Path

from libcommon.projectenv import find_venv, node_env


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
