"""The turn loop: ``run_turn(session, text, abort)``.

A turn appends the user's message, then asks the model, records its answer,
and runs each tool call it made through the gate (request → parse → decide →
ask → snapshot → run → record), until the model stops, a limit is reached or
the caller aborts. Every tool_use gets exactly one tool_result, whatever
happens, so the conversation stays valid for the next request.

The loop decides nothing itself: ax-policy decides, the approver answers, the
tool runs. It records what happened, in order, through the seam.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from libcommon.errors import AxError, Unsupported

from .approvals import ApprovalAnswer, ApprovalRequest, Choice
from .calls import call_key, declared_facts, parse_input
from .plans.note import plan_note
from .providers import (
    ContentBlock,
    Message,
    ProviderAborted,
    ProviderRequest,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    reasoning,
)
from .providers.base import ImagePart, ReasoningBlock
from .seam import BeforeStored
from .seam.callseam import CallSeam
from .seam.models import (
    CheckDetectRequest,
    CheckpointCreateRequest,
    CheckpointListRequest,
    PathsRequest,
    SaveOutputRequest,
    SetupPlanRequest,
)
from .window.catalog import model_limits
from .window.window import place_pinned

if TYPE_CHECKING:
    from ax_policy import Decision, DeclaredFacts

    from .session import Session
    from .tools.base import ModelTool, ToolResult

# Identical consecutive calls: the result is annotated at the first count and the
# turn stops (without running the call) at the second.
LOOP_WARN_AT = 3
LOOP_STOP_AT = 5
# Consecutive calls whose input could not be parsed before the turn stops.
UNPARSEABLE_STOP_AT = 3
SUMMARY_MAX_CHARS = 200
# Stop reasons that mean the model finished its answer.
FINISHED = frozenset({"end_turn", "stop_sequence"})
# Issue 26: what a worker thread is told after its first batch of tool results in a turn.
PARALLEL_CALLS_REMINDER = (
    "[ax reminder] Tool calls that do not depend on each other's results go in one "
    "answer together: issue independent reads, searches and checks at once, not one per "
    "answer."
)


@dataclass
class TurnResult:
    stop_reason: str
    text: str
    steps: int
    usage: Usage = field(default_factory=Usage)
    aborted: bool = False
    detail: str | None = None

    @property
    def is_error(self) -> bool:
        return self.aborted or self.stop_reason not in FINISHED


@dataclass
class _Stop:
    reason: str
    detail: str


@dataclass
class _TurnState:
    steps: int = 0
    last_key: str | None = None
    repeats: int = 0
    unparseable: int = 0
    stop: _Stop | None = None
    abort_phase: str | None = None
    usage: Usage = field(default_factory=Usage)
    # Issue 26: the parallel-calls reminder was given this turn.
    reminded: bool = False


def block_json(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, ReasoningBlock):
        return reasoning.to_json(block)
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def usage_json(usage: Usage) -> dict[str, int]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheCreationInputTokens": usage.cache_creation_input_tokens,
        "cacheReadInputTokens": usage.cache_read_input_tokens,
    }


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_MAX_CHARS else line[: SUMMARY_MAX_CHARS - 1] + "…"


def run_turn(session: Session, text: str, abort: threading.Event | None = None) -> TurnResult:
    """One user turn, to the model's final answer or a stop (see the module docstring)."""
    abort = abort or threading.Event()
    state = _TurnState()
    if session.pause_reason is not None:
        # Issue 26: a paused session takes no prompt (its state saves still run).
        from .handoff.pause import refuse_if_paused

        refuse_if_paused(session)
    if session.mcp is not None:
        # Issue 23: servers still starting hold the first turn up to a budget, no longer;
        # the tools of those ready now join, and those of a server gone leave.
        from .mcp_servers.session import sync_tools

        session.mcp.wait_started()
        if not session.orchestrating:
            sync_tools(session.tools, session.mcp)
    if session.orchestrating:
        # Issue 26: the orchestrator gains no server's tools; its instructions name the
        # whitelisted ones its workers hold.
        from .orchestrator import prepare_turn

        prepare_turn(session)
    session.record({"type": "user.message", "content": text})
    blocks: list[ContentBlock] = [TextBlock(text)]
    # The plan (issue 21): its per-turn note rides on the message, so it leaves with it.
    note = plan_note(session, len(session.messages))
    if note is not None:
        blocks.append(TextBlock(note))
    session.messages.append(Message("user", blocks))
    schemas = [tool.schema() for tool in session.tools.values()]
    final_text = ""
    while True:
        if abort.is_set():
            return _aborted(session, state, "model", final_text)
        if state.steps >= session.max_steps:
            return _finished(
                session,
                state,
                "max-steps",
                final_text,
                f"the turn reached its limit of {session.max_steps} model calls",
            )
        state.steps += 1
        request = ProviderRequest(
            system=session.system, messages=session.messages, tools=schemas, model=session.model
        )
        # Instruction files loaded since the start ride on the message they first reach.
        pinned = (
            session.instructions.pin(len(session.messages) - 1)
            if session.instructions is not None
            else []
        )
        if session.window is not None:
            # Bounded context (issue 13): the request sends a bounded view of the history.
            request = session.window.bound(request, pinned)
        elif pinned:
            request = replace(request, messages=place_pinned(request.messages, pinned))
        _note_uncatalogued(session, request.model)
        if session.context_budget is not None:
            # Issue 26: the context budget pauses the work before the request is sent.
            from .handoff.pause import budget_reached, pause_for_budget

            if budget_reached(session):
                detail = pause_for_budget(session)
                return _finished(session, state, "context-budget", final_text, detail)
        try:
            response = session.provider.complete(request, on_text=session.on_text, abort=abort)
        except ProviderAborted:
            return _aborted(session, state, "model", final_text)
        except AxError as exc:  # a provider error, or a script that ran out
            kind = getattr(exc, "kind", None)
            return _finished(session, state, "error", final_text, exc.message, kind)
        state.usage.add(response.usage)
        answer = {
            "type": "assistant.message",
            "content": [block_json(block) for block in response.content],
            "stopReason": response.stop_reason,
            "usage": usage_json(response.usage),
        }
        session.messages.append(Message("assistant", list(response.content)))
        final_text = response.text or final_text
        uses = response.tool_uses
        if not uses:
            session.record(answer)
            return _finished(session, state, response.stop_reason, final_text)
        # Nothing happens between the answer and its first call's request, so the two
        # are one batch: both durable before that call is decided, in the same order.
        results = _answer_calls(session, uses, response.stop_reason, abort, state, answer)
        answered: list[ContentBlock] = [*results]
        if session.remind_parallel and not state.reminded and results:
            # Issue 26: once per turn, in the worker's log, never on the person's screen.
            state.reminded = True
            session.record(
                {"type": "reminder.sent", "kind": "parallel-calls", "text": PARALLEL_CALLS_REMINDER}
            )
            answered.append(TextBlock(PARALLEL_CALLS_REMINDER))
        session.messages.append(Message("user", answered))
        if state.abort_phase is not None or abort.is_set():
            return _aborted(session, state, state.abort_phase or "tool", final_text)
        if state.stop is not None:
            return _finished(session, state, state.stop.reason, final_text, state.stop.detail)
        if response.stop_reason != "tool_use":
            # The answer was cut (max_tokens) or refused with calls in it: they were
            # answered, not run, and the turn ends with the model's own stop reason.
            return _finished(
                session,
                state,
                response.stop_reason,
                final_text,
                "the model's answer ended with unanswered tool calls; they were not run",
            )


