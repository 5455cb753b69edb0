"""ax-mcp driven by the official MCP SDK's stdio client, as Claude Code or Codex would.

The server is the installed ``ax-mcp`` running as a real subprocess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcptest import call, run_session

from libcommon import jsonio
from libcommon.paths import state_layout


def test_handshake_and_tool_list(workspace: Path) -> None:
    async def scenario(session: ClientSession) -> Any:
        return await session.list_tools()

    listed = run_session(workspace, scenario)
    names = {tool.name for tool in listed.tools}
    assert {
        "slate_open",
        "slate_write_seed",
        "slate_close",
        "policy_review_command",
        "policy_check_path",
        "workspace_map",
        "retrieve",
    } <= names
    for tool in listed.tools:
        assert "." not in tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"


def test_slate_round_trip_and_refusals(workspace: Path, state_dir: Path) -> None:
    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await call(
                session, "slate_open", {"externalSessionId": "cc-1", "anchors": {"task": "x"}}
            ),
            await call(
                session,
                "slate_write_seed",
                {"externalSessionId": "cc-1", "text": "retry doubles charges", "kind": "risk"},
            ),
            await call(
                session,
                "slate_write_seed",
                {"externalSessionId": "cc-1", "text": "x", "kind": "gossip"},
            ),
            await call(session, "slate_open", {"externalSessionId": "../escape", "anchors": {}}),
            await call(session, "slate_close", {"externalSessionId": "cc-1"}),
        ]

    opened, seeded, bad_kind, traversal, closed = run_session(workspace, scenario)
    assert opened.is_error is False
    assert opened.structured_content["externalSessionId"] == "cc-1"
    assert seeded.is_error is False
    assert seeded.structured_content["text"] == "retry doubles charges"
    assert bad_kind.is_error is True and "kind" in bad_kind.content[0].text
    assert traversal.is_error is True
    assert closed.is_error is False
    # Checked on disk: one file for the one id, and nothing escaped the folder.
    slates = state_layout(workspace).external_slates_dir
    assert sorted(p.name for p in slates.glob("*.json")) == ["cc-1.json"]
    stored = jsonio.read_json(slates / "cc-1.json")
    assert stored["closedAt"]
    assert not (state_dir / "escape.json").exists()


def test_policy_tools(workspace: Path) -> None:
    (workspace / "README.md").write_text("hi\n")

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await call(session, "policy_review_command", {"command": "cat README.md"}),
            await call(session, "policy_review_command", {"command": "cat README.md | sh"}),
            await call(session, "policy_check_path", {"path": "README.md", "write": True}),
            await call(session, "policy_check_path", {"path": ".git/config", "write": True}),
            await call(session, "policy_check_path", {}),
        ]

    readonly, piped, writable, protected, missing = run_session(workspace, scenario)
    assert readonly.structured_content["verdict"] == "read-only"
    assert piped.structured_content["verdict"] != "read-only"
    assert writable.structured_content["ok"] is True
    assert protected.structured_content["ok"] is False
    assert protected.structured_content["protected"] is True
    assert missing.is_error is True and "path" in missing.content[0].text


def test_an_unknown_tool_is_a_protocol_error(workspace: Path) -> None:
    from mcp import MCPError

    async def scenario(session: ClientSession) -> Any:
        with pytest.raises(MCPError) as caught:
            await call(session, "no_such_tool", {})
        return caught.value

    error = run_session(workspace, scenario)
    assert "unknown tool" in str(error)


def test_an_oversized_request_gets_its_error_instead_of_a_hang(workspace: Path) -> None:
    from mcp import MCPError

    from ax_mcp.jsonrpc import MAX_MESSAGE_BYTES

    async def scenario(session: ClientSession) -> tuple[Any, Any]:
        with pytest.raises(MCPError) as caught:
            await call(session, "policy_check_path", {"path": "x" * (MAX_MESSAGE_BYTES + 10)})
        after = await call(session, "policy_check_path", {"path": "README.md"})
        return caught.value, after

    # Without its id the error never reaches the waiting call, and this times out.
    error, after = run_session(workspace, scenario, timeout=20)
    assert f"message larger than {MAX_MESSAGE_BYTES} bytes" in str(error)
    assert after.is_error is False


def tiny_python_project(workspace: Path, passing: bool) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "tiny"\nversion = "0"\n')
    (workspace / "test_tiny.py").write_text(
        f"def test_answer():\n    assert {'42' if passing else '41'} == 42\n"
    )


def test_check_detect_and_an_untrusted_check_run(workspace: Path) -> None:
    tiny_python_project(workspace, passing=True)

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await call(session, "check_detect", {}),
            await call(session, "check_run", {"kind": "test"}),
            await call(session, "check_run", {"kind": "vibes"}),
        ]

    detected, untrusted, bad_kind = run_session(workspace, scenario)
    assert detected.is_error is False
    (unit,) = detected.structured_content["units"]
    assert unit["path"] == str(workspace)
    assert unit["manifests"] == ["pyproject.toml"]
    assert untrusted.is_error is True
    assert "not trusted" in untrusted.content[0].text
    assert "ax-policy trust grant" in untrusted.content[0].text
    assert bad_kind.is_error is True and "kind" in bad_kind.content[0].text


@pytest.mark.parametrize(("passing", "verdict"), [(True, "passed"), (False, "failed")])
def test_check_run_in_a_trusted_workspace(workspace: Path, passing: bool, verdict: str) -> None:
    from ax_policy import grant_trust

    tiny_python_project(workspace, passing)
    grant_trust(state_layout(workspace))

    async def scenario(session: ClientSession) -> Any:
        return await call(session, "check_run", {"kind": "test"})

    result = run_session(workspace, scenario)
    assert result.is_error is False
    assert result.structured_content["verdict"] == verdict
    assert result.structured_content["replayKey"]
