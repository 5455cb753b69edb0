"""A Python project whose server cannot run yet is refused with the cure; nothing starts.

The rule is libcommon.pyproject_env's, the one ax-check applies before a
project's tests: the distributions the project declares for running
(``[project] dependencies`` or poetry's, and requirements.txt) must be
installed where its server runs: the project's virtualenv, else the python3
on PATH. What cannot be proven missing is never refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ax_preview.scripts import NotInstalled, resolve_script

FIXTURE_SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "preview" / "pyserver.py"
DEPENDENCY = "ax-fixture-dep"
PROJECT = '[project]\nname = "app"\nversion = "0"\n'
PYPROJECT = PROJECT + f'dependencies = ["{DEPENDENCY}>=1"]\n'
# The server imports the dependency first, so it starts only where the dependency is installed.
PROCFILE = 'web: python -c "import ax_fixture_dep" && exec python ../pyserver.py announce\n'


def _app(ws: Path, files: dict[str, str]) -> Path:
    unit = ws / "app"
    for relative, text in files.items():
        (unit / relative).parent.mkdir(parents=True, exist_ok=True)
        (unit / relative).write_text(text)
    return unit


def _fake_venv(folder: Path, *installed: str, system_site: bool = False) -> Path:
    """A virtualenv as stat sees it: bin/python, pyvenv.cfg and a site-packages listing."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    flag = "true" if system_site else "false"
    (folder / "pyvenv.cfg").write_text(f"include-system-site-packages = {flag}\n")
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for name in installed:
        (site / f"{name}-1.0.dist-info").mkdir()
    return folder


def _stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **scripts: str) -> Path:
    """Programs on an otherwise empty PATH; ``make`` is only located, never run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"make": "exit 0", **scripts}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return bin_dir


def _refusal(unit: Path, workspace: Path, script: str = "start") -> NotInstalled | None:
    try:
        resolve_script(unit, script, workspace)
    except NotInstalled as refused:
        return refused
    return None


def _wheel(folder: Path) -> None:
    """A tiny local distribution, ax-fixture-dep 1.0, as a wheel pip installs offline."""
    folder.mkdir()
    info = "ax_fixture_dep-1.0.dist-info"
    files = {
        "ax_fixture_dep/__init__.py": "VALUE = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {DEPENDENCY}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: ax-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={encoded},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / "ax_fixture_dep-1.0-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def _cli(
    tool_path: Callable[[str], str], ws: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool_path("preview"), *argv[:1], "-C", str(ws), *argv[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


Refused = Callable[[subprocess.CompletedProcess[str], str, str], None]


@pytest.fixture
def python_app(workspace: Path) -> Path:
    """The app: a pyproject declaring ax-fixture-dep and a Procfile server that imports it."""
    shutil.copy(FIXTURE_SERVER, workspace)
    return _app(workspace, {"pyproject.toml": PYPROJECT, "Procfile": PROCFILE})


@pytest.fixture
def refused(
    state_dir: Path, no_leftover_processes: str, marked_processes: Callable[[str], list[int]]
) -> Refused:
    """Checks a refusal: exit 5, the Node refusal's JSON shape, the cure, nothing started."""

    def check(done: subprocess.CompletedProcess[str], cure: str, where: str) -> None:
        assert done.returncode == 5, (done.stdout, done.stderr)
        answer = json.loads(done.stdout)
        assert set(answer) == {"state", "reason", "message", "hint", "cure"}
        assert (answer["state"], answer["reason"], answer["cure"]) == (
            "unsupported",
            "precondition-curable",
            cure,
        )
        assert f"dependencies ({DEPENDENCY}) are not installed {where}" in answer["message"]
        assert f"hint: {cure} in " in done.stderr
        assert not any(state_dir.rglob("pv-*"))
        assert marked_processes(no_leftover_processes) == []

    return check


def test_no_venv_and_python3_on_path_lacking_the_dependency_is_refused_with_the_cure(
    workspace: Path,
    tmp_path: Path,
    tool_path: Callable[[str], str],
    python_app: Path,
    refused: Refused,
) -> None:
    # The interpreter on PATH is a real one that is no virtualenv: ax-preview asks it where
    # its packages are.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.defpath}"}
    done = _cli(tool_path, workspace, "start", "--project", "app", env=env)
    refused(
        done,
        "python3 -m venv .venv && .venv/bin/pip install -e .",
        f"for {bin_dir / 'python3'} (on PATH), and it has no .venv or venv",
    )
    assert not (python_app / ".venv").exists()


def test_an_empty_venv_is_refused_then_the_installed_dependency_starts(
    workspace: Path,
    tmp_path: Path,
    tool_path: Callable[[str], str],
    python_app: Path,
    refused: Refused,
) -> None:
    venv = python_app / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = _cli(tool_path, workspace, "start", "--project", "app")
    refused(done, ".venv/bin/pip install -e .", "in its virtualenv .venv")
    # Installed into the project's venv (offline, from a folder this test makes): it starts.
    _wheel(tmp_path / "wheels")
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    pip += ["-q", "--no-index", "--find-links", str(tmp_path / "wheels"), DEPENDENCY]
    subprocess.run(pip, check=True, capture_output=True, timeout=120)
    done = _cli(tool_path, workspace, "start", "--project", "app", "--ready-timeout", "20")
    assert done.returncode == 0, (done.stdout, done.stderr)
    result = json.loads(done.stdout)
    assert result["state"] == "ready"
    assert result["environment"] == str(venv)
    assert _cli(tool_path, workspace, "stop", result["id"]).returncode == 0


