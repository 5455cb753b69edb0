"""Slash commands: one table for dispatch, ``/help`` and Tab completion.

A line whose first word is ``/name`` is a command, never a message to the
model; an unknown name is refused by name. Commands run between turns only
(the prompt is the only place a line is read), so ``/model`` and
``/provider`` can never switch a running turn, and the model has no way to
call them. Their output is chrome (stderr).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from libcommon.errors import AxError, OperationFailed, UsageError
from libcommon.redact import redact

from .render import Renderer
from .screen import Screen, clean

if TYPE_CHECKING:
    from ..session import Session, StartOptions

_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_-]*)(?:\s+(.*))?$", re.S)
# /trail without a count shows this many steps.
TRAIL_DEFAULT_ROWS = 20
# Pages of a step's saved output /expand prints at most.
EXPAND_MAX_PAGES = 50

Action = Literal["quit", "clear", "handoff", "recover"] | None


@dataclass
class Context:
    session: Session
    options: StartOptions
    screen: Screen
    renderer: Renderer
    # Asks the person a yes/no question (the approval menu's "No" / "Yes"); None: no one to ask.
    confirm: Callable[[str], bool] | None = None
    # Set by /handoff: the successor the terminal goes on in (its action is "handoff").
    successor: str | None = None
    # Set by /resume: the kickoff the terminal delivers next (claimed, then sent).
    kickoff: str | None = None


@dataclass(frozen=True)
class Command:
    name: str
    args: str
    summary: str
    run: Callable[[Context, list[str]], Action]

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.args}" if self.args else "")


def parse(line: str) -> tuple[str, list[str]] | None:
    """(name, arguments) when the line is a slash command, else None."""
    match = _COMMAND.match(line.strip())
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").split()


def find(name: str) -> Command:
    for command in COMMANDS:
        if command.name == name:
            return command
    raise UsageError(
        "unknown command; it was not sent to the model", hint="/help lists the commands"
    )


def dispatch(context: Context, name: str, args: list[str]) -> Action:
    return find(name).run(context, args)


def complete(text: str) -> list[str]:
    """Tab completion: the command names that start with ``text``."""
    return [f"/{command.name}" for command in COMMANDS if f"/{command.name}".startswith(text)]


def _say(context: Context, text: str = "") -> None:
    for line in text.rstrip("\n").split("\n"):
        context.screen.line(clean(line))


def _no_args(args: list[str], usage: str) -> None:
    if args:
        raise UsageError(f"{usage} takes no arguments, not {' '.join(args)!r}")


def _help(context: Context, args: list[str]) -> Action:
    _no_args(args, "/help")
    width = max(len(command.usage) for command in COMMANDS)
    for command in COMMANDS:
        _say(context, f"  {command.usage.ljust(width)}  {command.summary}")
    from .sigils import SIGILS

    for word, role in SIGILS.items():
        article = "an" if role[0] in "aeiou" else "a"
        usage = f"@{word} REQUEST".ljust(width)
        _say(context, f"  {usage}  hand the request to {article} {role} task")
    _say(context, "  Enter sends; a trailing \\ continues the line; Ctrl+C interrupts a turn;")
    _say(context, "  Ctrl+C twice or Ctrl+D at the prompt exits.")
    return None


def _status(context: Context, args: list[str]) -> Action:
    from .cost import cost_text, session_totals

    _no_args(args, "/status")
    session = context.session
    sandbox = session.sandbox.policy
    totals = session_totals(session.layout, session.id)
    usage = totals.usage
    holder = session.lease.holder()
    owner = f"pid {holder.pid} since {holder.acquired}" if holder else "no lease held"
    enforced = "enforced" if sandbox.enforced else "NOT enforced"
    _say(context, f"  session   {session.id}" + (" (resumed)" if session.resumed else ""))
    _say(context, f"  workspace {session.workspace}")
    _say(context, f"  provider  {session.provider.name}, model {session.model}")
    _say(context, f"  sandbox   {sandbox.backend} ({enforced})")
    _say(
        context,
        f"  tokens    {usage.input_tokens} in, {usage.output_tokens} out, "
        f"{usage.cache_read_input_tokens} cache read, "
        f"{usage.cache_creation_input_tokens} cache write; {totals.turns} turns",
    )
    _say(context, f"  cost      {cost_text(session.provider.name, session.model, usage)}")
    _say(context, f"  owner     {owner}")
    return None


def _undo(context: Context, args: list[str]) -> Action:
    from ax_log import undo

    if args not in ([], ["all"]):
        raise UsageError("/undo takes nothing or 'all'")
    session = context.session
    outcome = undo(session.layout, session.id, everything=bool(args))
    lines = outcome.describe()
    _say(context, "\n".join(lines) if lines else "nothing to undo")
    return None


def _checkpoints(context: Context, args: list[str]) -> Action:
    from ax_log import list_checkpoints

    _no_args(args, "/checkpoints")
    session = context.session
    found = list_checkpoints(session.layout, session.id, session.environ)
    for item in found:
        label = f"  {redact(item.label)}" if item.label else ""
        _say(context, f"  {item.n:>3}  {item.kind:<16} {item.commit[:12]}  {item.created}{label}")
    if not found:
        _say(context, "no checkpoints in this session")
    return None


def _restore(context: Context, args: list[str]) -> Action:
    from ax_log import restore_checkpoint

    if len(args) != 1 or not args[0].isdigit():
        raise UsageError("/restore takes one checkpoint number (see /checkpoints)")
    session = context.session
    question = (
        f"Put the working tree back as checkpoint {args[0]} holds it? Files changed since "
        "are rewritten and files created since removed; /undo reverts the whole restore."
    )
    if context.confirm is not None and not context.confirm(question):
        _say(context, "not restored")
        return None
    result = restore_checkpoint(session.layout, session.id, args[0], session.environ)
    lines = [f"restored  {path}" for path in result.restored]
    lines += [f"removed   {path}" for path in result.removed]
    lines += [f"refused   {path}: {reason}" for path, reason in result.refused]
    _say(
        context, "\n".join(lines) if lines else f"nothing to restore: the tree matches {result.ref}"
    )
    return None


def _diff(context: Context, args: list[str]) -> Action:
    from ax_report import session_diff

    _no_args(args, "/diff")
    diffs = session_diff(context.session.layout, context.session.id)
    shown = [diff.text() for diff in diffs if diff.text()]
    _say(context, "\n".join(shown) if shown else "no changes in this session")
    return None


def _report(context: Context, args: list[str]) -> Action:
    from ax_report import build_report, session_events

    from ..acceptance import session_acceptance

    if len(args) > 1:
        raise UsageError("/report takes at most one section name")
    session = context.session

    state = session_acceptance(session.layout, session.id).as_json()
    events = session_events(session.layout, session.id)
    _, markdown = build_report(events, only=args or None, acceptance=state)
    _say(context, markdown)
    return None


def _trail(context: Context, args: list[str]) -> Action:
    from ax_slate import read_trail

    count: int | None = TRAIL_DEFAULT_ROWS
    filters: dict[str, str] = {}
    for arg in args:
        if arg.isdigit():
            count = int(arg)
        elif "=" in arg and arg.split("=", 1)[0] in ("tool", "file"):
            key, value = arg.split("=", 1)
            filters[key] = value
        else:
            raise UsageError(
                f"/trail does not understand {arg!r}", hint="/trail [count] [tool=NAME] [file=TEXT]"
            )
    session = context.session
    try:
        entries = read_trail(
            session.layout,
            session.id,
            count=count,
            tool=filters.get("tool"),
            file=filters.get("file"),
        )
    except OperationFailed:
        entries = []
    if not entries:
        _say(context, "no steps in the trail yet" + (" that match" if filters else ""))
    for entry in entries:
        saved = " (output saved: /expand)" if entry.output else ""
        _say(
            context, f"  {entry.step:>4}  {entry.tool}  {entry.args_digest}  {entry.outcome}{saved}"
        )
    return None


def _notes(context: Context, args: list[str]) -> Action:
    from ax_slate import list_notes

    if len(args) > 1:
        raise UsageError("/notes takes at most one key")
    session = context.session
    notes = list_notes(session.layout, session.id, args[0] if args else None)
    if not notes:
        _say(context, "no notes" + (f" under {args[0]!r}" if args else ""))
    for note in notes:
        _say(context, f"  {note.key}: {redact(note.text)}")
    return None


def _context(context: Context, args: list[str]) -> Action:
    _no_args(args, "/context")
    instructions = context.session.instructions
    for line in instructions.lines() if instructions is not None else []:
        _say(context, "  " + line)
    window = context.session.window
    figures = window.figures() if window is not None else None
    if figures is None:
        _say(context, "no request has been sent in this session yet")
        return None
    for line in figures.lines():
        _say(context, "  " + line)
    for problem in window.problems if window is not None else []:
        _say(context, f"  note: {problem}")
    return None


def _memory(context: Context, args: list[str]) -> Action:
    from ..memory import describe, loaded_lines, now_lines

    _no_args(args, "/memory")
    session = context.session
    instructions = session.instructions
    for line in instructions.lines() if instructions is not None else []:
        _say(context, "  " + line)
    rows = session.memory.rows if session.memory is not None else []
    _say(context, "  project memory given at the start (the journal, codebase summary, lessons):")
    for line in loaded_lines(rows) or ["  none"]:
        _say(context, "  " + line)
    _say(context, "  project memory on disk now (ax-slate memory list):")
    for line in now_lines(describe(session.seam, session.layout)):
        _say(context, "  " + line)
    return None


def _mcp(context: Context, args: list[str]) -> Action:
    from ..mcp_servers.session import status_lines

    _no_args(args, "/mcp")
    session = context.session
    # What the servers' thread queued (a start, a failure) reaches the log first.
    session.record()
    for line in status_lines(session.mcp):
        _say(context, "  " + line)
    return None


def _switch(context: Context, provider: str | None, model: str | None) -> None:
    from ..providers import make_provider
    from ..providers.profiles import PROFILES
    from ..providers.registry import probe

    session = context.session
    options = context.options
    name = provider or session.provider.name
    # /model keeps the chat server in use; another provider gets its own base URL
    # (its variable or its default), so its key never goes to the server in use.
    base_url = (
        getattr(session.provider, "base_url", None) if name == session.provider.name else None
    )
    new = make_provider(
        name,
        model=model,
        base_url=base_url if name in PROFILES else None,
        script=options.script if name == "script" else None,
        environ=session.environ,
    )
    checked = probe(new, session.environ)
    if checked.key_check in ("probe failed: auth", "probe failed: permission"):
        raise OperationFailed(
            f"{checked.api_host} refused the key in {checked.key_var} "
            f"({checked.key_check.removeprefix('probe failed: ')}); still "
            f"{session.provider.name}, model {session.model}",
            hint=f"set {checked.key_var} to a valid key and start ax-agent again",
        )
    previous_provider, previous_model = session.provider.name, session.model
    session.provider = new
    session.model = new.model
    # A new session (/clear) keeps the person's choice.
    options.provider, options.model = new.name, new.model
    options.base_url = getattr(new, "base_url", None) if new.name in PROFILES else None
    session.record(
        {
            "type": "provider.changed",
            "provider": new.name,
            "model": new.model,
            "previousProvider": previous_provider,
            "previousModel": previous_model,
            **checked.fields(),
        }
    )
    _say(context, f"now {new.name}, model {new.model} (from the next turn): {checked.described()}")


def _model(context: Context, args: list[str]) -> Action:
    if len(args) > 1:
        raise UsageError("/model takes at most one name")
    if not args:
        _say(context, f"model {context.session.model} ({context.session.provider.name})")
        return None
    _switch(context, None, args[0])
    return None


def _provider(context: Context, args: list[str]) -> Action:
    if len(args) > 1:
        raise UsageError("/provider takes at most one name")
    if not args:
        from ..providers.registry import available, identity

        session = context.session
        now = identity(session.provider, session.environ)
        _say(context, f"provider {session.provider.name}, model {session.model}: {now.described()}")
        _say(context, "  providers (keys are read from the environment only):")
        for line in available(session.environ):
            _say(context, "    " + line)
        return None
    _switch(context, args[0], None)
    return None


def _accept(context: Context, args: list[str]) -> Action:
    _no_args(args, "/accept")
    accept(context)
    return None


def accept(context: Context) -> None:
    """``/accept``'s body (the contextual question at /quit calls this very function)."""
    from ..acceptance import accepted_event, session_acceptance

    session = context.session
    state = session_acceptance(session.layout, session.id)
    session.record(accepted_event(state))
    if state.complete:
        _say(context, "Accepted: COMPLETE, nothing blocks it.")
    else:
        _say(context, "Accepted, with these blockers still open:")
        for item in state.blockers:
            _say(context, f"  - {item}")
    for item in state.caveats:
        _say(context, f"  caveat: {item}")