def _note_uncatalogued(session: Session, model: str) -> None:
    """Say once per model that the catalog does not know it, and what is assumed instead."""
    limits = model_limits(model)
    offline = not getattr(session.provider, "calls_model", True)
    if offline or limits.known or model in session.models_noted:
        return
    session.models_noted.add(model)
    session.record(
        {
            "type": "model.uncatalogued",
            "model": model,
            "provider": session.provider.name,
            "contextWindow": limits.context_window,
            "maxOutput": limits.max_output,
            "note": limits.notes,
        }
    )


def _answer_calls(
    session: Session,
    uses: list[ToolUseBlock],
    stop_reason: str,
    abort: threading.Event,
    state: _TurnState,
    answer: dict[str, Any],
) -> list[ToolResultBlock]:
    """Answer each call in order; ``answer`` (the assistant.message) leads the first record."""
    results: list[ToolResultBlock] = []
    for number, use in enumerate(uses):
        lead = [answer] if number == 0 else []
        if stop_reason != "tool_use":
            why = f"Not run: your answer stopped ({stop_reason}) mid-call."
            results.append(_skip(session, use, why, lead))
        elif abort.is_set() or state.abort_phase is not None:
            results.append(_skip(session, use, "Not run: the user interrupted the turn.", lead))
        elif state.stop is not None:
            why = f"Not run: the turn stopped ({state.stop.reason})."
            results.append(_skip(session, use, why, lead))
        else:
            results.append(_execute(session, use, abort, state, lead))
    return results


