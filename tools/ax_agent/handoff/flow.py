"""The handoff itself: transfer, adoption, pauses, ``/resume`` and the failover.

Transfer (the old session's side): record the attempt's ``handoff.purpose``, build
the snapshot and the kickoff, write the ``handoff.entry`` as the first event of a
new session's log, then record ``handoff.transferred`` (which consumes the
purpose). A failure before the entry is durable is a ``handoff.failed`` and keeps
the purpose for the retry.

Adoption (the successor's side): a saved ``handoff.state`` wins over the entry;
otherwise the entry addressed to this session's id restores the plan and notes,
then its model and effort are checked. One that is not permitted pauses the
session (``adoption``: the kickoff stays pending, no turn starts) until ``/resume``
with a permitted model saves an unpaused state. The kickoff is claimed
(``handoff.kickoff_claimed``) before its turn is sent, and a claimed kickoff is
never sent again: a send that fails after the claim, or a process that died
between the two, is reported and continuation is the person's to ask for.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from libcommon import clock
from libcommon.errors import AxError, OperationFailed, UsageError
from libcommon.paths import StateLayout

from .pause import (
    log_events,
    paused_line,
    refuse_if_paused,
    request_tokens,
    state_event,
)
from .records import (
    PauseReason,
    Purpose,
    Record,
    Request,
    adoption,
    choose_purpose,
    pending_purpose,
)
from .snapshot import HANDOFF_FOCUS_MAX_CHARS, build_snapshot, kickoff_text, load_template

if TYPE_CHECKING:
    from ..loop import TurnResult
    from ..providers import Provider, ProviderRequest, ProviderResponse
    from ..session import Session, StartOptions

ATTEMPT_PREFIX = "h"
FAILOVER_PREFIX = "f"
# The reasoning efforts a handoff may carry (ax records and checks them; see the docs).
Effort = Literal["low", "medium", "high"]
EFFORTS: tuple[str, ...] = get_args(Effort)
FAILOVER_TEXT = (
    "[ax failover {attempt}: the previous turn stalled before it finished. Look at the "
    "state of the work (the Trail, the plan, the repository), then continue from where it "
    "stopped.]"
)

# Said after every failover: what its acknowledgement does and does not show.
RECOVER_NOTE = (
    "ax-agent: failover sent; its acknowledgement (handoff.continued) says only that the "
    "model started answering it, not that the work recovered"
)

Append = Callable[..., Any]


@dataclass(frozen=True)
class Transfer:
    attempt_id: str
    purpose: Purpose
    retry: bool
    successor: str
    template: str


def current_model(events: Sequence[Record]) -> str | None:
    """The model the session runs on now, as its log says."""
    model: str | None = None
    for event in events:
        if event.get("type") in ("session.started", "provider.changed"):
            model = event.get("model") or model
    return model


def begin(
    record: Append, events: Sequence[Record], request: Request, pause: PauseReason | None
) -> tuple[str, Purpose, bool]:
    """Record the attempt's purpose; (attempt id, purpose, retry)."""
    if request.focus is not None and len(request.focus) > HANDOFF_FOCUS_MAX_CHARS:
        raise UsageError(f"the focus is longer than {HANDOFF_FOCUS_MAX_CHARS} characters")
    purpose, retry = choose_purpose(request, pending_purpose(events))
    attempt = clock.new_id(ATTEMPT_PREFIX)
    event: dict[str, Any] = {
        "type": "handoff.purpose",
        "attemptId": attempt,
        "purpose": purpose,
        "retry": retry,
    }
    if request.focus is not None:
        event["focus"] = request.focus
    if pause is not None:
        event["pauseReason"] = pause
    record(event)
    return attempt, purpose, retry


def failed(record: Append, attempt: str, stage: str, reason: str) -> None:
    record({"type": "handoff.failed", "attemptId": attempt, "stage": stage, "reason": reason})


def transfer(
    layout: StateLayout,
    session_id: str,
    record: Append,
    attempt: tuple[str, Purpose, bool],
    focus: str | None,
    *,
    trusted: bool,
    model: str | None,
    effort: str | None,
) -> Transfer:
    """Write the successor's entry, then mark the purpose consumed (see the module doc)."""
    from ax_log import append_events

    from ..session import SESSION_ID_PREFIX

    attempt_id, purpose, retry = attempt
    try:
        events = log_events(layout, session_id)
        snapshot = build_snapshot(layout, session_id, events)
        template = load_template(layout, trusted)
        kickoff = kickoff_text(template.text, session_id, purpose, focus, snapshot)
        successor = clock.new_id(SESSION_ID_PREFIX)
        entry: dict[str, Any] = {
            "type": "handoff.entry",
            "sessionId": successor,
            "snapshot": snapshot,
            "purpose": purpose,
            "kickoff": kickoff,
            "model": model or current_model(events),
            "reasoningEffort": effort,
            "predecessor": session_id,
            "template": template.source,
        }
        append_events(layout, successor, [entry])
    except AxError as exc:
        failed(record, attempt_id, "replacement", exc.message)
        raise
    except (OSError, ValueError) as exc:
        failed(record, attempt_id, "replacement", str(exc))
        raise OperationFailed(
            f"the successor session could not be written: {exc}",
            hint="fix the cause and run /handoff again: the purpose is kept for the retry",
        ) from None
    record(
        {
            "type": "handoff.transferred",
            "attemptId": attempt_id,
            "successor": successor,
            "purpose": purpose,
        }
    )
    return Transfer(attempt_id, purpose, retry, successor, template.source)


