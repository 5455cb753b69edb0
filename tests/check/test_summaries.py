"""Honest summaries end to end: real pytest, mypy, make, clippy and cargo, through the CLI.

Each case is a small project made in the test. The tools that CI cannot install
(vitest, tsc, pyright) are covered by captured output in test_parsers.py.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_check.cli import main


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def check(run_cli: CliRunner, *argv: str) -> dict[str, Any]:
    result = run_cli(main, [*argv, "--json"])
    return dict(json.loads(result.stdout))


def names(result: dict[str, Any]) -> set[str]:
    return {signal["name"] for signal in result["signals"]}


XFAIL_TESTS = """\
import pytest

def test_ok():
    pass

def test_bad():
    assert 1 == 2

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.mark.xfail
def test_expected_to_fail():
    assert 0

@pytest.mark.xfail
def test_unexpectedly_passes():
    pass
"""


def test_pytest_counts_xfailed_and_xpassed_apart(workspace: Path, run_cli: CliRunner) -> None:
    write(workspace / "pyproject.toml", "[project]\nname = 'x'\n")
    write(workspace / "tests" / "test_x.py", XFAIL_TESTS)
    result = check(run_cli, "test", "-C", str(workspace))
    assert result["verdict"] == "failed"
    summary = result["summary"]
    assert summary["tool"] == "pytest"
    counted = {key: summary[key] for key in ("passed", "failed", "skipped", "xfailed", "xpassed")}
    assert counted == {"passed": 1, "failed": 1, "skipped": 1, "xfailed": 1, "xpassed": 1}


TYPE_ERROR = 'def double(x: int) -> int:\n    return x * 2\n\n\ndouble("2")\n'


def test_mypy_run_by_make_test_is_named_and_its_errors_are_type_errors(
    workspace: Path, run_cli: CliRunner, needs_module: Callable[[str], None]
) -> None:
    needs_module("mypy")
    write(workspace / "pyproject.toml", "[project]\nname = 'x'\n")
    write(workspace / "calc.py", TYPE_ERROR)
    write(workspace / "Makefile", f"test:\n\t{sys.executable} -m mypy calc.py\n")
    result = check(run_cli, "test", "-C", str(workspace))
    assert (result["verdict"], result["recipe"]["command"]) == ("failed", "make test")
    assert result["summary"]["tool"] == "mypy"
    assert {"name": "type-error", "detail": "calc.py:5: arg-type"} in result["signals"]
    assert [(f["path"], f["line"], f["code"]) for f in result["findings"]] == [
        ("calc.py", 5, "arg-type")
    ]
    human = run_cli(main, ["test", "-C", str(workspace)])
    assert "test failed in . after" in human.stderr and "— 1 findings (mypy)" in human.stderr


def test_findings_of_a_member_unit_are_workspace_relative(
    workspace: Path, run_cli: CliRunner, needs_module: Callable[[str], None]
) -> None:
    needs_module("mypy")
    api = workspace / "packages" / "api"
    write(api / "pyproject.toml", "[project]\nname = 'api'\n[tool.mypy]\npretty = true\n")
    write(api / "calc.py", TYPE_ERROR)
    write(workspace / "packages" / "web" / "package.json", "{}")
    result = check(run_cli, "typecheck", "-C", str(workspace), "--project", "packages/api")
    assert result["verdict"] == "failed"
    assert result["summary"]["tool"] == "mypy"
    # mypy ran in packages/api and printed calc.py; from the workspace root it is this.
    assert [(f["path"], f["code"]) for f in result["findings"]] == [
        ("packages/api/calc.py", "arg-type")
    ]
    assert {"name": "type-error", "detail": "packages/api/calc.py:5: arg-type"} in result["signals"]


def test_a_silent_checker_is_named_by_its_command(
    workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("node")
    # A stand-in named tsc (CI cannot install TypeScript): this is about ax reading the
    # command, not about tsc. It says nothing and passes, as tsc does on a clean project.
    write(workspace / "package.json", "{}")
    write(workspace / "tsconfig.json", "{}")
    tsc = workspace / "node_modules" / ".bin" / "tsc"
    write(tsc, "#!/bin/sh\nexit 0\n")
    tsc.chmod(0o755)
    result = check(run_cli, "typecheck", "-C", str(workspace))
    assert result["verdict"] == "passed", result["output"]
    assert result["summary"] == {
        "tool": "tsc",
        "passed": None,
        "failed": None,
        "skipped": None,
        "errors": None,
        "findings": None,
        "xfailed": None,
        "xpassed": None,
        "tools": ["tsc"],
    }


NODE_TESTS = """\
const test = require("node:test");
const assert = require("node:assert");

