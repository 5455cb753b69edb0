"""libcommon.cliapp: a small typer app run in-process through run_main, plus one real tool."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest
import typer

from libcommon import __version__, jsonio
from libcommon.cliapp import (
    Environment,
    chrome,
    describe_validation_error,
    emit_json,
    emit_line,
    env,
    make_app,
    read_request,
    run_main,
)
from libcommon.contracts import Contract
from libcommon.errors import Fenced, UsageError

PROG = "ax-demo"
ToolPath = Callable[[str], str]


class Nested(Contract):
    label: str


class DemoRequest(Contract):
    name: str
    max_items: int = 3
    inner: Nested | None = None


app = make_app(PROG, "A demo tool for the libcommon tests.")


@app.command()
def usage() -> None:
    """Raise a usage error with a hint."""
    raise UsageError("the frob is wrong", hint="pass --frob")


@app.command()
def fenced() -> None:
    """Raise Fenced."""
    raise Fenced("session s-1 is owned by live process 42")


@app.command()
def status(code: int) -> int:
    """Return CODE as the exit status."""
    chrome(f"returning {code}")
    return code


@app.command()
def ask(source: Annotated[str, typer.Argument()] = "-") -> None:
    """Read a DemoRequest on stdin and echo it back as JSON."""
    del source
    request = read_request(DemoRequest)
    emit_json({"ok": True, "request": request.to_json()})


LONG_TEXT = "é😀\n" * 100_000
LONG_VALUE = {"head": LONG_TEXT, "n": [1, None]}


@app.command()
def long(streamed: bool = False) -> None:
    """Emit a document holding a long string, whole or given as slices."""
    if not streamed:
        emit_json(LONG_VALUE)
        return
    key = jsonio.placeholder()
    slices = (LONG_TEXT[i : i + 4096] for i in range(0, len(LONG_TEXT), 4096))
    emit_json({"head": key, "n": [1, None]}, texts={key: slices})


@app.command()
def stream(count: int = 2) -> None:
    """Emit COUNT JSON lines and some chrome."""
    chrome("starting")
    for n in range(count):
        emit_line({"n": n})
    chrome("done")


@app.command()
def interrupted() -> None:
    raise KeyboardInterrupt


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(
    argv: list[str],
    stdin: str = "",
    stdin_isatty: bool = False,
    environ: dict[str, str] | None = None,
) -> Result:
    out, err = io.StringIO(), io.StringIO()
    environment = Environment(
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
        environ=environ if environ is not None else {},
        stdin_isatty=stdin_isatty,
        stdout_isatty=False,
        stderr_isatty=False,
    )
    code = run_main(app, argv, environment)
    result = Result(int(code), out.getvalue(), err.getvalue())
    assert "\x1b" not in result.out + result.err  # never ANSI when not a terminal
    return result


# --- exit statuses and streams ----------------------------------------------------------


def test_usage_error_goes_to_stderr_with_hint() -> None:
    result = run(["usage"])
    assert result.code == 2
    assert result.out == ""
    assert result.err == f"{PROG}: error: the frob is wrong\n{PROG}: hint: pass --frob\n"


def test_fenced_exits_4_without_hint_line() -> None:
    result = run(["fenced"])
    assert result.code == 4
    assert result.out == ""
    assert result.err == f"{PROG}: error: session s-1 is owned by live process 42\n"


@pytest.mark.parametrize("code", [0, 1, 5, 124])
def test_verb_return_value_is_the_exit_status(code: int) -> None:
    result = run(["status", str(code)])
    assert result.code == code
    assert result.out == ""
    assert result.err == f"returning {code}\n"


def test_json_data_goes_to_stdout_and_chrome_to_stderr() -> None:
    result = run(["stream", "--count", "3"])
    assert result.code == 0
    assert [jsonio.loads(line) for line in result.out.splitlines()] == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
    ]
    assert result.err == "starting\ndone\n"


def test_keyboard_interrupt_is_130() -> None:
    assert run(["interrupted"]).code == 130


def test_version() -> None:
    result = run(["--version"])
    assert result.code == 0
    assert result.out == f"{PROG} {__version__}\n"
    assert result.err == ""


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_goes_to_stdout(flag: str) -> None:
    result = run([flag])
    assert result.code == 0
    assert result.out.startswith(f"Usage: {PROG}")
    assert "A demo tool for the libcommon tests." in result.out
    assert "--version" in result.out
    assert result.err == ""


def test_verb_help() -> None:
    result = run(["ask", "-h"])
    assert result.code == 0
    assert f"Usage: {PROG} ask" in result.out


@pytest.mark.parametrize(
    "argv",
    [["no-such-verb"], [], ["status"], ["status", "not-a-number"], ["ask", "--bogus"]],
    ids=["unknown-verb", "no-args", "missing-arg", "bad-arg", "unknown-option"],
)
def test_parse_errors_exit_2_with_nothing_on_stdout(argv: list[str]) -> None:
    result = run(argv)
    assert result.code == 2
    assert result.out == ""
    assert f"Usage: {PROG}" in result.err


def test_run_main_restores_sys_streams() -> None:
    saved = sys.stdin, sys.stdout, sys.stderr
    run(["stream"])
    run(["usage"])
    assert (sys.stdin, sys.stdout, sys.stderr) == saved


def test_env_outside_a_command_is_the_process_environment() -> None:
    outside = env()
    assert outside.stdout is sys.stdout
    assert outside.environ is os.environ


# --- read_request -----------------------------------------------------------------------


def test_read_request_parses_camel_case() -> None:
    result = run(["ask", "-"], stdin='{"name": "x", "maxItems": 5, "inner": {"label": "l"}}')
    assert result.code == 0, result.err
    assert jsonio.loads(result.out) == {
        "ok": True,
        "request": {"name": "x", "maxItems": 5, "inner": {"label": "l"}},
    }
    assert result.err == ""


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        ('{"name": "x", "bogus": 1}', "request field 'bogus': unknown field"),
        ('{"name": 1}', "request field 'name': "),
        ('{"name": "x", "maxItems": "many"}', "request field 'maxItems': "),
        ("{}", "request field 'name': Field required"),
        ('{"name": "x", "inner": {"label": "l", "extra": 2}}', "request field 'inner.extra'"),
        ('{"name": "x", "inner": {}}', "request field 'inner.label'"),
        ('{"name": "x"', "request is not valid JSON"),
        ("{'name': 'x'}", "request is not valid JSON"),
        ("[1, 2]", "request must be a JSON object, not list"),
        ('"just a string"', "request must be a JSON object, not str"),
        ("null", "request must be a JSON object, not NoneType"),
        ("", "no request on stdin"),
        ("   \n\t", "no request on stdin"),
    ],
    ids=[
        "unknown-key",
        "wrong-type",
        "wrong-type-alias",
        "missing-field",
        "nested-unknown",
        "nested-missing",
        "truncated",
        "single-quotes",
        "list",
        "string",
        "null",
        "empty",
        "blank",
    ],
)
def test_read_request_refusals_exit_2_naming_the_problem(stdin: str, expected: str) -> None:
    result = run(["ask", "-"], stdin=stdin)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(f"{PROG}: error: ")
    assert expected in result.err


def test_read_request_refuses_a_terminal() -> None:
    result = run(["ask"], stdin='{"name": "x"}', stdin_isatty=True)
    assert result.code == 2
    assert result.out == ""
    assert "stdin is a terminal" in result.err
    assert f"{PROG}: hint: " in result.err


def test_read_request_with_explicit_source_outside_a_command() -> None:
    request = read_request(DemoRequest, io.StringIO('{"name": "n", "max_items": 9}'))
    assert (request.name, request.max_items) == ("n", 9)


def test_describe_validation_error_joins_all_fields() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as info:
        DemoRequest.model_validate({"name": 1, "junk": True})
    text = describe_validation_error(info.value, "request")
    assert "request field 'name'" in text
    assert "request field 'junk': unknown field" in text
    assert "; " in text


# --- Environment.color ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tty", "environ", "color"),
    [
        (True, {}, True),
        (True, {"TERM": "xterm-256color"}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (True, {"NO_COLOR": ""}, False),
        (True, {"TERM": "dumb"}, False),
    ],
)
def test_color(tty: bool, environ: dict[str, str], color: bool) -> None:
    environment = Environment(
        stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(),
        environ=environ, stderr_isatty=tty,
    )  # fmt: skip
    assert environment.color is color


def test_tty_flags_detected_from_real_streams() -> None:
    primary, secondary = os.openpty()
    try:
        with open(secondary, "w", closefd=False) as terminal:
            environment = Environment(
                stdin=io.StringIO(), stdout=io.StringIO(), stderr=terminal, environ={}
            )
            assert environment.stderr_isatty is True
            assert environment.stdout_isatty is False
            assert environment.stdin_isatty is False
            assert environment.color is True
    finally:
        os.close(primary)
        os.close(secondary)


def test_closed_stream_counts_as_not_a_tty() -> None:
    closed = io.StringIO()
    closed.close()
    environment = Environment(stdin=closed, stdout=io.StringIO(), stderr=closed, environ={})
    assert environment.stdin_isatty is False
    assert environment.color is False


# --- a real installed tool on a closed pipe ---------------------------------------------


def test_installed_tool_into_head_prints_no_traceback(tool_path: ToolPath) -> None:
    script = f"set +o pipefail; {tool_path('log')} --help | head -c1 >/dev/null"
    for _ in range(3):
        proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
        assert "Traceback" not in proc.stderr
        assert "Exception ignored" not in proc.stderr
        assert proc.stderr == ""


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_installed_tool_into_closed_pipe_is_quiet(tool_path: ToolPath, argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the tool writes anything
    try:
        proc = subprocess.run(
            [tool_path("log"), *argv], stdout=write_end, stderr=subprocess.PIPE, text=True,
            timeout=30,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr
    assert "Exception ignored" not in proc.stderr
    assert proc.returncode == 141


STREAMING_TOOL = """
from libcommon.cliapp import emit_line, entry_point, make_app, run_main