def _expand(context: Context, args: list[str]) -> Action:
    from ax_slate import recall_step

    if len(args) != 1 or not args[0].isdigit():
        raise UsageError("/expand takes one step number, e.g. /expand 3")
    step = int(args[0])
    session = context.session
    try:
        first = recall_step(session.layout, session.id, step)
    except OperationFailed as exc:
        # Output that was never cut is whole in the record of the call's completion.
        content = _completion_content(context, step)
        if content is None:
            raise exc from None
        _say(context, content)
        return None
    _say(context, first.text)
    for page in range(2, min(first.pages, EXPAND_MAX_PAGES) + 1):
        _say(context, recall_step(session.layout, session.id, step, page).text)
    if first.pages > EXPAND_MAX_PAGES:
        _say(context, f"(the first {EXPAND_MAX_PAGES} of {first.pages} pages)")
    return None


def _completion_content(context: Context, step: int) -> str | None:
    from ax_log import log_path, read_events

    call_id = context.renderer.steps.get(step)
    if call_id is None:
        return None
    session = context.session
    found: Any = None
    for record in read_events(log_path(session.layout, session.id), session.id):
        if record.get("type") == "tool.completed" and record.get("callId") == call_id:
            found = record.get("content")
    return found if isinstance(found, str) else None


def _record(context: Context) -> Callable[[dict[str, Any]], None]:
    def record(event: dict[str, Any]) -> None:
        context.session.record(event)

    return record


