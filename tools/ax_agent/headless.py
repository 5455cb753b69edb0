"""Headless use: one prompt, one turn, an answer on stdout and a status to exit with.

``text`` prints the final answer on stdout (chrome on stderr); ``json`` prints
one object ``{"session","result","isError","turns","usage","stopReason"}``;
``stream-json`` prints the session's events as JSON Lines as they are
appended. SIGINT (and SIGTERM) abort the turn: a running command's tree is
killed, skipped calls are answered, and the exit status is 130. A turn that
returns ends the session cleanly (``narrative.finish``: the journal entry when
the session did real work; a signal then skips the model's account).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, Literal

from libcommon import jsonio
from libcommon.errors import ExitStatus

from .instructions import TruncationNotice
from .loop import TurnResult, run_turn, usage_json
from .narrative import finish
from .plans.views import dropped_line
from .session import Session, StartOptions, start_session

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")
# MCP server states said on stderr (once each: each is one event).
MCP_SAID = frozenset({"failed", "disabled", "awaiting-approval", "ignored"})


@contextmanager
def abort_on_signals(session_asking: Callable[[], bool]) -> Iterator[threading.Event]:
    """SIGINT/SIGTERM set the abort event; at a pending question they also end the wait."""
    abort = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield abort
        return

    def handler(signum: int, frame: Any) -> None:
        abort.set()
        if session_asking():
            raise KeyboardInterrupt

    saved = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield abort
    finally:
        for signum, previous in saved.items():
            signal.signal(signum, previous)


def exit_status(result: TurnResult) -> int:
    if result.aborted:
        return ExitStatus.ABORTED
    return ExitStatus.FAILED if result.is_error else ExitStatus.OK


def summary_json(session: Session, result: TurnResult) -> dict[str, Any]:
    return {
        "session": session.id,
        "result": result.text,
        "isError": result.is_error,
        "turns": result.steps,
        "usage": usage_json(result.usage),
        "stopReason": result.stop_reason,
    }


def run_headless(
    options: StartOptions,
    prompt: str,
    output: OutputFormat,
    stdout: IO[str],
    chrome: Callable[[str], None],
) -> int:
    """Start (or resume) a session, run one turn on ``prompt``, print, end the session."""
    if output == "stream-json":

        def stream(record: dict[str, Any]) -> None:
            stdout.write(jsonio.dumps_line(record).decode())
            stdout.flush()

        options.listeners.append(stream)
    else:
        options.listeners.append(_chrome_listener(chrome))
    # Said on stderr whatever the output format: stdout may be a stream of events.
    options.listeners.append(TruncationNotice(chrome))
    session = start_session(options)
    chrome(
        f"ax-agent: session {session.id} ({session.provider.name}, model {session.model})"
        + (" resumed" if session.resumed else "")
    )
    try:
        with abort_on_signals(session.asking.is_set) as abort:
            # Issue 26: a successor adopts its handoff entry first (its kickoff, once),
            # and a paused session refuses the prompt.
            from .handoff.flow import adopt, deliver

            kickoff = adopt(session, options, chrome)
            if kickoff is not None:
                deliver(session, kickoff, abort)
            result = run_turn(session, prompt, abort)
    except BaseException:
        # Not a clean end: nothing is written to the project's memory.
        session.end("error")
        raise
    # A clean end: the journal entry (the skeleton at once when the person interrupted
    # the turn: they asked it to stop), then the end.
    with abort_on_signals(session.asking.is_set) as abort:
        finish(session, result.stop_reason, abort=abort, narrate=not result.aborted, say=chrome)
    if result.detail and result.is_error:
        chrome(f"ax-agent: stopped ({result.stop_reason}): {result.detail}")
    if output == "json":
        stdout.write(jsonio.dumps(summary_json(session, result), indent=True).decode() + "\n")
    elif output == "text" and result.text:
        stdout.write(result.text + ("" if result.text.endswith("\n") else "\n"))
    stdout.flush()
    return exit_status(result)


def _chrome_listener(chrome: Callable[[str], None]) -> Callable[[dict[str, Any]], None]:
    """One line on stderr per tool call decision and completion."""

    def show(record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "plan.written" and record.get("approvalDropped"):
            # Plans (issue 21): only a person can approve again; say how.
            where = f"--session {record.get('session')}"
            chrome(
                "ax-agent: "
                + dropped_line(
                    record, f"ax-agent plan show {where}", f"ax-agent plan approve {where}"
                )
            )
        if kind == "policy.decision" and record.get("verdict") == "deny":
            # An ask is shown by the approver's question itself.
            chrome(f"ax-agent: denied: {record.get('reason')}")
        elif kind == "tool.completed":
            mark = "ok" if record.get("ok") else "failed"
            chrome(f"ax-agent: [{mark}] {record.get('summary')}")
        elif kind == "mcp.server" and record.get("state") in MCP_SAID:
            chrome(
                f"ax-agent: MCP server {record.get('server') or '(workspace file)'} "
                f"{record.get('state')}: {record.get('reason')}"
            )
        elif kind == "config.loaded":
            for warning in record.get("warnings") or []:
                chrome(f"ax-agent: warning: {warning}")
        elif kind == "model.uncatalogued":
            chrome(f"ax-agent: model {record.get('model')}: {record.get('note')}")
        elif kind == "approval.resolved":
            chrome(
                f"ax-agent: approval {record.get('answer')} ({record.get('scope')}, "
                f"by {record.get('approver')})"
            )

    return show
