"""The facts each tool declares, fed to the real ax-policy engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent.tools.toolkit import ENFORCED

from ax_agent.tools.registry import get_tool
from ax_policy import Decision, DecisionContext, SandboxStatus, decide


def decision(
    workspace: Path,
    state_dir: Path,
    tool: str,
    raw: dict[str, Any],
    sandbox: SandboxStatus | None = None,
) -> Decision:
    model_tool = get_tool(tool)
    assert model_tool is not None
    tool_input = model_tool.input_model.model_validate(raw)
    context = DecisionContext(
        workspace=workspace, sandbox=sandbox or SandboxStatus(), state_dir=state_dir
    )
    return decide(model_tool.facts, tool_input, context)


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("read_file", {"path": "src/app.py"}),
        ("list_dir", {}),
        ("list_dir", {"path": "src"}),
        ("glob", {"pattern": "**/*.py"}),
        ("grep", {"pattern": "x", "path": "src"}),
    ],
)
def test_reads_inside_the_workspace_are_allowed(
    workspace: Path, state_dir: Path, tool: str, raw: dict[str, Any]
) -> None:
    made = decision(workspace, state_dir, tool, raw)
    assert (made.verdict, made.rule) == ("allow", "read-inside-workspace")
    assert made.paths[0].raw == raw.get("path", ".")
    assert not made.requires_snapshot


def test_sensitive_reads_ask(workspace: Path, state_dir: Path) -> None:
    secret = decision(workspace, state_dir, "read_file", {"path": ".env"})
    assert (secret.verdict, secret.rule) == ("ask", "read-sensitive")
    outside = decision(workspace, state_dir, "grep", {"pattern": "x", "path": "/etc"})
    assert (outside.verdict, outside.rule) == ("ask", "read-sensitive")


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("write_file", {"content": "x"}),
        ("edit_file", {"old_string": "a", "new_string": "b"}),
    ],
)
def test_writes(workspace: Path, state_dir: Path, tool: str, extra: dict[str, Any]) -> None:
    inside = decision(workspace, state_dir, tool, {"path": "src/app.py", **extra})
    assert (inside.verdict, inside.rule) == ("allow", "write-inside-workspace")
    assert inside.requires_snapshot
    git = decision(workspace, state_dir, tool, {"path": ".git/config", **extra})
    assert (git.verdict, git.rule) == ("deny", "write-protected")
    outside = decision(workspace, state_dir, tool, {"path": "../elsewhere.py", **extra})
    assert (outside.verdict, outside.rule) == ("deny", "write-outside-workspace")


def test_commands(workspace: Path, state_dir: Path) -> None:
    ls = decision(workspace, state_dir, "run_command", {"command": "ls"})
    assert (ls.verdict, ls.rule) == ("ask", "command-read-only-unsandboxed")
    assert ls.exec_boundary == "unsandboxed"
    boxed = decision(workspace, state_dir, "run_command", {"command": "ls"}, ENFORCED)
    assert (boxed.verdict, boxed.rule) == ("allow", "command-read-only-sandboxed")
    assert (boxed.exec_boundary, boxed.sandbox_profile) == ("sandboxed", "read-only")
    rm = decision(workspace, state_dir, "run_command", {"command": "rm -rf x"}, ENFORCED)
    assert (rm.verdict, rm.rule) == ("ask", "command-ask")
    assert rm.exec_boundary == "unsandboxed"
    away = decision(workspace, state_dir, "run_command", {"command": "ls", "cwd": ".."})
    assert (away.verdict, away.rule) == ("deny", "command-cwd-outside")


def test_checks(workspace: Path, state_dir: Path) -> None:
    bare = decision(workspace, state_dir, "run_check", {"kind": "test"})
    assert (bare.verdict, bare.rule, bare.exec_boundary) == ("ask", "check-ask", "unsandboxed")
    boxed = decision(workspace, state_dir, "run_check", {"kind": "lint"}, ENFORCED)
    assert (boxed.verdict, boxed.rule) == ("allow", "check-sandboxed")
    assert boxed.sandbox_profile == "workspace-write"


@pytest.mark.parametrize(
    ("tool", "raw"),
    [("slate_note", {"key": "plan", "text": "x"}), ("recall_step", {"step": 3})],
)
def test_slate_tools_touch_only_ax_state(
    workspace: Path, state_dir: Path, tool: str, raw: dict[str, Any]
) -> None:
    made = decision(workspace, state_dir, tool, raw)
    assert (made.verdict, made.rule, made.decision_class) == ("allow", "internal", "observe")
