"""A program missing inside the project's own task is `unsupported` naming it, never `failed`.

The fixture projects run their task through real make, sh/bash/dash/zsh, env,
npm and tox, so the messages parsed are the ones those programs print here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from axtest import CliRunner
from check.checkcli import check, write

from libcommon.missing import MissingScanner

PYPROJECT = '[project]\nname = "app"\nversion = "0"\n'


def shell_or_skip(name: str) -> str:
    for folder in ("/bin", "/usr/bin"):
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate)
    pytest.skip(f"{name} is not installed on this machine")


@pytest.mark.parametrize(
    ("shell", "recipe"),
    [
        # make runs a simple line itself: "make: mypyzz: No such file or directory".
        (None, "mypyzz src"),
        # Through the shell (a `;` makes make hand the line to $(SHELL)).
        ("sh", "true; mypyzz src"),
        ("dash", "true; mypyzz src"),
        ("bash", "true; mypyzz src"),
        ("zsh", "true; mypyzz src"),
        # A script whose interpreter is missing: "env: 'mypyzz': No such file or directory".
        (None, "./run-lint"),
    ],
    ids=["make", "sh", "dash", "bash", "zsh", "env-shebang"],
)
def test_a_missing_program_in_a_make_target_is_named_not_failed(
    workspace: Path, run_cli: CliRunner, shell: str | None, recipe: str
) -> None:
    header = f"SHELL := {shell_or_skip(shell)}\n" if shell else ""
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "Makefile": f"{header}lint:\n\t{recipe}\n",
            "run-lint": "#!/usr/bin/env mypyzz\n",
        },
    )
    (workspace / "run-lint").chmod(0o755)
    code, result, stderr = check(run_cli, "lint", "-C", str(workspace))
    assert (code, result["verdict"], result["reason"]) == (
        5,
        "unsupported",
        "toolchain-unavailable",
    )
    assert result["exitCode"] == 2 and result["termination"] == "exited"
    assert "`make lint` could not find mypyzz" in result["message"]
    assert result["cure"] == "install mypyzz so that it is on PATH"
    assert result["recipe"]["command"] == "make lint"
    assert "ax-check: ran make lint" in stderr


@pytest.mark.parametrize(
    "recipe",
    [
        # A not-found message the project prints while failing for its own reason.
        "@echo 'sh: 1: mypyzz: not found'; exit 1",
        # Exit status 127 with no not-found message: nothing is recognised.
        "@exit 127",
        # The project's own script is missing: its failure, not a missing tool.
        "./scripts/lint.sh",
        "./tools/env/lint",
    ],
    ids=["message-without-127", "127-without-message", "missing-project-file", "env-not-a-venv"],
)
def test_a_real_failure_is_never_turned_into_a_blocker(
    workspace: Path, run_cli: CliRunner, recipe: str
) -> None:
    write(workspace, {"pyproject.toml": PYPROJECT, "Makefile": f"lint:\n\t{recipe}\n"})
    code, result, _ = check(run_cli, "lint", "-C", str(workspace))
    assert (code, result["verdict"], result["reason"]) == (1, "failed", None)


def test_a_task_that_runs_a_missing_venv_says_how_to_create_it(
    workspace: Path, run_cli: CliRunner
) -> None:
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT + '\n[project.optional-dependencies]\ntests = ["pytest"]\n',
            "Makefile": "test:\n\t.venv/bin/pytest -q\n",
        },
    )
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "precondition-curable")
    assert "could not find pytest" in result["message"]
    assert result["cure"] == "python3 -m venv .venv && .venv/bin/pip install -e '.[tests]' pytest"


def test_a_declared_tool_missing_from_the_projects_venv_is_curable(
    workspace: Path, run_cli: CliRunner
) -> None:
    # The venv exists and is first on PATH, but mypyzz (a declared dev tool) is not in it.
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT + '\n[dependency-groups]\ndev = ["mypyzz>=1"]\n',
            "Makefile": "typecheck:\n\tmypyzz src\n",
        },
    )
    (workspace / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, workspace / ".venv" / "bin" / "python")
    code, result, _ = check(run_cli, "typecheck", "-C", str(workspace))
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "precondition-curable")
    assert result["cure"] == ".venv/bin/pip install -e . --group dev"
    assert result["environment"]["source"] == "project"


def test_a_missing_bin_in_an_npm_script_is_curable_by_installing(
    workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("npm")
    package = {
        "name": "web",
        "scripts": {"test": "vitezz run"},
        "devDependencies": {"vitezz": "^1.0.0"},
    }
    write(workspace, {"package.json": json.dumps(package), "package-lock.json": "{}"})
    # node_modules exists (so the install precondition passes) but lacks the bin.
    (workspace / "node_modules").mkdir()
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert result["exitCode"] == 127
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "precondition-curable")
    assert "`npm run test` could not find vitezz" in result["message"]
    assert result["cure"] == "run npm ci"


def test_a_missing_command_in_a_tox_env_is_named(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ax-check's own venv never reaches the child's PATH: tox must be installed elsewhere.
    own_bin = os.path.realpath(os.path.join(sys.prefix, "bin"))
    path = os.pathsep.join(
        entry
        for entry in os.environ["PATH"].split(os.pathsep)
        if os.path.realpath(entry) != own_bin
    )
    if shutil.which("tox", path=path) is None:
        pytest.skip("tox is not installed outside ax-check's own environment")
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "tox.ini": "[tox]\nskipsdist = true\n[testenv:lint]\nskip_install = true\n"
            "commands = mypyzz src\n",
        },
    )
    monkeypatch.setenv("TOX_WORK_DIR", str(workspace.parent / "toxwork"))
    code, result, _ = check(run_cli, "lint", "-C", str(workspace))
    assert result["recipe"]["command"] == "tox --skip-missing-interpreters=false -e lint"
    assert (code, result["verdict"], result["reason"]) == (
        5,
        "unsupported",
        "toolchain-unavailable",
    )
    assert "could not find mypyzz" in result["message"]


def test_a_tox_env_whose_python_is_missing_is_not_a_failure(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tox runs with --skip-missing-interpreters=false: a missing Python fails it, exit 1."""
    own_bin = os.path.realpath(os.path.join(sys.prefix, "bin"))
    path = os.pathsep.join(
        entry
        for entry in os.environ["PATH"].split(os.pathsep)
        if os.path.realpath(entry) != own_bin
    )
    if shutil.which("tox", path=path) is None:
        pytest.skip("tox is not installed outside ax-check's own environment")
    # No machine has Python 3.4 any more (checked below, so the test never lies).
    if shutil.which("python3.4", path=path) is not None:
        pytest.skip("python3.4 is installed on this machine")
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "tox.ini": "[tox]\nskipsdist = true\n[testenv:lint]\nskip_install = true\n"
            "basepython = python3.4\ncommands = python -c pass\n",
        },
    )
    monkeypatch.setenv("TOX_WORK_DIR", str(workspace.parent / "toxwork"))
    code, result, _ = check(run_cli, "lint", "-C", str(workspace))
    assert result["exitCode"] == 1
    assert (code, result["verdict"], result["reason"]) == (
        5,
        "unsupported",
        "toolchain-unavailable",
    )
    assert "could not find python3.4" in result["message"]
    assert result["cure"] == "install python3.4 so that it is on PATH"


