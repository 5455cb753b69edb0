"""Which Python environment a unit's commands use, and a project that is not installed.

Fixture projects are made in the test and run through ax-check's CLI. A fake
virtualenv is a folder whose ``bin/python`` links to this interpreter: enough
for ax-check to find it, and for a task to show what its PATH resolves.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner
from check.checkcli import check, write

from ax_check.cli import main


def fake_venv(folder: Path, installed: tuple[str, ...] = ()) -> Path:
    """A venv ax-check recognises; ``installed`` entries go into its site-packages."""
    (folder / "bin").mkdir(parents=True)
    os.symlink(sys.executable, folder / "bin" / "python")
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for entry in installed:
        (site / entry).mkdir()
    return folder


SRC_LAYOUT = {
    "pyproject.toml": '[project]\nname = "pkgx"\nversion = "0"\n\n'
    '[project.optional-dependencies]\ntests = ["pytest"]\n',
    "src/pkgx/__init__.py": "VALUE = 1\n",
    "tests/test_pkgx.py": "import pkgx\n\n\ndef test_value() -> None:\n"
    "    assert pkgx.VALUE == 1\n",
}


def test_an_uninstalled_project_is_not_installed_never_failed(
    workspace: Path, run_cli: CliRunner
) -> None:
    # No environment: ax-check's own interpreter has pytest but not the project.
    write(workspace, SRC_LAYOUT)
    code, result, stderr = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "precondition-curable")
    assert "pkgx (the project itself)" in result["message"]
    assert "ax-check's own interpreter" in result["message"]
    assert result["cure"] == "python3 -m venv .venv && .venv/bin/pip install -e '.[tests]'"
    assert result["environment"] == {
        "source": "ax-check",
        "path": result["environment"]["path"],
        "python": sys.executable,
        "onPath": False,
    }
    assert "cure: python3 -m venv .venv" in stderr
    assert "environment: none; Python tools run with ax-check's own" in stderr
    # The same project, made importable by pytest's own setting, runs under that interpreter.
    write(
        workspace,
        {
            "pyproject.toml": SRC_LAYOUT["pyproject.toml"]
            + '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
        },
    )
    code, result, stderr = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["verdict"]) == (0, "passed"), stderr


def test_missing_dependencies_are_listed_and_marked_ones_left_out(
    workspace: Path, run_cli: CliRunner
) -> None:
    write(
        workspace,
        {
            "pyproject.toml": '[project]\nname = "flatapp"\nversion = "0"\ndependencies = [\n'
            '  "not-installed-ax-dep>=1",\n  "marked-ax-dep; python_version < \'3\'",\n]\n',
            "flatapp.py": "X = 1\n",
            "tests/test_flat.py": "def test_x() -> None:\n    pass\n",
        },
    )
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["reason"]) == (5, "precondition-curable")
    # The flat package is importable from the unit folder; its dependency is not installed.
    assert result["message"].endswith("lacks not-installed-ax-dep")
    assert result["cure"] == "python3 -m venv .venv && .venv/bin/pip install -e . pytest"


@pytest.mark.parametrize(
    ("extra_files", "cure"),
    [
        ({"uv.lock": ""}, "uv sync --extra tests"),
        ({"pdm.lock": ""}, "pdm install -G tests"),
        ({"requirements-test.txt": "pytest\n"}, None),
    ],
)
def test_the_cure_follows_the_projects_installer(
    workspace: Path, run_cli: CliRunner, extra_files: dict[str, str], cure: str | None
) -> None:
    write(workspace, {**SRC_LAYOUT, **extra_files})
    result = run_cli(main, ["detect", "-C", str(workspace), "--json"])
    [unit] = json.loads(result.stdout)["units"]
    test = next(item for item in unit["kinds"] if item["kind"] == "test")
    assert (test["status"], test["reason"]) == ("unsupported", "precondition-curable")
    expected = cure or (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[tests]' -r requirements-test.txt"
    )
    assert test["cure"] == expected


def test_poetry_groups_name_the_poetry_cure(workspace: Path, run_cli: CliRunner) -> None:
    write(
        workspace,
        {
            "pyproject.toml": '[tool.poetry]\nname = "pkgx"\nversion = "0"\n\n'
            '[tool.poetry.dependencies]\npython = "^3.9"\n\n'
            '[tool.poetry.group.test.dependencies]\npytest = "*"\n',
            "src/pkgx/__init__.py": "",
        },
    )
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["cure"]) == (5, "poetry install --with test")


def test_an_installed_project_in_its_venv_is_ready(workspace: Path, run_cli: CliRunner) -> None:
    write(workspace, SRC_LAYOUT)
    fake_venv(workspace / ".venv", installed=("pytest", "pkgx-0.dist-info"))
    result = run_cli(main, ["detect", "-C", str(workspace), "--json"])
    [unit] = json.loads(result.stdout)["units"]
    test = next(item for item in unit["kinds"] if item["kind"] == "test")
    assert test["status"] == "ready"
    assert test["recipe"]["command"] == "./.venv/bin/python -m pytest"
    assert unit["environment"] == {
        "source": "project",
        "path": str(workspace / ".venv"),
        "python": "./.venv/bin/python",
        "onPath": True,
    }
    text = run_cli(main, ["detect", "-C", str(workspace)]).stdout
    assert f"environment: the project's virtualenv {workspace / '.venv'}, first on PATH" in text


def test_what_names_no_distribution_never_blocks(workspace: Path, run_cli: CliRunner) -> None:
    write(
        workspace,
        {
            "pyproject.toml": '[project]\nname = "pkgy"\ndependencies = ["foo.bar>=1"]\n',
            "pkgy.py": "",
            "requirements.txt": "git+https://example.com/x.git\n-e .\n"
            "./wheels/x-1.0-py3-none-any.whl\nFoo-Bar  # the same distribution\n",
        },
    )
    # An old-style metadata folder name still names foo.bar.
    fake_venv(workspace / ".venv", installed=("pytest", "Foo_Bar-1.0.dist-info"))
    result = run_cli(main, ["detect", "-C", str(workspace), "--json"])
    [unit] = json.loads(result.stdout)["units"]
    test = next(item for item in unit["kinds"] if item["kind"] == "test")
    assert test["status"] == "ready", test


SHOW_ENVIRONMENT = (
    "test:\n"
    '\t@echo "python=$$(command -v python)"; echo "venv=$${VIRTUAL_ENV-unset}"'
    '; echo "home=$${PYTHONHOME-unset}"; echo "path=$$PATH"\n'
)


def shown(result: dict[str, Any]) -> dict[str, str]:
    text = result["output"]["head"]
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_the_projects_venv_comes_first_for_its_own_tasks(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `make test` ran with ax-check's PATH: its `python`, `pytest`, `mypy` were not the project's.
    write(workspace, {"pyproject.toml": '[project]\nname = "app"\n', "Makefile": SHOW_ENVIRONMENT})
    venv = fake_venv(workspace / ".venv")
    monkeypatch.setenv("PYTHONHOME", "/nowhere")
    code, result, stderr = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["verdict"]) == (0, "passed"), stderr
    seen = shown(result)
    assert seen["python"] == str(venv / "bin" / "python")
    assert seen["venv"] == str(venv)
    assert seen["home"] == "unset"
    assert result["environment"] == {
        "source": "project",
        "path": str(venv),
        "python": "./.venv/bin/python",
        "onPath": True,
    }
    assert f"ax-check: environment: the project's virtualenv {venv}, first on PATH" in stderr


def test_an_active_virtualenv_is_the_projects_environment(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(workspace, {"pyproject.toml": '[project]\nname = "app"\n', "Makefile": SHOW_ENVIRONMENT})
    venv = fake_venv(tmp_path / "elsewhere" / "env")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert code == 0
    assert shown(result)["path"].split(os.pathsep)[0] == str(venv / "bin")
    assert result["environment"]["source"] == "active"
    assert result["environment"]["python"] == str(venv / "bin" / "python")


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="ax-check is not running in a venv")
def test_ax_checks_own_venv_never_reaches_a_projects_path(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    own_bin = os.path.join(sys.prefix, "bin")
    monkeypatch.setenv("PATH", os.pathsep.join((own_bin, os.environ["PATH"])))
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    write(workspace, {"pyproject.toml": '[project]\nname = "app"\n', "Makefile": SHOW_ENVIRONMENT})
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert code == 0
    seen = shown(result)
    real_own = os.path.realpath(own_bin)
    assert all(os.path.realpath(entry) != real_own for entry in seen["path"].split(os.pathsep))
    assert seen["venv"] == "unset"
    assert result["environment"]["source"] == "ax-check"
    assert result["environment"]["onPath"] is False


def test_ax_checks_own_venv_is_the_projects_when_the_project_is_installed_there(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # ax-check installed as one of the project's dev tools (`poetry run ax-check test`):
    # its venv holds the project, so it is the project's environment, first on PATH.
    from ax_check import toolchains

    own = fake_venv(tmp_path / "own", installed=("app-0.dist-info",))
    site = own / "lib" / "python3.11" / "site-packages"
    monkeypatch.setattr(toolchains, "own_venv", lambda: own)
    monkeypatch.setattr(toolchains, "site_dirs_of_running_interpreter", lambda: [site])
    write(workspace, {"pyproject.toml": '[project]\nname = "app"\n', "Makefile": SHOW_ENVIRONMENT})
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert code == 0
    assert shown(result)["path"].split(os.pathsep)[0] == str(own / "bin")
    assert shown(result)["venv"] == str(own)
    assert result["environment"] == {
        "source": "ax-check",
        "path": str(own),
        "python": sys.executable,
        "onPath": True,
    }
