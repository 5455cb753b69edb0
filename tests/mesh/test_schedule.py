"""ax_mesh.schedule: the automation spec, when runs fall due, and the scheduler's rules."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ax_mesh import schedule as sched
from libcommon.errors import UsageError

DST_ZONES = ["Europe/London", "America/New_York", "Australia/Lord_Howe"]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def make(now: datetime, **fields: Any) -> sched.RunState:
    spec = sched.validate_create({"name": "n", "instruction": "do it", **fields})
    return sched.start(sched.compile_schedule(spec, now, "UTC"), now)


# --- the spec: every refusal names its field ----------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"every": "30s"}, "every"),
        ({"every": "1x"}, "every"),
        ({"in": "0m"}, "in"),
        ({"in": "400d"}, "in"),
        ({"in": 20}, "in"),
        ({"at": "tomorrow"}, "at"),
        ({"time": "9:00"}, "time"),
        ({"time": "24:00"}, "time"),
        ({"time": "09:00", "days": ["mon", "funday"]}, "days"),
        ({"time": "09:00", "days": []}, "days"),
        ({"in": "5m", "timezone": "Mars/Olympus"}, "timezone"),
        ({"in": "5m", "timezone": "../../etc/passwd"}, "timezone"),
        ({"in": "5m", "until": "soon"}, "until"),
        ({"in": "5m", "max_runs": 0}, "max_runs"),
        ({"in": "5m", "max_runs": "3"}, "max_runs"),
        ({"in": "5m", "colour": "red"}, "colour"),
        ({"in": "5m", "name": ""}, "name"),
        ({"in": "5m", "instruction": "x" * (sched.INSTRUCTION_MAX_BYTES + 1)}, "instruction"),
    ],
)
def test_a_bad_field_is_refused_by_name(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(UsageError) as caught:
        sched.validate_create({"name": "n", "instruction": "i", **fields})
    assert f"argument field '{named}'" in caught.value.message


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"in": "5m", "every": "1h"},
        {"time": "09:00", "at": "2030-01-01T00:00"},
        {"days": "mon", "in": "5m"},
    ],
)
def test_exactly_one_schedule_is_required(fields: dict[str, Any]) -> None:
    with pytest.raises(UsageError) as caught:
        sched.validate_create({"name": "n", "instruction": "i", **fields})
    assert "in, at, every or time" in caught.value.message or "days goes with time" in (
        caught.value.message
    )


def test_an_at_in_the_past_and_an_until_that_leaves_no_run_are_refused_by_name() -> None:
    now = utc(2026, 5, 1, 12)
    with pytest.raises(sched.ScheduleError) as caught:
        make(now, at="2026-05-01T11:00", timezone="Europe/London")
    assert caught.value.field == "at" and "in the past" in caught.value.message
    with pytest.raises(sched.ScheduleError) as caught:
        make(now, time="09:00", until="2026-05-01T13:00Z")
    assert caught.value.field == "until"


# --- daylight saving ----------------------------------------------------------------------


def test_a_skipped_time_runs_later_by_the_gap() -> None:
    # New York springs forward at 02:00 on 2026-03-08: 02:30 does not exist that day.
    state = make(utc(2026, 3, 7, 12), time="02:30", timezone="America/New_York")
    runs = sched.upcoming(state)
    assert [r["local"] for r in runs] == [
        "2026-03-08T03:30-04:00",
        "2026-03-09T02:30-04:00",
        "2026-03-10T02:30-04:00",
    ]
    assert runs[0]["utc_offset"] == "-04:00" and runs[0]["zone"] == "EDT"


def test_lord_howe_moves_a_skipped_time_by_its_thirty_minute_gap() -> None:
    # Lord Howe goes from +10:30 to +11:00 at 02:00 on 2026-10-04.
    state = make(utc(2026, 10, 3, 0), time="02:15", timezone="Australia/Lord_Howe")
    assert sched.upcoming(state)[0]["local"] == "2026-10-04T02:45+11:00"


def test_an_ambiguous_time_runs_once_at_the_first() -> None:
    # London falls back at 02:00 BST on 2026-10-25: 01:30 happens at 00:30Z and 01:30Z.
    state = make(utc(2026, 10, 24, 12), time="01:30", timezone="Europe/London")
    runs = sched.upcoming(state)
    assert [r["utc"] for r in runs[:2]] == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    assert runs[0]["local"] == "2026-10-25T01:30+01:00"
    howe = make(utc(2026, 4, 4, 0), time="01:45", timezone="Australia/Lord_Howe")
    assert sched.upcoming(howe)[0]["local"] == "2026-04-05T01:45+11:00"


def test_a_local_at_follows_the_same_rule() -> None:
    state = make(utc(2026, 3, 1), at="2026-03-08T02:30", timezone="America/New_York")
    assert sched.upcoming(state)[0]["local"] == "2026-03-08T03:30-04:00"
    state = make(utc(2026, 3, 1), at="2026-03-08T02:30:00+00:00")
    assert sched.upcoming(state)[0]["utc"] == "2026-03-08T02:30:00Z"


def test_every_counts_elapsed_time_across_a_clock_change() -> None:
    state = make(utc(2026, 10, 24, 23, 30), every="1h", timezone="Europe/London")
    runs = sched.upcoming(state)
    assert [r["local"] for r in runs] == [
        "2026-10-25T01:30+01:00",
        "2026-10-25T01:30+00:00",
        "2026-10-25T02:30+00:00",
    ]


def _oracle(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The expected run for ``at`` on ``day``, found without fold: try each offset the
    zone has around the day; a wall time none of them reaches is in a gap, read with
    the offset before it."""
    naive = datetime.combine(day, at)
    before = zone.utcoffset(datetime.combine(day - timedelta(days=1), time(12)))
    after = zone.utcoffset(datetime.combine(day + timedelta(days=1), time(12)))
    assert before is not None and after is not None
    valid = []
    for offset in {before, after}:
        moment = (naive - offset).replace(tzinfo=UTC)
        if moment.astimezone(zone).replace(tzinfo=None) == naive:
            valid.append(moment)
    return min(valid) if valid else (naive - before).replace(tzinfo=UTC)


