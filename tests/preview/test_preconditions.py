"""A project that cannot run yet is refused with the cure; a missing program is named.

The rule for "installed" is libcommon.projectenv's, the one ax-check applies:
declared dependencies with no node_modules (in the unit or above it, up to the
workspace root) is precondition-curable, nothing is started, exit 5. A server
whose command could not find a program (exit 127, ``sh: 1: vite: not found``)
failed for want of a tool, not of its code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def _needs_npm() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the package.json fixture")


def _project(ws: Path, name: str, files: dict[str, str]) -> Path:
    unit = ws / name
    for relative, text in files.items():
        (unit / relative).parent.mkdir(parents=True, exist_ok=True)
        (unit / relative).write_text(text)
    return unit


def _vite_app(ws: Path, *extra: str) -> Path:
    package = {"name": "app", "scripts": {"dev": "vite"}, "devDependencies": {"vite": "^5.0.0"}}
    files = {"package.json": json.dumps(package)}
    files.update({name: "{}" for name in extra})
    return _project(ws, "app", files)


def _start(
    tool_path: Callable[[str], str], ws: Path, *argv: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool_path("preview"), "start", "-C", str(ws), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("lockfile", "cure"), [(None, "run npm install"), ("package-lock.json", "run npm ci")]
)
def test_an_uninstalled_node_project_is_refused_with_the_cure_and_nothing_starts(
    workspace: Path,
    state_dir: Path,
    tool_path: Callable[[str], str],
    lockfile: str | None,
    cure: str,
) -> None:
    _needs_npm()
    _vite_app(workspace, *([lockfile] if lockfile else []))
    done = _start(tool_path, workspace, "--project", "app", "--ready-timeout", "5")
    assert done.returncode == 5, (done.stdout, done.stderr)
    answer = json.loads(done.stdout)
    assert answer["state"] == "unsupported"
    assert answer["reason"] == "precondition-curable"
    assert answer["cure"] == cure
    assert "no node_modules is installed" in answer["message"]
    assert f"hint: {cure} in " in done.stderr
    assert not any(state_dir.rglob("pv-*"))
    assert not (workspace / "app" / "node_modules").exists()


def test_node_modules_installed_at_the_workspace_root_counts(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_preview.scripts import NotInstalled, resolve_script

    # Stand-ins for node and pnpm on PATH: only their location is read, they never run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "npm", "pnpm"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    unit = _vite_app(workspace / "packages")
    with pytest.raises(NotInstalled) as caught:
        resolve_script(unit, "dev", workspace)
    assert caught.value.cure == "run npm install"
    # A monorepo: the lockfile and node_modules live at the workspace root.
    (workspace / "pnpm-lock.yaml").write_text("")
    with pytest.raises(NotInstalled) as caught:
        resolve_script(unit, "dev", workspace)
    assert caught.value.cure == "run pnpm install --frozen-lockfile"
    (workspace / "node_modules").mkdir()
    resolved = resolve_script(unit, "dev", workspace)
    assert resolved.argv == [str(bin_dir / "pnpm"), "run", "dev"]


def test_a_program_missing_from_an_npm_script_is_toolchain_unavailable(
    workspace: Path, tool_path: Callable[[str], str]
) -> None:
    _needs_npm()
    # No dependencies declared, so nothing to install: the script's program is just absent.
    package = {"name": "app", "scripts": {"dev": "ax-no-such-vite --port 1"}}
    _project(workspace, "app", {"package.json": json.dumps(package)})
    done = _start(tool_path, workspace, "--project", "app", "--ready-timeout", "10")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"] == "toolchain-unavailable"
    assert "ax-no-such-vite: not found" in result["logTail"]
    assert "could not find ax-no-such-vite" in result["hint"]


def test_a_program_missing_from_a_make_recipe_is_toolchain_unavailable(
    workspace: Path, tool_path: Callable[[str], str]
) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is needed for the Makefile fixture")
    # make exits 2 and reports the recipe's 127 as "Error 127".
    _project(workspace, "app", {"Makefile": "serve:\n\tax-no-such-serve --port 1\n"})
    done = _start(tool_path, workspace, "--project", "app", "--ready-timeout", "10")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"] == "toolchain-unavailable"
    assert "could not find ax-no-such-serve" in result["hint"]


def test_a_server_that_merely_crashes_is_still_crashed(pv: Any) -> None:
    code, result = pv.start("crash")
    assert code == 1
    assert result["reason"] == "crashed"
    assert result["hint"] is None


def test_the_projects_venv_runs_the_server(pv: Any) -> None:
    # The Procfile's program exists only in the project's .venv/bin.
    unit = _project(
        pv.ws,
        "venv-app",
        {
            "Procfile": "web: ax-fixture-serve\n",
            ".venv/bin/ax-fixture-serve": '#!/bin/sh\nexec python3 ../pyserver.py announce "$@"\n',
        },
    )
    (unit / ".venv" / "bin" / "ax-fixture-serve").chmod(0o755)
    os.symlink(sys.executable, unit / ".venv" / "bin" / "python")
    code, result = pv.start("venv-app")
    assert code == 0, result
    assert result["environment"] == str(unit / ".venv")
    assert pv.stop(result["id"]).exit_code == 0
