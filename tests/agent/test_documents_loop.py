"""render_document in a session: its outputs go through the mutation path (snapshot,
file.mutated, undo), and a product is never verification (report and gates)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agenttest import call, events_of, first, of_type, open_session, real_tools, write_script

from ax_agent.acceptance import acceptance_state
from ax_agent.loop import run_turn
from ax_agent.plans.model import Plan
from ax_agent.session import Session
from ax_exec import find_chromium
from ax_log import undo
from ax_report import build_report

SPEC = {"title": "Notes", "blocks": [{"kind": "heading", "text": "One", "level": 1}]}


def _session_rendering(workspace: Path, tmp_path: Path) -> Session:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "toolCalls": [
                    call("write_file", id="w", path="notes.docspec.json", content=json.dumps(SPEC))
                ]
            },
            {"toolCalls": [call("render_document", id="r", spec="notes.docspec.json", pdf=False)]},
            {"text": "done"},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    assert run_turn(session, "write a report").stop_reason == "end_turn"
    return session


def test_the_render_is_snapshotted_recorded_and_undoable(workspace: Path, tmp_path: Path) -> None:
    session = _session_rendering(workspace, tmp_path)
    assert (workspace / "notes.docx").exists()
    events = events_of(session)
    on_render = [e["type"] for e in events if e.get("callId") == "r"]
    assert on_render == [
        "tool.requested",
        "policy.decision",
        "snapshot.stored",
        "artifact.rendered",
        "file.mutated",
        "tool.completed",
    ]
    decision = next(e for e in of_type(events, "policy.decision") if e["callId"] == "r")
    assert decision["verdict"] == "allow"
    mutated = [e for e in of_type(events, "file.mutated") if e["callId"] == "r"]
    assert [m["path"] for m in mutated] == ["notes.docx"]
    undo(session.layout, session.id, everything=False)
    assert not (workspace / "notes.docx").exists()
    assert (workspace / "notes.docspec.json").exists()


def test_a_clean_render_after_a_change_leaves_the_files_unchecked(
    workspace: Path, tmp_path: Path
) -> None:
    session = _session_rendering(workspace, tmp_path)
    events = events_of(session)
    assert first(events, "artifact.rendered")["status"] == "rendered"
    document, _ = build_report(events)
    verdicts = {f["path"]: f["verdict"] for f in document["files"]}
    assert verdicts == {"notes.docspec.json": "UNCHECKED", "notes.docx": "UNCHECKED"}


def test_artifact_events_satisfy_no_gate() -> None:
    change = {"type": "file.mutated", "path": "notes.docx"}
    rendered = {
        "type": "artifact.rendered",
        "callId": "r",
        "spec": "notes.docspec.json",
        "specSha256": "0" * 64,
        "status": "rendered",
        "outputs": [],
        "pdf": "printed",
    }
    inspected = {
        "type": "artifact.inspected",
        "callId": "i",
        "path": "notes.pdf",
        "sha256": "1" * 64,
        "pages": [],
        "pageCount": 1,
        "shown": True,
    }
    done = {"type": "turn.completed", "stopReason": "end_turn"}
    state = acceptance_state(None, [change, rendered, inspected, done])
    assert any("files changed with no passing check" in b for b in state.blockers)
    plan = Plan.model_validate(
        {
            "tasks": [{"id": "p", "title": "Do", "role": "parent", "checks": ["test"]}],
            "gates": {"completion": ["test"]},
        }
    )
    approved = {"type": "plan.approved", "sha256": "0" * 64}
    state = acceptance_state(plan, [approved, change, rendered, inspected, done])
    assert any(b.startswith("completion gate: test") for b in state.blockers)
    assert any(b.startswith("task p: test") for b in state.blockers)


def test_the_pdf_twin_goes_through_the_mutation_path_too(workspace: Path, tmp_path: Path) -> None:
    if find_chromium(os.environ) is None:
        pytest.skip("no chromium on PATH (Debian's 'chromium' package): the PDF twin is untested")
    pytest.importorskip("playwright", reason="playwright (the browser extra) is not installed")
    (workspace / "notes.docspec.json").write_text(json.dumps(SPEC))
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("render_document", id="r", spec="notes.docspec.json")]},
         {"text": "done"}],
    )  # fmt: skip
    session = open_session(workspace, script, tools=real_tools())
    assert run_turn(session, "render").stop_reason == "end_turn"
    events = events_of(session)
    assert first(events, "artifact.rendered")["pdf"] == "printed"
    mutated = [e["path"] for e in of_type(events, "file.mutated") if e["callId"] == "r"]
    assert sorted(mutated) == ["notes.docx", "notes.pdf"]
    undo(session.layout, session.id, everything=False)
    assert not (workspace / "notes.pdf").exists() and not (workspace / "notes.docx").exists()