def _commit(context: Context, args: list[str]) -> Action:
    from ..git.delivery import commit_flow

    session = context.session
    commit_flow(
        session.layout,
        session.id,
        session.environ,
        message=" ".join(args) if args else None,
        yes=False,
        confirm=context.confirm,
        say=lambda text: _say(context, text),
        record=_record(context),
    )
    return None


def _push(context: Context, args: list[str]) -> Action:
    from ..git.delivery import push_flow

    force = "--force" in args
    names = [arg for arg in args if arg != "--force"]
    if len(names) > 2 or any(name.startswith("-") for name in names):
        raise UsageError("/push takes [--force] [remote] [branch]")
    session = context.session
    push_flow(
        session.layout,
        session.id,
        session.environ,
        remote=names[0] if names else None,
        branch=names[1] if len(names) > 1 else None,
        force=force,
        yes=False,
        confirm=context.confirm,
        say=lambda text: _say(context, text),
        record=_record(context),
    )
    return None


def _plan(context: Context, args: list[str]) -> Action:
    from ax_log import read_events

    from ..plans.actions import approve, plan_lines

    session = context.session
    if not args:
        events = read_events(session.layout.session_log(session.id), session.id)
        _say(context, "\n".join(plan_lines(session.layout, session.id, events)))
        return None
    if args[0] != "approve" or len(args) > 2:
        raise UsageError(
            f"/plan does not understand {' '.join(args)!r}", hint="/plan [approve [SHA]]"
        )
    loaded = approve(
        session.layout, session.id, session.record, "terminal", args[1] if len(args) > 1 else None
    )
    _say(
        context,
        f"Approved the plan (sha256 {loaded.sha256[:12]}, {len(loaded.plan.tasks)} tasks): its "
        "executor tasks may now be delegated. A change to what a task is makes it a draft again.",
    )
    return None