def _requested(use: ToolUseBlock) -> dict[str, Any]:
    return {"type": "tool.requested", "callId": use.id, "tool": use.name, "input": use.input}


def _skip(
    session: Session, use: ToolUseBlock, why: str, lead: list[dict[str, Any]]
) -> ToolResultBlock:
    session.record(
        *lead,
        _requested(use),
        {
            "type": "tool.completed",
            "callId": use.id,
            "ok": False,
            "summary": one_line(why),
            "content": why,
            "outcome": "skipped",
        },
    )
    return ToolResultBlock(use.id, why, is_error=True)


def _image_json(image: ImagePart) -> dict[str, Any]:
    return {
        "source": image.source,
        "mediaType": image.media_type,
        "bytes": len(image.data),
        "sha256": image.sha256,
    }


def _completed(
    use: ToolUseBlock, content: str, *, ok: bool, summary: str, outcome: str
) -> dict[str, Any]:
    return {
        "type": "tool.completed",
        "callId": use.id,
        "ok": ok,
        "summary": one_line(summary or content),
        "content": content,
        "outcome": outcome,
    }


def _complete(
    session: Session, use: ToolUseBlock, content: str, *, ok: bool, summary: str, outcome: str
) -> ToolResultBlock:
    session.record(_completed(use, content, ok=ok, summary=summary, outcome=outcome))
    return ToolResultBlock(use.id, content, is_error=not ok)


