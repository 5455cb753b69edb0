"""Parsers enrich (counts, findings, signals) from real-shaped output; they never judge."""

from __future__ import annotations

from ax_check.models import Kind
from ax_check.parsers import (
    MAX_LINE_BYTES,
    MAX_SIGNALS,
    OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
    Enrichment,
    OutputWatcher,
)


def read(kind: Kind, text: str, chunk: int = 7) -> Enrichment:
    """Feed ``text`` in small chunks, interleaving the streams, as ax-exec would."""
    watcher = OutputWatcher(Enrichment(kind))
    data = text.encode()
    for start in range(0, len(data), chunk):
        watcher.feed("stdout", data[start : start + chunk])
    watcher.finish()
    return watcher.enrichment


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
