"""Script resolution: the allowlist, each manifest kind, and the exit-5 answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from axtest import CliRunner

from ax_preview.cli import main
from ax_preview.scripts import NoSuchScript, available_scripts, resolve_script
from libcommon.errors import Unsupported, UsageError


def _write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)


def test_package_json_runs_through_the_package_manager_its_lockfile_names(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fake package managers on PATH: only their location is read, they never run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "npm", "pnpm", "yarn"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    _write(workspace, "package.json", json.dumps({"scripts": {"dev": "vite", "build": "x"}}))
    assert resolve_script(workspace, "dev").argv == [str(bin_dir / "npm"), "run", "dev"]
    _write(workspace, "yarn.lock", "")
    assert resolve_script(workspace, "dev").argv[0] == str(bin_dir / "yarn")
    _write(workspace, "pnpm-lock.yaml", "")
    assert resolve_script(workspace, "dev").argv == [str(bin_dir / "pnpm"), "run", "dev"]


def test_justfile_makefile_and_procfile_recipes(workspace: Path) -> None:
    _write(workspace, "justfile", "set shell := ['sh', '-c']\n\ndev port='3000':\n  run\n")
    _write(workspace, "Makefile", "X := 1\nserve: deps\n\tpython3 -m http.server\npreview:\n\n")
    _write(workspace, "Procfile", "worker: celery\nweb: gunicorn app:app --bind 127.0.0.1:0\n")
    assert available_scripts(workspace) == {
        "dev": "justfile",
        "start": "Procfile",
        "serve": "Makefile",
        "preview": "Makefile",
    }
    assert resolve_script(workspace, "start").argv == [
        "/bin/sh",
        "-c",
        "gunicorn app:app --bind 127.0.0.1:0",
    ]
    make = resolve_script(workspace, "serve")
    assert make.argv[1:] == ["-f", str(workspace / "Makefile"), "serve"]


def test_package_json_wins_over_a_makefile_of_the_same_name(workspace: Path) -> None:
    _write(workspace, "package.json", json.dumps({"scripts": {"serve": "node s.js"}}))
    _write(workspace, "Makefile", "serve:\n\techo make\n")
    assert available_scripts(workspace) == {"serve": "package.json"}


def test_default_script_is_the_first_allowlisted_one_defined(workspace: Path) -> None:
    _write(workspace, "Makefile", "preview:\n\ttrue\nserve:\n\ttrue\n")
    assert resolve_script(workspace, None).name == "serve"


def test_a_name_outside_the_allowlist_is_a_usage_error(workspace: Path) -> None:
    _write(workspace, "package.json", json.dumps({"scripts": {"build": "rm -rf /"}}))
    with pytest.raises(UsageError, match="not one ax-preview runs"):
        resolve_script(workspace, "build")


def test_missing_script_names_the_ones_that_exist(workspace: Path) -> None:
    _write(workspace, "Makefile", "serve:\n\ttrue\n")
    with pytest.raises(NoSuchScript) as caught:
        resolve_script(workspace, "dev")
    assert caught.value.available == {"serve": "Makefile"}
    assert "serve (Makefile)" in (caught.value.hint or "")


def test_a_missing_runner_is_unsupported(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(workspace / "empty"))
    _write(workspace, "package.json", json.dumps({"scripts": {"dev": "vite"}}))
    with pytest.raises(Unsupported) as caught:
        resolve_script(workspace, "dev")
    assert caught.value.reason == "runner-missing"


def test_broken_package_json_is_refused(workspace: Path) -> None:
    _write(workspace, "package.json", "{not json")
    with pytest.raises(UsageError, match=r"package\.json is not valid JSON"):
        available_scripts(workspace)


def test_cli_exit_5_with_the_typed_reason_and_nothing_started(
    run_cli: CliRunner, workspace: Path, state_dir: Path
) -> None:
    _write(workspace, "Makefile", "serve:\n\ttrue\n")
    result = run_cli(main, ["start", "-C", str(workspace), "--script", "dev"])
    assert result.exit_code == 5
    answer = json.loads(result.stdout)
    assert answer["reason"] == "no-such-script"
    assert answer["available"] == {"serve": "Makefile"}
    assert "no 'dev' script" in result.stderr
    assert not any(state_dir.rglob("pv-*"))


def test_cli_refuses_a_script_outside_the_allowlist(
    run_cli: CliRunner, workspace: Path, state_dir: Path
) -> None:
    result = run_cli(main, ["start", "-C", str(workspace), "--script", "test"])
    assert result.exit_code == 2
    assert "'test' is not one ax-preview runs" in result.stderr
    assert not any(state_dir.rglob("pv-*"))
    assert os.listdir(workspace) == []
