"""Automation schedules: the spec, when each run falls due, and what the scheduler does.

Pure (stdlib ``zoneinfo``, no store, no clock of its own): the store-backed
``automations.*`` tools and the scheduler call it with the time they read. The rules are
the reference's (docs/ax-mesh.md, "Schedules"):

- ``time`` follows the wall clock of the schedule's zone. A local time that happens twice
  runs once, at the first; a time skipped when clocks go forward runs that much later
  (02:30 becomes 03:30). Both are what PEP 495's ``fold=0`` means, so one rule does both.
- ``every`` counts elapsed time from its creation, in UTC, and ignores the wall clock.
- Overlap: an occurrence that falls due while the previous run is still waiting or in
  progress is skipped and counted, never piled up.
- Downtime: occurrences missed while nothing was ticking are not replayed; one catch-up
  run says how many were missed, and the schedule resumes at its next future occurrence.
- Duplicates: each occurrence is identified by its scheduled instant (``occurrence_key``);
  ``tick`` never returns an instant at or before the state's last one, so a scheduler
  that retries, or a clock that jumps back, cannot queue one twice as long as the store
  commits the new state with the queued run (and keeps the key unique).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from libcommon.errors import UsageError

# At most this many active or paused automations per seat (the store-backed tool checks).
AUTOMATIONS_PER_SEAT_MAX = 50
# The shortest ``every``: a schedule that fires more often is a loop, not a reminder.
EVERY_MIN_S = 60
# The longest ``in`` or ``every``; a longer one is almost certainly a unit mistake.
DELAY_MAX_S = 366 * 86400
# How late a single occurrence may run before it counts as missed (a scheduler's tick
# is never exactly on time; an hour's outage is not a late tick).
MISSED_AFTER_S = 300
# How many upcoming runs a created or listed automation shows.
UPCOMING_RUNS = 3
NAME_MAX_CHARS = 128
INSTRUCTION_MAX_BYTES = 12 * 1024

_M = TypeVar("_M", bound=BaseModel)
Kind = Literal["once", "every", "time"]
Status = Literal["active", "paused", "completed"]

_DURATION = re.compile(r"^(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,8})s)?$")
_TIME_OF_DAY = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_GROUPS = {
    "daily": tuple(range(7)),
    "weekdays": tuple(range(5)),
    "weekends": (5, 6),
    **{name: (number,) for number, name in enumerate(WEEKDAYS)},
}


class ScheduleError(UsageError):
    """A schedule that parses but cannot run as asked; ``field`` names the argument."""

    def __init__(self, field: str, problem: str, hint: str | None = None) -> None:
        super().__init__(f"argument field '{field}': {problem}", hint)
        self.field = field


def parse_duration(text: str) -> int:
    """``20m``, ``1h30m``, ``2d``, ``45s`` as whole seconds (> 0)."""
    match = _DURATION.match(text)
    if not text or not match:
        raise ValueError(f"{text!r} is not a duration: use units d, h, m, s, e.g. 20m or 1h30m")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ValueError("a duration is longer than zero")
    if total > DELAY_MAX_S:
        raise ValueError(f"a duration is at most {DELAY_MAX_S // 86400} days")
    return total


def format_duration(seconds: int) -> str:
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def load_zone(name: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"{name!r} is not a time zone: use an IANA name such as Europe/London or UTC"
        ) from None


def parse_days(value: str | list[str]) -> tuple[int, ...]:
    """``weekdays``, ``mon,wed`` or ``["sat", "sun"]`` as sorted weekday numbers (Monday 0)."""
    tokens = value.split(",") if isinstance(value, str) else value
    found: set[int] = set()
    for token in tokens:
        key = token.strip().lower()
        if key not in _DAY_GROUPS:
            raise ValueError(f"{token!r} is not a day: use mon…sun, weekdays, weekends or daily")
        found.update(_DAY_GROUPS[key])
    if not found:
        raise ValueError("name at least one day")
    return tuple(sorted(found))


def _check_zone(value: str | None) -> str | None:
    if value is not None:
        load_zone(value)
    return value


def _check_moment(value: str | None) -> str | None:
    if value is not None:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a time: use local 2026-10-09T15:00 or RFC 3339 "
                "2026-10-09T15:00:00+01:00"
            ) from None
    return value


Duration = Annotated[str, Field(min_length=1, max_length=32)]
Moment = Annotated[str, Field(min_length=1, max_length=40)]


class ScheduleFields(BaseModel):
    """The schedule arguments ``automations.create`` and ``automations.update`` share.

    Strict and closed like every tool's arguments, so a refusal names its field. The
    ``in`` argument is ``in_`` here (``in`` is a Python keyword); its alias is ``in``.
    """

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, defer_build=True)

    in_: Duration | None = Field(default=None, alias="in")
    at: Moment | None = None
    every: Duration | None = None
    time: Annotated[str, Field(max_length=5)] | None = None
    days: (
        Annotated[str, Field(max_length=64)]
        | Annotated[list[Annotated[str, Field(max_length=16)]], Field(max_length=7)]
        | None
    ) = None
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    until: Moment | None = None
    max_runs: int | None = Field(default=None, ge=1, le=1_000_000)

    @field_validator("in_")
    @classmethod
    def _in(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("every")
    @classmethod
    def _every(cls, value: str | None) -> str | None:
        if value is not None and parse_duration(value) < EVERY_MIN_S:
            raise ValueError(f"every is at least {EVERY_MIN_S // 60}m")
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not _TIME_OF_DAY.match(value):
            raise ValueError(f"{value!r} is not a time of day: use HH:MM, 00:00-23:59")
        return value

    @field_validator("days")
    @classmethod
    def _days(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None:
            parse_days(value)
        return value

    _zone = field_validator("timezone")(_check_zone)
    _moments = field_validator("at", "until")(_check_moment)

    def kinds_given(self) -> list[str]:
        named = {"in": self.in_, "at": self.at, "every": self.every, "time": self.time}
        return [name for name, value in named.items() if value is not None]


class AutomationCreate(ScheduleFields):
    """``automations.create``'s arguments: a name, an instruction and exactly one schedule."""

    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX_CHARS)]
    instruction: Annotated[str, Field(min_length=1)]

    @field_validator("instruction")
    @classmethod
    def _instruction(cls, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > INSTRUCTION_MAX_BYTES:
            raise ValueError(f"at most {INSTRUCTION_MAX_BYTES} bytes of UTF-8")
        return value

    @model_validator(mode="after")
    def _one_schedule(self) -> AutomationCreate:
        given = self.kinds_given()
        if len(given) != 1:
            found = ", ".join(given) if given else "none"
            raise ValueError(f"give exactly one schedule of in, at, every or time (got {found})")
        if self.days is not None and self.time is None:
            raise ValueError("days goes with time (e.g. time 09:00, days weekdays)")
        return self


class AutomationUpdate(ScheduleFields):
    """``automations.update``'s arguments. ``null`` for ``until`` or ``max_runs`` removes it.

    ``in``, ``at`` or ``every`` replace the schedule; ``time``, ``days`` and ``timezone``
    adjust a time-of-day schedule and keep what is left out (``apply_update``).
    """

    id: Annotated[str, Field(min_length=1, max_length=64)]
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX_CHARS)] | None = None
    instruction: Annotated[str, Field(min_length=1)] | None = None
    status: Literal["active", "paused"] | None = None

    @model_validator(mode="after")
    def _one_replacement(self) -> AutomationUpdate:
        replacing = [k for k in self.kinds_given() if k != "time"]
        if len(replacing) > 1 or (replacing and (self.time or self.days)):
            raise ValueError(
                "give at most one new schedule: in, at or every, or time/days (got "
                f"{', '.join(self.kinds_given() + (['days'] if self.days else []))})"
            )
        return self