moments = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
)


def _transitions(zone: str) -> list[datetime]:
    """The instants the zone's offset changes in 2025-2028 (to the quarter hour)."""
    tz = ZoneInfo(zone)
    found = []
    moment = utc(2025, 1, 1)
    previous = moment.astimezone(tz).utcoffset()
    while moment.year < 2029:
        offset = moment.astimezone(tz).utcoffset()
        if offset != previous:
            found.append(moment)
        previous = offset
        moment += timedelta(minutes=15)
    return found


TRANSITIONS = {zone: _transitions(zone) for zone in DST_ZONES}


@st.composite
def zone_and_moment(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and a moment, half the time within three days of one of its clock changes."""
    zone = draw(st.sampled_from(DST_ZONES))
    if draw(st.booleans()):
        return zone, draw(moments)
    change = draw(st.sampled_from(TRANSITIONS[zone]))
    return zone, change + timedelta(seconds=draw(st.integers(-3 * 86400, 3 * 86400)))


@settings(max_examples=300, deadline=None)
@given(
    where=zone_and_moment(),
    hour=st.sampled_from([0, 1, 2, 3, 9, 23]),
    minute=st.sampled_from([0, 1, 15, 29, 30, 45, 59]),
    days=st.lists(st.sampled_from(sched.WEEKDAYS), min_size=1, max_size=7),
)
def test_the_next_run_of_a_time_schedule_matches_the_wall_clock_oracle(
    where: tuple[str, datetime], hour: int, minute: int, days: list[str]
) -> None:
    zone, after = where
    schedule = sched.Schedule("time", zone, hour=hour, minute=minute, days=sched.parse_days(days))
    found = sched.next_after(schedule, after)
    assert found is not None and found > after
    tz = ZoneInfo(zone)
    expected = [
        _oracle(after.astimezone(tz).date() + timedelta(days=n), time(hour, minute), tz)
        for n in range(-1, 9)
        if (after.astimezone(tz).date() + timedelta(days=n)).weekday() in schedule.days
    ]
    assert found == min(moment for moment in expected if moment > after)
    following = sched.next_after(schedule, found)
    assert following is not None
    # A time that happens twice runs once: consecutive runs are a day apart, give or
    # take the clock change.
    assert following - found >= timedelta(hours=22, minutes=59)


@settings(max_examples=200, deadline=None)
@given(
    where=zone_and_moment(),
    every=st.sampled_from(["1m", "7m", "30m", "1h", "90m", "1d"]),
    after_s=st.integers(0, 400 * 86400),
)
def test_every_is_elapsed_time_in_any_zone(
    where: tuple[str, datetime], every: str, after_s: int
) -> None:
    zone, created = where
    state = make(created, every=every, timezone=zone)
    step = timedelta(seconds=sched.parse_duration(every))
    after = created + timedelta(seconds=after_s)
    found = sched.next_after(state.schedule, after)
    assert found is not None and after < found <= after + step
    assert (found - created) % step == timedelta(0)


# --- the scheduler: overlap, downtime, duplicates, ending ----------------------------------


def test_an_occurrence_due_while_the_previous_run_is_open_is_skipped_and_counted() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="10m")
    first = sched.tick("A-1", state, now + timedelta(minutes=10), previous_open=False)
    assert first.run is not None and first.run.missed == 0
    second = sched.tick("A-1", first.state, now + timedelta(minutes=20), previous_open=True)
    assert second.run is None and second.skipped == 1 and second.state.skipped_runs == 1
    assert second.state.next_run == now + timedelta(minutes=30)


def test_downtime_gives_one_catch_up_run_that_says_how_many_were_missed() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="1h")
    back = now + timedelta(hours=5, minutes=20)
    result = sched.tick("A-1", state, back, previous_open=False)
    assert result.run is not None and result.run.missed == 5
    assert result.run.scheduled_at == now + timedelta(hours=5)
    assert result.state.next_run == now + timedelta(hours=6)
    assert result.state.runs_queued == 1 and result.state.missed_runs == 5
    # A daily schedule over a week's outage (09:00 on the 1st to the 8th): one run.
    daily = make(now, time="09:00", timezone="Europe/London")
    result = sched.tick("A-2", daily, now + timedelta(days=7, hours=10), previous_open=False)
    assert result.run is not None and result.run.missed == 8


def test_a_single_late_run_is_on_time_within_the_grace_and_missed_after_it() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="1h")
    due = now + timedelta(hours=1)
    prompt = sched.tick(
        "A", state, due + timedelta(seconds=sched.MISSED_AFTER_S), previous_open=False
    )
    assert prompt.run is not None and prompt.run.missed == 0
    late = sched.tick(
        "A", state, due + timedelta(seconds=sched.MISSED_AFTER_S + 1), previous_open=False
    )
    assert late.run is not None and late.run.missed == 1


def test_a_retried_tick_yields_the_same_key_and_a_clock_jumping_back_queues_nothing() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="15m")
    due = now + timedelta(minutes=15)
    once = sched.tick("A-9", state, due, previous_open=False)
    again = sched.tick("A-9", state, due, previous_open=False)
    assert once.run == again.run
    assert once.run is not None and once.run.key == "A-9@2026-01-01T00:15:00Z"
    back = sched.tick("A-9", once.state, now, previous_open=False)
    assert back.run is None and back.state == once.state


def test_a_schedule_replaced_after_a_backward_jump_never_requeues_an_occurrence() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="10m")
    ran = sched.tick("A", state, now + timedelta(minutes=30), previous_open=False)
    assert ran.run is not None
    # The clock jumps back an hour, then the schedule is replaced by an every 5m from there.
    earlier = now - timedelta(hours=1)
    update = sched.validate_update({"id": "A", "every": "5m"})
    replaced = sched.reschedule(
        ran.state, sched.apply_update(ran.state.schedule, update, earlier, "UTC"), earlier
    )
    # Its occurrences up to 00:30 lie at or before the last queued run: none is queued.
    assert sched.tick("A", replaced, now + timedelta(minutes=31), previous_open=False).run is None
    later = sched.tick("A", replaced, now + timedelta(minutes=36), previous_open=False)
    assert later.run is not None and later.run.scheduled_at == now + timedelta(minutes=35)


def test_max_runs_and_until_end_the_schedule() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="1h", max_runs=2)
    assert len(sched.upcoming(state)) == 2
    for hour in (1, 2):
        result = sched.tick("A", state, now + timedelta(hours=hour), previous_open=False)
        assert result.run is not None
        state = result.state
    assert state.status == "completed" and state.next_run is None
    assert sched.upcoming(state) == []
    bounded = make(now, every="1h", until="2026-01-01T02:30:00Z")
    assert len(sched.upcoming(bounded)) == 2
    after = sched.tick("A", bounded, now + timedelta(hours=5), previous_open=False)
    assert after.run is not None and after.run.scheduled_at == now + timedelta(hours=2)
    assert after.state.status == "completed"


def test_a_one_off_completes_after_its_run() -> None:
    now = utc(2026, 1, 1)
    state = make(now, **{"in": "20m"})
    result = sched.tick("A", state, now + timedelta(minutes=20), previous_open=False)
    assert result.run is not None and result.state.status == "completed"


def test_resuming_does_not_replay_what_fell_due_while_paused() -> None:
    now = utc(2026, 1, 1)
    state = sched.pause(make(now, every="1h"))
    assert sched.tick("A", state, now + timedelta(hours=3), previous_open=False).run is None
    resumed = sched.resume(state, now + timedelta(hours=3, minutes=10))
    assert resumed.next_run == now + timedelta(hours=4)
    one_off = sched.pause(make(now, **{"in": "1h"}))
    assert sched.resume(one_off, now + timedelta(hours=2)).status == "completed"


# --- updates ------------------------------------------------------------------------------


def test_moving_a_weekday_check_keeps_it_on_weekdays() -> None:
    now = utc(2026, 1, 1)
    state = make(now, time="09:00", days="weekdays", timezone="Europe/London", max_runs=9)
    update = sched.validate_update({"id": "A", "time": "10:00"})
    moved = sched.apply_update(state.schedule, update, now, "UTC")
    assert sched.describe(moved) == "weekdays at 10:00 (Europe/London), at most 9 runs"
    cleared = sched.apply_update(
        moved, sched.validate_update({"id": "A", "max_runs": None}), now, "UTC"
    )
    assert cleared.max_runs is None and cleared.days == moved.days
    replaced = sched.apply_update(
        moved, sched.validate_update({"id": "A", "every": "2h"}), now, "UTC"
    )
    assert sched.describe(replaced) == "every 2h, at most 9 runs"


def test_days_on_an_interval_are_refused_by_name() -> None:
    now = utc(2026, 1, 1)
    state = make(now, every="1h")
    with pytest.raises(sched.ScheduleError) as caught:
        sched.apply_update(
            state.schedule, sched.validate_update({"id": "A", "days": "mon"}), now, "UTC"
        )
    assert caught.value.field == "days"
    with pytest.raises(UsageError, match="at most one new schedule"):
        sched.validate_update({"id": "A", "every": "1h", "time": "09:00"})


def test_the_schedule_survives_the_store() -> None:
    state = make(utc(2026, 1, 1), time="09:00", days="mon,wed", until="2026-06-01T00:00Z")
    assert sched.Schedule.from_json(state.schedule.to_json()) == state.schedule


def test_clock_now_shows_the_zone_and_offset() -> None:
    shown = sched.clock_now(utc(2026, 7, 1, 12), "America/New_York")
    assert shown["local"] == "2026-07-01T08:00-04:00" and shown["utc_offset"] == "-04:00"


# --- clock jumps: the whole scheduler under a clock that goes both ways -------------------

steps = st.lists(
    st.tuples(
        st.integers(-3 * 86400, 3 * 86400),  # the clock moves back or forward (seconds)
        st.booleans(),  # the previous run is still open
        st.booleans(),  # the scheduler crashes and retries this tick on the old state
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(DST_ZONES),
    spec=st.sampled_from(
        [
            {"every": "1m"},
            {"every": "45m"},
            {"time": "02:30"},
            {"time": "01:30", "days": "weekends"},
            {"time": "02:15", "max_runs": 3},
            {"in": "2h"},
            {"every": "1h", "until": "2026-03-20T00:00:00Z"},
        ]
    ),
    start=st.datetimes(
        min_value=datetime(2026, 3, 1), max_value=datetime(2026, 3, 10), timezones=st.just(UTC)
    ),
    moves=steps,
)
def test_no_occurrence_is_queued_twice_whatever_the_clock_does(
    zone: str, spec: dict[str, Any], start: datetime, moves: list[tuple[int, bool, bool]]
) -> None:
    state = make(start, timezone=zone, **spec)
    now = start
    keys: list[str] = []
    queued_at: list[datetime] = []
    for delta, busy, retry in moves:
        now += timedelta(seconds=delta)
        result = sched.tick("A-1", state, now, previous_open=busy)
        if retry:
            assert sched.tick("A-1", state, now, previous_open=busy) == result
        if result.run is not None:
            assert not busy and result.run.key not in keys
            assert result.run.scheduled_at <= now
            if state.schedule.until is not None:
                assert result.run.scheduled_at <= state.schedule.until
            if queued_at:
                assert result.run.scheduled_at > queued_at[-1]
            keys.append(result.run.key)
            queued_at.append(result.run.scheduled_at)
        if result.state.next_run is not None and (result.run or result.skipped):
            assert result.state.next_run > now
        state = result.state
    assert state.runs_queued == len(keys)
    if state.schedule.max_runs is not None:
        assert len(keys) <= state.schedule.max_runs
