"""Headless handoff: ``ax-agent handoff``, ``ax-agent resume`` and ``ax-agent recover``.

Each prints one JSON object on stdout (``--output-format json``) or the turn's answer
(``text``), chrome on stderr. Exit status (DESIGN.md): 0 done; 1 failed (a
replacement that could not be written, a paused successor, a kickoff send that
failed, nothing to resume or recover); 2 bad usage; 3 workspace not trusted (checked
before anything is written); 4 the session is owned by
a live process (the idle wait failed; the purpose is kept for the retry); 130
interrupted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import IO, Any

from libcommon import jsonio
from libcommon.errors import ExitStatus, Fenced, OperationFailed, UsageError

from ..headless import abort_on_signals, exit_status, summary_json
from ..loop import TurnResult
from ..narrative import finish
from ..session import Session, StartOptions, start_session
from .flow import EFFORTS, RECOVER_NOTE, adopt, begin, deliver, failed, recover, resume, transfer
from .records import Request

Say = Callable[[str], None]


def _session_id(options: StartOptions, given: str | None) -> tuple[Any, str]:
    from ax_log import latest_session, require_log
    from libcommon.paths import check_session_id, state_layout

    layout = state_layout(options.workspace, options.environ)
    session_id = check_session_id(given) if given else latest_session(layout)
    if session_id is None:
        raise OperationFailed(
            f"no ax session has run in {layout.workspace}", hint="start one with ax-agent"
        )
    require_log(layout, session_id)
    return layout, session_id


def run_handoff(
    options: StartOptions,
    given: str | None,
    request: Request,
    effort: str | None,
    stdout: IO[str],
    chrome: Say,
    output: str,
) -> int:
    """Hand the session over to a fresh one, then start it on its kickoff."""
    from ax_log import append_events, read_events
    from ax_policy import ensure_trusted
    from libcommon.locks import OwnerLease

    if effort is not None and effort not in EFFORTS:
        raise UsageError(f"unknown --effort {effort!r}", hint=f"use one of {', '.join(EFFORTS)}")
    layout, session_id = _session_id(options, given)
    # The gate first: an untrusted workspace gets nothing written (exit 3).
    ensure_trusted(layout, interactive=False, trust_once=options.trust_once)

    def record(*events: dict[str, Any]) -> None:
        append_events(layout, session_id, list(events))

    events = list(read_events(layout.session_log(session_id), session_id))
    states = [event for event in events if event.get("type") == "handoff.state"]
    pause = states[-1].get("pauseReason") if states else None
    attempt = begin(record, events, request, pause)
    lease = OwnerLease(layout.session_lease(session_id))
    try:
        lease.acquire()
    except Fenced as exc:
        failed(record, attempt[0], "idle-wait", exc.message)
        raise
    try:
        done = transfer(
            layout, session_id, record, attempt, request.focus, trusted=True, model=None,
            effort=effort,
        )  # fmt: skip
        record({"type": "session.ended", "reason": "handoff", "workspace": str(layout.workspace)})
    except KeyboardInterrupt:
        failed(record, attempt[0], "cancelled", "interrupted before the successor was written")
        raise
    finally:
        lease.release()
    chrome(
        f"ax-agent: session {session_id} handed over to {done.successor} "
        f"({done.purpose}{', a retry' if done.retry else ''}; template {done.template})"
    )
    return run_adopted(
        replace(options, resume=done.successor, continue_latest=False), stdout, chrome, output
    )


def run_adopted(options: StartOptions, stdout: IO[str], chrome: Say, output: str) -> int:
    """Start (or reload) a successor: adopt its entry, deliver a pending kickoff once."""
    session = start_session(options)
    result: TurnResult | None = None
    try:
        kickoff = adopt(session, options, chrome)
        if kickoff is not None:
            with abort_on_signals(session.asking.is_set) as abort:
                result = deliver(session, kickoff, abort)
    except BaseException:
        session.end("error")
        raise
    return _end(session, result, stdout, chrome, output)


def run_resume(
    options: StartOptions,
    given: str | None,
    model: str | None,
    effort: str | None,
    stdout: IO[str],
    chrome: Say,
    output: str,
) -> int:
    """``/resume`` off a terminal: lift the session's pause, deliver a pending kickoff."""
    _, session_id = _session_id(options, given)
    session = start_session(replace(options, resume=session_id, continue_latest=False))
    result: TurnResult | None = None
    try:
        adopt(session, options, chrome)
        kickoff = resume(session, options, model, effort)
        chrome(f"ax-agent: session {session.id} resumed on {session.model}")
        if kickoff is not None:
            with abort_on_signals(session.asking.is_set) as abort:
                result = deliver(session, kickoff, abort)
    except BaseException:
        session.end("error")
        raise
    return _end(session, result, stdout, chrome, output)


def run_recover(
    options: StartOptions, given: str | None, stdout: IO[str], chrome: Say, output: str
) -> int:
    """Send a stalled session the failover instruction (a new attempt)."""
    _, session_id = _session_id(options, given)
    session = start_session(replace(options, resume=session_id, continue_latest=False))
    try:
        adopt(session, options, chrome)
        with abort_on_signals(session.asking.is_set) as abort:
            result = recover(session, abort)
    except BaseException:
        session.end("error")
        raise
    chrome(RECOVER_NOTE)
    return _end(session, result, stdout, chrome, output)


def _end(
    session: Session, result: TurnResult | None, stdout: IO[str], chrome: Say, output: str
) -> int:
    with abort_on_signals(session.asking.is_set) as abort:
        finish(
            session,
            result.stop_reason if result is not None else "handoff",
            abort=abort,
            narrate=result is not None and not result.aborted,
            say=chrome,
        )
    summary: dict[str, Any] = (
        summary_json(session, result)
        if result is not None
        else {"session": session.id, "result": "", "isError": False, "turns": 0}
    )
    summary["pauseReason"] = session.pause_reason
    if output == "json":
        stdout.write(jsonio.dumps(summary, indent=True).decode() + "\n")
    elif result is not None and result.text:
        stdout.write(result.text + ("" if result.text.endswith("\n") else "\n"))
    stdout.flush()
    if session.pause_reason is not None and result is None:
        chrome(f"ax-agent: session {session.id} is paused ({session.pause_reason})")
        return ExitStatus.FAILED
    return exit_status(result) if result is not None else ExitStatus.OK