def _execute(
    session: Session,
    use: ToolUseBlock,
    abort: threading.Event,
    state: _TurnState,
    lead: list[dict[str, Any]],
) -> ToolResultBlock:
    # The request is durable before the call is parsed, decided or run.
    session.record(*lead, _requested(use))
    tool = session.tools.get(use.name)
    if tool is None:
        known = ", ".join(sorted(session.tools)) or "none"
        return _refused_input(
            session, use, state, f"There is no tool {use.name!r}. Tools: {known}."
        )
    parsed = parse_input(tool.input_model, use.input)
    if parsed.value is None:
        return _refused_input(
            session, use, state, f"The input to {use.name} is not valid: {parsed.problem}"
        )
    state.unparseable = 0
    value = parsed.value
    key = call_key(use.name, value)
    state.repeats = state.repeats + 1 if key == state.last_key else 1
    state.last_key = key
    if state.repeats >= LOOP_STOP_AT:
        state.stop = _Stop(
            "loop-detected",
            f"{use.name} was called {state.repeats} times in a row with the same input",
        )
        return _complete(
            session,
            use,
            f"Not run: this is call {state.repeats} in a row of {use.name} with the same input, "
            "so the turn stops here. Tell the user what you are stuck on.",
            ok=False,
            summary="stopped: the same call repeated",
            outcome="loop-stopped",
        )
    if tool.precheck is not None:
        # The harness's own refusal (delegate_task's scheduler gate): before the policy,
        # so a person is never asked about a call that cannot run.
        try:
            refusal = tool.precheck(value, session)
        except AxError as exc:
            refusal = exc.message
        if refusal is not None:
            return _complete(session, use, refusal, ok=False, summary=refusal, outcome="refused")
    facts = _with_replay_key(session, declared_facts(tool.facts, value), value)
    facts = _bound_facts(session, tool, facts)
    facts = _with_setup_plan(session, facts)
    facts = _with_checkpoints_taken(session, facts)
    decision, decided = _decide(session, use, facts)
    if decision.verdict == "deny":
        why = f"Denied by policy ({decision.rule}): {decision.reason}"
        session.record(decided)
        return _complete(session, use, why, ok=False, summary=why, outcome="denied")
    snapshots, no_undo = _snapshot(session, use, decision, decided)
    if decision.verdict == "ask" or no_undo is not None:
        details = _consent_details(session, tool, value)
        answer = _ask(session, use, value, decision, facts, no_undo, abort, details)
        if not answer.allowed:
            if answer.choice == "stop":
                state.stop = _Stop("approval-ended", answer.detail or "no answer")
            if abort.is_set():
                state.abort_phase = "approval"
            why = "Not run: the user declined this call." + (
                f" ({answer.detail})" if answer.detail else ""
            )
            return _complete(session, use, why, ok=False, summary=why, outcome="declined")
    writer = _may_write_uncovered(facts, decision)
    if writer:
        _pre_command_checkpoint(session, use)
    touched: list[Path] = []
    result = _run_tool(session, tool, use, value, decision, abort, session.trail_step + 1, touched)
    if writer:
        session.checkpoint_due = True
    content = result.content
    if state.repeats >= LOOP_WARN_AT:
        content += (
            f"\n\n[ax: this is call {state.repeats} in a row of {use.name} with the same input; "
            f"at {LOOP_STOP_AT} the turn stops. Try something different.]"
        )
    summary = result.summary or ("error" if result.is_error else "done")
    completed = _completed(use, content, ok=not result.is_error, summary=summary, outcome="ran")
    if result.images:
        # What was shown, not the bytes: a resume says the image is not sent again.
        completed["images"] = [_image_json(image) for image in result.images]
    recorded = False
    if snapshots:
        # The call has run; when no output is saved in between, its mutations and its
        # completion are one batch (the mutations first, as always).
        then = [completed] if result.full_output is None else []
        recorded, unrecorded = _record_mutations(session, use, snapshots, then)
        if unrecorded is not None:
            names = ", ".join(unrecorded["paths"])
            content += (
                f"\n\n[ax: the change to {names} could not be recorded, so undo will not "
                f"cover it: {unrecorded['reason']}]"
            )
            summary += f" (not recorded: undo will not cover {names})"
            completed = _completed(
                use, content, ok=not result.is_error, summary=summary, outcome="ran"
            )
            completed["unrecorded"] = unrecorded
            if result.images:
                completed["images"] = [_image_json(image) for image in result.images]
            result = replace(result, summary=summary)
    if abort.is_set():
        state.abort_phase = "tool"
    output_path = None
    if result.full_output is not None:
        output_path = session.seam.call(
            "slate.save_output", SaveOutputRequest(text=result.full_output)
        )
    if not recorded:
        session.record(completed)
    _trail(session, use, value, result, output_path)
    if touched and session.instructions is not None:
        # The folders the call worked in may hold instruction files not read yet.
        loaded = session.instructions.touch(touched)
        if loaded is not None:
            session.record(loaded)
    return ToolResultBlock(use.id, content, is_error=result.is_error, images=result.images)


def _refused_input(
    session: Session, use: ToolUseBlock, state: _TurnState, message: str
) -> ToolResultBlock:
    state.unparseable += 1
    state.last_key = None
    state.repeats = 0
    if state.unparseable >= UNPARSEABLE_STOP_AT:
        state.stop = _Stop(
            "unparseable-input",
            f"{state.unparseable} tool calls in a row had input that could not be used",
        )
        message += " The turn stops here: several calls in a row could not be used."
    return _complete(session, use, message, ok=False, summary=message, outcome="refused-input")


def _with_replay_key(
    session: Session, facts: DeclaredFacts | Decision, value: BaseModel
) -> DeclaredFacts | Decision:
    """A typed check's replay key, read from ax-check, so "always" can bind to exactly it.

    The check tool declares only its kind; which command that kind runs (and so the
    key) depends on the workspace. Without a key nothing durable is offered.
    """
    from ax_policy import Decision

    if isinstance(facts, Decision) or facts.check is None or facts.check.replay_key:
        return facts
    try:
        report = session.seam.call("check.detect", CheckDetectRequest())
    except AxError:
        return facts
    project = getattr(value, "project", None) or None
    units = [unit for unit in report.units if project in (None, unit.id, unit.path)]
    if len(units) != 1:
        return facts
    key = next((k.replay_key for k in units[0].kinds if k.kind == facts.check.kind), None)
    if key is None:
        return facts
    check = facts.check.model_copy(update={"replay_key": key})
    return facts.model_copy(update={"check": check})