test("adds", () => assert.strictEqual(1 + 1, 2));
test("breaks", () => assert.strictEqual(1 + 1, 3));
test.skip("later", () => {});
test.todo("some day");
"""


def test_node_test_spec_reporter_counts(
    workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("npm")
    # The spec reporter is node's default on a terminal, and everywhere from Node 23.
    scripts = {"test": "node --test --test-reporter=spec"}
    write(workspace / "package.json", json.dumps({"name": "spec", "scripts": scripts}))
    write(workspace / "test" / "a.test.js", NODE_TESTS)
    result = check(run_cli, "test", "-C", str(workspace))
    assert result["verdict"] == "failed", result["output"]
    summary = result["summary"]
    assert (summary["tool"], summary["passed"], summary["failed"], summary["skipped"]) == (
        "node",
        1,
        1,
        2,
    )
    assert {"name": "test-failed", "detail": "breaks"} in result["signals"]


@pytest.fixture(scope="module")
def cargo_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed on this machine")
    target = tmp_path_factory.mktemp("cargo-target")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CARGO_TARGET_DIR", str(target))
        yield target


def test_clippy_lints_in_a_member_crate(
    cargo_target: Path, workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("cargo-clippy")
    write(workspace / "Cargo.toml", '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n')
    crate = workspace / "crates" / "foo"
    write(crate / "Cargo.toml", '[package]\nname = "foo"\nversion = "0.1.0"\nedition = "2021"\n')
    write(crate / "src" / "lib.rs", "pub fn size(v: &Vec<u8>) -> usize {\n    v.len()\n}\n")
    result = check(run_cli, "lint", "-C", str(workspace), "--project", "crates/foo")
    assert result["verdict"] == "failed", result["output"]
    assert result["summary"]["tool"] == "clippy"
    assert "compile-error" not in names(result)
    assert {"name": "lint", "detail": "crates/foo/src/lib.rs:1: clippy::ptr_arg"} in result[
        "signals"
    ]
    # cargo printed the path from the Cargo workspace root; it is not joined to the unit twice.
    finding = result["findings"][0]
    assert (finding["path"], finding["line"], finding["code"]) == (
        "crates/foo/src/lib.rs",
        1,
        "clippy::ptr_arg",
    )


def test_cargo_fmt_is_named_rustfmt_with_its_files(
    cargo_target: Path, workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("cargo-fmt")
    write(workspace / "Cargo.toml", '[package]\nname = "fmt"\nversion = "0.1.0"\n')
    write(workspace / "src" / "lib.rs", "pub fn add(a: u8,b: u8) -> u8 { a+b }\n")
    result = check(run_cli, "format", "-C", str(workspace))
    assert result["verdict"] == "failed", result["output"]
    # rustfmt names no tool in its output: the command `cargo fmt --check` does.
    assert result["summary"]["tool"] == "rustfmt"
    # Its absolute path, said from the workspace root.
    assert [(f["path"], f["line"]) for f in result["findings"]] == [("src/lib.rs", 1)]


CARGO_CONFIG = """\
[source.crates-io]
replace-with = "unreachable"

[source.unreachable]
registry = "sparse+https://registry.ax-check-test.invalid/index/"

[net]
retry = 1

[http]
timeout = 10
"""


def test_a_dependency_that_cannot_be_fetched_is_not_a_compile_error(
    cargo_target: Path,
    tmp_path: Path,
    workspace: Path,
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A private CARGO_HOME whose registry cannot resolve: the failure is cargo's own,
    # whether or not this machine has a network.
    home = tmp_path / "cargo-home"
    write(home / "config.toml", CARGO_CONFIG)
    monkeypatch.setenv("CARGO_HOME", str(home))
    monkeypatch.delenv("CARGO_NET_OFFLINE", raising=False)
    write(
        workspace / "Cargo.toml",
        '[package]\nname = "fetches"\nversion = "0.1.0"\nedition = "2021"\n'
        '[dependencies]\nserde = "1"\n',
    )
    write(workspace / "src" / "lib.rs", "pub fn one() -> u8 {\n    1\n}\n")
    result = check(run_cli, "build", "-C", str(workspace))
    assert result["verdict"] == "failed", result["output"]
    assert {"network-error", "dependency-unavailable"} <= names(result), result["signals"]
    assert "compile-error" not in names(result)
    assert {"name": "dependency-unavailable", "detail": "serde"} in result["signals"]
    # Offline, the same dependency is unavailable without any network error.
    monkeypatch.setenv("CARGO_NET_OFFLINE", "true")
    offline = check(run_cli, "build", "-C", str(workspace))
    assert offline["signals"] == [{"name": "dependency-unavailable", "detail": "serde"}]
