"""Connections and the operation ledger: the gateway, the offline file tracker, lost responses.

The ledger here is tests/mesh/memledger.py (the store implements the real one); the
tracker, its files and the processes killed mid-call are real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mesh.memledger import MemoryLedger

from ax_mesh.connections import KINDS
from ax_mesh.connections.base import Call, LostResponse, Params, Receipt
from ax_mesh.connections.file_tracker import FileTracker, TaskRead
from ax_mesh.connections.gateway import PENDING_LEASE_S, OperationError, get, invoke, recover
from libcommon.errors import CorruptStore, UsageError

ALL = ("task.write", "task.read", "comment.write", "comment.read")
NOW = 1_800_000_000.0


def call(
    ledger: MemoryLedger,
    tracker: Any,
    operation: str,
    params: Any,
    key: str | None = None,
    *,
    seat: str = "eng",
    now: float = NOW,
    granted: tuple[str, ...] = ALL,
) -> dict[str, Any]:
    return invoke(
        ledger,
        tracker,
        seat=seat,
        granted=granted,
        operation=operation,
        params=params,
        idempotency_key=key,
        now=now,
        ts="2026-01-01T00:00:00.000Z",
    )


@pytest.fixture
def tracker(tmp_path: Path) -> FileTracker:
    return FileTracker("tracker", tmp_path / "tracker")


def tasks_in(tracker: FileTracker) -> list[dict[str, Any]]:
    folder = tracker.root / "tasks"
    return (
        [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        if folder.exists()
        else []
    )


def test_a_create_succeeds_with_a_receipt_and_carries_its_marker(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    done = call(
        ledger, tracker, "task.write", {"title": "Onboarding", "description": "steps"}, "k1"
    )
    assert done["status"] == "succeeded" and done["receipt"] == "TRK-1"
    assert done["confirmed_by"] == "response" and not done["replayed"]
    (task,) = tasks_in(tracker)
    assert task["description"] == f"steps\n\nax-mesh-op:{done['id']}"
    assert task["created_by"] == "eng"


def test_a_reused_key_returns_the_recorded_operation_instead_of_repeating_it(
    tracker: FileTracker,
) -> None:
    ledger = MemoryLedger()
    first = call(ledger, tracker, "task.write", {"title": "A"}, "k1")
    again = call(ledger, tracker, "task.write", {"title": "A"}, "k1")
    assert again["replayed"] and again["id"] == first["id"] and again["receipt"] == "TRK-1"
    assert len(tasks_in(tracker)) == 1
    with pytest.raises(OperationError) as caught:
        call(ledger, tracker, "task.write", {"title": "B"}, "k1")
    assert caught.value.code == "conflict" and len(tasks_in(tracker)) == 1
    # Keys belong to a seat: another seat's k1 is its own operation.
    other = call(ledger, tracker, "task.write", {"title": "A"}, "k1", seat="lead")
    assert other["id"] != first["id"] and len(tasks_in(tracker)) == 2


def test_an_operation_not_granted_is_refused_before_anything_is_recorded(
    tracker: FileTracker,
) -> None:
    ledger = MemoryLedger()
    for operation, granted in [("task.write", ("task.read",)), ("project.create", ALL)]:
        with pytest.raises(OperationError) as caught:
            call(ledger, tracker, operation, {"title": "A"}, granted=granted)
        assert caught.value.code == "forbidden"
    assert ledger.records == {} and tasks_in(tracker) == []


@pytest.mark.parametrize(
    ("operation", "params", "named"),
    [
        ("task.write", {"description": "no title"}, "needs a title"),
        ("task.write", {"title": "x", "priority": 9}, "'priority'"),
        ("task.write", {"title": "x", "owner": "me"}, "'owner'"),
        ("task.write", {"id": "TRK-1"}, "at least one field"),
        ("task.read", {"id": "TRK-1", "query": "x"}, "exactly one of id, query or project_id"),
        ("task.read", {}, "exactly one of id, query or project_id"),
        ("comment.read", {"issue_id": "TRK-1", "first": 500}, "'first'"),
        ("comment.write", {"issue_id": "42", "body": "x"}, "'issue_id'"),
        ("task.write", ["title"], "'params'"),
    ],
)
def test_bad_params_are_refused_by_name_and_nothing_is_recorded(
    tracker: FileTracker, operation: str, params: Any, named: str
) -> None:
    ledger = MemoryLedger()
    with pytest.raises(UsageError) as caught:
        call(ledger, tracker, operation, params)
    assert named in caught.value.message
    assert ledger.records == {}


def test_a_rejected_call_is_failed_and_its_key_replays_the_failure(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    failed = call(ledger, tracker, "comment.write", {"issue_id": "TRK-7", "body": "hi"}, "c1")
    assert failed["status"] == "failed" and "no task TRK-7" in failed["error"]
    assert call(ledger, tracker, "comment.write", {"issue_id": "TRK-7", "body": "hi"}, "c1")[
        "replayed"
    ]


def test_comments_are_read_back_with_author_and_time(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    call(ledger, tracker, "task.write", {"title": "A", "project_id": "P1"})
    wrote = call(ledger, tracker, "comment.write", {"issue_id": "TRK-1", "body": "looks good"})
    assert wrote["receipt"] == "TRK-1-C1"
    read = call(ledger, tracker, "comment.read", {"issue_id": "TRK-1", "first": 5})
    (comment,) = read["result"]["comments"]
    assert comment["author"] == "eng" and comment["created_at"].endswith("Z")
    assert comment["body"].startswith("looks good\n\nax-mesh-op:")
    by_project = call(ledger, tracker, "task.read", {"project_id": "P1"})
    assert [t["id"] for t in by_project["result"]["tasks"]] == ["TRK-1"]
    by_query = call(ledger, tracker, "task.read", {"query": "a"})
    assert len(by_query["result"]["tasks"]) == 1


# --- lost responses: a tracker process killed between its write and its reply -------------

CHILD = r"""
import json, sys, time
from pathlib import Path
from ax_mesh.connections.base import Call
from ax_mesh.connections.file_tracker import OPERATIONS, FileTracker

