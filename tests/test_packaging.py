"""The distribution's shape: one wheel, ten console scripts, the declared dependencies."""

from __future__ import annotations

import importlib
import os
import re
from importlib.metadata import distribution
from pathlib import Path

import pytest
from axtest import TOOLS, CliRunner

ROOT = Path(__file__).resolve().parent.parent
CORE_DEPENDENCIES = {"typer", "pydantic", "anthropic", "httpx", "orjson"}


def test_every_console_script_points_at_its_cli() -> None:
    scripts = {
        ep.name: ep.value
        for ep in distribution("ax-tools").entry_points
        if ep.group == "console_scripts"
    }
    assert scripts == {f"ax-{t}": f"ax_{t}.cli:run" for t in TOOLS}


def test_python_floor_is_3_11() -> None:
    assert distribution("ax-tools").metadata["Requires-Python"] == ">=3.11"


def test_every_extra_runtime_dependency_has_a_written_reason() -> None:
    requires = distribution("ax-tools").requires or []
    runtime = {
        re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower()
        for req in requires
        if "extra ==" not in req
    }
    assert runtime >= CORE_DEPENDENCIES
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    unexplained = sorted(d for d in runtime - CORE_DEPENDENCIES if f"`{d}`" not in architecture)
    assert unexplained == [], f"add a reason for {unexplained} to docs/architecture.md"


@pytest.mark.skipif(
    os.environ.get("AX_EXPECT_INSTALLED") != "1",
    reason="only meaningful under tox, where the wheel is installed (AX_EXPECT_INSTALLED=1)",
)
@pytest.mark.parametrize("package", ["libcommon", *(f"ax_{t}" for t in TOOLS)])
def test_tests_run_against_the_installed_wheel(package: str) -> None:
    location = Path(importlib.import_module(package).__file__ or "").resolve()
    for source in (ROOT / "libcommon", ROOT / "tools"):
        assert source not in location.parents, f"{package} was imported from {location}"
    assert "site-packages" in location.parts


@pytest.mark.parametrize("tool", TOOLS)
def test_cli_help_version_and_unknown_verb(tool: str, run_cli: CliRunner) -> None:
    from libcommon import __version__

    main = importlib.import_module(f"ax_{tool}.cli").main
    helped = run_cli(main, ["--help"])
    assert helped.exit_code == 0
    assert f"Usage: ax-{tool}" in helped.stdout
    assert helped.stderr == ""

    version = run_cli(main, ["--version"])
    assert (version.exit_code, version.stdout) == (0, f"ax-{tool} {__version__}\n")

    unknown = run_cli(main, ["no-such-verb"])
    assert unknown.exit_code == 2
    assert unknown.stdout == ""
    assert "No such command 'no-such-verb'" in unknown.stderr
