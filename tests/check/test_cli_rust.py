"""ax-check on the Cargo fixture: a crate without dependencies, built offline.

One copy of the crate and one CARGO_TARGET_DIR are shared by the module, so
the crate is compiled once for build and test; the failing-test case uses its
own copy (and the same target folder).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_check.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "check"


@pytest.fixture(scope="module")
def cargo_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed on this machine")
    root = tmp_path_factory.mktemp("cargo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CARGO_TARGET_DIR", str(root / "target"))
        patch.setenv("CARGO_NET_OFFLINE", "true")
        yield root


@pytest.fixture(scope="module")
def crate(cargo_env: Path) -> Path:
    target = cargo_env / "crate"
    shutil.copytree(FIXTURES / "crate", target)
    return target


def check(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_cargo_build_and_test_pass(crate: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "build", "-C", str(crate))
    assert (code, result["verdict"]) == (0, "passed"), result["output"]
    assert result["recipe"] == {"id": "rust.cargo-build@.", "command": "cargo build"}
    code, result = check(run_cli, "test", "-C", str(crate))
    assert (code, result["verdict"]) == (0, "passed"), result["output"]
    assert result["summary"]["tool"] == "cargo"
    assert (result["summary"]["passed"], result["summary"]["failed"]) == (1, 0)
    assert not (crate / "target").exists()


def test_cargo_fmt_check(crate: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "format", "-C", str(crate))
    assert (code, result["recipe"]["command"]) == (0, "cargo fmt --check"), result["output"]


def test_rust_test_targeted_is_a_stated_hole(crate: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "test-targeted", "-C", str(crate), "-t", "adds")
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "no-recipe")
    assert "matches nothing passes" in result["message"]


def test_failing_and_broken_crates(cargo_env: Path, tmp_path: Path, run_cli: CliRunner) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURES / "crate", broken)
    lib = broken / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("assert_eq!(add(2, 3), 5)", "assert_eq!(add(2, 3), 6)"))
    code, result = check(run_cli, "test", "-C", str(broken))
    assert (code, result["verdict"]) == (1, "failed")
    assert {"name": "test-failed", "detail": "tests::adds"} in result["signals"]
    assert result["summary"]["failed"] == 1
    lib.write_text('pub fn add(a: i64, b: i64) -> i64 {\n    a + b + "x"\n}\n')
    code, result = check(run_cli, "build", "-C", str(broken))
    assert (code, result["verdict"]) == (1, "failed")
    assert any(signal["name"] == "compile-error" for signal in result["signals"])
    assert result["findings"][0]["path"] == "src/lib.rs"