root, operation, op_id, when, raw = sys.argv[1:6]
tracker = FileTracker("tracker", Path(root))
params = OPERATIONS[operation].params.model_validate(json.loads(raw))
if when == "before":
    print("about to write", file=sys.stderr, flush=True)
    time.sleep(60)
receipt = tracker.invoke(operation, params, Call("eng", op_id, "ax-mesh-op:" + op_id))
print("written", file=sys.stderr, flush=True)
time.sleep(60)
print(json.dumps({"id": receipt.external_id}), flush=True)
"""


class KilledTracker(FileTracker):
    """The tracker behind a process that is killed mid-call: before or after its write.

    ``invoke`` runs the real write in a child process, waits for it to say where it is,
    and SIGKILLs it before it answers, so the response is lost as a dropped connection
    loses it. ``read_back`` is the real one, over the files the child left."""

    def __init__(self, root: Path, when: str) -> None:
        super().__init__("tracker", root)
        self.when = when
        self.children = 0

    def invoke(self, operation: str, params: Params, call: Call) -> Receipt:
        self.children += 1
        raw = params.model_dump_json(exclude_unset=True)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                str(self.root),
                operation,
                call.operation_id,
                self.when,
                raw,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stderr is not None and child.stdout is not None
        said = child.stderr.readline().strip()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        answer = child.stdout.read()
        child.stdout.close()
        child.stderr.close()
        assert said in ("written", "about to write") and child.returncode == -signal.SIGKILL
        assert answer == ""
        raise LostResponse(f"the tracker process was killed after saying {said!r}")


def test_a_response_lost_after_the_write_is_confirmed_by_its_marker(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    tracker = KilledTracker(tmp_path / "tracker", "after")
    done = call(ledger, tracker, "task.write", {"title": "Onboarding"}, "k1")
    assert done["status"] == "succeeded" and done["confirmed_by"] == "read_back"
    assert done["receipt"] == "TRK-1" and len(tasks_in(tracker)) == 1
    # The key replays it; nothing is sent again.
    assert call(ledger, tracker, "task.write", {"title": "Onboarding"}, "k1")["replayed"]
    assert tracker.children == 1 and len(tasks_in(tracker)) == 1


def test_a_response_lost_before_the_write_is_unknown_and_never_repeated(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    tracker = KilledTracker(tmp_path / "tracker", "before")
    done = call(ledger, tracker, "task.write", {"title": "Onboarding"}, "k1")
    assert done["status"] == "unknown" and done["receipt"] is None
    assert "was not found" in done["error"] and tasks_in(tracker) == []
    with pytest.raises(OperationError) as caught:
        call(ledger, tracker, "task.write", {"title": "Onboarding"}, "k1")
    assert caught.value.code == "unknown_outcome"
    assert f"operations.get {done['id']}" in (caught.value.hint or "")
    assert tracker.children == 1
    assert get(ledger, "eng", done["id"])["status"] == "unknown"
    listed = recover(ledger, {"tracker": tracker}, "eng", NOW, "ts")
    assert [op["id"] for op in listed] == [done["id"]]


def test_a_lost_update_is_confirmed_when_the_task_shows_what_it_set(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    FileTracker("tracker", tmp_path / "tracker").invoke(
        "task.write",
        KINDS["file-tracker"]("t", tmp_path)
        .operations()["task.write"]
        .params.model_validate({"title": "A"}),
        Call("eng", "O-0", "ax-mesh-op:O-0"),
    )
    tracker = KilledTracker(tmp_path / "tracker", "after")
    done = call(ledger, tracker, "task.write", {"id": "TRK-1", "state_id": "done"})
    assert done["status"] == "succeeded" and done["confirmed_by"] == "read_back"
    tracker.when = "before"
    lost = call(ledger, tracker, "task.write", {"id": "TRK-1", "state_id": "review"})
    assert lost["status"] == "unknown"


def test_a_read_whose_response_is_lost_has_failed(tmp_path: Path) -> None:
    ledger = MemoryLedger()

    class Flaky(FileTracker):
        def invoke(self, operation: str, params: Params, call: Call) -> Receipt:
            raise TimeoutError("no answer in 30 s")

    read = call(ledger, Flaky("tracker", tmp_path), "task.read", {"query": "x"})
    assert read["status"] == "failed" and "TimeoutError" in read["error"]


# --- the gateway itself dies mid-call ------------------------------------------------------


class Counting(FileTracker):
    def __init__(self, root: Path) -> None:
        super().__init__("tracker", root)
        self.invoked = 0

    def invoke(self, operation: str, params: Params, call: Call) -> Receipt:
        self.invoked += 1
        return super().invoke(operation, params, call)


def _die_mid_call(ledger: MemoryLedger, tracker: Counting, params: dict[str, Any]) -> str:
    """What a gateway killed between the tracker's answer and ``ledger.finish`` leaves."""
    from ax_mesh.connections.gateway import request_digest

    record, _ = ledger.begin(
        "eng",
        "tracker",
        "task.write",
        params,
        request_digest("task.write", params),
        "k1",
        "ts",
        NOW + PENDING_LEASE_S,
    )
    spec = tracker.operations()["task.write"]
    tracker.invoke(
        "task.write",
        spec.params.model_validate(params),
        Call("eng", record.id, f"ax-mesh-op:{record.id}"),
    )
    return record.id


