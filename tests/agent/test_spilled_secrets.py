"""A session that reads secrets: nothing under the state root holds them afterwards.

The command's whole output is spilled by ax-exec, saved for recall by the loop, logged,
archived and put on the trail; each of those is written redacted, and so is what
recall_step answers with.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from agenttest import ScriptedApprover, call, open_session, real_tools, write_script
from axtest import PLANTED_SECRETS, files_holding_secrets, secrets_file

from ax_agent.loop import run_turn
from ax_agent.providers import ToolResultBlock

PYPROJ = Path(__file__).resolve().parent.parent / "fixtures" / "check" / "pyproj"


def test_secrets_read_by_a_session_are_redacted_everywhere_it_writes(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    shutil.copytree(PYPROJ, workspace, dirs_exist_ok=True)
    (workspace / ".env").write_text(secrets_file(filler_bytes=200_000))
    (workspace / "tests" / "test_settings.py").write_text(
        "from pathlib import Path\n\n\n"
        "def test_prints_the_settings() -> None:\n"
        "    print((Path(__file__).parent.parent / '.env').read_text())\n"
        "    assert False\n"
    )
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("run_command", command="cat .env")]},
            {"toolCalls": [call("run_check", kind="test")]},
            {"toolCalls": [call("recall_step", step=1, page=1)]},
            {"text": "done"},
        ],
    )
    approver = ScriptedApprover(["once", "once"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "read the settings")
    session.end("done")

    results = [
        block.content
        for message in session.messages
        if message.role == "user"
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]
    assert len(results) == 3
    command, check, recalled = (str(content) for content in results)
    assert "spill file " in command and "spill file " in check, (command, check)
    assert "[REDACTED:anthropic-key]" in recalled
    assert not any(value in recalled for value in PLANTED_SECRETS.values())
    spills = list(session.layout.objects_dir.iterdir())
    assert len(spills) == 2
    assert files_holding_secrets(state_dir) == []