NOXFILE = """
import nox

@nox.session(python=False)
def lint(session):
    session.run("mypyzz", "src")

@nox.session(python="3.4")
def tests(session):
    session.run("python", "-V")
"""


@pytest.mark.parametrize(
    ("kind", "missing", "cure"),
    [
        ("lint", "mypyzz", "install mypyzz so that it is on PATH"),
        ("test", "python3.4", "install python3.4 so that it is on PATH"),
    ],
)
def test_a_real_nox_session_missing_a_program_or_its_python_is_not_a_failure(
    workspace: Path,
    tmp_path: Path,
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    missing: str,
    cure: str,
) -> None:
    nox = shutil.which("nox")
    if nox is None:
        pytest.skip("nox is not installed on this machine")
    if shutil.which("python3.4") is not None:
        pytest.skip("python3.4 is installed on this machine")
    # ax-check's own venv (where the test group installs nox) never reaches the child's
    # PATH: nox gets a folder of its own, as a pipx install would give it.
    nox_bin = tmp_path / "nox-bin"
    nox_bin.mkdir()
    (nox_bin / "nox").symlink_to(nox)
    monkeypatch.setenv("PATH", os.pathsep.join([str(nox_bin), os.environ["PATH"]]))
    write(workspace, {"pyproject.toml": PYPROJECT, "noxfile.py": NOXFILE})
    code, result, _ = check(run_cli, kind, "-C", str(workspace))
    assert result["exitCode"] == 1
    assert (code, result["verdict"], result["reason"]) == (
        5,
        "unsupported",
        "toolchain-unavailable",
    ), result["message"]
    assert f"could not find {missing}" in result["message"]
    assert result["cure"] == cure


