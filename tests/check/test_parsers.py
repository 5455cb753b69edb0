"""Parsers enrich (counts, findings, signals) from real output; they never judge.

Most samples are real output kept in tests/fixtures/check/outputs (see its
README for the tool, version and command of each): vitest, tsc and pyright
because CI cannot install them, cargo's network failures and clippy because a
parser test should not compile a crate. tests/check/test_summaries.py runs
pytest, mypy, clippy and cargo for real where they are installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ax_check.models import Kind
from ax_check.parsers import (
    MAX_LINE_BYTES,
    MAX_SIGNALS,
    OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
    Enrichment,
    OutputWatcher,
    Places,
    command_tool,
)

OUTPUTS = Path(__file__).resolve().parent.parent / "fixtures" / "check" / "outputs"


def captured(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


def read(
    kind: Kind,
    text: str,
    chunk: int = 7,
    command: tuple[str, ...] = (),
    places: Places | None = None,
) -> Enrichment:
    """Feed ``text`` in small chunks, interleaving the streams, as ax-exec would."""
    watcher = OutputWatcher(Enrichment(kind, command, places))
    data = text.encode()
    for start in range(0, len(data), chunk):
        watcher.feed("stdout", data[start : start + chunk])
    watcher.finish()
    return watcher.enrichment


def signals(found: Enrichment) -> list[tuple[str, str]]:
    return [(signal.name, signal.detail) for signal in found.signals]


def counts(found: Enrichment) -> dict[str, object]:
    summary = found.summary()
    assert summary is not None
    return {key: value for key, value in summary.model_dump().items() if value not in (None, [])}


PYTEST = """\
tests/test_fail.py F.                                                     [ 50%]
=================================== FAILURES ===================================
tests/test_fail.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_fail.py::test_wrong - assert 4 == 5
ERROR tests/test_conf.py::test_setup - RuntimeError
=============== 1 failed, 3 passed, 2 skipped, 1 error in 0.78s ================
"""


def test_pytest_counts_and_failing_ids() -> None:
    found = read("test", PYTEST)
    summary = found.summary()
    assert summary is not None
    assert (summary.tool, summary.passed, summary.failed, summary.skipped, summary.errors) == (
        "pytest",
        3,
        1,
        2,
        1,
    )
    assert [(s.name, s.detail) for s in found.signals] == [
        ("test-failed", "tests/test_fail.py::test_wrong"),
        ("test-error", "tests/test_conf.py::test_setup"),
    ]
    # A traceback line looks like a finding, but test output is not linted.
    assert found.findings == []


CARGO = """\
running 2 tests
test tests::adds ... ok
test tests::breaks ... FAILED

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out

running 0 tests

