"""The runner, ``ax-mesh run SEAT``: real runners, real ax-agent turns (the mesh-fake
provider), a real store on both backends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mesh.meshtest import Harness
from mesh.runnertest import Runners

from ax_mesh.store import Actor


@pytest.fixture
def runners(backend_env: dict[str, str], tmp_path: Path) -> Iterator[Runners]:
    made = Runners(backend_env, tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_once_takes_each_due_turn_in_the_seat_s_own_session(
    mesh: Harness, runners: Runners
) -> None:
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng", leased=False)
    first = lead.call("messages.send", to="eng", body="/claim it is done")
    lead.call("messages.send", to="eng", body="/fail the build broke")
    code, lines, err = runners.once("eng")
    assert code == 0, err
    ended = [line for line in lines if line["event"] == "turn.ended"]
    assert [(e["turn"], e["outcome"]) for e in ended] == [
        (first["message_id"], "done"),
        (f"M-{int(first['message_id'][2:]) + 1}", "retry"),
    ]
    # Both turns ran in the one session the seat's first turn started.
    assert ended[0]["session"] and ended[0]["session"] == ended[1]["session"]
    store = mesh.mesh.store
    done = store.get_message(int(first["message_id"][2:]))
    failed = store.get_message(done.id + 1)  # type: ignore[union-attr]
    assert done is not None and done.state == "done"
    assert failed is not None and failed.state == "queued" and failed.attempts == 1
    assert "/fail: the build broke" in (failed.last_error or "")
    # The runner gave its lease up: the next one starts at once.
    code, lines, err = runners.once("eng")
    assert code == 0, err
    assert [line["event"] for line in lines] == ["started"]  # the failed one is backing off


def test_a_due_automation_is_a_turn(mesh: Harness, runners: Runners) -> None:
    bot = mesh.seat("bot")
    made = bot.call("automations.create", name="nudge", instruction="/claim nudged", in_="1s")
    mesh.mesh.store.release_lease(Actor("bot", bot.generation))  # the runner takes the seat
    time.sleep(1.2)
    code, lines, err = runners.once("bot")
    assert code == 0, err
    started = [line for line in lines if line["event"] == "turn.started"]
    assert [(s["kind"], s["turn"].split("@")[0]) for s in started] == [("automation", made["id"])]
    assert [line["outcome"] for line in lines if line["event"] == "turn.ended"] == ["done"]
    bot.relapse()
    view = bot.call("automations.list", include_completed=True)["automations"][0]
    assert (view["status"], view["last_run"]["state"]) == ("completed", "done")


def test_a_waiting_runner_wakes_for_a_message(mesh: Harness, runners: Runners) -> None:
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng", leased=False)
    runner = runners.start("eng")
    runner.expect("started")
    time.sleep(1.0)  # it is waiting now: LISTEN on PostgreSQL, polling on SQLite
    sent = time.monotonic()
    lead.call("messages.send", to="eng", body="/claim quick")
    runner.expect("turn.started", timeout=20)
    # Well inside the PostgreSQL fallback (5 s): the NOTIFY woke it, or SQLite's poll did.
    assert time.monotonic() - sent < 3.0
    runner.expect("turn.ended", outcome="done", timeout=60)
    assert runner.stop() == 0


@pytest.mark.slow
def test_a_runner_killed_mid_turn_loses_nothing_and_completes_nothing_twice(
    mesh: Harness, runners: Runners
) -> None:
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng", leased=False)
    sent = lead.call("messages.send", to="eng", body="/sleep 2s\n/claim finished")
    number = int(sent["message_id"][2:])
    first = runners.start("eng", "--delivery-lease", "8", "--ttl", "2")
    first.expect("turn.started", turn=sent["message_id"], attempt=1)
    time.sleep(0.5)
    first.kill_group()  # the runner and its ax-agent turn, mid-turn
    message = mesh.mesh.store.get_message(number)
    assert message is not None and message.state == "leased"
    # Its execution lease is still live: a second runner is refused (exit 4) ...
    code, _lines, err = runners.once("eng")
    assert code == 4, err
    time.sleep(2.5)
    # ... until it expires; then the message comes back once its delivery lease has.
    second = runners.start("eng", "--delivery-lease", "8", "--ttl", "2")
    second.expect("turn.started", turn=sent["message_id"], attempt=2, timeout=30)
    second.expect("turn.ended", turn=sent["message_id"], outcome="done", timeout=60)
    assert second.stop() == 0
    message = mesh.mesh.store.get_message(number)
    assert message is not None and (message.state, message.attempts) == ("done", 2)


@pytest.mark.slow
def test_a_restarted_runner_settles_or_reports_what_a_killed_one_left_unsettled(
    mesh: Harness, runners: Runners, tmp_path: Path
) -> None:
    from ax_mesh.connections.base import Call, marker_for
    from ax_mesh.connections.file_tracker import FileTracker
    from ax_mesh.connections.gateway import request_digest
    from ax_mesh.mesh import add_connection, epoch

    folder = tmp_path / "tracker"
    add_connection(mesh.mesh, "tracker", "file-tracker", {"path": str(folder)})
    lead = mesh.seat("lead", message=("eng",))
    eng = mesh.seat("eng", message=("lead",), connections={"tracker": ["task.write"]})
    store, actor = mesh.mesh.store, Actor("eng", eng.generation)
    now = epoch()

    def begin(title: str) -> str:
        params = {"title": title}
        record, _ = store.ledger_begin(
            actor,
            now,
            "tracker",
            "task.write",
            params,
            request_digest("task.write", params),
            title,
            "ts",
            now - 1,
        )
        return record.id

    # What the killed runner's turn left: a call that reached the tracker and was never
    # recorded (pending, its caller's claim over), and one whose outcome is unknown.
    landed = begin("landed")
    tracker = FileTracker("tracker", folder)
    spec = tracker.operations()["task.write"]
    tracker.invoke(
        "task.write",
        spec.params.model_validate({"title": "landed"}),
        Call("eng", landed, marker_for(landed)),
    )
    lost = begin("lost")
    store.ledger_finish(lost, "unknown", None, None, "the response was lost", None, "ts")
    store.release_lease(actor)
    killed = runners.start("eng", "--ttl", "2")
    killed.expect("started")
    killed.kill_group()
    time.sleep(2.5)  # the killed runner's execution lease runs out

    second = runners.start("eng", "--ttl", "2")
    recovered = second.expect("operations.recovered", timeout=30)
    assert recovered["unsettled"] == [{"id": lost, "status": "unknown"}]
    settled = store.ledger_get(landed)
    assert settled is not None and settled.status == "succeeded"
    assert settled.confirmed_by == "read_back"
    assert len(list((folder / "tasks").glob("*.json"))) == 1  # read back, never sent again
    # The next turn's envelope carries what is still unsettled; the fake harness says so.
    lead.call("messages.send", to="eng", body="/report")
    second.expect("turn.ended", outcome="done", timeout=60)
    with store.read() as tx:  # type: ignore[attr-defined]
        replies = [body for (body,) in tx.all("SELECT body FROM messages WHERE recipient = 'lead'")]
    assert any(
        f"unsettled operation {lost} (tracker task.write): unknown" in body for body in replies
    ), replies
    assert second.stop() == 0
