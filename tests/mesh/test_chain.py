"""End to end: a /delegate chain of four seats (representative → lead → engineer →
reviewer) on real runners, real ax-agent turns with the mesh-fake provider, the seats'
mesh tools decided by ax-policy and the mesh, and a real store on both backends. The
reviewer's result comes back to the person who asked, through every seat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mesh.meshtest import Harness
from mesh.runnertest import Runners


@pytest.fixture
def runners(backend_env: dict[str, str], tmp_path: Path) -> Iterator[Runners]:
    made = Runners(backend_env, tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.mark.slow
def test_a_delegate_chain_reports_the_end_result_back(mesh: Harness, runners: Runners) -> None:
    person = mesh.seat("person", message=("rep",))
    mesh.seat("rep", leased=False, message=("lead",))
    mesh.seat("lead", leased=False, message=("eng",))
    mesh.seat("eng", leased=False, message=("reviewer",))
    mesh.seat("reviewer", leased=False, write=("team",))
    write = {"store": "team", "path": "review.md", "text": "LGTM", "expected_revision": 0}
    asked = person.call(
        "messages.send",
        to="rep",
        body="/delegate lead /task\n/delegate eng /task\n/delegate reviewer /task\n"
        f"/tool memory.write {json.dumps(write)}\n/claim reviewed",
    )
    # Down the chain, then each reply back up it: one --once runner per turn.
    for seat in ("rep", "lead", "eng", "reviewer", "eng", "lead", "rep"):
        code, lines, err = runners.once(seat)
        assert code == 0, err
        outcomes = [line["outcome"] for line in lines if line["event"] == "turn.ended"]
        assert outcomes == ["done"], (seat, lines, err)
    history = person.call("messages.history", conversation_id=asked["conversation_id"])
    last = history["messages"][-1]
    assert (last["from"], last["to"], last["reply_to"]) == ("rep", "person", asked["message_id"])
    assert "claim: reviewed" in last["body"] and '"path":"review.md"' in last["body"]
    # The write is the reviewer's, with the reviewer's authority: the mesh assigned it.
    record = mesh.mesh.store.get_record("team", path="review.md")
    assert record is not None and (record.author, record.text) == ("reviewer", "LGTM")
    # Every seat's turns stayed in its own session (the second turn resumed the first).
    for seat in ("rep", "lead", "eng"):
        remembered = Path(runners.env["AX_STATE_DIR"]) / "mesh" / "seats" / f"{seat}.session.json"
        assert json.loads(remembered.read_text())["session"]


def test_a_seat_sees_only_its_tools_and_the_mesh_refuses_what_its_manifest_does_not_grant(
    mesh: Harness, runners: Runners
) -> None:
    person = mesh.seat("person", message=("eng",))
    mesh.seat("eng", leased=False, read=("team",))
    # eng may read team but not write it, and has no route: the mesh refuses both, by code.
    person.call(
        "messages.send",
        to="eng",
        body='/tool memory.write {"store": "team", "path": "x.md", "text": "no"}\n'
        '/tool messages.send {"to": "person", "body": "hi"}\n/report',
    )
    code, _lines, err = runners.once("eng")
    assert code == 0, err
    reply = person.call("messages.history", limit=5)
    conversation = reply["conversations"][0]["conversation_id"]
    body = person.call("messages.history", conversation_id=conversation)["messages"][-1]["body"]
    assert "error from mesh_memory_write" in body and '"code":"forbidden"' in body
    # messages.send is not among eng's tools at all (it has no route): ax-agent says so.
    assert "error from mesh_messages_send" in body
    assert mesh.mesh.store.get_record("team", path="x.md") is None