def _bound_facts(
    session: Session, tool: ModelTool, facts: DeclaredFacts | Decision
) -> DeclaredFacts | Decision:
    """The facts with what only the session knows filled in (``ModelTool.bind_facts``)."""
    from ax_policy import Decision

    if tool.bind_facts is None or isinstance(facts, Decision):
        return facts
    return tool.bind_facts(facts, session)


def _with_setup_plan(session: Session, facts: DeclaredFacts | Decision) -> DeclaredFacts | Decision:
    """A setup's command and replay key, read from ax-check's plan (spawning nothing), so
    the question names what runs and a session answer binds to exactly it. Without a plan
    the fact keeps no key: nothing can be granted, and the tool runs nothing."""
    from ax_policy import Decision

    if isinstance(facts, Decision) or facts.setup is None or facts.setup.replay_key:
        return facts
    unit = facts.setup.unit
    request = SetupPlanRequest(intent=facts.setup.intent, project=None if unit == "." else unit)
    try:
        plan = session.seam.call("check.setup_plan", request)
    except AxError:
        return facts
    if plan.recipe is None:
        return facts
    update = {"unit": plan.project, "command": plan.recipe.command, "replay_key": plan.replay_key}
    return facts.model_copy(update={"setup": facts.setup.model_copy(update=update)})


def _may_write_uncovered(facts: DeclaredFacts | Decision, decision: Decision) -> bool:
    """A shell command not proven read-only: what it changes no snapshot covers."""
    from ax_policy import Decision

    if isinstance(facts, Decision) or facts.command is None:
        return False
    return decision.review is None or decision.review.verdict != "read-only"


def _pre_command_checkpoint(session: Session, use: ToolUseBlock) -> None:
    """A ``pre-integration`` checkpoint before a command that may write, when one may have
    written since the last (the covered-change rule: typed writes are snapshotted and
    need none). A failure is recorded as ``checkpoint.skipped`` and never stops the call;
    outside a repository that is said once."""
    if not session.checkpoint_due or session.checkpoints_unavailable is not None:
        return
    try:
        session.seam.call("log.checkpoint_create", CheckpointCreateRequest(kind="pre-integration"))
    except Unsupported as exc:
        session.checkpoints_unavailable = exc.message
        reason = exc.message
    except AxError as exc:
        reason = exc.message
    else:
        session.checkpoint_due = False
        session.show_new()
        return
    session.record(
        {"type": "checkpoint.skipped", "kind": "pre-integration", "reason": reason,
         "callId": use.id}
    )  # fmt: skip


def _with_checkpoints_taken(
    session: Session, facts: DeclaredFacts | Decision
) -> DeclaredFacts | Decision:
    """The checkpoint fact with the session's live checkpoints counted (the refs are the
    truth), so the cap is a fact-level deny; a listing that fails (no repository) leaves
    the count for ax-log, which refuses past the cap itself."""
    from ax_policy import Decision

    if isinstance(facts, Decision) or facts.checkpoint is None:
        return facts
    try:
        live = session.seam.call("log.checkpoint_list", CheckpointListRequest())
    except AxError:
        return facts
    checkpoint = facts.checkpoint.model_copy(update={"taken": len(live)})
    return facts.model_copy(update={"checkpoint": checkpoint})


def _decide(
    session: Session, use: ToolUseBlock, facts: DeclaredFacts | Decision
) -> tuple[Decision, dict[str, Any]]:
    """The decision and its ``policy.decision`` event, which the caller stores."""
    from ax_policy import Decision, DecisionRequest

    if isinstance(facts, Decision):
        decision = facts
    else:
        request = DecisionRequest(
            tool=use.name,
            facts=facts,
            sandbox=session.sandbox.policy,
            session_grants=session.grants.entries(),
            session_replay_keys=session.grants.replay_keys(),
        )
        decision = session.seam.call("policy.decide", request)
    decided = {
        "type": "policy.decision",
        "callId": use.id,
        "verdict": decision.verdict,
        "class": decision.decision_class,
        "rule": decision.rule,
        "reason": decision.reason,
        "boundary": decision.exec_boundary,
        "sandboxProfile": decision.sandbox_profile,
    }
    return decision, decided