def test_requirements_txt_is_what_a_procfile_server_needs_and_the_cure_installs_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand_ins(tmp_path, monkeypatch)
    unit = _app(
        workspace,
        {
            "requirements.txt": "gunicorn==22.0\nuvloop; sys_platform != 'win32'\n",
            "requirements-dev.txt": "pytest\n",
            "Procfile": "web: gunicorn app:app --bind 127.0.0.1:0\n",
        },
    )
    _fake_venv(unit / ".venv")
    refused = _refusal(unit, workspace)
    assert refused is not None
    # The marked requirement is left out, and the dev requirements are not the server's.
    assert "(gunicorn) are not installed in its virtualenv .venv" in refused.message
    assert refused.cure == ".venv/bin/pip install -r requirements.txt"
    (workspace / "uv.lock").write_text("")
    refused = _refusal(unit, workspace)
    assert refused is not None
    assert refused.cure == "uv sync && uv pip install -r requirements.txt"
    (unit / ".venv" / "lib" / "python3.11" / "site-packages" / "gunicorn-22.0.dist-info").mkdir()
    assert resolve_script(unit, "start", workspace).environment == unit / ".venv"


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"pyproject.toml": PROJECT + 'dynamic = ["dependencies"]\n'}, "dynamic: not known"),
        ({"pyproject.toml": PROJECT}, "nothing declared"),
        ({"pyproject.toml": "[project\n"}, "a pyproject.toml that does not parse"),
        ({"Makefile": "serve: install\n\tflask run\ninstall:\n\tpip install .\n"}, "prerequisite"),
        ({"Makefile": "serve:\n\tpip install -e .\n\tflask run\n"}, "the recipe installs first"),
        ({"Makefile": "serve:\n\tuv run flask run\n"}, "uv picks the environment"),
        ({"Makefile": "serve:\n\tpoetry run flask run\n"}, "poetry picks the environment"),
        ({"Makefile": "serve:\n\tdocker compose run web python app.py\n"}, "in a container"),
        ({"Makefile": "serve:\n\t# not python\n\t./bin/server --port 0\n"}, "no python"),
        ({".venv/pyvenv.cfg": "include-system-site-packages = true\n"}, "a --system-site venv"),
    ],
)
def test_what_cannot_be_proven_missing_is_never_refused(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    why: str,
) -> None:
    _stand_ins(tmp_path, monkeypatch)
    baseline = {
        "pyproject.toml": PROJECT + 'dependencies = ["flask"]\n',
        "Makefile": "serve:\n\tflask run --port 0\n",
    }
    unit = _app(workspace, baseline)
    _fake_venv(unit / ".venv")
    refused = _refusal(unit, workspace, "serve")
    assert refused is not None, "the baseline is refused: flask is declared and missing"
    assert refused.cure == ".venv/bin/pip install -e ."
    for relative, text in files.items():
        (unit / relative).write_text(text)
    assert _refusal(unit, workspace, "serve") is None, why


def test_the_python3_on_path_is_the_servers_environment_without_a_venv(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in python3 (ax-preview's reading of its answer is what is tested): it says
    # where its packages are, as a real interpreter's sys.path does.
    site = tmp_path / "site-packages"
    site.mkdir()
    answer = json.dumps(["", str(site)])
    bin_dir = _stand_ins(tmp_path, monkeypatch, python3=f"echo '{answer}'")
    unit = _app(
        workspace,
        {"pyproject.toml": PYPROJECT.replace(DEPENDENCY, "Flask"), "Procfile": "web: flask run\n"},
    )
    refused = _refusal(unit, workspace)
    assert refused is not None
    assert f"(flask) are not installed for {bin_dir / 'python3'} (on PATH)" in refused.message
    assert refused.cure == "python3 -m venv .venv && .venv/bin/pip install -e ."
    (site / "flask-3.0.dist-info").mkdir()
    assert resolve_script(unit, "start", workspace).environment is None
    # An interpreter that cannot say where its packages are proves nothing missing.
    (site / "flask-3.0.dist-info").rmdir()
    assert _refusal(unit, workspace) is not None
    (bin_dir / "python3").write_text("#!/bin/sh\nexit 1\n")
    assert _refusal(unit, workspace) is None


def test_a_python3_on_path_inside_a_virtualenv_is_listed_not_run(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _fake_venv(tmp_path / "active")
    # Were it run, this interpreter would say nothing, and nothing would be refused.
    (env / "bin" / "python3").write_text("#!/bin/sh\nexit 1\n")
    (env / "bin" / "python3").chmod(0o755)
    _stand_ins(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}")
    unit = _app(workspace, {"pyproject.toml": PYPROJECT, "Procfile": PROCFILE})
    refused = _refusal(unit, workspace)
    assert refused is not None
    assert refused.cure == "python3 -m venv .venv && .venv/bin/pip install -e ."
    (env / "lib" / "python3.11" / "site-packages" / "ax_fixture_dep-1.0.dist-info").mkdir()
    assert _refusal(unit, workspace) is None
