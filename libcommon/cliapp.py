"""What every tool's ``cli.py`` is built from.

A tool's CLI is ``app = make_app(...)`` plus verbs that parse, call the core and
print. ``run_main`` runs it with an injected ``Environment`` (streams, process
environment, tty flags) so tests drive the real CLI in-process and assert on
exit status, stdout and stderr, the way httpie's tests do.

Conventions enforced here: data to stdout as JSON, chrome to stderr only, no
ANSI when the stream is not a terminal, typed errors mapped to exit statuses,
and typer's rich output switched off (rich costs start-up time and escapes).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, NoReturn, TextIO, TypeVar

import typer

from libcommon import __version__, jsonio
from libcommon.errors import AxError, ExitStatus, UsageError

if TYPE_CHECKING:
    from pydantic import BaseModel

    ModelT = TypeVar("ModelT", bound=BaseModel)

REQUEST_MAX_BYTES = 16 * 1024 * 1024
# How much of a refused value an error message echoes (its repr, redacted).
REFUSED_VALUE_MAX_CHARS = 80


class ReaderGone(Exception):
    """stdout's reader went away. Deliberately not an OSError, which typer would swallow."""


@dataclass
class Environment:
    """The world a command runs in; tests build one with their own streams."""

    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    stdin_isatty: bool | None = None
    stdout_isatty: bool | None = None
    stderr_isatty: bool | None = None

    def __post_init__(self) -> None:
        if self.stdin_isatty is None:
            self.stdin_isatty = _isatty(self.stdin)
        if self.stdout_isatty is None:
            self.stdout_isatty = _isatty(self.stdout)
        if self.stderr_isatty is None:
            self.stderr_isatty = _isatty(self.stderr)

    @property
    def color(self) -> bool:
        """Escapes on stderr only for a terminal, and never under NO_COLOR or TERM=dumb."""
        return bool(
            self.stderr_isatty
            and "NO_COLOR" not in self.environ
            and self.environ.get("TERM") != "dumb"
        )


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


_current: list[Environment] = []


def env() -> Environment:
    """The environment of the command that is running now."""
    return _current[-1] if _current else Environment()


