"""Typed recovery: the catalogue, the classification table, and the repair ledger folded
over hand-written event streams (forged proofs and dismissals included)."""

from __future__ import annotations

from typing import Any

import pytest

from ax_agent.recovery.catalogue import CATALOGUE
from ax_agent.recovery.classify import classify_check, classify_event
from ax_agent.recovery.ledger import dismissal_problem, repair_ledger

CLASSES = [
    "dependency-setup",
    "compile-type",
    "test-assertion",
    "lint-format",
    "runtime-process",
    "integration-conflict",
    "policy-approval",
    "timeout-resource",
    "preview-startup",
    "browser-verification",
    "unknown",
]


def test_the_catalogue_has_one_whole_entry_per_class() -> None:
    assert list(CATALOGUE) == CLASSES
    for name, entry in CATALOGUE.items():
        assert entry.name == name
        for part in (entry.signals, entry.evidence, entry.diagnostics, entry.actions, entry.stop):
            assert part and all(item.strip() for item in part), name
    # Unknown is a real answer: stop and escalate, never retried automatically.
    assert not CATALOGUE["unknown"].auto
    assert {n for n, e in CATALOGUE.items() if e.auto} == {
        "compile-type",
        "test-assertion",
        "lint-format",
    }


def result(
    verdict: str = "failed",
    *signals: str,
    kind: str = "test",
    termination: str | None = "exited",
    reason: str | None = None,
) -> dict[str, Any]:
    return {
        "type": "check.completed",
        "kind": kind,
        "project": ".",
        "scope": ".",
        "recipeId": "python.pytest@.",
        "verdict": verdict,
        "exitCode": (0 if verdict == "passed" else 1) if termination == "exited" else None,
        "termination": termination,
        "reason": reason,
        "signals": [{"name": s, "detail": f"{s}-detail"} for s in signals],
    }


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (result("passed"), None),
        # Non-verdict terminations first: an abort is no defect at all.
        (result("error", "test-failed", termination="aborted"), None),
        (result("error", "test-failed", termination="timeout"), "timeout-resource"),
        (result("error", termination="spawn-error"), "runtime-process"),
        # A missing toolchain next.
        (
            result("unsupported", termination=None, reason="toolchain-unavailable"),
            "dependency-setup",
        ),
        (
            result("unsupported", termination=None, reason="precondition-curable"),
            "dependency-setup",
        ),
        (result("failed", "test-failed", "network-error"), "dependency-setup"),
        (result("failed", "compile-error", "dependency-unavailable"), "dependency-setup"),
        # Nothing to repair: the project cannot, or the caller asked wrong.
        (result("unsupported", termination=None, reason="no-recipe"), None),
        (result("unsupported", termination=None, reason="precondition"), None),
        (result("unsupported", termination=None, reason="bad-request"), None),
        # Then the parsers' signals, most upstream first.
        (result("failed", "test-failed", "compile-error"), "compile-type"),
        (result("failed", "type-error", kind="typecheck"), "compile-type"),
        (result("failed", "test-failed"), "test-assertion"),
        (result("failed", "no-tests-collected"), "test-assertion"),
        (result("failed", "package-failed"), "test-assertion"),
        (result("failed", "lint", kind="lint"), "lint-format"),
        (result("modified", "source-changed", kind="format"), "lint-format"),
        (result("failed", kind="browser"), "browser-verification"),
        # No recognised signal is unknown, never a guess from the kind.
        (result("failed", "unclassified"), "unknown"),
        (result("failed", kind="lint"), "unknown"),
    ],
)
def test_classification_table(event: dict[str, Any], expected: str | None) -> None:
    found = classify_check(event)
    assert (found.name if found else None) == expected
    assert classify_event(event) == found


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"type": "task.applied", "taskId": "t", "applied": ["a"], "refused": []}, None),
        (
            {"type": "task.applied", "taskId": "t", "applied": [],
             "refused": [{"path": "a", "reason": "base drift"}]},
            "integration-conflict",
        ),
        ({"type": "task.failed", "taskId": "t", "reason": "error"}, "unknown"),
        ({"type": "preview.failed", "previewId": "p", "reason": "not-ready"}, "preview-startup"),
        ({"type": "policy.decision", "callId": "c", "verdict": "deny", "rule": "r",
          "reason": "x"}, "policy-approval"),
        ({"type": "policy.decision", "callId": "c", "verdict": "allow"}, None),
        ({"type": "approval.resolved", "callId": "c", "answer": "no"}, "policy-approval"),
        ({"type": "tool.completed", "callId": "c", "ok": False}, None),
    ],
)  # fmt: skip
def test_classification_of_failures_that_are_no_check(
    event: dict[str, Any], expected: str | None
) -> None:
    found = classify_event(event)
    assert (found.name if found else None) == expected