def _write_paths(decision: Decision) -> list[str]:
    return [facts.resolved or facts.raw for facts in decision.paths if facts.write]


def _snapshot(
    session: Session, use: ToolUseBlock, decision: Decision, decided: dict[str, Any]
) -> tuple[dict[str, str | None], str | None]:
    """Store ``decided``, then pre-images of the files the call will write.

    Returns {path: sha256 or None}, or why there is none. Taking a pre-image
    is no effect on the workspace, so the decision and the ``snapshot.stored``
    events are one batch; the decision is stored whether or not the snapshot is.
    """
    if not decision.requires_snapshot:
        session.record(decided)
        return {}, None
    paths = _write_paths(decision)
    if not paths:
        session.record(decided)
        return {}, "the decision names no path to snapshot"
    request = PathsRequest(paths=paths, call_id=use.id, before=[decided])
    try:
        records = session.seam.call("log.snapshot", request)
    except BeforeStored as exc:
        session.show_new()
        return {}, f"the snapshot failed: {exc.message}"
    except AxError as exc:
        # Nothing was stored: the decision goes alone, still before anything runs.
        session.record(decided)
        return {}, f"the snapshot failed: {exc.message}"
    session.show_new(records)
    stored = [record for record in records if record["type"] == "snapshot.stored"]
    return {str(session.workspace / record["path"]): record["sha256"] for record in stored}, None


def _record_mutations(
    session: Session,
    use: ToolUseBlock,
    snapshots: dict[str, str | None],
    then: list[dict[str, Any]],
) -> tuple[bool, dict[str, Any] | None]:
    """Record the files the call changed, with the events ``then`` in the same batch.

    Returns whether ``then`` was stored (with nothing changed, nothing is) and,
    when the log refused the change, which files and why: nothing was stored
    then, and undo will not cover them. The log refuses a path that no longer
    leads where it was snapshotted (a folder on the way swapped for a link
    since the write, say); that is a fact about the workspace to report, not a
    reason to end the turn.
    """
    from ax_log import hash_recorded

    changed: dict[str, str] = {}
    for path, before in snapshots.items():
        relative = Path(path).relative_to(session.workspace).as_posix()
        try:
            after = hash_recorded(session.layout, relative)
        except (AxError, OSError):
            # A link in its place, or anything but a file: changed, and the log judges it.
            after = "unreadable"
        if after != before:
            changed[path] = relative
    if not changed:
        return False, None
    request = PathsRequest(paths=list(changed), call_id=use.id, after=then)
    try:
        session.show_new(session.seam.call("log.mutated", request))
    except AxError as exc:
        return False, {"paths": list(changed.values()), "reason": exc.message}
    return bool(then), None


def _offers(decision: Decision, facts: DeclaredFacts | Decision, tool: str) -> tuple[Choice, ...]:
    from ax_policy import Decision, durable_external_eligible

    offers: list[Choice] = ["no", "once"]
    if decision.grantable:
        offers.append("session")
    if not isinstance(facts, Decision) and (
        (facts.check is not None and facts.check.replay_key is not None)
        or (
            facts.external is not None
            and not facts.external.write
            and durable_external_eligible(tool)
        )
    ):
        offers.append("always")
    return tuple(offers)


def _ask(
    session: Session,
    use: ToolUseBlock,
    value: BaseModel,
    decision: Decision,
    facts: DeclaredFacts | Decision,
    no_undo: str | None,
    abort: threading.Event,
    details: tuple[str, ...] = (),
) -> ApprovalAnswer:
    request = ApprovalRequest(
        call_id=use.id,
        tool=use.name,
        input=value.model_dump(mode="json"),
        decision=decision,
        no_undo=no_undo,
        offers=_offers(decision, facts, use.name),
        details=details,
    )
    session.asking.set()
    try:
        answer = session.approver.ask(request)
    except KeyboardInterrupt:
        abort.set()
        answer = ApprovalAnswer("stop", session.approver.name, "interrupted at the question")
    finally:
        session.asking.clear()
    scope, detail = _grant(session, use.name, decision, facts, answer)
    session.record(
        {
            "type": "approval.resolved",
            "callId": use.id,
            "answer": "yes" if answer.allowed else "no",
            "scope": scope,
            "approver": answer.approver,
            "detail": detail,
        }
    )
    return answer


