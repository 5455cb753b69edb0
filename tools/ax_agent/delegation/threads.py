"""Worker threads (issue 26): delegated sessions that persist across turns, resumable by id.

A worker is a child session (``child.start_child``, role ``worker``) whose id is
its thread id. Each turn of it (the dispatch, then each follow-up) opens that
session, runs one ``run_turn`` in a thread of the parent's process, and ends
it: the next turn opens it again from its log (``resume``), so a follow-up in
this process and one sent by a parent started later are the same path, and no
worker outlives the tool call that runs it. While it runs, the parent's thread
takes its questions off one queue and puts them to the parent's approver
(``forward``), passes the parent's abort on, and stops it at the child budget
(tokens and wall clock; its steps are its session's ``max_steps``).

The parent's log holds ``thread.started``, ``thread.message`` (each follow-up
sent, each answer) and ``thread.ended``; the worker's own log holds its
conversation, its ``reminder.sent`` and, once stopped, its own ``thread.ended``,
which refuses any later follow-up. A worker gets its role's tools from the
parent's full set (an orchestrator's own set holds no writer) plus the tools of
the whitelisted MCP servers, called through the host's running servers; never
``thread``, ``threads`` or ``episode``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from libcommon.errors import OperationFailed, UsageError

from . import child as child_module
from .forward import ForwardingApprover, Question
from .threadlog import ThreadView, fold_threads

if TYPE_CHECKING:
    from ..loop import TurnResult
    from ..providers import Provider
    from ..session import Session
    from ..tools.base import ModelTool

WORKER_ROLE = "worker"
WORKER_KIND = "a worker thread, in the workspace itself"
# How much of a worker's answer a thread.message and the tool's result carry.
THREAD_ANSWER_MAX_CHARS = 8000
THREAD_TICK_SECONDS = 0.1
# A worker's session ends each turn with this reason; a stopped one with the other.
TURN_END_REASON = "thread-turn-ended"
STOP_REASON = "stopped"


@dataclass
class TurnOutcome:
    thread_id: str
    text: str
    stop_reason: str
    failed: bool
    detail: str | None = None


def worker_tools(parent: Session, servers: Iterable[str]) -> dict[str, ModelTool]:
    """A worker's tools: its role's, from the parent's full set, and those of ``servers``
    that the whitelist holds (see the module docstring); never a parent-only tool."""
    from ..mcp_servers.session import model_tool
    from .roles import PARENT_ONLY_TOOLS, ROLES, registry_for

    board = parent.threads
    source = board.full_tools if board is not None else parent.tools
    tools = registry_for(ROLES[WORKER_ROLE], source)
    whitelist = board.whitelist if board is not None else None
    if whitelist is not None and parent.mcp is not None:
        chosen = set(whitelist.names()) & set(servers)
        for tool in parent.mcp.ready_tools():
            if tool.server in chosen:
                tools[tool.name] = model_tool(tool, parent.mcp)
    return {name: tool for name, tool in tools.items() if name not in PARENT_ONLY_TOOLS}


def worker_label(parent: Session, thread_id: str) -> str:
    """The label of a worker thread found by id in the project's logs; refused when the
    id names no worker of this workspace, or a stopped one."""
    from ax_log import read_events
    from libcommon.paths import check_session_id

    check_session_id(thread_id)
    log = parent.layout.session_log(thread_id)
    if not log.is_file():
        raise UsageError(
            f"there is no thread {thread_id} in this workspace",
            hint="threads with action 'list' names the threads of this session",
        )
    label: str | None = None
    for event in read_events(log, thread_id):
        kind = event.get("type")
        if kind == "session.started" and label is None:
            if event.get("role") != WORKER_ROLE or not event.get("parent"):
                raise UsageError(f"the session {thread_id} is not a worker thread")
            label = str(event.get("task") or "")
        elif kind == "thread.ended":
            raise UsageError(
                f"the thread {thread_id} was stopped; no follow-up reaches it",
                hint="dispatch a new thread with the thread tool",
            )
    if label is None:
        raise UsageError(f"the session {thread_id} is not a worker thread")
    return label


def _provider(parent: Session, thread_id: str | None, label: str) -> Provider:
    board = parent.threads
    if board is not None and thread_id is not None and thread_id in board.providers:
        return board.providers[thread_id]
    return child_module.child_provider(parent.provider, label)


def run_thread_turn(
    parent: Session,
    *,
    label: str,
    text: str,
    abort: threading.Event,
    thread_id: str | None = None,
    extensions: Iterable[str] | None = None,
) -> TurnOutcome:
    """One turn of a worker: a new thread (``thread_id`` None) or a follow-up to one.

    ``extensions`` narrows the whitelisted servers a new thread gets (None: every one);
    a follow-up keeps what its thread was given here, and one resumed by id gets this
    session's whole whitelist.
    """
    from ..loop import one_line
    from .roles import ROLES

    role = ROLES[WORKER_ROLE]
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    stopped = threading.Event()
    # A worker writes the workspace itself, and its questions say so (not "its own copy").
    approver = ForwardingApprover(
        label, lambda q: inbox.put(("question", q)), stopped, kind=WORKER_KIND
    )
    provider = _provider(parent, thread_id, label)
    known = _known_here(parent, thread_id) if thread_id is not None else None
    resumed = thread_id is not None and known is None
    whitelist = parent.threads.whitelist if parent.threads is not None else None
    offered = whitelist.names() if whitelist is not None else []
    if known is not None:
        given = [name for name in offered if name in known.extensions]
    else:
        wanted = set(offered if extensions is None else extensions)
        given = [name for name in offered if name in wanted]
    child = _open(parent, role, label, thread_id, approver, inbox, provider, given)
    if parent.threads is not None:
        parent.threads.providers[child.id] = provider
    if thread_id is None or resumed:
        started: dict[str, Any] = {"type": "thread.started", "threadId": child.id}
        started |= {"label": label, "task": text if thread_id is None else first_task(child)}
        if resumed:
            started["resumed"] = True
        parent.record({**started, "extensions": given})
    if thread_id is not None:
        parent.record(
            {"type": "thread.message", "threadId": child.id, "sender": "parent", "text": text}
        )
    result, detail = _supervise(parent, child, text, inbox, stopped, abort)
    answer = result.text if result is not None else ""
    if len(answer) > THREAD_ANSWER_MAX_CHARS:
        answer = answer[:THREAD_ANSWER_MAX_CHARS] + "\n[… the answer was cut here]"
    stop = result.stop_reason if result is not None else "error"
    failed = result is None or result.is_error or detail is not None
    parent.record(
        {
            "type": "thread.message",
            "threadId": child.id,
            "sender": "worker",
            "text": answer,
            "stopReason": stop,
        }
    )
    why = detail or (result.detail if result is not None else None)
    return TurnOutcome(child.id, answer, stop, failed, one_line(why) if why else None)


def first_task(worker: Session) -> str:
    """The task a worker was dispatched with: the first message of its conversation."""
    from ..providers import TextBlock

    for message in worker.messages:
        if message.role == "user":
            return "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
    return ""


def _known_here(parent: Session, thread_id: str) -> ThreadView | None:
    from ax_log import read_events

    events = read_events(parent.layout.session_log(parent.id), parent.id)
    return fold_threads(events).get(thread_id)


def _open(
    parent: Session,
    role: Any,
    label: str,
    thread_id: str | None,
    approver: ForwardingApprover,
    inbox: queue.Queue[tuple[str, Any]],
    provider: Provider,
    servers: list[str],
) -> Session:
    from libcommon.errors import AxError

    def heard(record: dict[str, Any]) -> None:
        inbox.put(("event", record))

    try:
        session = child_module.start_child(
            parent,
            role=role,
            task=label,
            workspace=parent.workspace,
            approver=approver,
            listener=heard,
            tools=worker_tools(parent, servers),
            resume=thread_id,
            provider=provider,
        )
    except AxError as exc:
        raise OperationFailed(f"the worker thread could not start: {exc.message}") from None
    session.remind_parallel = True
    return session


def _supervise(
    parent: Session,
    child: Session,
    text: str,
    inbox: queue.Queue[tuple[str, Any]],
    stopped: threading.Event,
    abort: threading.Event,
) -> tuple[TurnResult | None, str | None]:
    """Run the worker's turn in a thread; serve its questions, abort and budget here."""
    from ..loop import run_turn

    done: list[TurnResult | BaseException] = []

    def work() -> None:
        try:
            done.append(run_turn(child, text, stopped))
        except BaseException as exc:  # the worker's crash reaches the parent as its end
            done.append(exc)
        finally:
            try:
                child.end(TURN_END_REASON)
            finally:
                inbox.put(("done", None))

    runner = threading.Thread(target=work, name=f"ax-thread-{child.id}", daemon=True)
    started = time.monotonic()
    tokens = 0
    detail: str | None = None
    runner.start()
    try:
        while True:
            if abort.is_set() and not stopped.is_set():
                stopped.set()
                detail = "interrupted (Ctrl+C)"
            try:
                kind, payload = inbox.get(timeout=THREAD_TICK_SECONDS)
            except queue.Empty:
                kind, payload = "tick", None
            if kind == "done":
                break
            if kind == "question":
                _answer(parent, payload, abort)
            elif kind == "event" and payload.get("type") == "assistant.message":
                usage = payload.get("usage") or {}
                tokens += int(usage.get("inputTokens") or 0) + int(usage.get("outputTokens") or 0)
            if stopped.is_set():
                continue
            if tokens >= child_module.CHILD_MAX_TOKENS:
                detail = f"it spent its budget of {child_module.CHILD_MAX_TOKENS} tokens"
                stopped.set()
            elif time.monotonic() - started >= child_module.CHILD_MAX_SECONDS:
                detail = f"it ran out of its {child_module.CHILD_MAX_SECONDS:g} s of wall clock"
                stopped.set()
    except BaseException:
        stopped.set()
        runner.join()
        raise
    runner.join()
    outcome = done[0] if done else None
    if isinstance(outcome, BaseException):
        return None, f"{type(outcome).__name__}: {outcome}"
    return outcome, detail


