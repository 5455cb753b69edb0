"""Tokens, execution leases and fencing, on both backends."""

from __future__ import annotations

import pytest
from mesh.meshtest import Harness

from ax_mesh import ToolError, acquire_lease, authenticate, call_tool
from libcommon.errors import Fenced


def test_a_token_is_its_seat_s_alone(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    b = mesh.seat("b", revise=("team",))
    with pytest.raises(ToolError) as caught:
        authenticate(mesh.mesh, a.token, b.generation, claimed_seat="b")
    assert caught.value.code == "unauthenticated"
    with pytest.raises(ToolError):
        authenticate(mesh.mesh, "axm_" + "0" * 64, 1)
    with pytest.raises(ToolError):
        authenticate(mesh.mesh, "", 1)
    # The token decides who writes: the author is the token's seat, whatever is claimed.
    caller = authenticate(mesh.mesh, a.token, a.generation)
    made = call_tool(mesh.mesh, caller, "memory.write", {"store": "team", "path": "x", "text": "y"})
    assert made["author"] == "a"


def test_a_fenced_lease_cannot_read_or_write(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    a.call("memory.write", store="team", path="x", text="v1")
    old = a.generation
    new = acquire_lease(mesh.mesh, "a", "test", 600).generation
    assert new == old + 1
    with pytest.raises(Fenced):
        authenticate(mesh.mesh, a.token, old)
    # Fencing holds inside the write transaction too, not only at authentication.
    caller = authenticate(mesh.mesh, a.token, new)
    acquire_lease(mesh.mesh, "a", "test", 600)
    with pytest.raises(Fenced):
        call_tool(mesh.mesh, caller, "memory.write", {"store": "team", "path": "x", "text": "v2"})
    a.relapse()
    assert a.call("memory.read", store="team", path="x")["text"] == "v1"


def test_a_live_lease_of_another_holder_is_not_taken(mesh: Harness) -> None:
    from ax_mesh.store import Actor

    a = mesh.seat("a")
    mesh.mesh.store.release_lease(Actor("a", a.generation))
    acquire_lease(mesh.mesh, "a", "runner-1", 600)
    with pytest.raises(Fenced, match="runner-1"):
        acquire_lease(mesh.mesh, "a", "runner-2", 600)


def test_an_expired_lease_is_fenced(mesh: Harness) -> None:
    from ax_mesh.store import Actor

    a = mesh.seat("a")
    with pytest.raises(Fenced, match="expired"):
        mesh.mesh.store.check_lease(Actor("a", a.generation), 1e12)


def test_a_retired_seat_is_fenced(mesh: Harness) -> None:
    a = mesh.seat("a")
    mesh.mesh.store.retire_seat("a")
    with pytest.raises(Fenced):
        a.call("self")
    with pytest.raises(Fenced):
        acquire_lease(mesh.mesh, "a", "test", 60)


def test_each_seat_sees_only_the_tools_it_can_use(mesh: Harness) -> None:
    from ax_mesh import describe_tools
    from libcommon.errors import UsageError

    lonely = mesh.seat("lonely")
    talker = mesh.seat("talker", message=("lonely",))
    names = {t["name"] for t in describe_tools(authenticate(mesh.mesh, lonely.token, 1))}
    assert "messages.send" not in names and "memory.search" in names
    talked = {t["name"] for t in describe_tools(authenticate(mesh.mesh, talker.token, 1))}
    assert "messages.send" in talked
    with pytest.raises(UsageError, match="no tool named"):
        lonely.call("messages.send", to="talker", body="x")


def test_status_covers_only_the_seat_and_whom_it_talks_to(mesh: Harness) -> None:
    lead = mesh.seat("lead", message=("eng",))
    mesh.seat("eng")
    mesh.seat("hidden")
    seats = lead.call("status", seats=["lead", "eng", "hidden"])["seats"]
    assert [(s["seat"], s["state"]) for s in seats] == [
        ("lead", "running"),
        ("eng", "running"),
        ("hidden", "unknown"),
    ]
    handoff = lead.call("handoff.update", objective="ship", unresolved=["flaky test"])
    assert lead.call("self")["handoff"] == handoff["handoff"]
