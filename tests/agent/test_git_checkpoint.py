"""git_checkpoint through the real loop: allowed within the cap, denied at it, honest
outside a repository; the schema can only name a label."""

from __future__ import annotations

from pathlib import Path

import pytest
from agenttest import call, events_of, of_type, open_session, real_tools, write_script
from checkpointgit import git, make_repo, needs_git, user_state

from ax_agent.loop import run_turn
from ax_agent.tools.git_checkpoint import TOOL
from libcommon.git import MAX_CHECKPOINTS_PER_SESSION

pytestmark = needs_git


def _turn(workspace: Path, tmp_path: Path, calls: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": calls}, {"text": "done"}],
    )
    session = open_session(workspace, script, tools=real_tools())
    run_turn(session, "go")
    return session


def test_the_schema_holds_a_label_and_nothing_else() -> None:
    schema = TOOL.schema().input_schema
    assert set(schema["properties"]) == {"label"}
    assert schema.get("additionalProperties") is False


def test_a_checkpoint_is_allowed_and_taken_and_the_user_sees_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    repo = make_repo(workspace)
    (repo / "a.txt").write_text("changed\n")
    before = user_state(repo)
    session = _turn(workspace, tmp_path, [call("git_checkpoint", label="before the formatter")])
    session.end("done")
    assert user_state(repo) == before
    events = events_of(session)
    decision = of_type(events, "policy.decision")[0]
    assert (decision["verdict"], decision["rule"], decision["class"]) == (
        "allow",
        "checkpoint",
        "reversible",
    )
    completed = of_type(events, "tool.completed")[0]
    assert completed["ok"] and f"checkpoint {session.id}/1" in completed["content"]
    created = of_type(events, "checkpoint.created")[0]
    assert created["label"] == "before the formatter"
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/ax").split() == [created["ref"]]


def test_the_cap_is_denied_by_policy_before_anything_runs(workspace: Path, tmp_path: Path) -> None:
    repo = make_repo(workspace)
    head = git(repo, "rev-parse", "HEAD").strip()
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call("git_checkpoint")]}, {"text": "done"}]
    )
    session = open_session(workspace, script, tools=real_tools())
    for n in range(1, MAX_CHECKPOINTS_PER_SESSION + 1):
        git(repo, "update-ref", f"refs/ax/checkpoints/{session.id}/{n}", head)
    run_turn(session, "go")
    events = events_of(session)
    decision = of_type(events, "policy.decision")[0]
    assert (decision["verdict"], decision["rule"]) == ("deny", "checkpoint-cap")
    assert of_type(events, "checkpoint.created") == []


def test_outside_a_repository_the_tool_says_so_and_the_session_goes_on(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("a")
    session = _turn(
        workspace,
        tmp_path,
        [call("git_checkpoint", id="c1"), call("read_file", id="c2", path="a.txt")],
    )
    completed = of_type(events_of(session), "tool.completed")
    assert not completed[0]["ok"] and "not inside a git working tree" in completed[0]["content"]
    assert completed[1]["ok"]


@pytest.mark.parametrize("extra", [{"ref": "HEAD"}, {"restore": True}, {"label": "x" * 201}])
def test_anything_but_a_label_is_refused_as_input(
    workspace: Path, tmp_path: Path, extra: dict[str, object]
) -> None:
    make_repo(workspace)
    session = _turn(workspace, tmp_path, [call("git_checkpoint", **extra)])
    completed = of_type(events_of(session), "tool.completed")[0]
    assert not completed["ok"]
    assert of_type(events_of(session), "checkpoint.created") == []


def test_a_clean_end_prunes_the_session_checkpoints_but_delivery(
    workspace: Path, tmp_path: Path
) -> None:
    from ax_agent.narrative import finish
    from ax_log import create_checkpoint

    repo = make_repo(workspace)
    session = _turn(workspace, tmp_path, [call("git_checkpoint")])
    delivery = create_checkpoint(session.layout, session.id, kind="delivery").checkpoint
    finish(session, "done", narrate=False)
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/ax").split() == [delivery.ref]
    pruned = of_type(events_of(session), "checkpoint.pruned")[0]
    assert pruned["refs"] == [f"refs/ax/checkpoints/{session.id}/1"]
    assert pruned["kept"] == [delivery.ref]


def _commands(workspace: Path, tmp_path: Path, commands: list[str]):  # type: ignore[no-untyped-def]
    from agenttest import ScriptedApprover

    calls = [call("run_command", id=f"c{i}", command=text) for i, text in enumerate(commands)]
    script = write_script(tmp_path / "s.json", [{"toolCalls": calls}, {"text": "done"}])
    approver = ScriptedApprover(["once"] * len(commands))
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    return session


def test_a_checkpoint_precedes_each_command_that_may_write_after_one_that_may_have(
    workspace: Path, tmp_path: Path
) -> None:
    from ax_log import restore_checkpoint

    repo = make_repo(workspace)
    before = user_state(repo)
    session = _commands(
        workspace,
        tmp_path,
        ["ls", "sed -i s/a/A/ a.txt", "sed -i s/b/B/ src/b.txt", "echo new > new.txt"],
    )
    events = events_of(session)
    created = of_type(events, "checkpoint.created")
    assert [event["kind"] for event in created] == ["pre-integration"] * 3
    # None before the proven read-only ls; one right before each command that may write.
    started = [event["seq"] for event in of_type(events, "command.started")]
    assert len(started) == 4
    assert all(
        earlier < c["seq"] < s
        for earlier, c, s in zip(started[:3], created, started[1:], strict=True)
    )
    assert (repo / "a.txt").read_text() == "A\n" and (repo / "new.txt").exists()
    assert user_state(repo)["index"] == before["index"]
    # The first one holds the tree before any command: restoring it rewinds all three.
    restored = restore_checkpoint(session.layout, session.id, "1")
    assert restored.ok and restored.removed == ("new.txt",)
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "src" / "b.txt").read_text() == "b\n"


def test_outside_a_repository_the_skip_is_recorded_once_and_commands_run(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    session = _commands(workspace, tmp_path, ["sed -i s/a/A/ a.txt", "echo x > b.txt"])
    events = events_of(session)
    skipped = of_type(events, "checkpoint.skipped")
    assert len(skipped) == 1 and "not inside a git working tree" in skipped[0]["reason"]
    assert skipped[0]["callId"] == "c0"
    assert [event["ok"] for event in of_type(events, "tool.completed")] == [True, True]
    assert (workspace / "a.txt").read_text() == "A\n"