def test_a_failed_task_points_at_the_child_log() -> None:
    found = classify_event({"type": "task.failed", "taskId": "t", "reason": "budget"})
    assert found is not None and "see the child session's log" in found.evidence


# --- the repair ledger -----------------------------------------------------------------------


def start(kind: str = "test", project: str = ".", scope: Any = ".") -> dict[str, Any]:
    return {"type": "check.started", "kind": kind, "project": project, "scope": scope,
            "recipeId": "python.pytest@."}  # fmt: skip


def run(
    verdict: str, *signals: str, kind: str = "test", project: str = ".", scope: Any = "."
) -> list[dict[str, Any]]:
    done = {**result(verdict, *signals, kind=kind), "project": project, "scope": scope}
    return [start(kind, project, scope), done]


RED = run("failed", "test-failed")
GREEN = run("passed")
EDIT = [{"type": "file.mutated", "path": "calc.py"}]


def statuses(events: list[dict[str, Any]]) -> list[str]:
    return [repair.status for repair in repair_ledger(events).repairs]


def test_a_repair_succeeds_only_when_its_regression_check_passes_afterwards() -> None:
    assert statuses(RED) == ["open"]
    assert statuses(RED + EDIT + GREEN) == ["succeeded"]
    assert statuses(GREEN + RED) == ["open"]


def test_forged_a_pass_with_no_start_proves_no_repair() -> None:
    assert statuses([*RED, *EDIT, GREEN[1]]) == ["open"]


def test_forged_a_pass_that_began_before_the_failure_proves_no_repair() -> None:
    # Two starts; the failure pairs with the newer, the pass with the older.
    events = [start(), start(), RED[1], *EDIT, GREEN[1]]
    assert statuses(events) == ["open"]


def test_a_newer_failure_of_the_same_signature_supersedes_the_attempt() -> None:
    assert statuses(RED + EDIT + RED) == ["superseded", "open"]
    assert statuses(RED + EDIT + RED + EDIT + GREEN) == ["superseded", "succeeded"]
    # Another failure (another signature) supersedes nothing.
    other = run("failed", "type-error", kind="typecheck")
    assert statuses(RED + other) == ["open", "open"]


def test_the_proof_must_be_the_kind_that_failed_with_covering_scope() -> None:
    targeted = run("failed", "test-failed", kind="test-targeted", scope=["tests/test_a.py::t"])
    other_file = run("passed", kind="test-targeted", scope=["tests/test_b.py"])
    folder = run("passed", kind="test-targeted", scope=["tests"])
    assert statuses(targeted + other_file) == ["open"]
    assert statuses(targeted + folder) == ["succeeded"]
    # Another kind, or another unit, proves nothing.
    assert statuses(targeted + GREEN) == ["open"]
    assert statuses(RED + run("passed", project="apps/x", scope=".")) == ["open"]


