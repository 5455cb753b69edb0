"""``automations.*`` and ``clock.now``: schedules a seat keeps for itself, and the scheduler.

The rules of when runs fall due are ``ax_mesh.schedule``'s (pure); this module keeps
their state in the store and queues runs. The scheduler step (``schedule_due``) runs
in the seat's runner: for each due automation it ticks the schedule and writes the new
state with the queued run in one transaction, the run keyed by its occurrence
(``A-<id>@<instant>``, unique in the store), so a retried tick queues nothing twice.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from . import schedule as S
from .context import Ctx, redacted
from .errors import ToolError, not_found
from .models import AutomationDeleteArgs, AutomationListArgs, ClockArgs
from .store import Actor, Automation, AutomationRun, DueRun, Store

AUTOMATION_PREFIX = "A-"


def automation_id(number: int) -> str:
    return f"{AUTOMATION_PREFIX}{number}"


def parse_automation_id(value: str) -> int:
    number = value.removeprefix(AUTOMATION_PREFIX)
    if not value.startswith(AUTOMATION_PREFIX) or not number.isdigit() or number.startswith("0"):
        raise not_found(f"automation {value}")
    return int(number)


def _instant(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def run_state(automation: Automation) -> S.RunState:
    status = automation.status if automation.status != "deleted" else "completed"
    return S.RunState(
        schedule=S.Schedule.from_json(automation.schedule),
        status=status,  # type: ignore[arg-type]
        next_run=_instant(automation.next_run),
        runs_queued=automation.runs_queued,
        skipped_runs=automation.skipped_runs,
        missed_runs=automation.missed_runs,
        last_key_at=_instant(automation.last_key_at),
    )


def with_state(automation: Automation, state: S.RunState, ts: str) -> Automation:
    return replace(
        automation,
        schedule=state.schedule.to_json(),
        status=state.status,
        next_run=_epoch(state.next_run),
        runs_queued=state.runs_queued,
        skipped_runs=state.skipped_runs,
        missed_runs=state.missed_runs,
        last_key_at=_epoch(state.last_key_at),
        updated_at=ts,
    )


def _view(store: Store, automation: Automation) -> dict[str, Any]:
    state = run_state(automation)
    out = S.view(automation_id(automation.id), state)
    if automation.status == "deleted":
        out["status"] = "deleted"
    last = store.last_run(automation.id)
    return {
        **out,
        "name": automation.name,
        "instruction": automation.instruction,
        "created_at": automation.created_at,
        "last_run": None
        if last is None
        else {
            "scheduled_at": datetime.fromtimestamp(last.scheduled_at, UTC)
            .astimezone(state.schedule.zone())
            .isoformat(timespec="minutes"),
            "state": last.state,
            "missed": last.missed,
        },
    }


def _moment(ctx: Ctx) -> datetime:
    return datetime.fromtimestamp(ctx.now, UTC)


def create(ctx: Ctx, args: S.AutomationCreate) -> dict[str, Any]:
    now = _moment(ctx)
    schedule = S.compile_schedule(args, now, ctx.caller.manifest.timezone)
    state = S.start(schedule, now)
    blank = Automation(
        id=0,
        seat=ctx.caller.name,
        name=args.name,
        instruction=redacted(args.instruction),
        schedule={},
        status="active",
        next_run=None,
        runs_queued=0,
        skipped_runs=0,
        missed_runs=0,
        last_key_at=None,
        created_at=ctx.ts,
        updated_at=ctx.ts,
    )
    made = ctx.store.mutate_automation(
        ctx.caller.actor,
        ctx.now,
        None,
        lambda _current: with_state(blank, state, ctx.ts),
        S.AUTOMATIONS_PER_SEAT_MAX,
    )
    return _view(ctx.store, made)


def list_(ctx: Ctx, args: AutomationListArgs) -> dict[str, Any]:
    found = ctx.store.list_automations(ctx.caller.name, args.include_completed)
    return {"automations": [_view(ctx.store, a) for a in found]}


def update(ctx: Ctx, args: S.AutomationUpdate) -> dict[str, Any]:
    number = parse_automation_id(args.id)
    now = _moment(ctx)
    given = args.model_fields_set
    schedule_fields = {"in_", "at", "every", "time", "days", "timezone", "until", "max_runs"}

    def change(current: Automation | None) -> Automation:
        assert current is not None
        if current.status == "completed" and given - {"id", "name", "instruction"}:
            raise ToolError(
                "invalid",
                f"automation {args.id} has completed; its schedule and status no longer change",
                hint="create a new automation",
            )
        state = run_state(current)
        if given & schedule_fields:
            new_schedule = S.apply_update(state.schedule, args, now, ctx.caller.manifest.timezone)
            state = S.reschedule(state, new_schedule, now)
        if args.status == "paused":
            state = S.pause(state)
        elif args.status == "active":
            state = S.resume(state, now)
        changed = with_state(current, state, ctx.ts)
        if args.name is not None:
            changed = replace(changed, name=args.name)
        if args.instruction is not None:
            changed = replace(changed, instruction=redacted(args.instruction))
        return changed

    made = ctx.store.mutate_automation(
        ctx.caller.actor, ctx.now, number, change, S.AUTOMATIONS_PER_SEAT_MAX
    )
    return _view(ctx.store, made)


def delete(ctx: Ctx, args: AutomationDeleteArgs) -> dict[str, Any]:
    number = parse_automation_id(args.id)

    def change(current: Automation | None) -> Automation:
        assert current is not None
        return replace(current, status="deleted", next_run=None, updated_at=ctx.ts)

    ctx.store.mutate_automation(
        ctx.caller.actor, ctx.now, number, change, S.AUTOMATIONS_PER_SEAT_MAX
    )
    # A run already queued still arrives (the reference's rule); nothing new is queued.
    return {"id": args.id, "deleted": True}


def clock_now(ctx: Ctx, args: ClockArgs) -> dict[str, Any]:
    return S.clock_now(_moment(ctx), args.timezone or ctx.caller.manifest.timezone)


def schedule_due(store: Store, actor: Actor, now: float, ts: str) -> list[AutomationRun]:
    """The scheduler step for one seat at ``now``: queue every due automation's run."""
    moment = datetime.fromtimestamp(now, UTC)

    def tick(automation: Automation, previous_open: bool) -> tuple[Automation, DueRun | None]:
        ticked = S.tick(
            automation_id(automation.id),
            run_state(automation),
            moment,
            previous_open=previous_open,
        )
        run = None
        if ticked.run is not None:
            run = DueRun(ticked.run.key, ticked.run.scheduled_at.timestamp(), ticked.run.missed)
        return with_state(automation, ticked.state, ts), run

    return store.schedule_due(actor, now, ts, tick)
