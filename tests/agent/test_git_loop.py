"""git_status through the real turn loop, in both compositions: the model writes the file,
the loop decides git_status as a read, and the session's change is marked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agenttest import call, events_of, of_type, open_session, write_script
from gittest import git_env, init_repo, need_git

from ax_agent.loop import run_turn
from ax_agent.tools.registry import all_tools


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_the_model_sees_its_own_change_marked_and_decided_as_a_read(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    need_git()
    env = {**git_env(tmp_path / "home"), "AX_COMPOSE": mode}
    env["AX_STATE_DIR"] = os.environ["AX_STATE_DIR"]
    init_repo(workspace, env)
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("write_file", path="new.py", content="x = 1\n")]},
            {"toolCalls": [call("git_status", id="g1", view="changes")]},
            {"expect": "?? new.py  [this session]", "text": "done"},
        ],
    )
    session = open_session(workspace, script, tools=all_tools(), environ=env)
    result = run_turn(session, "go")
    session.end("done")
    assert (result.stop_reason, result.is_error) == ("end_turn", False)
    decided = [d for d in of_type(events_of(session), "policy.decision") if d["callId"] == "g1"]
    assert [(d["verdict"], d["class"], d["rule"]) for d in decided] == [
        ("allow", "observe", "git-read")
    ]
