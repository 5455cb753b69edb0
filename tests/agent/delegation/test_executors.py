"""Executors through the real loop, in real git worktrees of a local repository: a group
of two runs side by side, each in its own worktree under the state root, is captured
from the parent's thread and released; ``apply_task_changes`` then applies each task as
one undo unit. A group ``prepare_group`` refuses spawns nothing.

The script provider stands in for every model: the parent's turns are the script's
``turns``, each task's are ``tasks[<label>]``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from agenttest import YesApprover, call, events_of, of_type, open_session, write_script
from checkpointgit import git, make_repo, needs_git

from ax_agent.loop import run_turn
from ax_agent.session import Session
from ax_agent.tasks.fold import attempts
from ax_agent.tasks.worktrees import GITIGNORED_NOTE
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_agent.tools.registry import all_tools
from ax_log import read_events, undo

pytestmark = needs_git


def _parent(
    workspace: Path, tmp_path: Path, script: dict[str, Any], tools: list[ModelTool] | None = None
) -> Session:
    path = tmp_path / "script.json"
    write_script(path, script["turns"])
    data = json.loads(path.read_text())
    data["tasks"] = script.get("tasks", {})
    path.write_text(json.dumps(data))
    return open_session(workspace, path, approver=YesApprover(), tools=tools)


def _meeting_writes(parties: int) -> list[ModelTool]:
    """The real tools, with write_file waiting for every task's write: run one after the
    other, the tasks would time out."""
    barrier = threading.Barrier(parties, timeout=10)
    real = next(tool for tool in all_tools() if tool.name == "write_file")

    def meeting(value: Any, ctx: ToolContext) -> ToolResult:
        barrier.wait()
        return real.run(value, ctx)

    return [
        ModelTool(t.name, t.description, t.input_model, t.facts, meeting)
        if t.name == "write_file"
        else t
        for t in all_tools()
    ]


def test_two_executors_in_their_own_worktrees_are_captured_and_applied_one_undo_unit_each(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    repo = make_repo(workspace, {"lexer.py": "LEX = 1\n", "parser.py": "PARSE = 1\n"})
    # The parent's uncommitted change is what both tasks start from.
    (repo / "parser.py").write_text("PARSE = 2\n")
    delegate = call(
        "delegate_task",
        tasks=[
            {"role": "executor", "label": "lexer", "prompt": "Fix the lexer"},
            {"role": "executor", "label": "parser", "prompt": "Fix the parser"},
        ],
    )
    script = {
        "turns": [
            {"tool_calls": [delegate]},
            {"text": "both done", "expect": "parser: completed"},
            {"tool_calls": [call("apply_task_changes", task="lexer", files=["lexer.py"])]},
            {"text": "lexer applied"},
            {"tool_calls": [call("apply_task_changes", task="parser", files=["parser.py"])]},
            {"text": "parser applied"},
        ],
        "tasks": {
            "lexer": [
                {
                    "tool_calls": [call("write_file", path="lexer.py", content="LEX = 3\n")],
                    "expect": GITIGNORED_NOTE,
                },
                {"text": "lexer fixed"},
            ],
            "parser": [
                {
                    "tool_calls": [call("write_file", path="parser.py", content="PARSE = 3\n")],
                    "expect": GITIGNORED_NOTE,
                },
                {"text": "parser fixed"},
            ],
        },
    }
    parent = _parent(workspace, tmp_path, script, tools=_meeting_writes(2))
    assert run_turn(parent, "fix both").text == "both done"
    events = events_of(parent)
    started = of_type(events, "task.started")
    [checkpoint] = [e for e in of_type(events, "checkpoint.created") if e["kind"] == "task-base"]
    assert {e["base"] for e in started} == {checkpoint["commit"]}
    # Each child worked in its own worktree under the state root, never in the workspace.
    trees = set()
    for event in started:
        child = list(
            read_events(
                parent.layout.session_dir(parent.id) / "tasks" / f"{event['child']}.jsonl",
                event["child"],
            )
        )
        tree = Path(child[0]["workspace"])
        assert tree.is_relative_to(state_dir) and tree.name == event["taskId"]
        assert [e["basis"] for e in of_type(child, "trust.verified")] == ["derived"]
        assert of_type(child, "file.mutated")
        trees.add(tree)
    assert len(trees) == 2 and not any(tree.exists() for tree in trees)
    captured = {e["taskId"]: e["files"] for e in of_type(events, "task.captured")}
    assert captured == {"lexer": ["lexer.py"], "parser": ["parser.py"]}
    assert [e["ok"] for e in of_type(events, "worktree.removed")] == [True, True]
    # Both left the group as the project's spares, registered where they now are.
    assert [e["parked"] for e in of_type(events, "worktree.removed")] == [True, True]
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 3 and listed.count("/worktrees/spares/") == 2
    # Nothing reached the workspace before the apply.
    assert (repo / "lexer.py").read_text() == "LEX = 1\n"
    assert (repo / "parser.py").read_text() == "PARSE = 2\n"

    assert run_turn(parent, "apply the lexer").text == "lexer applied"
    assert run_turn(parent, "apply the parser").text == "parser applied"
    events = events_of(parent)
    applied = of_type(events, "task.applied")
    assert [(e["taskId"], e["applied"], e["refused"]) for e in applied] == [
        ("lexer", ["lexer.py"], []),
        ("parser", ["parser.py"], []),
    ]
    assert {a.task_id: a.state for a in attempts(events)} == {
        "lexer": "completed",
        "parser": "completed",
    }
    assert (repo / "lexer.py").read_text() == "LEX = 3\n"
    assert (repo / "parser.py").read_text() == "PARSE = 3\n"
    # One undo unit each: the last undo takes the parser's apply back, the next the lexer's.
    undo(parent.layout, parent.id, everything=False)
    assert (repo / "parser.py").read_text() == "PARSE = 2\n"
    assert (repo / "lexer.py").read_text() == "LEX = 3\n"
    undo(parent.layout, parent.id, everything=False)
    assert (repo / "lexer.py").read_text() == "LEX = 1\n"
    parent.end("done")


def test_a_group_the_worktrees_refuse_spawns_nothing(workspace: Path, tmp_path: Path) -> None:
    """Not a git repository: the whole call is refused with why, the read-only task too."""
    (workspace / "a.txt").write_text("alpha\n")
    delegate = call(
        "delegate_task",
        tasks=[
            {"role": "explorer", "label": "look", "prompt": "look"},
            {"role": "executor", "label": "edit", "prompt": "edit"},
        ],
    )
    script = {
        "turns": [
            {"tool_calls": [delegate]},
            {"text": "refused", "expect": "not inside a git working tree"},
        ],
        "tasks": {"look": [{"text": "never"}], "edit": [{"text": "never"}]},
    }
    parent = _parent(workspace, tmp_path, script)
    assert run_turn(parent, "go").text == "refused"
    events = events_of(parent)
    assert not [e for e in events if e["type"].startswith("task.")]
    [done] = of_type(events, "tool.completed")
    assert done["content"].startswith("the group was refused, nothing was spawned: ")
    parent.end("done")


def test_a_secret_named_untracked_file_refuses_the_group(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    repo = make_repo(workspace)
    (repo / ".env").write_text("TOKEN=x\n")
    delegate = call(
        "delegate_task", tasks=[{"role": "executor", "label": "edit", "prompt": "edit"}]
    )
    script = {
        "turns": [{"tool_calls": [delegate]}, {"text": "refused", "expect": ".env"}],
        "tasks": {"edit": [{"text": "never"}]},
    }
    parent = _parent(workspace, tmp_path, script)
    assert run_turn(parent, "go").text == "refused"
    events = events_of(parent)
    assert not [e for e in events if e["type"].startswith("task.")]
    assert "nothing was spawned" in of_type(events, "tool.completed")[0]["content"]
    assert not list(state_dir.glob("projects/*/worktrees/*/*"))
    parent.end("done")


def test_the_start_sweep_never_blocks_and_records_its_failure(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from ax_agent import session as session_module
    from ax_agent.tasks import worktrees
    from libcommon.paths import state_layout

    make_repo(workspace)
    (state_layout(workspace).project_dir / "worktrees").mkdir(parents=True)
    release = threading.Event()

    def stuck(*_args: Any) -> Any:
        release.wait(10)
        raise OSError("never reached")

    def broken(*_args: Any) -> Any:
        raise OSError("the disk is gone")

    monkeypatch.setattr(session_module, "SWEEP_WAIT_SECONDS", 0.2)
    for sweep, expected in ((stuck, "still running after 0.2 s"), (broken, "the disk is gone")):
        monkeypatch.setattr(worktrees, "sweep_orphans", sweep)
        began = time.monotonic()
        parent = _parent(workspace, tmp_path, {"turns": [{"text": "hi"}]})
        assert time.monotonic() - began < 5
        [swept] = of_type(events_of(parent), "worktrees.swept")
        assert expected in swept["error"]
        parent.end("done")
    release.set()


def test_a_capture_that_fails_is_observed_and_the_task_fails_in_the_fold(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_agent.tasks import worktrees
    from libcommon.errors import OperationFailed

    def broken(*_args: Any) -> Any:
        raise OperationFailed("git could not read the changes")

    monkeypatch.setattr(worktrees, "capture_task", broken)
    make_repo(workspace)
    delegate = call(
        "delegate_task", tasks=[{"role": "executor", "label": "edit", "prompt": "edit"}]
    )
    script = {
        "turns": [{"tool_calls": [delegate]}, {"text": "seen", "expect": "! edit (capture)"}],
        "tasks": {"edit": [{"text": "edited"}]},
    }
    parent = _parent(workspace, tmp_path, script)
    assert run_turn(parent, "go").text == "seen"
    events = events_of(parent)
    [observed] = of_type(events, "task.observed")
    assert observed["kind"] == "capture" and "could not read" in observed["detail"]
    assert {a.task_id: a.state for a in attempts(events)} == {"edit": "failed"}
    # The worktree is released all the same.
    assert [e["ok"] for e in of_type(events, "worktree.removed")] == [True]
    parent.end("done")


def test_an_executors_session_is_filed_beside_its_parent_and_its_worktree_state_removed(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    """A child's state goes to its workspace's project folder, the worktree's: its log is
    kept beside the parent's session, the folder and the child's checkpoint refs go. Its
    first command takes no checkpoint (the worktree is the group's task-base checkpoint);
    the next one, after a command that may have written, does."""
    from ax_log.locate import latest_session

    repo = make_repo(workspace)
    delegate = call(
        "delegate_task", tasks=[{"role": "executor", "label": "edit", "prompt": "edit"}]
    )
    script = {
        "turns": [{"tool_calls": [delegate]}, {"text": "done"}],
        "tasks": {
            "edit": [
                {"tool_calls": [call("run_command", command="echo made > made.txt")]},
                {"tool_calls": [call("run_command", command="echo more > more.txt")]},
                {"text": "made"},
            ]
        },
    }
    parent = _parent(workspace, tmp_path, script)
    assert run_turn(parent, "go").text == "done"
    events = events_of(parent)
    [started] = of_type(events, "task.started")
    child = started["child"]
    assert [e["files"] for e in of_type(events, "task.captured")] == [["made.txt", "more.txt"]]
    filed = parent.layout.session_dir(parent.id) / "tasks" / f"{child}.jsonl"
    kept = list(read_events(filed, child))
    order = [e["type"] for e in kept if e["type"] in ("checkpoint.created", "command.started")]
    assert order == ["command.started", "checkpoint.created", "command.started"]
    [pruned] = of_type(kept, "checkpoint.pruned")
    assert len(pruned["refs"]) == 1
    assert (filed.parent / child).is_dir()  # its session folder (trail, archive) too
    assert [p.name for p in (state_dir / "projects").iterdir()] == [parent.layout.slug]
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/ax/checkpoints")
    assert child not in refs and parent.id in refs
    assert latest_session(parent.layout) == parent.id
    parent.end("done")


def test_worktree_removed_reaches_the_listeners_when_it_is_recorded(
    workspace: Path, tmp_path: Path
) -> None:
    """release_group records through the session, not beside it: a listener hears each
    worktree.removed when it is appended, before the call's tool.completed exists."""
    make_repo(workspace)
    delegate = call(
        "delegate_task", tasks=[{"role": "executor", "label": "edit", "prompt": "edit"}]
    )
    script = {
        "turns": [{"tool_calls": [delegate]}, {"text": "done"}],
        "tasks": {"edit": [{"text": "nothing to do"}]},
    }
    parent = _parent(workspace, tmp_path, script)
    heard: list[list[str]] = []

    def listener(record: dict[str, Any]) -> None:
        if record["type"] == "worktree.removed":
            heard.append([e["type"] for e in events_of(parent)])

    parent.listeners.append(listener)
    assert run_turn(parent, "go").text == "done"
    assert len(heard) == 1 and "tool.completed" not in heard[0]
    parent.end("done")


def test_a_second_group_reuses_the_first_ones_worktree_and_a_tampered_spare_is_said(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    """Through the real loop: an executor that ran a command (its checkpoint, its child
    session) leaves a worktree that is parked and reused by the next group, which sees
    none of the first task's work; a spare tampered with is a worktree.discarded in the
    parent's log and the group runs all the same, on a fresh worktree."""
    from ax_agent.tasks import spares

    make_repo(workspace)

    def group(label: str) -> dict[str, Any]:
        return call("delegate_task", tasks=[{"role": "executor", "label": label, "prompt": "go"}])

    script = {
        "turns": [
            {"tool_calls": [group("one")]},
            {"text": "first"},
            {"tool_calls": [group("two")]},
            {"text": "second"},
            {"tool_calls": [group("three")]},
            {"text": "third"},
        ],
        "tasks": {
            label: [
                {"tool_calls": [call("run_command", command=f"echo {label} > {label}.txt")]},
                {"text": "made"},
            ]
            for label in ("one", "two", "three")
        },
    }
    parent = _parent(workspace, tmp_path, script)
    folder = spares.spares_folder(parent.layout.project_dir)
    assert run_turn(parent, "go").text == "first"
    [parked] = spares.list_spares(folder)[0]
    assert run_turn(parent, "again").text == "second"
    events = events_of(parent)
    assert of_type(events, "worktree.discarded") == []
    assert [e["files"] for e in of_type(events, "task.captured")] == [["one.txt"], ["two.txt"]]
    assert [e["parked"] for e in of_type(events, "worktree.removed")] == [True, True]
    assert not parked.path.exists()  # claimed by the second group, parked again anew
    [spare] = spares.list_spares(folder)[0]
    admin = Path((spare.path / ".git").read_text().removeprefix("gitdir: ").strip())
    (admin / "config.worktree").write_text("[core]\n\tfsmonitor = true\n")
    assert run_turn(parent, "once more").text == "third"
    events = events_of(parent)
    [said] = of_type(events, "worktree.discarded")
    assert said["taskId"] == "three" and "config.worktree" in said["reason"]
    assert of_type(events, "task.captured")[-1]["files"] == ["three.txt"]
    assert [e["taskId"] for e in of_type(events, "task.completed")] == ["one", "two", "three"]
    parent.end("done")


def test_a_session_sweeps_another_projects_old_spares(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    """A session of a project that never delegated still sweeps: another project's spare
    parked more than a week ago is removed and said in ``worktrees.swept``."""
    import os

    from ax_agent.tasks import spares
    from ax_agent.tasks.worktrees import prepare_group, release_group
    from libcommon.paths import state_layout

    elsewhere = make_repo(tmp_path / "elsewhere")
    layout = state_layout(elsewhere)
    release_group(prepare_group(layout, "s1", "g1", ["t1"], dict(os.environ)), lambda e: None)
    [spare] = spares.list_spares(spares.spares_folder(layout.project_dir))[0]
    old = spare.path.parent / spares.new_name(spare.parked_at - spares.SPARE_MAX_AGE_S - 60)
    git(elsewhere, "worktree", "move", str(spare.path), str(old))
    make_repo(workspace)
    assert not (state_layout(workspace).project_dir / "worktrees").exists()
    parent = _parent(workspace, tmp_path, {"turns": [{"text": "hi"}]})
    [swept] = of_type(events_of(parent), "worktrees.swept")
    assert swept["removed"] == [f"{layout.slug}/spares/{old.name}"] and not old.exists()
    parent.end("done")
