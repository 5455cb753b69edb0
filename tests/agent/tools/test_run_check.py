"""run_check through ax-check on a tiny Python project with a passing and a failing test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness

from ax_agent.seam.models import CheckRunRequest
from ax_agent.tools import run_check

TOOL = run_check.TOOL


@pytest.fixture
def project(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Python project whose test check runs this interpreter's pytest."""
    (workspace / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    )
    (workspace / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
    )
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_calc.py").write_text(
        "from calc import add, sub\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    assert sub(5, 3) == 2\n"
    )
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return workspace


def test_failing_test_check(harness: Harness, project: Path) -> None:
    result = harness.call(TOOL, {"kind": "test"})
    verb, request = harness.seam.calls[-1]
    assert verb == "check.run"
    assert request == CheckRunRequest(kind="test", project=None, targets=[])
    lines = result.content.splitlines()
    assert lines[0] == "test check: FAILED (exit code 1)"
    # A failing test is the check's answer, not a tool error.
    assert not result.is_error
    assert result.summary == "test check: FAILED (exit code 1)"
    assert any(line.startswith("command: ") and "pytest" in line for line in lines)
    assert any(line.startswith("replay key: ") for line in lines)
    assert "summary (pytest): 1 passed, 1 failed" in result.content
    assert "test_sub" in result.content
    assert "[output: " in result.content
    # The recovery catalogue's entry rides on the failing result: the diagnosis where it
    # is needed, from the persisted signals.
    tail = result.content[result.content.index("diagnosis: ") :].splitlines()
    assert tail[0] == "diagnosis: test-assertion (tests ran and some failed)"
    assert "  evidence: test-failed: tests/test_calc.py::test_sub" in tail
    assert "  a repair is proven by: test passing again (scope .)" in tail
    assert "  try it yourself: yes" in tail


def test_targeted_passing_test(harness: Harness, project: Path) -> None:
    result = harness.call(
        TOOL, {"kind": "test-targeted", "targets": ["tests/test_calc.py::test_add"]}
    )
    assert result.content.splitlines()[0] == "test-targeted check: PASSED (exit code 0)"
    assert "1 passed" in result.content
    assert not result.is_error


def test_fix_then_pass(harness: Harness, project: Path) -> None:
    (project / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    result = harness.call(TOOL, {"kind": "test"})
    assert result.content.startswith("test check: PASSED (exit code 0)")
    assert "diagnosis" not in result.content


def test_expected_failures_are_shown_apart_from_skips(harness: Harness, project: Path) -> None:
    (project / "tests" / "test_known.py").write_text(
        "import pytest\n\n\n@pytest.mark.xfail\ndef test_known_bug():\n    assert 0\n"
    )
    result = harness.call(TOOL, {"kind": "test"})
    assert "summary (pytest): 1 passed, 1 failed, 1 xfailed" in result.content


def test_unsupported_and_bad_requests_are_errors(harness: Harness, project: Path) -> None:
    unsupported = harness.call(TOOL, {"kind": "static-analysis"})
    assert unsupported.is_error
    assert unsupported.content.startswith("static-analysis check: UNSUPPORTED")
    assert "reason: " in unsupported.content
    # A capability the project lacks is nothing to repair: no diagnosis.
    assert "diagnosis" not in unsupported.content
    bad = harness.call(TOOL, {"kind": "test", "targets": ["tests/test_calc.py"]})
    assert bad.is_error
    assert "--target applies only to test-targeted" in bad.content


def test_the_model_cannot_name_an_unknown_kind() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="kind"):
        TOOL.input_model.model_validate({"kind": "deploy"})