def validate_create(arguments: Any) -> AutomationCreate:
    """``automations.create``'s arguments, or a UsageError naming every bad field."""
    return _validate(AutomationCreate, arguments)


def validate_update(arguments: Any) -> AutomationUpdate:
    return _validate(AutomationUpdate, arguments)


def _validate(model: type[_M], arguments: Any) -> _M:
    from libcommon.cliapp import describe_validation_error

    if not isinstance(arguments, dict):
        raise UsageError(f"the arguments must be a JSON object, not {type(arguments).__name__}")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "argument")) from None


@dataclass(frozen=True)
class Schedule:
    """A compiled schedule: instants in UTC, a zone for wall-clock times and display."""

    kind: Kind
    timezone: str
    at: datetime | None = None  # once
    every_s: int | None = None  # every: occurrences are anchor + k * every_s, k >= 1
    anchor: datetime | None = None
    hour: int | None = None  # time
    minute: int | None = None
    days: tuple[int, ...] = ()
    until: datetime | None = None
    max_runs: int | None = None

    def zone(self) -> tzinfo:
        return load_zone(self.timezone)

    def to_json(self) -> dict[str, Any]:
        """The schedule as the store keeps it (``from_json`` reads it back)."""
        return {
            "kind": self.kind,
            "timezone": self.timezone,
            "at": _iso(self.at),
            "every_s": self.every_s,
            "anchor": _iso(self.anchor),
            "hour": self.hour,
            "minute": self.minute,
            "days": list(self.days),
            "until": _iso(self.until),
            "max_runs": self.max_runs,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Schedule:
        return cls(
            kind=data["kind"],
            timezone=data["timezone"],
            at=_from_iso(data.get("at")),
            every_s=data.get("every_s"),
            anchor=_from_iso(data.get("anchor")),
            hour=data.get("hour"),
            minute=data.get("minute"),
            days=tuple(data.get("days") or ()),
            until=_from_iso(data.get("until")),
            max_runs=data.get("max_runs"),
        )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _from_iso(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


def wall_clock(day: date, at: time, zone: tzinfo) -> datetime:
    """The instant (UTC) the wall clock of ``zone`` shows ``at`` on ``day``.

    ``fold=0`` is the whole daylight-saving rule: an ambiguous time is its first
    occurrence, and a skipped one is read with the offset before the jump, which lands
    it later by the size of the gap (New York's 02:30 on the spring-forward day is 03:30
    EDT; Lord Howe's 02:15 is 02:45, its gap being 30 minutes).
    """
    return datetime.combine(day, at, tzinfo=zone).replace(fold=0).astimezone(UTC)


def parse_moment(text: str, zone: tzinfo) -> datetime:
    """Local ``2026-10-09T15:00`` (read in ``zone``, DST rule as ``wall_clock``) or RFC 3339."""
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        return wall_clock(value.date(), value.time(), zone)
    return value.astimezone(UTC)


def compile_schedule(spec: ScheduleFields, now: datetime, default_zone: str) -> Schedule:
    """The schedule a validated create names, as of ``now``; ScheduleError names the field.

    ``default_zone`` is the seat's zone, used when the spec names none.
    """
    zone_name = spec.timezone or default_zone
    zone = load_zone(zone_name)
    now = now.astimezone(UTC)
    until = parse_moment(spec.until, zone) if spec.until is not None else None
    schedule: Schedule
    if spec.in_ is not None:
        schedule = Schedule("once", zone_name, at=now + timedelta(seconds=parse_duration(spec.in_)))
    elif spec.at is not None:
        at = parse_moment(spec.at, zone)
        if at <= now:
            raise ScheduleError(
                "at", f"{spec.at} is in the past (now is {_local(now, zone)})", hint="use in"
            )
        schedule = Schedule("once", zone_name, at=at)
    elif spec.every is not None:
        schedule = Schedule("every", zone_name, every_s=parse_duration(spec.every), anchor=now)
    elif spec.time is not None:
        hour, minute = (int(part) for part in spec.time.split(":"))
        days = parse_days(spec.days) if spec.days is not None else _DAY_GROUPS["daily"]
        schedule = Schedule("time", zone_name, hour=hour, minute=minute, days=days)
    else:
        raise ScheduleError("in", "give one schedule: in, at, every or time")
    schedule = replace(schedule, until=until, max_runs=spec.max_runs)
    if until is not None and next_after(schedule, now) is None:
        raise ScheduleError("until", f"{spec.until} leaves no run (now is {_local(now, zone)})")
    return schedule


def apply_update(
    schedule: Schedule, update: AutomationUpdate, now: datetime, default_zone: str
) -> Schedule:
    """The schedule after ``automations.update``; ScheduleError names a field it cannot take.

    ``in``, ``at`` or ``every`` replace it. ``time`` and ``days`` adjust a time-of-day
    schedule and keep what is left out (a weekday check moved to 10:00 stays on
    weekdays); ``time`` on another kind replaces it, daily unless ``days`` are given.
    ``timezone`` alone moves a time-of-day schedule's wall clock, and only changes how a
    one-off or interval is shown. ``until`` and ``max_runs`` change only when given;
    ``null`` removes them.
    """
    given = update.model_fields_set
    zone_name = update.timezone or schedule.timezone
    result: Schedule
    if update.in_ is not None or update.at is not None or update.every is not None:
        named = {"in": update.in_, "at": update.at, "every": update.every, "timezone": zone_name}
        fresh = ScheduleFields.model_validate({k: v for k, v in named.items() if v is not None})
        result = compile_schedule(fresh, now, default_zone)
    elif update.time is not None or update.days is not None:
        if schedule.kind != "time" and update.time is None:
            raise ScheduleError(
                "days", f"this automation runs {describe(schedule)}; days go with a time"
            )
        hour, minute = schedule.hour or 0, schedule.minute or 0
        if update.time is not None:
            hour, minute = (int(part) for part in update.time.split(":"))
        days = schedule.days if schedule.kind == "time" else _DAY_GROUPS["daily"]
        if update.days is not None:
            days = parse_days(update.days)
        result = Schedule("time", zone_name, hour=hour, minute=minute, days=days)
    else:
        result = replace(schedule, timezone=zone_name)
    until = schedule.until
    if "until" in given:
        until = parse_moment(update.until, result.zone()) if update.until is not None else None
    max_runs = update.max_runs if "max_runs" in given else schedule.max_runs
    result = replace(result, until=until, max_runs=max_runs)
    if "until" in given and until is not None and next_after(result, now) is None:
        raise ScheduleError("until", f"{update.until} leaves no run after now")
    return result


def next_after(schedule: Schedule, after: datetime) -> datetime | None:
    """The first occurrence strictly after ``after`` (UTC), or None when none is left.

    ``until`` ends the schedule; ``max_runs`` is counted by ``tick``, not here.
    """
    after = after.astimezone(UTC)
    found: datetime | None
    if schedule.kind == "once":
        found = schedule.at if schedule.at is not None and schedule.at > after else None
    elif schedule.kind == "every":
        assert schedule.anchor is not None and schedule.every_s is not None
        step = schedule.every_s
        elapsed = (after - schedule.anchor).total_seconds()
        count = max(1, int(elapsed // step) + 1)
        found = schedule.anchor + timedelta(seconds=step * count)
        while found <= after:  # float rounding on a long span
            found += timedelta(seconds=step)
    else:
        found = _next_wall_clock(schedule, after)
    if found is not None and schedule.until is not None and found > schedule.until:
        return None
    return found


def _next_wall_clock(schedule: Schedule, after: datetime) -> datetime:
    zone = schedule.zone()
    at = time(schedule.hour or 0, schedule.minute or 0)
    # Start a day early: a skipped time moved later can land past the next local midnight
    # only in theory, but starting early costs one iteration and rules it out.
    day = after.astimezone(zone).date() - timedelta(days=1)
    for _ in range(9):
        if day.weekday() in schedule.days:
            found = wall_clock(day, at, zone)
            if found > after:
                return found
        day += timedelta(days=1)
    raise AssertionError("a time schedule with days always has a run within a week")


@dataclass(frozen=True)
class RunState:
    """What the store keeps of an automation between ticks.

    ``next_run`` is the earliest occurrence not yet handled (queued, skipped or missed);
    ``last_key_at`` the scheduled instant of the last queued run, the floor that keeps
    every occurrence queued at most once.
    """

    schedule: Schedule
    status: Status = "active"
    next_run: datetime | None = None
    runs_queued: int = 0
    skipped_runs: int = 0
    missed_runs: int = 0
    last_key_at: datetime | None = None


def start(schedule: Schedule, now: datetime) -> RunState:
    """The state of a newly created automation."""
    first = next_after(schedule, now)
    return RunState(schedule, "active" if first else "completed", first)


@dataclass(frozen=True)
class Run:
    """One run to queue: ``key`` is unique per automation and occurrence."""

    scheduled_at: datetime
    key: str
    missed: int  # occurrences that did not run on time and this run stands in for (0: on time)


@dataclass(frozen=True)
class Tick:
    state: RunState
    run: Run | None
    skipped: int  # occurrences skipped by this tick because the previous run was open


def occurrence_key(automation_id: str, scheduled_at: datetime) -> str:
    """The unique key of one occurrence: the automation and its scheduled instant (UTC)."""
    return f"{automation_id}@{scheduled_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def tick(automation_id: str, state: RunState, now: datetime, *, previous_open: bool) -> Tick:
    """What the scheduler does for one automation at ``now``.

    ``previous_open`` says whether this automation's last run is still waiting or in
    progress. The store commits ``Tick.state`` in the transaction that queues
    ``Tick.run`` (with its key unique), so a retried tick queues nothing twice. A clock
    that jumps back finds nothing due; one that jumps forward is downtime.
    """
    now = now.astimezone(UTC)
    if state.status != "active" or state.next_run is None:
        return Tick(state, None, 0)
    first: datetime | None = state.next_run
    if state.last_key_at is not None and state.next_run <= state.last_key_at:
        # A schedule replaced after the clock jumped back can start at or before the
        # last queued run: the floor holds, so no occurrence is queued twice.
        first = next_after(state.schedule, state.last_key_at)
    if first is None or first > now:
        return Tick(_settle(replace(state, next_run=first)), None, 0)
    latest, total = _due(state.schedule, first, now)
    following = next_after(state.schedule, now)
    if previous_open:
        state = replace(state, next_run=following, skipped_runs=state.skipped_runs + total)
        return Tick(_settle(state), None, total)
    late = (now - latest).total_seconds() > MISSED_AFTER_S
    missed = total if (total > 1 or late) else 0
    run = Run(latest, occurrence_key(automation_id, latest), missed)
    state = replace(
        state,
        next_run=following,
        runs_queued=state.runs_queued + 1,
        missed_runs=state.missed_runs + missed,
        last_key_at=latest,
    )
    return Tick(_settle(state), run, 0)


def _due(schedule: Schedule, first: datetime, now: datetime) -> tuple[datetime, int]:
    """The latest occurrence in [first, now] and how many there are (first is one)."""
    if schedule.kind == "every":
        assert schedule.every_s is not None
        end = min(now, schedule.until) if schedule.until is not None else now
        count = int((end - first).total_seconds() // schedule.every_s) + 1
        return first + timedelta(seconds=schedule.every_s * (count - 1)), count
    latest, count = first, 1
    moment = next_after(schedule, first)
    while moment is not None and moment <= now:
        latest, count = moment, count + 1
        moment = next_after(schedule, moment)
    return latest, count


def _settle(state: RunState) -> RunState:
    limit = state.schedule.max_runs
    if state.next_run is None or (limit is not None and state.runs_queued >= limit):
        return replace(state, status="completed", next_run=None)
    return state


def resume(state: RunState, now: datetime) -> RunState:
    """Resume a paused automation: runs that fell due while paused are not replayed
    (a one-off whose time passed while paused completes without running)."""
    if state.status != "paused":
        return state
    return _settle(replace(state, status="active", next_run=next_after(state.schedule, now)))


def pause(state: RunState) -> RunState:
    return replace(state, status="paused") if state.status == "active" else state


def reschedule(state: RunState, schedule: Schedule, now: datetime) -> RunState:
    """The state after the schedule changed: the next run is the new one's, from ``now``."""
    state = replace(state, schedule=schedule)
    if state.status == "completed":
        return state
    return _settle(replace(state, next_run=next_after(schedule, now)))


def upcoming(state: RunState, count: int = UPCOMING_RUNS) -> list[dict[str, str]]:
    """The next ``count`` runs in the schedule's local time with their UTC offsets (none
    while paused: a paused automation has no next run until it is resumed)."""
    if state.status != "active" or state.next_run is None:
        return []
    zone = state.schedule.zone()
    left = count
    if state.schedule.max_runs is not None:
        left = min(left, state.schedule.max_runs - state.runs_queued)
    runs: list[dict[str, str]] = []
    moment: datetime | None = state.next_run
    while moment is not None and len(runs) < left:
        runs.append(_local_view(moment, zone))
        moment = next_after(state.schedule, moment)
    return runs


def _local(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).isoformat(timespec="minutes")


def _local_view(moment: datetime, zone: tzinfo) -> dict[str, str]:
    local = moment.astimezone(zone)
    return {
        "local": local.isoformat(timespec="minutes"),
        "utc_offset": _offset(local),
        "zone": local.tzname() or "",
        "utc": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _offset(local: datetime) -> str:
    offset = local.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def describe(schedule: Schedule) -> str:
    """The schedule in words, e.g. ``weekdays at 09:00 (Europe/London)``."""
    zone = schedule.zone()
    if schedule.kind == "once" and schedule.at is not None:
        text = f"once at {_local(schedule.at, zone)} ({schedule.timezone})"
    elif schedule.kind == "every" and schedule.every_s is not None:
        text = f"every {format_duration(schedule.every_s)}"
    else:
        text = f"{_days_words(schedule.days)} at {schedule.hour:02d}:{schedule.minute:02d} "
        text += f"({schedule.timezone})"
    if schedule.until is not None:
        text += f", until {_local(schedule.until, zone)}"
    if schedule.max_runs is not None:
        text += f", at most {schedule.max_runs} run{'s' if schedule.max_runs != 1 else ''}"
    return text


def _days_words(days: tuple[int, ...]) -> str:
    for name in ("daily", "weekdays", "weekends"):
        if days == _DAY_GROUPS[name]:
            return name
    return ",".join(WEEKDAYS[day] for day in days)


def view(automation_id: str, state: RunState) -> dict[str, Any]:
    """The schedule part of an automation as the tools return it."""
    return {
        "id": automation_id,
        "schedule": describe(state.schedule),
        "timezone": state.schedule.timezone,
        "status": state.status,
        "next_runs": upcoming(state),
        "runs_queued": state.runs_queued,
        "skipped_runs": state.skipped_runs,
        "missed_runs": state.missed_runs,
        "max_runs": state.schedule.max_runs,
        "until": _local(state.schedule.until, state.schedule.zone())
        if state.schedule.until is not None
        else None,
    }


def clock_now(now: datetime, timezone: str) -> dict[str, str]:
    """``clock.now``: the current time in a zone, with its offset."""
    zone = load_zone(timezone)
    return {"timezone": timezone, **_local_view(now.astimezone(UTC), zone)}
