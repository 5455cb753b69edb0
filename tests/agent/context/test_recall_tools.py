"""slate_trail and history_search against a real slate on disk, through the in-process seam."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ax_agent.seam.local import LocalSeam
from ax_agent.tools import history_search, slate_trail
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_agent.window.window import ContextWindow
from ax_policy import DecisionContext, SandboxStatus, decide
from ax_slate import RecordRequest, open_session, record, save_output
from libcommon.paths import StateLayout, state_layout

SESSION = "s-recall"


class Slate:
    def __init__(self, workspace: Path, session: str = SESSION) -> None:
        self.layout: StateLayout = state_layout(workspace)
        self.session = session
        open_session(self.layout, session)
        self.seam = LocalSeam(self.layout, session, {}, None)
        self.window = ContextWindow(self.seam, lambda *events: None)
        self.seq = 0

    def archive(self, kind: str, **fields: Any) -> None:
        self.seq += 1
        self.window.archive({"type": kind, "ts": f"2026-11-30T10:00:{self.seq:02d}.000Z", **fields})

    def call(self, tool: ModelTool, raw: dict[str, Any]) -> ToolResult:
        value = tool.input_model.model_validate(raw)
        decision = decide(
            tool.facts,
            value,
            DecisionContext(
                workspace=self.layout.workspace,
                sandbox=SandboxStatus(),
                state_dir=self.layout.root,
            ),
        )
        assert decision.verdict == "allow"  # read-only and internal: never asks
        ctx = ToolContext(self.layout, self.session, "t", 0, self.seam, decision)
        return tool.run(value, ctx)


@pytest.fixture
def slate(workspace: Path, state_dir: Path) -> Slate:
    return Slate(workspace)


def test_slate_trail_lists_filters_and_points_at_older_steps(slate: Slate) -> None:
    saved = save_output(slate.layout, SESSION, "full output")
    for step in range(1, 31):
        tool = "run_command" if step % 3 == 0 else "read_file"
        record(
            slate.layout,
            SESSION,
            RecordRequest(
                tool=tool,
                args={"path": f"src/m{step}.py"},
                outcome="ok",
                output=str(saved) if step == 30 else None,
            ),
        )
    result = slate.call(slate_trail.TOOL, {})
    lines = result.content.splitlines()
    assert lines[0].startswith("#11 ") and lines[19].startswith("#30 ")
    assert 'recall_step {"step": 30}' in lines[19]
    assert lines[-1] == '[older entries: slate_trail {"to_step": 10, "count": 20}]'
    only = slate.call(slate_trail.TOOL, {"tool": "run_command", "count": 3}).content
    assert [line.split()[0] for line in only.splitlines()[:3]] == ["#24", "#27", "#30"]
    window = slate.call(slate_trail.TOOL, {"from_step": 5, "to_step": 7}).content
    assert [line.split()[0] for line in window.splitlines()] == ["#5", "#6", "#7"]
    assert "m12.py" in slate.call(slate_trail.TOOL, {"file": "m12.py"}).content
    assert slate.call(slate_trail.TOOL, {"tool": "nope"}).content == "No trail entries match."
    bad = slate.call(slate_trail.TOOL, {"from_step": 9, "to_step": 2})
    assert bad.is_error and "from_step 9 is after to_step 2" in bad.content


def test_slate_trail_refuses_bad_input() -> None:
    from pydantic import ValidationError

    for raw in ({"count": 0}, {"count": 201}, {"colour": "red"}, {"from_step": -1}):
        with pytest.raises(ValidationError):
            slate_trail.TOOL.input_model.model_validate(raw)


def test_a_calls_output_reads_back_exactly_page_by_page(slate: Slate) -> None:
    output = "".join(f"{n:05d} naïve “quoted” \\ line\n" for n in range(900))  # > 6,000 chars
    slate.archive("user.message", content="Fix it.")
    slate.archive(
        "assistant.message", content=[{"type": "tool_use", "id": "toolu_1", "name": "read_file"}]
    )
    slate.archive("tool.completed", callId="toolu_1", ok=True, summary="read", content=output)
    slate.archive("tool.completed", callId="toolu_2", ok=True, summary="empty", content="")
    row = slate.window.rows["toolu_1"]
    assert row == 3 and slate.window.rows["toolu_2"] == 4
    archive = slate.layout.session_dir(SESSION) / "archive.jsonl"
    before = archive.read_bytes()
    for hint in (row, 0, 1):  # the right row, no row, a wrong row: the same answer
        pages: list[str] = []
        page = 1
        while True:
            raw: dict[str, Any] = {"call": "toolu_1", "page": page}
            if hint:
                raw["row"] = hint
            result = slate.call(history_search.TOOL, raw)
            assert not result.is_error
            text, footer = result.content.rsplit("\n[", 1)
            pages.append(text)
            if "the end" in footer:
                break
            assert 'next: history_search {"call":"toolu_1",' in footer
            page += 1
        assert "".join(pages) == output
        assert len(pages) > 1
    empty = slate.call(history_search.TOOL, {"call": "toolu_2"})
    assert empty.content.startswith("\n[output of call toolu_2, page 1 of 1")
    missing = slate.call(history_search.TOOL, {"call": "toolu_9"})
    assert missing.is_error and "no archived output for call 'toolu_9'" in missing.content
    assert archive.read_bytes() == before  # read-only


def test_query_and_row_find_earlier_messages(slate: Slate) -> None:
    slate.archive("user.message", content='Please rename "old_name" everywhere.')
    slate.archive("tool.completed", callId="toolu_1", ok=True, summary="x", content="a\\b")
    hits = slate.call(history_search.TOOL, {"query": '"old_name"'}).content
    assert hits.startswith("row 1 (user, 2026-11-30T10:00:01.000Z): Please rename")
    assert 'history_search {"row": N}' in hits
    assert "row 2 (tool" in slate.call(history_search.TOOL, {"query": "a\\b"}).content
    whole = slate.call(history_search.TOOL, {"row": 1}).content
    assert whole.startswith("[row 1, user]\nPlease rename")
    nothing = slate.call(history_search.TOOL, {"query": "absent words"})
    assert nothing.content == "No earlier message contains 'absent words'."
    gone = slate.call(history_search.TOOL, {"row": 99})
    assert gone.is_error and "no archived row 99" in gone.content


@pytest.mark.parametrize(
    "raw",
    [{}, {"query": "a", "row": 2}, {"query": "a", "call": "c"}, {"row": -1}, {"page": 0, "row": 1}],
)
def test_history_search_takes_exactly_one_way_to_look(raw: dict[str, Any]) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        history_search.TOOL.input_model.model_validate(raw)


def test_recall_is_confined_to_the_live_session(workspace: Path, state_dir: Path) -> None:
    mine = Slate(workspace, "s-mine")
    other = Slate(workspace, "s-other")
    other.archive("tool.completed", callId="toolu_x", ok=True, summary="x", content="secret plan")
    other.archive("user.message", content="secret plan")
    assert mine.call(history_search.TOOL, {"query": "secret plan"}).content.startswith("No earlier")
    assert mine.call(history_search.TOOL, {"call": "toolu_x"}).is_error
    assert mine.call(slate_trail.TOOL, {}).content == "No trail entries match."


def test_the_archive_keeps_messages_and_tool_outputs_only(slate: Slate) -> None:
    slate.archive("policy.decision", callId="c", verdict="allow")
    slate.archive("tool.completed", callId="c", ok=True, summary="no content recorded")
    assert not (slate.layout.session_dir(SESSION) / "archive.jsonl").exists()
