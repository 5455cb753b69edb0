"""connections.list|invoke and operations.get behind the catalogue, with the store's ledger,
on both backends. The connection is the real file tracker in a temp folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mesh.meshtest import Harness

from ax_mesh import authenticate, call_tool
from ax_mesh.connections.base import LostResponse
from ax_mesh.connections.file_tracker import FileTracker
from ax_mesh.mesh import add_connection, grant
from ax_mesh.models import Manifest
from libcommon.errors import Fenced, UsageError


@pytest.fixture
def tracker(mesh: Harness, tmp_path: Path) -> Path:
    folder = tmp_path / "tracker"
    add_connection(mesh.mesh, "tracker", "file-tracker", {"path": str(folder)})
    return folder


def _tasks(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "tasks").glob("*.json"))]


def test_granted_operations_only_and_keys_replay(mesh: Harness, tracker: Path) -> None:
    eng = mesh.seat("eng", connections={"tracker": ["task.write", "task.read"]})
    listed = eng.call("connections.list")["connections"]
    assert [(c["connection"], [o["name"] for o in c["operations"]]) for c in listed] == [
        ("tracker", ["task.read", "task.write"])
    ]
    made = eng.call(
        "connections.invoke",
        connection="tracker",
        operation="task.write",
        params={"title": "Onboarding"},
        idempotency_key="k1",
    )
    assert (made["status"], made["receipt"], made["replayed"]) == ("succeeded", "TRK-1", False)
    assert made["id"] == "O-1" and made["confirmed_by"] == "response"
    again = eng.call(
        "connections.invoke",
        connection="tracker",
        operation="task.write",
        params={"title": "Onboarding"},
        idempotency_key="k1",
    )
    assert (again["id"], again["replayed"]) == ("O-1", True)
    assert len(_tasks(tracker)) == 1
    conflict = eng.refused(
        "connections.invoke",
        "conflict",
        connection="tracker",
        operation="task.write",
        params={"title": "Other"},
        idempotency_key="k1",
    )
    assert conflict.details["operation_id"] == "O-1"
    assert eng.call("operations.get", id="O-1")["receipt"] == "TRK-1"
    # Not granted, and not there, read the same; nothing is recorded or sent.
    a = eng.refused(
        "connections.invoke", "forbidden", connection="tracker", operation="comment.write"
    )
    b = eng.refused("connections.invoke", "forbidden", connection="linear", operation="task.read")
    assert "not granted" in a.message and "not granted" in b.message
    with pytest.raises(UsageError) as caught:
        eng.call(
            "connections.invoke", connection="tracker", operation="task.write", params={"x": 1}
        )
    assert "'params'" in caught.value.message and "x" in caught.value.message
    assert mesh.mesh.store.ledger_get("O-2") is None
    # Another seat's operation is not found; a seat with no connection has none of the tools.
    other = mesh.seat("other", connections={"tracker": ["task.read"]})
    other.refused("operations.get", "not_found", id="O-1")
    plain = mesh.seat("plain")
    with pytest.raises(UsageError):
        plain.call("connections.list")


def test_a_lost_response_is_read_back_or_unknown_and_never_repeated(
    mesh: Harness, tracker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = mesh.seat("eng", connections={"tracker": ["task.write"]})
    real = FileTracker.invoke

    def applied_then_lost(self: FileTracker, operation: str, params: Any, call: Any) -> Any:
        real(self, operation, params, call)
        raise LostResponse("the connection dropped")

    monkeypatch.setattr(FileTracker, "invoke", applied_then_lost)
    found = eng.call(
        "connections.invoke", connection="tracker", operation="task.write", params={"title": "A"}
    )
    assert (found["status"], found["confirmed_by"], found["receipt"]) == (
        "succeeded",
        "read_back",
        "TRK-1",
    )

    def lost_before(self: FileTracker, operation: str, params: Any, call: Any) -> Any:
        raise LostResponse("timed out")

    monkeypatch.setattr(FileTracker, "invoke", lost_before)
    unknown = eng.call(
        "connections.invoke",
        connection="tracker",
        operation="task.write",
        params={"title": "B"},
        idempotency_key="b",
    )
    assert unknown["status"] == "unknown"
    monkeypatch.setattr(FileTracker, "invoke", real)
    refused = eng.refused(
        "connections.invoke",
        "unknown_outcome",
        connection="tracker",
        operation="task.write",
        params={"title": "B"},
        idempotency_key="b",
    )
    assert refused.details["operation_id"] == unknown["id"]
    assert [t["title"] for t in _tasks(tracker)] == ["A"]
    assert [op.id for op in mesh.mesh.store.ledger_unsettled("eng")] == [unknown["id"]]


def test_a_fenced_seat_records_and_sends_nothing(mesh: Harness, tracker: Path) -> None:
    eng = mesh.seat("eng", connections={"tracker": ["task.write"]})
    caller = authenticate(mesh.mesh, eng.token, eng.generation, "eng")
    eng.relapse()  # a newer runner took the seat after this call was authenticated
    with pytest.raises(Fenced):
        call_tool(
            mesh.mesh,
            caller,
            "connections.invoke",
            {"connection": "tracker", "operation": "task.write", "params": {"title": "x"}},
        )
    assert mesh.mesh.store.ledger_get("O-1") is None and _tasks(tracker) == []


def test_a_manifest_names_only_configured_connections_and_operations(
    mesh: Harness, tracker: Path
) -> None:
    mesh.seat("eng")
    for connections, words in (
        ({"trakcer": ["task.write"]}, "connection 'trakcer' does not exist"),
        ({"tracker": ["project.create"]}, "no operation 'project.create'"),
    ):
        with pytest.raises(UsageError) as caught:
            grant(mesh.mesh, "eng", Manifest.model_validate({"connections": connections}))
        assert words in caught.value.message
    with pytest.raises(UsageError) as again:
        add_connection(mesh.mesh, "tracker", "file-tracker", {"path": "/tmp/x"})
    assert "already exists" in again.value.message
    for kind, config, words in (
        ("linear", {}, "not a connection kind"),
        ("file-tracker", {"path": "relative"}, "absolute"),
    ):
        with pytest.raises(UsageError) as bad:
            add_connection(mesh.mesh, "t2", kind, config)
        assert words in bad.value.message