def test_a_pending_operation_is_in_progress_until_its_lease_ends_then_read_back(
    tmp_path: Path,
) -> None:
    ledger = MemoryLedger()
    tracker = Counting(tmp_path / "tracker")
    op_id = _die_mid_call(ledger, tracker, {"title": "A"})
    with pytest.raises(OperationError) as caught:
        call(ledger, tracker, "task.write", {"title": "A"}, "k1", now=NOW + 1)
    assert caught.value.code == "conflict" and "in progress" in caught.value.message
    later = NOW + PENDING_LEASE_S + 1
    done = call(ledger, tracker, "task.write", {"title": "A"}, "k1", now=later)
    assert done["id"] == op_id and done["status"] == "succeeded"
    assert done["confirmed_by"] == "read_back" and done["replayed"]
    assert tracker.invoked == 1 and len(tasks_in(tracker)) == 1


def test_recovery_settles_a_dead_callers_operations_without_resending(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    tracker = Counting(tmp_path / "tracker")
    op_id = _die_mid_call(ledger, tracker, {"title": "A"})
    assert recover(ledger, {"tracker": tracker}, "eng", NOW + 1, "ts")[0]["status"] == "pending"
    assert recover(ledger, {"tracker": tracker}, "eng", NOW + PENDING_LEASE_S + 1, "ts") == []
    assert get(ledger, "eng", op_id)["status"] == "succeeded" and tracker.invoked == 1


# --- the ledger is the seat's own, and the tracker's files are trusted only when sound -----


def test_operations_get_shows_only_the_seats_own(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    done = call(ledger, tracker, "task.write", {"title": "A"})
    assert get(ledger, "eng", done["id"])["receipt"] == "TRK-1"
    with pytest.raises(OperationError) as caught:
        get(ledger, "lead", done["id"])
    assert caught.value.code == "not_found"


def test_a_marker_quoted_inside_a_text_is_not_its_own(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    plain = FileTracker("tracker", tmp_path / "tracker")
    # A task that merely mentions the marker the next operation (O-2) will carry.
    call(ledger, plain, "task.write", {"title": "note", "description": "see ax-mesh-op:O-2 x"})
    lost = call(ledger, KilledTracker(tmp_path / "tracker", "before"), "task.write", {"title": "B"})
    assert lost["id"] == "O-2" and lost["status"] == "unknown"


def test_a_corrupt_tracker_file_is_an_error_not_an_empty_tracker(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    call(ledger, tracker, "task.write", {"title": "A"})
    (tracker.root / "tasks" / "1.json").write_text("{not json")
    with pytest.raises(CorruptStore):
        tracker.invoke("task.read", TaskRead(id="TRK-1"), Call("eng", "O-9", "m"))
    read = call(ledger, tracker, "task.read", {"id": "TRK-1"})
    assert read["status"] == "failed" and "corrupt store" in read["error"]


def test_a_params_secret_is_redacted_in_the_ledger_and_sent_as_given(tracker: FileTracker) -> None:
    ledger = MemoryLedger()
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    done = call(ledger, tracker, "task.write", {"title": "A", "description": f"token {secret}"})
    assert secret not in json.dumps(ledger.records[done["id"]].params)
    assert secret in tasks_in(tracker)[0]["description"]


def test_the_config_names_a_bad_path() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="absolute"):
        FileTracker.from_config("t", {"kind": "file-tracker", "path": "relative/dir"})
    assert FileTracker.from_config("t", {"kind": "file-tracker", "path": "/srv/t"}).root == Path(
        "/srv/t"
    )
