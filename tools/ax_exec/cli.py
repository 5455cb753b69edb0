"""The ax-exec command line: parse, call the core, print."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from libcommon import cliapp
from libcommon.cliapp import Environment, entry_point, make_app, run_main
from libcommon.errors import UsageError

if TYPE_CHECKING:
    from ax_exec.models import ExecSpec

app = make_app(
    "ax-exec",
    "Managed execution: timeouts, verified tree kill, secret-free environments "
    "and the Linux sandbox.",
)


# Spec fields as the flags that set them, for error messages.
_FLAGS = {
    "timeoutS": "--timeout",
    "maxOutputBytes": "--max-output",
    "sandbox": "--sandbox",
    "cwd": "--cwd",
    "argv": "command",
    "shell": "--shell",
}


@contextmanager
def _abort_on_signals(abort: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM abort the run (tree killed first) instead of killing ax-exec."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        abort.set()

    saved = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, previous in saved.items():
            signal.signal(signum, previous)


def _live_printer() -> Callable[[str, bytes], None]:
    import codecs

    decoders = {
        name: codecs.getincrementaldecoder("utf-8")("replace") for name in ("stdout", "stderr")
    }
    stream = cliapp.env().stderr

    def show(name: str, chunk: bytes) -> None:
        stream.write(decoders[name].decode(chunk))
        stream.flush()

    return show


@app.command("run", context_settings={"allow_interspersed_args": False})
def run_command(
    command: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional at runtime on 3.11
        typer.Argument(help="The command and its arguments (after --).", show_default=False),
    ] = None,
    shell: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--shell", help="Run this string through bash instead of CMD."),
    ] = None,
    timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--timeout", help="Seconds before the tree is killed (default 600)."),
    ] = None,
    cwd: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--cwd", help="Directory to run in (default: the current one)."),
    ] = None,
    sandbox: Annotated[
        str, typer.Option("--sandbox", help="none, read-only or workspace-write.")
    ] = "none",
    allow_net: Annotated[
        bool, typer.Option("--allow-net", help="Let a sandboxed command use the network.")
    ] = False,
    max_output: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-output", help="Bytes kept per stream, head plus tail."),
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Also stream the child's output to stderr.")
    ] = False,
    spill: Annotated[
        bool,
        typer.Option(
            "--spill", help="Keep truncated output in full, redacted, under the state root."
        ),
    ] = False,
    deny_env: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--deny-env",
            help="Also withhold variables whose name matches this glob (repeatable).",
        ),
    ] = None,
    workspace: cliapp.WorkspaceOption = None,
    request_json: Annotated[
        bool,
        typer.Option(
            "--request",
            help="Read the whole ExecSpec as one JSON object on stdin (for programs); "
            "no command and no other run flags.",
        ),
    ] = False,
) -> int:
    """Run CMD under management and print its ExecOutcome as JSON.

    Exit status mirrors the child: its code, 124 on timeout, 130 when aborted,
    127 when it could not start.
    """
    from pydantic import ValidationError

    from ax_exec.models import ExecSpec
    from libcommon.paths import resolve_workspace, state_layout

    if request_json:
        flags = [command, shell, timeout, cwd, max_output, deny_env, workspace]
        if any(flag for flag in flags) or sandbox != "none" or allow_net or spill:
            raise UsageError("--request takes the whole spec on stdin; give no other run flags")
        return _run_spec(cliapp.read_request(ExecSpec), live)
    if bool(command) == (shell is not None):
        raise UsageError(
            "give a command after -- or --shell STRING, not both and not neither",
            hint="ax-exec run --timeout 5 -- ls -la",
        )
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd} is not a directory")
    # The workspace defaults to the run's directory, for both the sandbox and --spill.
    root = resolve_workspace(workspace if workspace is not None else cwd)
    request: dict[str, Any] = {
        "argv": command or None,
        "shell": shell,
        "cwd": str(cwd) if cwd is not None else None,
        "sandbox": sandbox,
        "allowNet": allow_net,
        "workspace": str(root),
        "envDenyPatterns": deny_env or [],
    }
    if timeout is not None:
        request["timeoutS"] = timeout
    if max_output is not None:
        request["maxOutputBytes"] = max_output
    if spill:
        request["spillDir"] = str(state_layout(root, cliapp.env().environ).objects_dir)
    try:
        spec = ExecSpec.model_validate(request)
    except ValidationError as exc:
        problems = [
            f"{_FLAGS.get(str(error['loc'][0]), error['loc'][0]) if error['loc'] else 'command'}: "
            f"{cliapp.describe_problem(error)}"
            for error in exc.errors()
        ]
        raise UsageError("; ".join(problems)) from None
    return _run_spec(spec, live)


def _run_spec(spec: ExecSpec, live: bool) -> int:
    from ax_exec.run import run_captured

    abort = threading.Event()
    with _abort_on_signals(abort):
        captured = run_captured(
            spec,
            abort=abort,
            on_output=_live_printer() if live else None,
            environ=cliapp.env().environ,
        )
    # Printed from the bytes, a slice at a time: the output is never decoded whole.
    outcome, texts = captured.placeheld()
    cliapp.emit_json(outcome.to_json(), texts=texts)
    if outcome.error:
        cliapp.chrome(f"ax-exec: {outcome.termination}: {outcome.error}")
    return outcome.shell_status


@app.command()
def probe(json_output: cliapp.JsonOption = False) -> None:
    """Probe every sandbox backend: available, enforced, what it confines and what not."""
    from ax_exec.sandbox import probe_sandbox

    report = probe_sandbox()
    if json_output:
        cliapp.emit_json(report.to_json())
        return
    out = cliapp.env().stdout
    out.write(f"selected: {report.selected}\n")
    if report.uid is not None:
        # Confinement differs by user (root drops capabilities, others enter a user namespace).
        who = "root" if report.uid == 0 else "not root"
        out.write(
            f"probed as: uid {report.uid} ({who}); what follows holds for commands "
            "run by that user\n"
        )
    for backend in report.backends:
        facts = ["available" if backend.available else "unavailable"]
        facts.append("enforced" if backend.enforced else "not enforced")
        if backend.abi:
            facts.append(f"ABI {backend.abi}")
        out.write(f"\n{backend.backend}: {', '.join(facts)}\n")
        if backend.reason:
            out.write(f"  reason: {backend.reason}\n")
        for status in backend.profiles:
            state = "enforced" if status.enforced else "not enforced"
            out.write(f"  profile {status.profile}: {state}, network: {status.network}\n")
            if status.reason:
                out.write(f"    reason: {status.reason}\n")
            for line in status.confines:
                out.write(f"    confines: {line}\n")
            for line in status.does_not_confine:
                out.write(f"    does not confine: {line}\n")
    out.flush()


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
