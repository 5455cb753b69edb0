"""Documents are products, never verification: artifact events leave a file UNCHECKED."""

from __future__ import annotations

from typing import Any

from ax_report import build_report

WS = "/ws"


def _events(*after: dict[str, Any]) -> list[dict[str, Any]]:
    base: list[dict[str, Any]] = [
        {"seq": 1, "type": "session.started", "workspace": WS},
        {"seq": 2, "type": "file.mutated", "callId": "w", "path": "r.docspec.json",
         "pre": None, "post": "a" * 64},
        {"seq": 3, "type": "file.mutated", "callId": "r", "path": "r.docx",
         "pre": None, "post": "b" * 64},
    ]  # fmt: skip
    return base + [{"seq": 4 + n, **event} for n, event in enumerate(after)]


RENDERED = {
    "type": "artifact.rendered",
    "callId": "r",
    "spec": "r.docspec.json",
    "specSha256": "a" * 64,
    "status": "rendered",
    "outputs": [{"format": "docx", "path": "r.docx", "sha256": "b" * 64, "bytes": 9,
                 "pages": None, "deterministic": True}],
    "pdf": "printed",
}  # fmt: skip
INSPECTED = {
    "type": "artifact.inspected",
    "callId": "i",
    "path": "r.pdf",
    "sha256": "c" * 64,
    "pages": [],
    "pageCount": 1,
    "shown": True,
}


def _verdicts(events: list[dict[str, Any]]) -> dict[str, str]:
    document, _ = build_report(events)
    return {item["path"]: item["verdict"] for item in document["files"]}


def test_a_clean_render_after_a_change_leaves_the_files_unchecked() -> None:
    verdicts = _verdicts(_events(RENDERED, INSPECTED))
    assert verdicts == {"r.docspec.json": "UNCHECKED", "r.docx": "UNCHECKED"}


def test_the_same_files_are_checked_by_a_real_passing_check() -> None:
    run = {"kind": "test", "project": WS, "scope": ".", "recipeId": "r"}
    started = {"type": "check.started", **run}
    check = {
        "type": "check.completed",
        **run,
        "verdict": "passed",
        "exitCode": 0,
        "termination": "exited",
        "reason": None,
    }
    verdicts = _verdicts(_events(RENDERED, started, check))
    assert verdicts == {"r.docspec.json": "CHECKED", "r.docx": "CHECKED"}