# --- the successor's side ----------------------------------------------------------


def check_model(
    session: Session, options: StartOptions, model: str, effort: str | None
) -> str | None:
    """Why ``model`` (with ``effort``) is not permitted for a handoff, or None when it is.

    Permitted: a model ax's catalog knows, the user configuration's model, or the
    provider's own default (the script provider's: its script's). A model merely named
    on a command line is not: a successor adopts only what a person configured or ax
    knows. An effort must be one of ``EFFORTS`` and needs a model whose catalog entry
    reasons.
    """
    from ..window.catalog import model_limits

    limits = model_limits(model)
    if not (limits.known or model in (session.config.model, _default_model(session, options))):
        return (
            f"the model {model!r} is not permitted for a handoff (not in ax's catalog, not "
            "the configured model, not the provider's default)"
        )
    if effort is not None:
        if effort not in EFFORTS:
            return f"the reasoning effort {effort!r} is not one of {', '.join(EFFORTS)}"
        if limits.reasoning == "none":
            return f"the model {model!r} takes no reasoning effort (asked: {effort})"
    return None


def _default_model(session: Session, options: StartOptions) -> str | None:
    from ..providers import make_provider

    try:
        provider = make_provider(
            session.provider.name,
            model=None,
            base_url=None,
            script=options.script if session.provider.name == "script" else None,
            environ=session.environ,
        )
    except AxError:
        return None
    return provider.model


def _restore(session: Session, snapshot: Mapping[str, Any]) -> None:
    """The predecessor's plan and notes become this session's (approval is not carried:
    a person approves the successor's plan again)."""
    from ..plans.model import Plan
    from ..plans.store import read_plan, write_plan
    from ..seam.models import NoteSetRequest

    plan = snapshot.get("plan")
    if plan is not None and read_plan(session.layout, session.id) is None:
        write_plan(session.layout, session.id, Plan.model_validate(plan))
    for key, text in (snapshot.get("notes") or {}).items():
        session.seam.call("slate.note_set", NoteSetRequest(key=key, text=text))


def adopt(session: Session, options: StartOptions, say: Callable[[str], None]) -> str | None:
    """Adopt this session's entry when it has one and no saved state; the kickoff to
    deliver now (None: nothing to deliver, or the session is paused)."""
    found = adoption(session.id, log_events(session.layout, session.id))
    if found.claimed is not None and not found.kickoff_sent and not found.failure_recorded:
        reason = "ax stopped after claiming the kickoff and before sending it"
        session.record(
            {"type": "handoff.kickoff_failed", "sha256": found.claimed, "reason": reason}
        )
        say(
            f"ax-agent: the handoff's kickoff was claimed but never sent ({reason}); it is "
            "not sent again: ask the session to continue"
        )
    if found.state is not None:
        # The session's start applied this saved state already (a pause holds).
        if session.pause_reason is not None:
            say(paused_line(session.pause_reason, found.state.get("detail")))
            return None
        if found.kickoff_pending and found.entry is not None:
            return found.entry.get("kickoff")
        return None
    if found.entry is None:
        return None
    entry = found.entry
    _restore(session, entry.get("snapshot") or {})
    model = entry.get("model") or session.model
    effort = entry.get("reasoningEffort")
    kickoff = entry.get("kickoff")
    problem = check_model(session, options, model, effort)
    if problem is None and model != session.model:
        problem = _switch(session, options, model)
    if problem is not None:
        session.record(
            state_event(session, "adoption", kickoff_pending=kickoff is not None, detail=problem)
        )
        session.pause_reason = "adoption"
        say(paused_line("adoption", problem))
        return None
    session.effort = effort
    session.record(state_event(session, None, kickoff_pending=kickoff is not None))
    return kickoff


def _provider_for(session: Session, options: StartOptions, model: str) -> Provider | str:
    """The session's provider on ``model``, or why it cannot be made."""
    from ..providers import make_provider
    from ..providers.profiles import PROFILES

    name = session.provider.name
    try:
        return make_provider(
            name,
            model=model,
            base_url=getattr(session.provider, "base_url", None) if name in PROFILES else None,
            script=options.script if name == "script" else None,
            environ=session.environ,
        )
    except AxError as exc:
        return f"the model {model!r} cannot be used with {name}: {exc.message}"