@pytest.mark.parametrize(
    ("lines", "exit_code", "programs", "cure"),
    [
        # Messages this machine's rustup, cargo and python print (captured verbatim).
        (
            [
                "error: the 'miri' component which provides the command 'cargo-miri' is not "
                "available for the 'stable-x86_64-unknown-linux-gnu' toolchain",
            ],
            1,
            ["cargo-miri"],
            "rustup component add miri --toolchain stable-x86_64-unknown-linux-gnu",
        ),
        (
            [
                "error: 'cargo-clippy' is not installed for the toolchain 'stable'",
                "To install, run `rustup component add clippy`",
            ],
            1,
            ["cargo-clippy"],
            "rustup component add clippy",
        ),
        (
            ["error: no such command: `nextest`"],
            101,
            ["cargo-nextest"],
            "cargo install cargo-nextest",
        ),
        (["/usr/bin/python3: No module named pytest"], 1, ["pytest"], None),
        # nox's words when session.run cannot find the program (as nox 2026.10 prints them).
        (["nox > Running session lint", "nox > Program mypy not found."], 1, ["mypy"], None),
        (
            [" ELIFECYCLE  Command failed with exit code 127.", "sh: vite: not found"],
            1,
            ["vite"],
            None,
        ),
        # A Python a tox env or nox session asks for: tox 4's words (and its older ones),
        # and nox's (as nox 2026.10 prints them).
        (
            [
                "lint: failed with could not find python interpreter matching any of the "
                "specs python3.4",
            ],
            1,
            ["python3.4"],
            None,
        ),
        (
            ["py38: failed with could not find python interpreter with spec(s): py38"],
            1,
            ["python3.8"],
            None,
        ),
        (
            ["nox > Session tests-3.8 failed: Python interpreter 3.8 not found."],
            1,
            ["python3.8"],
            None,
        ),
        # A path is the project's own setting, not a program to install.
        (
            [
                "lint: failed with could not find python interpreter matching any of the "
                "specs /opt/py/bin/python",
            ],
            1,
            [],
            None,
        ),
        # The same words with another exit status are a real failure.
        (["nox > Session tests-3.8 failed: Python interpreter 3.8 not found."], 2, [], None),
        (["error: no such command: `nextest`"], 1, [], None),
        (["/usr/bin/python3: No module named pytest"], 2, [], None),
        (["sh: 1: vite: not found"], 1, [], None),
    ],
)
def test_the_scanner_needs_the_exit_status_its_message_goes_with(
    lines: list[str], exit_code: int, programs: list[str], cure: str | None
) -> None:
    scanner = MissingScanner()
    for line in lines:
        scanner.line(line)
    scanner.finish()
    found = scanner.explained(exit_code)
    assert [item.program for item in found] == programs
    if programs:
        assert found[0].cure == cure