def _answer(parent: Session, question: Question, abort: threading.Event) -> None:
    from ..approvals import ApprovalAnswer

    parent.asking.set()
    try:
        answer = parent.approver.ask(question.forwarded())
    except KeyboardInterrupt:
        abort.set()
        answer = ApprovalAnswer("stop", parent.approver.name, "interrupted")
    finally:
        parent.asking.clear()
    question.answer = answer
    question.answered.set()


def stop_thread(parent: Session, thread_id: str, reason: str = STOP_REASON) -> None:
    """End a thread for good: ``thread.ended`` in the worker's log (which refuses any later
    follow-up, from this parent or another) and then in the parent's."""
    from libcommon.locks import OwnerLease

    from ..seam.compose import make_seam
    from ..seam.models import AppendRequest

    worker_label(parent, thread_id)
    ended = {"type": "thread.ended", "threadId": thread_id, "reason": reason}
    lease = OwnerLease(parent.layout.session_lease(thread_id))
    lease.acquire()
    try:
        seam = make_seam(parent.layout, thread_id, parent.environ, parent.config)
        seam.call("log.append", AppendRequest(events=[ended]))
    finally:
        lease.release()
    if parent.threads is not None:
        parent.threads.providers.pop(thread_id, None)
    parent.record(ended)