app = make_app("ax-stream", "Streams JSON lines.")


@app.command()
def events(count: int = 50_000) -> None:
    for n in range(count):
        emit_line({"n": n, "pad": "x" * 100})


@app.command()
def other() -> None:
    pass


entry_point(lambda: run_main(app))
"""


def test_streaming_tool_into_head_is_quiet(tmp_path: Path) -> None:
    """`ax-log events | head -n1`: the reader leaves mid-stream; no traceback, no noise."""
    script = tmp_path / "stream_tool.py"
    script.write_text(STREAMING_TOOL)
    proc = subprocess.run(
        ["bash", "-c", f"set +o pipefail; {sys.executable} {script} events | head -n1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert jsonio.loads(proc.stdout) == {"n": 0, "pad": "x" * 100}
    assert proc.stderr == ""


def test_streaming_tool_into_closed_pipe_exits_141(tmp_path: Path) -> None:
    script = tmp_path / "stream_tool.py"
    script.write_text(STREAMING_TOOL)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, str(script), "events", "--count", "10"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_emit_json_with_texts_as_slices_writes_the_same_document() -> None:
    whole, pieces = run(["long"]), run(["long", "--streamed"])
    assert (whole.code, pieces.code) == (0, 0)
    assert pieces.out == whole.out == jsonio.dumps(LONG_VALUE, indent=True).decode() + "\n"
