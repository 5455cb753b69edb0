"""automations.* and clock.now behind the catalogue, and the scheduler step, on both backends.

Time is pinned (libcommon.clock), so every instant below is exact: leases, schedules and
the scheduler all read the same clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from mesh.meshtest import Harness, SeatHandle

from ax_mesh import automation_tools
from ax_mesh.automation_tools import schedule_due
from ax_mesh.delivery import fail_turn, finish_turn, next_turn
from ax_mesh.store import Actor, DueRun
from libcommon import clock
from libcommon.errors import Fenced, UsageError

# A Thursday: 2026-10-08 09:00 UTC is 10:00 in London (BST).
START = datetime(2026, 10, 8, 9, 0, tzinfo=UTC)


@dataclass
class Pinned:
    moment: datetime

    def now(self) -> datetime:
        return self.moment


@pytest.fixture
def pinned() -> Iterator[Pinned]:
    at = Pinned(START)
    with clock.use(at):
        yield at


def _tick(mesh: Harness, seat: SeatHandle) -> list[str]:
    now = clock.now().timestamp()
    runs = schedule_due(mesh.mesh.store, Actor(seat.name, seat.generation), now, clock.timestamp())
    return [run.key for run in runs]


def _jump(pinned: Pinned, seat: SeatHandle, delta: timedelta) -> None:
    """Move the clock; a jump past the execution lease takes a new one (a restarted runner)."""
    pinned.moment += delta
    seat.relapse()


def test_create_shows_the_next_three_runs_in_local_time(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    made = bot.call(
        "automations.create",
        name="standup",
        instruction="post the standup summary",
        time="09:00",
        days="weekdays",
        timezone="Europe/London",
    )
    assert made["id"] == "A-1" and made["status"] == "active"
    assert made["schedule"] == "weekdays at 09:00 (Europe/London)"
    assert [r["local"] for r in made["next_runs"]] == [
        "2026-10-09T09:00+01:00",
        "2026-10-12T09:00+01:00",
        "2026-10-13T09:00+01:00",
    ]
    assert made["next_runs"][0]["utc"] == "2026-10-09T08:00:00Z"
    # Across the autumn change the offset shown changes with it.
    late = bot.call(
        "automations.create", name="night", instruction="x", time="01:30", timezone="Europe/London"
    )
    _jump(pinned, bot, datetime(2026, 10, 24, 12, tzinfo=UTC) - pinned.moment)
    listed = bot.call("automations.list")["automations"]
    night = next(a for a in listed if a["id"] == late["id"])
    assert night["next_runs"][0]["local"] == "2026-10-09T01:30+01:00"  # not ticked yet
    assert [a["name"] for a in listed] == ["standup", "night"]


def test_arguments_are_refused_by_field_and_names_conflict(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    for args, field in (
        ({"name": "a", "instruction": "x", "every": "30s"}, "every"),
        ({"name": "a", "instruction": "x", "in": "20m", "at": "2026-10-09T15:00"}, "argument"),
        ({"name": "a", "instruction": "x", "at": "2026-10-01T15:00"}, "at"),
        ({"name": "a", "instruction": "x", "in": "1h", "timezone": "Mars/Base"}, "timezone"),
        ({"name": "a", "instruction": "x", "time": "25:00"}, "time"),
    ):
        with pytest.raises(UsageError) as caught:
            bot.call("automations.create", **args)
        assert field in caught.value.message, caught.value.message
    assert bot.call("automations.list")["automations"] == []
    first = bot.call("automations.create", name="ping", instruction="x", every="1h")
    conflict = bot.refused("automations.create", "conflict", name="ping", instruction="y", in_="5m")
    assert conflict.details["automation_id"] == first["id"]
    # Another seat has its own names and cannot see or change this one.
    other = mesh.seat("other")
    other.call("automations.create", name="ping", instruction="x", every="1h")
    other.refused("automations.update", "not_found", id=first["id"], status="paused")
    other.refused("automations.delete", "not_found", id=first["id"])
    other.refused("automations.delete", "not_found", id="A-0")


def test_at_most_fifty_live_automations(
    mesh: Harness, pinned: Pinned, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(automation_tools.S, "AUTOMATIONS_PER_SEAT_MAX", 3)
    bot = mesh.seat("bot")
    ids = [
        bot.call("automations.create", name=f"n{i}", instruction="x", every="1h")["id"]
        for i in range(3)
    ]
    bot.refused("automations.create", "invalid", name="n3", instruction="x", every="1h")
    bot.call("automations.delete", id=ids[0])
    bot.call("automations.create", name="n3", instruction="x", every="1h")
    # A paused one still counts; resuming one that is live already is not a new one.
    bot.call("automations.update", id=ids[1], status="paused")
    bot.refused("automations.create", "invalid", name="n4", instruction="x", every="1h")
    bot.call("automations.update", id=ids[1], status="active")


def test_the_scheduler_queues_each_occurrence_once(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    made = bot.call("automations.create", name="hourly", instruction="check CI", every="1h")
    assert _tick(mesh, bot) == []
    _jump(pinned, bot, timedelta(hours=1))
    assert _tick(mesh, bot) == ["A-1@2026-10-08T10:00:00Z"]
    # A retried tick at the same instant queues nothing.
    assert _tick(mesh, bot) == []
    turn = next_turn(mesh.mesh, "bot")
    assert turn is not None and turn.run is not None
    assert (turn.envelope.kind, turn.envelope.automation_id) == ("automation", made["id"])
    assert (turn.body, turn.envelope.automation_name, turn.envelope.missed) == (
        "check CI",
        "hourly",
        0,
    )
    finish_turn(mesh.mesh, turn)
    # The clock jumps back two hours: nothing is due, and nothing is queued again.
    _jump(pinned, bot, -timedelta(hours=2))
    assert _tick(mesh, bot) == []
    _jump(pinned, bot, timedelta(hours=2, minutes=30))
    assert _tick(mesh, bot) == []
    listed = bot.call("automations.list")["automations"][0]
    assert listed["runs_queued"] == 1 and listed["last_run"]["state"] == "done"
    assert listed["next_runs"][0]["utc"] == "2026-10-08T11:00:00Z"


def test_a_store_never_queues_one_key_twice(mesh: Harness, pinned: Pinned) -> None:
    """The unique key is the backstop when a scheduler retries with a stale state."""
    bot = mesh.seat("bot")
    bot.call("automations.create", name="hourly", instruction="x", every="1h")
    store = mesh.mesh.store
    _jump(pinned, bot, timedelta(hours=2))
    actor = Actor("bot", bot.generation)
    now = clock.now().timestamp()

    def stale(automation, previous_open):  # type: ignore[no-untyped-def]
        return automation, DueRun("A-1@2026-10-08T10:00:00Z", now - 3600, 0)

    assert len(store.schedule_due(actor, now, "t", stale)) == 1
    assert store.schedule_due(actor, now, "t", stale) == []


def test_downtime_is_one_catch_up_run_and_overlap_is_skipped(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    bot.call("automations.create", name="hourly", instruction="x", every="1h")
    # Nothing ticked for five hours and a half: one run stands in for the five missed.
    _jump(pinned, bot, timedelta(hours=5, minutes=30))
    assert _tick(mesh, bot) == ["A-1@2026-10-08T14:00:00Z"]
    turn = next_turn(mesh.mesh, "bot")
    assert turn is not None and turn.envelope.missed == 5
    # While that run is still in progress, the next occurrence is skipped and counted.
    _jump(pinned, bot, timedelta(hours=1))
    assert _tick(mesh, bot) == []
    view = bot.call("automations.list")["automations"][0]
    assert (view["skipped_runs"], view["missed_runs"], view["runs_queued"]) == (1, 5, 1)
    # An hour is past the delivery lease: that turn's outcome is no longer its runner's.
    with pytest.raises(Fenced):
        fail_turn(mesh.mesh, turn, "harness crashed")


def test_update_pause_resume_and_one_offs(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    made = bot.call(
        "automations.create", name="check", instruction="x", time="09:00", days="weekdays"
    )
    moved = bot.call("automations.update", id=made["id"], time="10:00")
    assert moved["schedule"] == "weekdays at 10:00 (UTC)"
    paused = bot.call("automations.update", id=made["id"], status="paused")
    assert paused["status"] == "paused" and paused["next_runs"] == []
    # Paused over three weekdays: resuming does not replay them.
    _jump(pinned, bot, timedelta(days=3))
    assert _tick(mesh, bot) == []
    resumed = bot.call("automations.update", id=made["id"], status="active")
    assert resumed["next_runs"][0]["utc"] == "2026-10-12T10:00:00Z"
    assert _tick(mesh, bot) == []
    limited = bot.call("automations.update", id=made["id"], max_runs=1)
    assert len(limited["next_runs"]) == 1
    once = bot.call("automations.create", name="remind", instruction="look at PR 7", in_="20m")
    _jump(pinned, bot, timedelta(minutes=20))
    assert _tick(mesh, bot) == [f"{once['id']}@2026-10-11T09:20:00Z"]
    assert [a["id"] for a in bot.call("automations.list")["automations"]] == [made["id"]]
    everything = bot.call("automations.list", include_completed=True)["automations"]
    assert [a["status"] for a in everything] == ["active", "completed"]
    bot.refused("automations.update", "invalid", id=once["id"], status="paused")
    # Deleting stops it for good; a run already queued still arrives.
    bot.call("automations.delete", id=once["id"])
    turn = next_turn(mesh.mesh, "bot")
    assert turn is not None and turn.body == "look at PR 7"
    bot.refused("automations.update", "not_found", id=once["id"], name="again")


def test_clock_now(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    assert bot.call("clock.now")["local"] == "2026-10-08T09:00+00:00"
    tokyo = bot.call("clock.now", timezone="Asia/Tokyo")
    assert (tokyo["local"], tokyo["utc_offset"]) == ("2026-10-08T18:00+09:00", "+09:00")
    with pytest.raises(UsageError) as caught:
        bot.call("clock.now", timezone="Nowhere/Land")
    assert "timezone" in caught.value.message


def test_a_fenced_runner_queues_nothing(mesh: Harness, pinned: Pinned) -> None:
    bot = mesh.seat("bot")
    bot.call("automations.create", name="hourly", instruction="x", every="1h")
    _jump(pinned, bot, timedelta(hours=1))
    old = bot.generation
    bot.relapse()
    with pytest.raises(Fenced):
        schedule_due(mesh.mesh.store, Actor("bot", old), clock.now().timestamp(), "t")
    assert _tick(mesh, bot) == ["A-1@2026-10-08T10:00:00Z"]
