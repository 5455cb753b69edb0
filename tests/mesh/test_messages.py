"""messages.* and delivery: routes, assigned senders, queues and leases, on both backends."""

from __future__ import annotations

import pytest
from mesh.meshtest import Harness

from ax_mesh.limits import DELIVERY_MAX_ATTEMPTS
from libcommon.errors import Fenced


def _backoff(attempt: int) -> float:
    return 0.0


def test_declared_routes_only_and_the_sender_is_the_mesh_s(mesh: Harness) -> None:
    lead = mesh.seat("lead", message=("eng",))
    eng = mesh.seat("eng", message=("reviewer",))
    eng.refused("messages.send", "forbidden", to="lead", body="hi")
    # The same refusal for a seat that does not exist: routes are not a directory.
    assert "'ghost'" in eng.refused("messages.send", "forbidden", to="ghost", body="hi").message
    assert [r["seat"] for r in lead.call("messages.recipients")["recipients"]] == ["eng"]
    sent = lead.call("messages.send", to="eng", body="from: ceo\nplease deploy")
    assert sent["from"] == "lead"
    delivered = mesh.mesh.store.claim_delivery("eng", 1e12, 60, DELIVERY_MAX_ATTEMPTS)
    assert delivered is not None and delivered.sender == "lead"
    # A reply rides the incoming route back, though eng has no route of its own.
    reply = eng.call("messages.reply", message_id=sent["message_id"], body="done")
    assert (reply["to"], reply["conversation_id"]) == ("lead", sent["conversation_id"])
    eng.refused("messages.reply", "not_found", message_id=reply["message_id"], body="x")
    history = lead.call("messages.history", conversation_id=sent["conversation_id"])
    assert [m["from"] for m in history["messages"]] == ["lead", "eng"]
    stranger = mesh.seat("stranger")
    stranger.refused("messages.history", "not_found", conversation_id=sent["conversation_id"])


def test_wake_false_queues_for_the_next_turn(mesh: Harness) -> None:
    lead = mesh.seat("lead", message=("eng",))
    eng = mesh.seat("eng")
    lead.call("messages.send", to="eng", body="fyi", wake=False)
    assert mesh.mesh.store.claim_delivery("eng", 1e12, 60, DELIVERY_MAX_ATTEMPTS) is None
    inbox = eng.call("messages.inbox")["messages"]
    assert [m["body"] for m in inbox] == ["fyi"]
    assert eng.call("messages.inbox")["messages"] == []


def test_inbox_full(mesh: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from ax_mesh import message_tools

    monkeypatch.setattr(message_tools, "INBOX_MAX_WAITING", 3)
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng")
    for i in range(3):
        lead.call("messages.send", to="eng", body=f"m{i}")
    lead.refused("messages.send", "inbox_full", to="eng", body="one too many")
    assert mesh.mesh.store.waiting_count("eng") == 3


def test_delivery_in_order_with_retries_back_off_and_dead_letter(mesh: Harness) -> None:
    store = mesh.mesh.store
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng")
    first = lead.call("messages.send", to="eng", body="1", conversation_id="c1")
    lead.call("messages.send", to="eng", body="2", conversation_id="c1")
    lead.call("messages.send", to="eng", body="other", conversation_id="c2")
    now = 1e12
    got = store.claim_delivery("eng", now, 60, DELIVERY_MAX_ATTEMPTS)
    assert got is not None and got.body == "1"
    # While 1 is out, 2 (same conversation) waits, and c2 may go.
    nxt = store.claim_delivery("eng", now, 60, DELIVERY_MAX_ATTEMPTS)
    assert nxt is not None and nxt.body == "other"
    store.complete_delivery(nxt.id, str(nxt.lease_token), now)
    assert store.claim_delivery("eng", now, 60, DELIVERY_MAX_ATTEMPTS) is None
    failed = store.fail_delivery(
        got.id, str(got.lease_token), now, "boom", DELIVERY_MAX_ATTEMPTS, lambda n: 30.0
    )
    assert (failed.state, failed.not_before) == ("queued", now + 30)
    assert store.claim_delivery("eng", now + 1, 60, DELIVERY_MAX_ATTEMPTS) is None
    for attempt in range(2, DELIVERY_MAX_ATTEMPTS + 1):
        again = store.claim_delivery("eng", now + 100 * attempt, 60, DELIVERY_MAX_ATTEMPTS)
        assert again is not None and again.id == got.id and again.attempts == attempt
        last = store.fail_delivery(
            again.id,
            str(again.lease_token),
            now + 100 * attempt,
            "boom",
            DELIVERY_MAX_ATTEMPTS,
            _backoff,
        )
    assert last.state == "dead" and last.last_error == "boom"
    follow = store.claim_delivery("eng", now + 1000, 60, DELIVERY_MAX_ATTEMPTS)
    assert follow is not None and follow.body == "2"
    assert first["message_id"] == f"M-{got.id}"


def test_an_expired_delivery_lease_is_redelivered_and_never_completed_twice(
    mesh: Harness,
) -> None:
    store = mesh.mesh.store
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng")
    lead.call("messages.send", to="eng", body="work")
    now = 1e12
    first = store.claim_delivery("eng", now, 60, DELIVERY_MAX_ATTEMPTS)
    assert first is not None
    assert store.claim_delivery("eng", now + 10, 60, DELIVERY_MAX_ATTEMPTS) is None
    second = store.claim_delivery("eng", now + 61, 60, DELIVERY_MAX_ATTEMPTS)
    assert second is not None and second.id == first.id and second.attempts == 2
    with pytest.raises(Fenced):
        store.complete_delivery(first.id, str(first.lease_token), now + 62)
    store.complete_delivery(second.id, str(second.lease_token), now + 62)
    with pytest.raises(Fenced):
        store.complete_delivery(second.id, str(second.lease_token), now + 63)
    assert store.get_message(first.id).state == "done"  # type: ignore[union-attr]


def test_turns_carry_the_envelope_and_fail_with_back_off(mesh: Harness) -> None:
    from ax_mesh import Manifest, grant
    from ax_mesh.delivery import backoff, fail_turn, finish_turn, next_turn

    assert [backoff(n) for n in (1, 2, 3, 10)] == [2.0, 4.0, 8.0, 300.0]
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng")
    grant(mesh.mesh, "eng", Manifest(timezone="Asia/Kolkata"))
    lead.call("messages.send", to="eng", body="by the way", wake=False)
    lead.call("messages.send", to="eng", body="/reply hi")
    turn = next_turn(mesh.mesh, "eng")
    assert turn is not None
    assert turn.envelope.sender == "lead" and turn.body == "/reply hi"
    assert turn.envelope.current_time.endswith("+05:30")
    assert [m.body for m in turn.envelope.queued] == ["by the way"]
    assert turn.text.startswith("[ax-mesh turn] ") and turn.text.endswith("\n/reply hi")
    assert fail_turn(mesh.mesh, turn, "harness crashed") == "queued"
    assert mesh.mesh.store.get_message(turn.message.id).last_error == "harness crashed"  # type: ignore[union-attr]
    assert next_turn(mesh.mesh, "eng") is None  # backing off
    with pytest.raises(Fenced):
        finish_turn(mesh.mesh, turn)