def _use(session: Session, provider: Provider) -> None:
    """Run on ``provider`` from the next request (``provider.changed`` says so)."""
    previous = session.model
    session.provider = provider
    session.model = provider.model
    session.record(
        {
            "type": "provider.changed",
            "provider": provider.name,
            "model": provider.model,
            "previousProvider": provider.name,
            "previousModel": previous,
        }
    )


def _switch(session: Session, options: StartOptions, model: str) -> str | None:
    """Run on ``model`` from now on; why not, when its provider cannot be made."""
    provider = _provider_for(session, options, model)
    if isinstance(provider, str):
        return provider
    _use(session, provider)
    return None


def resume(
    session: Session, options: StartOptions, model: str | None, effort: str | None
) -> str | None:
    """``/resume``: lift the pause; the kickoff to deliver now (adoption pauses only).

    An adoption pause checks the model and effort first (refused: still paused); the
    unpaused state is saved before anything changes in this process, so a save that
    fails keeps the pause. A context-budget pause resumes on any model and counts the
    budget again from the request's present size.
    """
    reason = session.pause_reason
    if reason is None:
        raise OperationFailed("the session is not paused; there is nothing to resume")
    target = model or session.model
    if reason == "adoption":
        problem = check_model(session, options, target, effort)
        if problem is not None:
            raise UsageError(f"still paused: {problem}", hint="/resume --model NAME [--effort E]")
    elif effort is not None and effort not in EFFORTS:
        raise UsageError(f"the reasoning effort {effort!r} is not one of {', '.join(EFFORTS)}")
    provider = _provider_for(session, options, target) if target != session.model else None
    if isinstance(provider, str):
        raise UsageError(f"still paused: {provider}")
    found = adoption(session.id, log_events(session.layout, session.id))
    kickoff = (
        found.entry.get("kickoff")
        if reason == "adoption" and found.entry is not None and found.claimed is None
        else None
    )
    floor = request_tokens(session) if reason == "context-budget" else session.budget_floor
    state = state_event(session, None, kickoff_pending=kickoff is not None, floor=floor)
    state.update(model=target, reasoningEffort=effort)
    # Saved first: a save that fails leaves this process as it was, still paused.
    session.record(state)
    if provider is not None:
        _use(session, provider)
    session.pause_reason = None
    session.budget_floor = floor
    session.effort = effort
    return kickoff


def deliver(session: Session, kickoff: str, abort: threading.Event | None = None) -> TurnResult:
    """Claim the kickoff, then send it as the successor's first turn; never twice."""
    from ..loop import run_turn

    sha = hashlib.sha256(kickoff.encode()).hexdigest()
    if adoption(session.id, log_events(session.layout, session.id)).claimed == sha:
        raise OperationFailed(
            "the kickoff was already claimed; it is never sent twice",
            hint="ask the session to continue",
        )
    session.record({"type": "handoff.kickoff_claimed", "sha256": sha})
    try:
        return run_turn(session, kickoff, abort)
    except AxError as exc:
        session.record({"type": "handoff.kickoff_failed", "sha256": sha, "reason": exc.message})
        raise OperationFailed(
            f"the kickoff was claimed but its send failed: {exc.message}",
            hint="it is not sent again: ask the session to continue",
        ) from None


# --- the failover ---------------------------------------------------------------------


def stalled(events: Sequence[Record]) -> bool:
    """Whether the newest turn ended without the model finishing (or never ended)."""
    from ..loop import FINISHED

    state = False
    for event in events:
        kind = event.get("type")
        if kind == "user.message":
            state = True
        elif kind == "turn.completed":
            state = event.get("stopReason") not in FINISHED
        elif kind == "turn.aborted":
            state = True
    return state


class _StartProbe:
    """The session's provider, wrapped for one failover attempt: the first answer to
    start while this attempt is still the session's newest records its continuation."""

    def __init__(self, session: Session, inner: Provider, attempt: str) -> None:
        self.session = session
        self.inner = inner
        self.attempt = attempt
        self.name = inner.name
        self.model = inner.model
        self.said = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, request: ProviderRequest, **kwargs: Any) -> ProviderResponse:
        response = self.inner.complete(request, **kwargs)
        if not self.said and self.session.failover_attempt == self.attempt:
            self.said = True
            self.session.record({"type": "handoff.continued", "attemptId": self.attempt})
        return response


def recover(session: Session, abort: threading.Event | None = None) -> TurnResult:
    """Send a stalled session the failover instruction, as a new unique attempt."""
    from ..loop import run_turn

    refuse_if_paused(session)
    if not stalled(log_events(session.layout, session.id)):
        raise OperationFailed(
            "the last turn finished; there is nothing to recover", hint="send a prompt instead"
        )
    attempt = clock.new_id(FAILOVER_PREFIX)
    session.failover_attempt = attempt
    session.record({"type": "handoff.failover", "attemptId": attempt})
    inner = session.provider
    probe = _StartProbe(session, inner, attempt)
    session.provider = probe
    try:
        return run_turn(session, FAILOVER_TEXT.format(attempt=attempt), abort)
    finally:
        if session.provider is probe:
            session.provider = inner
