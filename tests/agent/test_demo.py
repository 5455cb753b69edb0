"""``ax-agent demo`` through the installed script, and its data inside the built wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ax_agent.demo import DEMO_DATA, write_project

ROOT = Path(__file__).resolve().parents[2]
# Generous: the demo's own budget is 15 s; this only stops a hung run.
DEMO_TIMEOUT_S = 60


def test_the_demo_fixes_the_test_and_the_report_shows_the_file_checked(
    tool_path: object, state_dir: Path
) -> None:
    if shutil.which("make") is None or shutil.which("python3") is None:
        pytest.skip("the demo project's test command needs make and python3 on PATH")
    done = subprocess.run(
        [tool_path("agent"), "demo"],  # type: ignore[operator]
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        env={**os.environ, "AX_STATE_DIR": str(state_dir)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "# Session report" in done.stdout
    assert "`calc.py`: modified, 1 change. **CHECKED**: check ran, exit 0" in done.stdout
    assert "passed (exit 0)" in done.stdout and "failed (exit 2)" in done.stdout
    assert "calc.py is CHECKED in the report" in done.stderr
    # It leaves nothing behind in the caller's state root.
    assert list(state_dir.iterdir()) == []


def test_the_demo_project_fails_before_the_fix(tmp_path: Path) -> None:
    write_project(tmp_path)
    assert "return a - b" in (tmp_path / "calc.py").read_text()
    ran = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=tmp_path, capture_output=True, check=False
    )
    assert ran.returncode == 1


def test_the_wheel_carries_the_demo_data(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        pytest.skip(
            f"cannot build a wheel here (no build backend reachable): {built.stderr[-300:]}"
        )
    wheel = next(tmp_path.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert f"ax_agent/{DEMO_DATA}/script.json" in names
    assert f"ax_agent/{DEMO_DATA}/project.json" in names


def test_without_an_enforced_sandbox_the_demo_answers_its_own_questions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Simulated: this machine may have an enforced sandbox, so the probe is replaced
    # with what a machine without one reports.
    import io

    from ax_agent import session as session_module
    from ax_agent.context import SandboxFacts
    from ax_agent.demo import run_demo
    from ax_policy import SandboxStatus

    if shutil.which("make") is None:
        pytest.skip("the demo project's test command needs make on PATH")
    monkeypatch.setattr(
        session_module, "probe_sandbox", lambda: SandboxFacts(policy=SandboxStatus())
    )
    out, said = io.StringIO(), []
    assert run_demo(dict(os.environ), out, said.append) == 0
    answered = [line for line in said if "answered yes once to run_check" in line]
    assert len(answered) == 2
    assert "runs UNSANDBOXED" in answered[0]
    assert "**CHECKED**" in out.getvalue()