def _repair(context: Context, args: list[str]) -> Action:
    from ax_log import read_events

    from ..recovery.ledger import (
        DISMISS_REASON_MAX_CHARS,
        DISMISSED_EVENT,
        dismissal_problem,
        repair_ledger,
    )

    session = context.session
    ledger = repair_ledger(read_events(session.layout.session_log(session.id), session.id))
    if not args:
        if not ledger.repairs:
            _say(context, "no classified failure in this session")
        for repair in ledger.repairs:
            _say(context, f"  {repair.line()}  (signature {repair.diagnosis.signature})")
            verb = "needs" if repair.status in ("open", "dismissed") else "proof"
            for line in repair.proof:
                _say(context, f"      {verb}: {line}")
        return None
    if args[0] != "dismiss" or len(args) < 3 or not args[1].isdigit():
        raise UsageError(
            f"/repair does not understand {' '.join(args)!r}", hint="/repair [dismiss N REASON]"
        )
    number, reason = int(args[1]), " ".join(args[2:])
    if len(reason) > DISMISS_REASON_MAX_CHARS:
        raise UsageError(
            f"the reason is {len(reason)} characters, more than {DISMISS_REASON_MAX_CHARS}",
            hint="say it shorter",
        )
    problem = dismissal_problem(ledger, number)
    if problem is not None:
        raise UsageError(problem, hint="/repair lists the ledger")
    chosen = ledger.find(number)
    assert chosen is not None
    session.record(
        {
            "type": DISMISSED_EVENT,
            "number": number,
            "signature": chosen.diagnosis.signature,
            "reason": reason,
        }
    )
    _say(
        context,
        f"Dismissed repair {number} ({chosen.diagnosis.name}): its blocker is closed; it stays "
        "a caveat when the work is accepted.",
    )
    return None


