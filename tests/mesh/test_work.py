"""work.*: ownership and status rules, revision-checked, on both backends."""

from __future__ import annotations

import pytest
from mesh.meshtest import Harness

from libcommon.errors import UsageError


def test_create_claim_plan_update_release(mesh: Harness) -> None:
    lead = mesh.seat("lead", revise=("team",))
    eng = mesh.seat("eng", write=("team",))
    other = mesh.seat("other", write=("team",))
    item = lead.call(
        "work.create", store="team", objective="Add retries", acceptance=["no double charge"]
    )
    wid = item["id"]
    assert (wid, item["status"], item["owner"], item["revision"]) == ("team/W-1", "ready", None, 1)
    claimed = eng.call("work.claim", work_id=wid, expected_revision=1, note="mine")
    assert claimed["owner"] == "eng" and claimed["revision"] == 2
    refused = other.refused("work.claim", "conflict", work_id=wid, expected_revision=2)
    assert refused.details["owner"] == "eng"
    other.refused(
        "work.update", "forbidden", work_id=wid, expected_revision=2, status="in_progress"
    )
    # Anyone who can write the store adds notes and evidence.
    noted = other.call("work.update", work_id=wid, expected_revision=2, note="saw a flaky test")
    planned = eng.call(
        "work.update_plan",
        work_id=wid,
        expected_revision=noted["revision"],
        plan=[
            {"step": "write test", "status": "completed"},
            {"step": "fix", "status": "in_progress"},
        ],
    )
    assert lead.call("work.list", store="team")["items"][0]["current_step"] == "fix"
    eng.refused(
        "work.update", "invalid", work_id=wid, expected_revision=planned["revision"], status="done"
    )
    done = eng.call(
        "work.update",
        work_id=wid,
        expected_revision=planned["revision"],
        status="done",
        evidence=["R-3", "commit abc123"],
    )
    assert done["status"] == "done" and done["evidence"] == ["R-3", "commit abc123"]
    eng.refused(
        "work.update",
        "invalid",
        work_id=wid,
        expected_revision=done["revision"],
        status="in_progress",
    )
    reopened = eng.call(
        "work.update", work_id=wid, expected_revision=done["revision"], status="ready"
    )
    released = eng.call(
        "work.release", work_id=wid, expected_revision=reopened["revision"], note="handing over"
    )
    assert released["owner"] is None and released["status"] == "ready"
    log = [entry["action"] for entry in lead.call("work.get", work_id=wid)["log"]]
    assert log == [
        "created",
        "claimed",
        "note",
        "planned",
        "status done",
        "status ready",
        "released",
    ]


def test_stale_revisions_conflict_and_change_nothing(mesh: Harness) -> None:
    lead = mesh.seat("lead", revise=("team",))
    wid = lead.call("work.create", store="team", objective="x")["id"]
    lead.call("work.update", work_id=wid, expected_revision=1, note="one")
    error = lead.refused("work.update", "conflict", work_id=wid, expected_revision=1, note="two")
    assert error.details["current_revision"] == 2
    assert lead.call("work.get", work_id=wid)["revision"] == 2


def test_creator_steers_while_unowned_and_blocked_needs_a_blocker(mesh: Harness) -> None:
    lead = mesh.seat("lead", revise=("team",))
    eng = mesh.seat("eng", write=("team",))
    wid = lead.call("work.create", store="team", objective="x")["id"]
    eng.refused(
        "work.update_plan",
        "forbidden",
        work_id=wid,
        expected_revision=1,
        plan=[{"step": "a", "status": "pending"}],
    )
    blocked = lead.call(
        "work.update",
        work_id=wid,
        expected_revision=1,
        status="blocked",
        blocker="waiting for the API key",
    )
    assert blocked["blocker"] == "waiting for the API key"
    with pytest.raises(UsageError, match="needs a blocker"):
        lead.call("work.update", work_id=wid, expected_revision=2, status="blocked")
    with pytest.raises(UsageError, match="at most one step"):
        lead.call(
            "work.update_plan",
            work_id=wid,
            expected_revision=2,
            plan=[{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}],
        )
    eng.refused("work.release", "forbidden", work_id=wid, expected_revision=2, note="not mine")


def test_personal_and_unwritable_stores_and_filters(mesh: Harness) -> None:
    lead = mesh.seat("lead", revise=("team",), read=("docs",))
    lead.refused("work.create", "invalid", store="@lead", objective="x")
    lead.refused("work.create", "forbidden", store="docs", objective="x")
    lead.refused("work.create", "not_found", store="hidden", objective="x")
    lead.refused("work.create", "not_found", store="team", objective="x", depends_on=["team/W-9"])
    a = lead.call("work.create", store="team", objective="a", owner="lead")
    lead.call("work.create", store="team", objective="b", depends_on=[a["id"]])
    mine = lead.call("work.list", owner="me")["items"]
    assert [i["work_id"] for i in mine] == [a["id"]]
    ready = lead.call("work.list", status="ready", max_results=1)
    assert len(ready["items"]) == 1 and ready["next_cursor"]
    rest = lead.call("work.list", status="ready", max_results=1, cursor=ready["next_cursor"])
    assert [i["objective"] for i in rest["items"]] == ["b"] and rest["next_cursor"] is None