def _consent_details(session: Session, tool: ModelTool, value: BaseModel) -> tuple[str, ...]:
    """The tool's lines for the question; one that cannot say them says why instead."""
    if tool.consent is None:
        return ()
    try:
        return tuple(tool.consent(value, session))
    except AxError as exc:
        return (f"(the call's details could not be shown: {exc.message})",)


def _grant(
    session: Session,
    tool: str,
    decision: Decision,
    facts: DeclaredFacts | Decision,
    answer: ApprovalAnswer,
) -> tuple[str, str | None]:
    """Store what the answer grants, before it is recorded; a failed store records less."""
    from ax_policy import Decision, add_durable_grant

    detail = answer.detail
    if not isinstance(facts, Decision) and facts.setup is not None:
        # A setup's session answer is its exact replay key, never a (tool, class) grant.
        key = facts.setup.replay_key
        if answer.choice == "session" and decision.grantable and key is not None:
            session.grants.add_replay(key)
            return "session", detail
        if answer.allowed:
            return "once", detail
        return ("stop" if answer.choice == "stop" else "deny"), detail
    if answer.choice == "always" and not isinstance(facts, Decision):
        try:
            if facts.check is not None and facts.check.replay_key is not None:
                add_durable_grant(
                    session.layout.root, session.workspace, replay_key=facts.check.replay_key
                )
            else:
                add_durable_grant(session.layout.root, session.workspace, tool=tool)
            return "always", detail
        except AxError as exc:
            detail = f"the durable grant could not be stored ({exc.message}); granted once"
            return "once", detail
    if answer.choice == "session" and decision.grantable:
        session.grants.add(tool, decision.decision_class)
        return "session", detail
    if answer.allowed:
        return "once", detail
    return ("stop" if answer.choice == "stop" else "deny"), detail


def _run_tool(
    session: Session,
    tool: ModelTool,
    use: ToolUseBlock,
    value: BaseModel,
    decision: Decision,
    abort: threading.Event,
    step: int,
    touched: list[Path],
) -> ToolResult:
    from .tools.base import ToolContext, ToolResult

    context = ToolContext(
        layout=session.layout,
        session_id=session.id,
        call_id=use.id,
        step=step,
        seam=CallSeam(session, use.id, decision),
        decision=decision,
        abort=abort,
        environ=session.environ,
        touched=touched,
        model=session.model,
        session=session,
        review=session.review,
    )
    try:
        return tool.run(value, context)
    except AxError as exc:
        hint = f"\nhint: {exc.hint}" if exc.hint else ""
        return ToolResult(f"{exc.message}{hint}", is_error=True, summary=one_line(exc.message))
    except Exception as exc:  # a tool's bug must not take the session down
        message = f"{use.name} failed inside ax: {type(exc).__name__}: {exc}"
        return ToolResult(message, is_error=True, summary=one_line(message))


def _trail(
    session: Session,
    use: ToolUseBlock,
    value: BaseModel,
    result: ToolResult,
    output_path: str | None,
) -> None:
    from ax_slate import RecordRequest

    outcome = ("error: " if result.is_error else "") + (result.summary or "done")
    entry = session.seam.call(
        "slate.record",
        RecordRequest(
            tool=use.name,
            args=value.model_dump(mode="json"),
            outcome=one_line(outcome),
            output=output_path,
        ),
    )
    session.trail_step = entry.step


def _finished(
    session: Session,
    state: _TurnState,
    reason: str,
    text: str,
    detail: str | None = None,
    error_kind: str | None = None,
) -> TurnResult:
    event: dict[str, Any] = {
        "type": "turn.completed",
        "stopReason": reason,
        "steps": state.steps,
        "detail": detail,
    }
    if error_kind is not None:
        event["errorKind"] = error_kind
    session.record(event)
    return TurnResult(reason, text, state.steps, state.usage, detail=detail)


def _aborted(session: Session, state: _TurnState, phase: str, text: str) -> TurnResult:
    session.record(
        {
            "type": "turn.aborted",
            "phase": phase,
            "steps": state.steps,
            "detail": "interrupted by the user",
        }
    )
    return TurnResult("aborted", text, state.steps, state.usage, aborted=True, detail=phase)