def _orchestrator(context: Context, args: list[str]) -> Action:
    from ..delegation.threadlog import fold_threads
    from ..orchestrator import set_orchestrator

    session = context.session
    if len(args) > 1 or (args and args[0] not in ("on", "off")):
        raise UsageError("/orchestrator takes on, off or nothing", hint="/orchestrator on")
    if args:
        set_orchestrator(session, args[0] == "on")
    from ax_log import read_events

    state = "on" if session.orchestrating else "off"
    views = fold_threads(read_events(session.layout.session_log(session.id), session.id))
    _say(context, f"  orchestrator mode is {state}; {len(views)} thread(s) in this session")
    for view in views.values():
        status = "stopped" if view.ended else "open"
        _say(context, f"    {view.thread_id} {view.label}: {status}, {view.turns} answer(s)")
    return None


def _init(context: Context, args: list[str]) -> Action:
    from .init import run_init

    _no_args(args, "/init")
    run_init(context.session, lambda text: _say(context, text), context.confirm)
    return None


def _handoff(context: Context, args: list[str]) -> Action:
    """``/handoff [--track-boundary | --post-check | --context-budget | --user-request]
    [FOCUS]``: the purpose, the successor's entry, then the terminal goes on in it."""
    from ..handoff.flow import begin, failed, transfer
    from ..handoff.records import parse_request

    session = context.session
    request = parse_request(args)
    events = _log(session)
    attempt = begin(session.record, events, request, session.pause_reason)
    # A live session is past the trust gate: the project's template may be used.
    try:
        done = transfer(
            session.layout,
            session.id,
            session.record,
            attempt,
            request.focus,
            trusted=True,
            model=session.model,
            effort=session.effort,
        )
    except KeyboardInterrupt:
        failed(
            session.record, attempt[0], "cancelled", "interrupted before the successor was written"
        )
        raise
    retry = ", a retry" if done.retry else ""
    why = f"{done.purpose}{retry}; template {done.template}"
    _say(context, f"handing over to session {done.successor} ({why})")
    context.successor = done.successor
    return "handoff"