# Options shared by every tool, so a flag means the same thing everywhere.
WorkspaceOption = Annotated[
    Path | None,
    typer.Option("-C", "--workspace", help="Workspace folder (default: the current directory)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _show_version(ctx: typer.Context, value: bool) -> None:
    if value:
        env().stdout.write(f"{ctx.find_root().info_name} {__version__}\n")
        raise typer.Exit(0)


VersionOption = Annotated[
    bool,
    typer.Option(
        "--version", is_eager=True, callback=_show_version, help="Print the version and exit."
    ),
]


def make_app(prog: str, help: str, root: Callable[..., Any] | None = None) -> typer.Typer:
    """A typer app with rich off, ``-h/--help`` and ``--version``.

    Most tools are a set of verbs. A tool whose bare invocation does the work
    (``ax-mcp -C WS`` serves) passes ``root``, a function that takes
    ``VersionOption`` among its own options and runs when no verb is named.
    """
    app = typer.Typer(
        name=prog,
        help=help,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        no_args_is_help=root is None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    if root is not None:
        app.callback(invoke_without_command=True)(root)
        return app

    @app.callback()
    def verbs_only(version: VersionOption = False) -> None:
        del version

    return app


def run_main(
    app: typer.Typer, argv: list[str] | None = None, environ: Environment | None = None
) -> int:
    """Run ``app`` and return its exit status instead of exiting the process."""
    environment = environ or Environment()
    prog = app.info.name or "ax"
    args = sys.argv[1:] if argv is None else argv
    _current.append(environment)
    try:
        with _redirected(environment):
            try:
                result = typer.main.get_command(app).main(
                    args=args, prog_name=prog, standalone_mode=False
                )
            except typer.Exit as exc:
                return exc.exit_code
            except typer.TyperException as exc:
                # typer's parse errors (unknown verb, bad option) carry their own usage text.
                show = getattr(exc, "show", None)
                if show is not None:
                    show(file=environment.stderr)
                else:
                    environment.stderr.write(f"{prog}: error: {exc.format_message()}\n")
                return exc.exit_code
            except (typer.Abort, KeyboardInterrupt):
                environment.stderr.write(f"{prog}: aborted\n")
                return ExitStatus.ABORTED
            except AxError as exc:
                report_error(prog, exc, environment.stderr)
                return exc.status
            except ReaderGone:
                return ExitStatus.BROKEN_PIPE
            except SystemExit as exc:
                # typer answers a broken pipe while printing help by exiting 1 itself.
                if isinstance(exc.__context__, BrokenPipeError):
                    return ExitStatus.BROKEN_PIPE
                raise
    finally:
        _current.pop()
    return int(result) if isinstance(result, int) else ExitStatus.OK


def entry_point(main: Callable[[], int]) -> NoReturn:
    """Console-script wrapper: exit with ``main()``'s status, quietly on a closed pipe."""
    try:
        status = main()
    except BrokenPipeError:
        status = ExitStatus.BROKEN_PIPE
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        status = ExitStatus.BROKEN_PIPE
    if status == ExitStatus.BROKEN_PIPE:
        # The reader went away (`ax-log events | head`): keep the interpreter's
        # final flush of what is still buffered from raising a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(status)


@contextmanager
def _redirected(environment: Environment) -> Iterator[None]:
    """Point sys.std* at the environment's streams, for code (click) that writes there."""
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = environment.stdin, environment.stdout, environment.stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def report_error(prog: str, error: AxError, stream: IO[str]) -> None:
    stream.write(f"{prog}: error: {error.message}\n")
    if error.hint:
        stream.write(f"{prog}: hint: {error.hint}\n")


def chrome(message: str) -> None:
    """Progress and status for people: always stderr, never stdout."""
    env().stderr.write(message + "\n")
    env().stderr.flush()


def emit_json(value: Any, *, texts: Mapping[str, Iterable[str]] | None = None) -> None:
    """One JSON document on stdout.

    ``texts``: strings of ``value`` that are placeholders (``jsonio.placeholder()``)
    for texts of many megabytes (ax-exec's captured output), each given as slices; the
    document is written a piece at a time, so neither it nor a text is whole in memory.
    """
    pieces = jsonio.iter_dumps(value, texts or {}, indent=True)
    _write_out(itertools.chain((piece.decode() for piece in pieces), ("\n",)))


def emit_line(value: Any) -> None:
    """One JSON Lines record on stdout, flushed so a pipe sees it at once."""
    _write_out((jsonio.dumps_line(value).decode(),))


def _write_out(texts: Iterable[str]) -> None:
    try:
        for text in texts:
            env().stdout.write(text)
        env().stdout.flush()
    except BrokenPipeError:
        raise ReaderGone from None


def read_request(model: type[ModelT], source: IO[str] | None = None) -> ModelT:
    """Parse one JSON object from stdin into ``model``; errors name the field."""
    from pydantic import ValidationError

    stream = source or env().stdin
    if env().stdin_isatty and source is None:
        raise UsageError(
            "this verb reads a JSON request on stdin, and stdin is a terminal",
            hint="pipe the request in, e.g. echo '{...}' | <tool> <verb> -",
        )
    text = stream.read(REQUEST_MAX_BYTES + 1)
    if len(text) > REQUEST_MAX_BYTES:
        raise UsageError(f"request is larger than {REQUEST_MAX_BYTES} bytes")
    if not text.strip():
        raise UsageError("no request on stdin", hint="send one JSON object")
    try:
        data = jsonio.loads(text)
    except jsonio.JSONDecodeError as exc:
        raise UsageError(f"request is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"request must be a JSON object, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "request")) from None


def describe_validation_error(exc: Any, what: str) -> str:
    """``request field 'a.b': <problem>; …`` from a pydantic ValidationError."""
    parts = []
    for error in exc.errors():
        parts.append(f"{what} field '{error_location(error)}': {describe_problem(error)}")
    return "; ".join(parts)


def error_location(error: Mapping[str, Any]) -> str:
    """``a.b.0`` for one of a ValidationError's ``errors()``; ``(root)`` for the whole value."""
    return ".".join(str(item) for item in error["loc"]) or "(root)"


def describe_problem(error: Mapping[str, Any]) -> str:
    """What is wrong with one field, for one of a ValidationError's ``errors()``.

    A value refused by an enum or literal field is echoed (redacted, its repr
    clipped to ``REFUSED_VALUE_MAX_CHARS``) beside the values that field allows,
    so the sender sees which of its values was the wrong one.
    """
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("literal_error", "enum"):
        expected = (error.get("ctx") or {}).get("expected")
        if expected is not None:
            return f"{refused_value(error.get('input'))} is not allowed; expected {expected}"
    return str(error["msg"])


def refused_value(value: Any) -> str:
    """``repr(value)``, redacted, then clipped to ``REFUSED_VALUE_MAX_CHARS`` characters."""
    from libcommon.redact import redact

    # Redacted whole before it is clipped: a secret cut in half no longer looks like one.
    text = redact(repr(value))
    if len(text) <= REFUSED_VALUE_MAX_CHARS:
        return text
    return text[: REFUSED_VALUE_MAX_CHARS - 1] + "…"