def test_failures_that_are_no_check_are_answered_by_their_own_events() -> None:
    refused = {"type": "task.applied", "group": "g", "taskId": "t", "applied": [],
               "refused": [{"path": "a", "reason": "drift"}]}  # fmt: skip
    clean = {**refused, "applied": ["a"], "refused": []}
    assert statuses([refused]) == ["open"]
    assert statuses([refused, {**clean, "taskId": "other"}]) == ["open"]
    assert statuses([refused, clean]) == ["succeeded"]
    failed = {"type": "task.failed", "group": "g", "taskId": "t", "reason": "error"}
    assert statuses([failed, {"type": "task.completed", "group": "g2", "taskId": "t"}]) == [
        "succeeded"
    ]
    preview = {"type": "preview.failed", "previewId": "p1", "reason": "not-ready"}
    assert statuses([preview, {"type": "preview.ready", "previewId": "p1"}]) == ["succeeded"]


def test_an_open_item_of_a_class_not_tried_automatically_is_an_escalation() -> None:
    unknown = run("failed", "unclassified")
    [repair] = repair_ledger(unknown).repairs
    assert repair.escalation and "OPEN ESCALATION" in repair.line()
    [repair] = repair_ledger(RED).repairs
    assert not repair.escalation and "open (unproven)" in repair.line()


def dismiss(events: list[dict[str, Any]], number: int = 1, **fields: Any) -> dict[str, Any]:
    signature = repair_ledger(events).repairs[number - 1].diagnosis.signature
    return {"type": "repair.dismissed", "number": number, "signature": signature,
            "reason": "tracked upstream", **fields}  # fmt: skip


def test_a_dismissal_closes_the_blocker_and_stays_a_caveat() -> None:
    events = [*RED, dismiss(RED)]
    ledger = repair_ledger(events)
    assert statuses(events) == ["dismissed"]
    assert ledger.blockers() == []
    assert ledger.caveats()[0].endswith("DISMISSED by the person: tracked upstream "
                                        "[test-failed: test-failed-detail]")  # fmt: skip
    assert (
        dismissal_problem(ledger, 1) == "repair 1 is dismissed; only an open one can be dismissed"
    )
    # Evidence afterwards still proves the repair: succeeded beats dismissed.
    assert statuses([*events, *EDIT, *GREEN]) == ["succeeded"]


def test_forged_dismissals_change_nothing() -> None:
    wrong = [*RED, dismiss(RED, signature="0" * 16)]
    assert statuses(wrong) == ["open"]
    assert repair_ledger(wrong).ignored == (
        "event 3: names no repair of that number and signature",
    )
    assert statuses([*RED, dismiss(RED, number=1) | {"number": 7}]) == ["open"]
    # A dismissal written before the failure it names.
    early = [dismiss(RED), *RED]
    assert statuses(early) == ["open"]
    # A dismissal of a repair that had already succeeded.
    proven = [*RED, *GREEN]
    assert statuses([*proven, dismiss(RED)]) == ["succeeded"]


def test_the_ledger_lists_open_items_as_blockers_with_what_they_need() -> None:
    ledger = repair_ledger(RED + EDIT)
    assert ledger.blockers() == [
        "repair 1. test-assertion: test check - open (unproven) [test-failed: "
        "test-failed-detail]; needs: test in unit . passing again"
    ]
    assert dismissal_problem(ledger, 3) == "there is no repair 3 (open: 1)"


def test_the_same_failure_a_third_time_spends_the_budget() -> None:
    twice = RED + EDIT + RED
    assert not repair_ledger(twice).repairs[-1].escalation
    thrice = twice + EDIT + RED
    repairs = repair_ledger(thrice).repairs
    assert [(r.status, r.attempt) for r in repairs] == [
        ("superseded", 1),
        ("superseded", 2),
        ("open", 3),
    ]
    assert repairs[-1].escalation and "no try is left" in repairs[-1].line()
    # Another signature has its own budget.
    other = run("failed", "type-error", kind="typecheck")
    assert repair_ledger(thrice + other).repairs[-1].attempt == 1
