"""apply_task_changes through the real loop, on real worktrees: a clean apply is one
undo unit, a drifted file is refused and then merged (clean merges written, conflicts
reported and nothing written), and a task is applied at most once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agenttest import call, events_of, of_type, open_session, real_tools, write_script
from checkpointgit import make_repo, needs_git

from ax_agent.loop import run_turn
from ax_agent.session import Session
from ax_agent.tasks.fold import attempts
from ax_agent.tasks.worktrees import GroupBase, capture_task, prepare_group, release_group
from ax_agent.tools.apply_task_changes import TOOL
from ax_log import undo

pytestmark = needs_git

BASE_TEXT = "".join(f"line {n}\n" for n in range(1, 21))


def _session(workspace: Path, tmp_path: Path, turns: list[dict[str, Any]]) -> Session:
    script = write_script(tmp_path / "s.json", turns)
    return open_session(workspace, script, tools=real_tools())


def _run_task(session: Session, task: str, work: Any) -> GroupBase:
    """One executor task in its own group: started, worked, captured, completed, released."""
    group = f"g-{task}"
    base = prepare_group(session.layout, session.id, group, [task], dict(os.environ))
    session.record({"type": "task.started", "group": group, "taskId": task, "role": "executor"})
    try:
        work(base.workspace(task))
        capture_task(base, task, lambda event: session.record(event))
        session.record({"type": "task.completed", "group": group, "taskId": task})
    finally:
        release_group(base, lambda event: session.record(event))
    return base


def _repo(workspace: Path) -> Path:
    return make_repo(
        workspace,
        {"a.txt": BASE_TEXT, "b.txt": "b\n", "old.txt": "a file to be renamed whole\n"},
    )


def _edit(tree: Path) -> None:
    (tree / "a.txt").write_text(BASE_TEXT.replace("line 2\n", "line 2, by the task\n"))
    (tree / "b.txt").unlink()
    (tree / "c.txt").write_text("created by the task\n")
    (tree / "old.txt").rename(tree / "new.txt")
    (tree / "pic.bin").write_bytes(b"\x00\x89PNG")


ALL = ["a.txt", "b.txt", "c.txt", "old.txt", "new.txt", "pic.bin"]


def test_the_tool_is_decided_as_writes_of_exactly_the_named_files() -> None:
    from ax_agent.calls import declared_facts
    from ax_agent.tools.apply_task_changes import ApplyTaskChangesInput

    facts = declared_facts(TOOL.facts, ApplyTaskChangesInput(task="t", files=["a", "b/c"]))
    assert not hasattr(facts, "verdict")
    assert facts.writes == ["a", "b/c"]  # type: ignore[union-attr]


def test_a_clean_apply_is_one_undo_unit_and_a_second_apply_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    repo = _repo(workspace)
    (repo / "dirty.txt").write_text("the parent's own uncommitted file\n")
    session = _session(
        workspace,
        tmp_path,
        [
            {"toolCalls": [call("apply_task_changes", task="t1", files=ALL)]},
            {"text": "applied"},
            {"toolCalls": [call("apply_task_changes", task="t1", files=["a.txt"])]},
            {"text": "again"},
        ],
    )
    _run_task(session, "t1", _edit)
    run_turn(session, "apply it")
    assert "line 2, by the task" in (repo / "a.txt").read_text()
    assert not (repo / "b.txt").exists() and not (repo / "old.txt").exists()
    assert (repo / "new.txt").read_text() == "a file to be renamed whole\n"
    assert (repo / "pic.bin").read_bytes() == b"\x00\x89PNG"
    events = events_of(session)
    (applied,) = of_type(events, "task.applied")
    assert sorted(applied["applied"]) == sorted(ALL) and applied["refused"] == []
    mutated = of_type(events, "file.mutated")
    assert len({event["callId"] for event in mutated}) == 1 and len(mutated) == len(ALL)
    (attempt,) = attempts(events)
    assert attempt.integrated and attempt.state == "completed"
    # The second apply is refused whole, and nothing more is recorded.
    run_turn(session, "again")
    events = events_of(session)
    assert len(of_type(events, "task.applied")) == 1
    assert "already applied" in of_type(events, "tool.completed")[-1]["content"]
    # One undo reverts the whole apply.
    undo(session.layout, session.id, everything=False)
    assert (repo / "a.txt").read_text() == BASE_TEXT
    assert (repo / "b.txt").read_text() == "b\n" and (repo / "old.txt").exists()
    assert not (repo / "c.txt").exists() and not (repo / "new.txt").exists()
    assert not (repo / "pic.bin").exists()
    assert (repo / "dirty.txt").exists()


def test_a_drifted_file_is_refused_then_merged_cleanly(workspace: Path, tmp_path: Path) -> None:
    repo = _repo(workspace)
    session = _session(
        workspace,
        tmp_path,
        [
            {"toolCalls": [call("apply_task_changes", task="t1", files=["a.txt", "c.txt"])]},
            {"text": "refused"},
            {"toolCalls": [call("apply_task_changes", task="t1", files=["a.txt"], merge=True)]},
            {"text": "merged"},
        ],
    )
    _run_task(session, "t1", _edit)
    # The parent changed another part of a.txt meanwhile.
    (repo / "a.txt").write_text(BASE_TEXT.replace("line 19\n", "line 19, by the parent\n"))
    run_turn(session, "apply")
    first = of_type(events_of(session), "task.applied")[0]
    assert first["applied"] == ["c.txt"]
    (refusal,) = first["refused"]
    assert refusal["path"] == "a.txt" and "drifted" in refusal["reason"]
    assert "merge applies cleanly" in refusal["reason"]
    assert "line 2, by the task" not in (repo / "a.txt").read_text()
    run_turn(session, "merge")
    text = (repo / "a.txt").read_text()
    assert "line 2, by the task" in text and "line 19, by the parent" in text
    events = events_of(session)
    second = of_type(events, "task.applied")[1]
    assert second["applied"] == ["a.txt"] and second["refused"] == []
    # Not every captured file is applied yet: the task still integrates.
    assert attempts(events)[0].state == "integrating"
    # The merge is its own undo unit: undo puts the parent's version back.
    undo(session.layout, session.id, everything=False)
    assert (repo / "a.txt").read_text() == BASE_TEXT.replace(
        "line 19\n", "line 19, by the parent\n"
    )


def test_a_conflicting_merge_is_reported_and_nothing_is_written(
    workspace: Path, tmp_path: Path
) -> None:
    repo = _repo(workspace)
    session = _session(
        workspace,
        tmp_path,
        [
            {"toolCalls": [call("apply_task_changes", task="t1", files=["a.txt"])]},
            {"text": "refused"},
            {"toolCalls": [call("apply_task_changes", task="t1", files=["a.txt"], merge=True)]},
            {"text": "conflict"},
        ],
    )
    _run_task(session, "t1", _edit)
    ours = BASE_TEXT.replace("line 2\n", "line 2, by the parent\n")
    (repo / "a.txt").write_text(ours)
    run_turn(session, "apply")
    refusal = of_type(events_of(session), "task.applied")[0]["refused"][0]
    assert "conflicts in 1 place" in refusal["reason"]
    run_turn(session, "merge")
    assert (repo / "a.txt").read_text() == ours
    events = events_of(session)
    second = of_type(events, "task.applied")[1]
    assert second["applied"] == []
    assert "merge conflict in 1 place" in second["refused"][0]["reason"]
    assert "<<<<<<< workspace" in second["refused"][0]["reason"]
    assert of_type(events, "file.mutated") == []
    assert attempts(events)[0].state == "integrating"


def test_a_rename_is_applied_whole_and_strangers_are_refused(
    workspace: Path, tmp_path: Path
) -> None:
    repo = _repo(workspace)
    session = _session(
        workspace,
        tmp_path,
        [
            {
                "toolCalls": [
                    call("apply_task_changes", task="t1", files=["new.txt", "zzz.txt", "c.txt"])
                ]
            },
            {"text": "partly"},
        ],
    )
    _run_task(session, "t1", _edit)
    (repo / "c.txt").write_text("the parent made one too\n")
    run_turn(session, "apply")
    (applied,) = of_type(events_of(session), "task.applied")
    reasons = {item["path"]: item["reason"] for item in applied["refused"]}
    assert "applied whole" in reasons["new.txt"] and "old.txt" in reasons["new.txt"]
    assert "not among" in reasons["zzz.txt"]
    assert "another file there" in reasons["c.txt"]
    assert applied["applied"] == [] and (repo / "old.txt").exists()
    assert (repo / "c.txt").read_text() == "the parent made one too\n"


@pytest.mark.parametrize("merge", [False, True])
def test_no_capture_refuses_the_call(workspace: Path, tmp_path: Path, merge: bool) -> None:
    _repo(workspace)
    session = _session(
        workspace,
        tmp_path,
        [
            {"toolCalls": [call("apply_task_changes", task="nope", files=["a"], merge=merge)]},
            {"text": "no"},
        ],
    )
    run_turn(session, "apply")
    events = events_of(session)
    assert of_type(events, "task.applied") == []
    assert "no captured changes" in of_type(events, "tool.completed")[0]["content"]