test result: ok. 0 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out
"""


def test_cargo_test_results_add_up_across_binaries() -> None:
    found = read("test", CARGO)
    summary = found.summary()
    assert summary is not None
    assert (summary.tool, summary.passed, summary.failed, summary.skipped) == ("cargo", 1, 1, 3)
    assert [s.detail for s in found.signals] == ["tests::breaks"]


def test_node_tap_and_jest() -> None:
    tap = read("test", "ok 1 - a\nnot ok 2 - greets by name\n# pass 1\n# fail 1\n# skipped 0\n")
    summary = tap.summary()
    assert summary is not None and (summary.passed, summary.failed) == (1, 1)
    assert tap.signals[0].detail == "greets by name"
    jest = read("test", "Tests:       1 failed, 4 passed, 5 total\n")
    summary = jest.summary()
    assert summary is not None and (summary.tool, summary.failed, summary.passed) == ("jest", 1, 4)


def test_go_test_failures() -> None:
    found = read(
        "test",
        "--- FAIL: TestAdd (0.00s)\nFAIL\texample.com/m\t0.01s\nok  \texample.com/n\t0.01s\n",
    )
    assert [(s.name, s.detail) for s in found.signals] == [
        ("test-failed", "TestAdd"),
        ("package-failed", "example.com/m"),
    ]


def test_lint_findings_from_ruff_mypy_and_tsc() -> None:
    text = (
        "calc.py:1:8: F401 [*] `os` imported but unused\n"
        "calc.py:4: error: Incompatible return value type  [return-value]\n"
        "calc.py:4: note: see docs\n"
        "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "Found 2 errors.\n"
    )
    found = read("lint", text)
    rows = [(f.path, f.line, f.column, f.code, f.message) for f in found.findings]
    assert rows == [
        ("calc.py", 1, 8, "F401", "`os` imported but unused"),
        ("calc.py", 4, None, "return-value", "error: Incompatible return value type"),
        ("src/a.ts", 3, 7, "TS2322", "Type 'string' is not assignable to type 'number'."),
    ]
    summary = found.summary()
    assert summary is not None and summary.findings == 3


def test_rust_diagnostics_become_findings_and_compile_signals() -> None:
    text = (
        "error[E0308]: mismatched types\n"
        "  --> src/lib.rs:2:5\n"
        "warning: unused variable: `x`\n"
        " --> src/lib.rs:7:9\n"
        "error: could not compile `axcrate` (lib) due to 1 previous error\n"
    )
    found = read("build", text)
    assert [(f.path, f.line, f.code) for f in found.findings] == [
        ("src/lib.rs", 2, "E0308"),
        ("src/lib.rs", 7, None),
    ]
    assert [s.detail for s in found.signals] == ["E0308: mismatched types"]


def test_signals_are_capped_deduplicated_and_redacted() -> None:
    lines = "".join(f"FAILED tests/t.py::test_{i}\n" for i in range(MAX_SIGNALS + 20))
    lines += "FAILED tests/t.py::test_0\n"
    found = read("test", lines)
    assert len(found.signals) == MAX_SIGNALS
    secret = read("test", "FAILED tests/t.py::test_x[sk-ant-api03-abcdefghijklmnopqrstuvwxyz]\n")
    assert "abcdefghijklmnop" not in secret.signals[0].detail


def test_excerpt_keeps_head_and_tail_and_long_lines_are_cut() -> None:
    watcher = OutputWatcher(Enrichment("test"))
    body = b"".join(b"line %06d\n" % i for i in range(20_000))
    watcher.feed("stdout", body)
    watcher.feed("stderr", b"x" * (MAX_LINE_BYTES * 3) + b"\n1 failed in 0.1s\n")
    watcher.finish()
    head, tail = watcher.combined.texts()
    assert watcher.combined.truncated
    assert head.startswith("line 000000\n") and len(head.encode()) <= OUTPUT_HEAD_BYTES
    assert tail.endswith("1 failed in 0.1s\n") and len(tail.encode()) <= OUTPUT_TAIL_BYTES
    summary = watcher.enrichment.summary()
    assert summary is not None and summary.failed == 1


def test_ruff_full_format_findings() -> None:
    text = (
        "F401 [*] `os` imported but unused\n --> messy.py:1:8\n  |\n1 | import os\n"
        "unformatted: File would be reformatted\n --> messy.py:2:1\n"
    )
    found = read("lint", text)
    assert [(f.path, f.line, f.column, f.code, f.message) for f in found.findings] == [
        ("messy.py", 1, 8, "F401", "`os` imported but unused"),
        ("messy.py", 2, 1, None, "File would be reformatted"),
    ]


def test_pytest_counts_xfailed_and_xpassed_apart_from_skipped() -> None:
    # The closing lines of a real pytest 9.2 run (tests/check/test_summaries.py runs it).
    text = (
        "FAILED tests/test_x.py::test_xpass_strict - [XPASS(strict)] \n"
        "ERROR tests/test_x.py::test_err - RuntimeError: setup\n"
        "==== 2 failed, 1 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in 1.79s =====\n"
    )
    found = read("test", text, command=("/venv/bin/python", "-m", "pytest"))
    assert counts(found) == {
        "tool": "pytest",
        "passed": 1,
        "failed": 2,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
        "errors": 1,
        "tools": ["pytest"],
    }


def test_vitest_summary_lines_are_counted() -> None:
    # npm runs the script: the command names no tool, vitest's own lines do.
    npm = ("npm", "run", "test")
    passing = read("test", captured("vitest-pass-colour.txt"), command=npm)
    assert counts(passing) == {"tool": "vitest", "passed": 3, "skipped": 1, "tools": ["vitest"]}
    failing = read("test", captured("vitest-fail.txt"), command=npm)
    # A todo is a skip; a test.fails that failed is an expected failure; the suite that
    # could not load is an error, not a failed test.
    assert counts(failing) == {
        "tool": "vitest",
        "passed": 3,
        "failed": 1,
        "skipped": 2,
        "xfailed": 1,
        "errors": 1,
        "tools": ["vitest"],
    }
    assert signals(failing) == [
        ("test-error", "src/c.test.ts"),
        ("test-failed", "src/b.test.ts > breaks"),
    ]
    unhandled = read("test", captured("vitest-unhandled.txt"), command=npm)
    assert (counts(unhandled)["errors"], counts(unhandled)["passed"]) == (1, 5)


def test_clippy_lints_are_lints_with_their_name_not_compile_errors() -> None:
    clippy = ("cargo", "clippy", "--all-targets", "--", "-D", "warnings")
    for sample, severity in (("clippy-deny-warnings.txt", "error"), ("clippy-warn.txt", "warning")):
        found = read("lint", captured(sample), command=clippy)
        rows = [(f.path, f.line, f.code, f.message.split(":")[0]) for f in found.findings]
        assert rows == [
            ("src/lib.rs", 7, "clippy::ptr_arg", severity),
            ("src/lib.rs", 9, "clippy::needless_range_loop", severity),
        ]
        assert signals(found) == [
            ("lint", "src/lib.rs:7: clippy::ptr_arg"),
            ("lint", "src/lib.rs:9: clippy::needless_range_loop"),
        ]
        assert counts(found) == {"tool": "clippy", "findings": 2, "tools": ["clippy", "cargo"]}
    # Run by a project's own task, the lint names still say clippy spoke.
    via_make = read("lint", captured("clippy-deny-warnings.txt"), command=("make", "lint"))
    assert counts(via_make)["tool"] == "clippy"


def test_rustc_lints_and_compile_errors_are_told_apart() -> None:
    mixed = read("build", captured("rustc-mixed.txt"), command=("cargo", "build"))
    assert signals(mixed) == [
        # A syntax error carries no error code, but it is rustc's error in a .rs file.
        ("compile-error", "expected one of `.`, `;`, `?`, `else`, or an operator, found `}`"),
        ("lint", "src/lib.rs:2: unused_variables"),
    ]
    assert [f.code for f in mixed.findings] == [None, "unused_variables"]
    # `#![deny(a, b)]`: no note names the lint; the carets under the attribute do.
    attribute = read("build", captured("rustc-lint-attribute.txt"), command=("cargo", "build"))
    assert signals(attribute) == [("lint", "src/lib.rs:3: unused_variables")]
    assert attribute.findings[0].code == "unused_variables"


def test_cargo_network_failures_are_not_compile_errors() -> None:
    for sample in ("cargo-network-sparse.txt", "cargo-network-git.txt"):
        found = read("build", captured(sample), command=("cargo", "build"))
        names = {name for name, _ in signals(found)}
        assert names == {"network-error", "dependency-unavailable"}, signals(found)
        assert found.findings == []
    sparse = read("build", captured("cargo-network-sparse.txt"), command=("make", "build"))
    assert ("dependency-unavailable", "serde") in signals(sparse)
    assert (
        "network-error",
        "failed to download from `https://registry.nonexistent.invalid/index/config.json`",
    ) in signals(sparse)
    offline = read("build", captured("cargo-offline.txt"), command=("cargo", "build"))
    assert signals(offline) == [("dependency-unavailable", "serde")]


def test_an_error_nobody_recognises_is_unclassified_never_guessed() -> None:
    manifest = "error: failed to parse manifest at `/src/Cargo.toml`\n\nCaused by:\n  bad\n"
    found = read("build", manifest, command=("cargo", "build"))
    assert signals(found) == [("unclassified", "failed to parse manifest at `/src/Cargo.toml`")]
    # just's closing line after a cargo run is the runner's, not an error of its own.
    closing = (
        "    Finished `test` profile\nerror: Recipe `test` failed on line 2 with exit code 101\n"
    )
    assert signals(read("test", closing, command=("just", "test"))) == []
    # Without cargo in sight, `error: ...` could be anyone's: no signal at all.
    assert signals(read("build", manifest, command=("make", "build"))) == []


MYPY = (
    'pkg/m.py:5: error: Argument 1 to "f" has incompatible type "str"; expected "int"'
    "  [arg-type]\n"
    'pkg/m.py:7: note: Revealed type is "str"\n'
    'pkg/m.py:9:2: error: Name "y" is not defined  [name-defined]\n'
    "Found 2 errors in 1 file (checked 1 source file)\n"
)


@pytest.mark.parametrize("kind", ["typecheck", "test"])
def test_mypy_errors_are_type_errors_with_their_code(kind: Kind) -> None:
    # `make test` may run mypy before pytest: the kind does not decide what is read.
    found = read(kind, MYPY, command=("make", kind))
    assert signals(found) == [
        ("type-error", "pkg/m.py:5: arg-type"),
        ("type-error", "pkg/m.py:9: name-defined"),
    ]
    assert [(f.path, f.line, f.column, f.code) for f in found.findings] == [
        ("pkg/m.py", 5, None, "arg-type"),
        ("pkg/m.py", 9, 2, "name-defined"),
    ]
    assert counts(found) == {"tool": "mypy", "findings": 2, "tools": ["mypy"]}


def test_mypy_pretty_output_keeps_the_code_of_a_wrapped_message() -> None:
    found = read("typecheck", captured("mypy-pretty.txt"), command=("python", "-m", "mypy"))
    assert signals(found) == [("type-error", "pkg/m.py:5: arg-type")]
    assert found.findings[0].message.endswith('expected "int"')


def test_a_clean_run_of_a_checker_is_zero_findings_by_that_checker() -> None:
    clean = read("lint", "Success: no issues found in 3 source files\n", command=("make", "lint"))
    assert counts(clean) == {"tool": "mypy", "findings": 0, "tools": ["mypy"]}
    ruff = read("lint", "All checks passed!\n", command=("python", "-m", "ruff", "check", "."))
    assert counts(ruff) == {"tool": "ruff", "findings": 0, "tools": ["ruff"]}


def test_tsc_run_by_a_test_script_is_named_tsc() -> None:
    for sample in ("tsc-plain.txt", "tsc-pretty.txt"):
        found = read("test", captured(sample), command=("npm", "run", "test"))
        assert counts(found) == {"tool": "tsc", "findings": 2, "tools": ["tsc"]}
        assert signals(found) == [
            ("type-error", "src/m.ts:1: TS2322"),
            ("type-error", "src/m.ts:3: TS2345"),
        ]
    bare = read("typecheck", "error TS18003: No inputs were found in config file.\n")
    assert signals(bare) == [("unclassified", "TS18003: No inputs were found in config file.")]


def test_pyright_errors_carry_their_rule_and_a_workspace_path(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("")
    text = captured("pyright.txt").replace("@WORKSPACE@", str(tmp_path))
    found = read("typecheck", text, places=Places(tmp_path, tmp_path))
    assert signals(found) == [
        ("type-error", "pkg/m.py:5: reportArgumentType"),
        ("type-error", "pkg/m.py:7: reportAssignmentType"),
    ]
    assert counts(found) == {"tool": "pyright", "findings": 2, "tools": ["pyright"]}


def test_the_command_names_the_tool_and_a_task_runner_does_not() -> None:
    assert command_tool(("/venv/bin/python3.12", "-m", "pytest", "tests/a.py")) == "pytest"
    assert command_tool(("cargo", "clippy", "--all-targets", "--", "-D", "warnings")) == "clippy"
    assert command_tool(("cargo", "+nightly", "fmt", "--check")) == "rustfmt"
    assert command_tool(("cargo", "test")) == "cargo"
    assert command_tool(("./node_modules/.bin/tsc", "--noEmit")) == "tsc"
    for runner in (("npm", "run", "test"), ("tox", "-e", "lint"), ("python", "-m", "tox")):
        assert command_tool(runner) is None
    # Findings no parser can attribute, from a task: the summary says it does not know.
    found = read("lint", "calc.py:1:8: F401 `os` imported but unused\n", command=("make", "lint"))
    assert counts(found) == {"tool": "unknown", "findings": 1}


def write(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_finding_paths_are_workspace_relative_for_a_member_unit(tmp_path: Path) -> None:
    workspace = tmp_path
    write(workspace / "packages" / "web" / "src" / "a.ts")
    web = Places(workspace, workspace / "packages" / "web")
    tsc = "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
    found = read("typecheck", tsc, places=web)
    # tsc printed the path relative to the unit; relative to the workspace it is this.
    assert found.findings[0].path == "packages/web/src/a.ts"
    assert signals(found) == [("type-error", "packages/web/src/a.ts:3: TS2322")]
    # A file that does not exist (generated, deleted) stays where the tool ran.
    assert web.normalise("src/gone.ts") == "packages/web/src/gone.ts"
    # Outside the workspace: kept absolute, never joined into the unit.
    assert web.normalise("/usr/lib/node/x.d.ts") == "/usr/lib/node/x.d.ts"
    assert web.normalise("../../../x.ts") == str(tmp_path.parent / "x.ts")
    # Another unit of the same workspace is named as such.
    write(workspace / "packages" / "shared" / "b.ts")
    assert web.normalise("../shared/b.ts") == "packages/shared/b.ts"


def test_cargo_paths_are_read_from_the_cargo_workspace_root(tmp_path: Path) -> None:
    workspace = tmp_path
    write(workspace / "Cargo.toml", '[workspace]\nmembers = ["crates/foo"]\n')
    write(workspace / "crates" / "foo" / "src" / "lib.rs")
    foo = Places(workspace, workspace / "crates" / "foo")
    clippy = captured("clippy-warn.txt").replace(" --> src/lib.rs", " --> crates/foo/src/lib.rs")
    found = read("lint", clippy, command=("cargo", "clippy"), places=foo)
    assert {f.path for f in found.findings} == {"crates/foo/src/lib.rs"}
    # Both the root and the member hold src/lib.rs: cargo means the root's.
    write(workspace / "src" / "lib.rs")
    rust = read("lint", captured("clippy-warn.txt"), command=("cargo", "clippy"), places=foo)
    assert {f.path for f in rust.findings} == {"src/lib.rs"}
    # Any other tool in that unit prints unit-relative paths.
    assert foo.normalise("src/lib.rs") == "crates/foo/src/lib.rs"


def test_test_lines_are_read_after_another_tools_error_line() -> None:
    # `make test` may print anyone's `error:` line; the narrow pytest summary after it
    # (`= … =`) is pytest's, not the body of a rustc diagnostic.
    text = (
        "FAILED README.md::README.md\n"
        "FAILED to build the docs\n"
        "error: could not open config\n"
        "= 1 failed, 2 passed in 0.10s =\n"
    )
    found = read("test", text, command=("make", "test"))
    assert counts(found) == {"tool": "pytest", "passed": 2, "failed": 1, "tools": ["pytest"]}
    assert signals(found) == [("test-failed", "README.md::README.md")]