def _resume(context: Context, args: list[str]) -> Action:
    """``/resume [--model NAME] [--effort LEVEL]``: lift a pause."""
    from ..handoff.flow import resume

    model = effort = None
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        if flag not in ("--model", "--effort") or not rest:
            raise UsageError(
                f"/resume does not understand {flag!r}", hint="/resume [--model NAME] [--effort E]"
            )
        if flag == "--model":
            model = rest.pop(0)
        else:
            effort = rest.pop(0)
    context.kickoff = resume(context.session, context.options, model, effort)
    _say(context, f"resumed on {context.session.model}")
    return None


def _recover(context: Context, args: list[str]) -> Action:
    _no_args(args, "/recover")
    context.kickoff = None
    context.successor = None
    return "recover"


def _log(session: Session) -> list[dict[str, Any]]:
    from ax_log import read_events

    return list(read_events(session.layout.session_log(session.id), session.id))


def _clear(context: Context, args: list[str]) -> Action:
    _no_args(args, "/clear")
    return "clear"


def _quit(context: Context, args: list[str]) -> Action:
    _no_args(args, "/quit")
    return "quit"


COMMANDS: tuple[Command, ...] = (
    Command("help", "", "this list", _help),
    Command("status", "", "session, model, sandbox, tokens and cost, owner", _status),
    Command("undo", "[all]", "revert the last change (or every change) of this session", _undo),
    Command("checkpoints", "", "this session's git checkpoints", _checkpoints),
    Command("restore", "N", "put the working tree back as checkpoint N holds it", _restore),
    Command("diff", "", "what this session changed, as a diff", _diff),
    Command("report", "[section]", "the session report (or one section)", _report),
    Command("trail", "[count] [tool=NAME] [file=TEXT]", "the steps executed so far", _trail),
    Command("notes", "[key]", "the slate's notes", _notes),
    Command(
        "context",
        "",
        "the instruction files loaded, and what the last request was made of, in tokens",
        _context,
    ),
    Command("memory", "", "instruction files and project memory: sizes, cuts, staleness", _memory),
    Command("mcp", "", "MCP servers: state (starting, ready, failed …) and tools", _mcp),
    Command("expand", "N", "the full output of step N", _expand),
    Command("model", "[name]", "show or switch the model (between turns)", _model),
    Command("provider", "[name]", "show or switch the provider (between turns)", _provider),
    Command("accept", "", "record that you accept this session's work", _accept),
    Command(
        "commit",
        "[message]",
        "commit the files this session changed, as you, with your hooks (shown, then asked)",
        _commit,
    ),
    Command(
        "push",
        "[--force] [remote] [branch]",
        "push the branch's commit as observed (shown, then asked every time)",
        _push,
    ),
    Command("plan", "[approve [SHA]]", "the session's plan and its task states; approve it", _plan),
    Command(
        "repair",
        "[dismiss N REASON]",
        "the repair ledger: each classified failure and its outcome; dismiss an open one",
        _repair,
    ),
    Command(
        "orchestrator",
        "[on|off]",
        "orchestrator mode: read, plan, delegate every change to worker threads",
        _orchestrator,
    ),
    Command("init", "", "write a starter AGENTS.md for the project (shown, then asked)", _init),
    Command(
        "handoff",
        "[--track-boundary|--post-check|--context-budget|--user-request] [FOCUS]",
        "hand the work to a fresh session (plan, notes, threads, Trail tail) and go on there",
        _handoff,
    ),
    Command("resume", "[--model NAME] [--effort E]", "lift a handoff or budget pause", _resume),
    Command("recover", "", "send a stalled turn a failover instruction to go on", _recover),
    Command("clear", "", "end this session and start a new one", _clear),
    Command("quit", "", "end the session and exit", _quit),
)


def run_line(context: Context, line: str) -> Action:
    """Run a command line, saying what went wrong instead of raising."""
    parsed = parse(line)
    assert parsed is not None
    name, args = parsed
    try:
        return dispatch(context, name, args)
    except AxError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        context.screen.line(context.screen.style(f"/{name}: {exc.message}{hint}", "red"))
        return None
