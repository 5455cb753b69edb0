"""ax-mcp started as a seat: the seat's mesh tools over MCP, driven by the official MCP SDK's
stdio client against the installed ax-mcp, on both backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from axtest import tool_path
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mesh.meshtest import Harness, SeatHandle


def _session(env: dict[str, str], workspace: Path, seat: SeatHandle, scenario: Any) -> Any:
    params = StdioServerParameters(
        command=tool_path("mcp"),
        args=["-C", str(workspace)],
        env={
            **env,
            "AX_MESH_TOKEN": seat.token,
            "AX_MESH_LEASE": str(seat.generation),
            "AX_MESH_SEAT": seat.name,
        },
    )

    async def go() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await asyncio.wait_for(scenario(session), timeout=60)

    return asyncio.run(go())


def test_a_seat_s_tools_listed_and_called_over_mcp(
    mesh: Harness, backend_env: dict[str, str], workspace: Path
) -> None:
    eng = mesh.seat("eng", write=("team",), read=("docs",))

    async def scenario(session: ClientSession) -> Any:
        listed = await session.list_tools()
        wrote = await session.call_tool(
            "memory_write",
            {"store": "team", "path": "notes/a.md", "text": "retry twice", "expected_revision": 0},
        )
        again = await session.call_tool(
            "memory_write",
            {"store": "team", "path": "notes/a.md", "text": "x", "expected_revision": 0},
        )
        refused = await session.call_tool(
            "memory_write", {"store": "docs", "path": "a.md", "text": "x"}
        )
        hidden = await session.call_tool("memory_read", {"store": "secret", "path": "a.md"})
        bad = await session.call_tool("memory_write", {"store": "team", "path": "/abs"})
        return listed, wrote, again, refused, hidden, bad

    listed, wrote, again, refused, hidden, bad = _session(backend_env, workspace, eng, scenario)
    names = {tool.name for tool in listed.tools}
    assert {
        "memory_write",
        "memory_search",
        "work_create",
        "automations_create",
        "clock_now",
    } <= names
    # No route, no connection: those tools are not this seat's to see.
    assert "messages_send" not in names and "connections_invoke" not in names
    assert not any("." in name for name in names)
    read_tool = next(t for t in listed.tools if t.name == "memory_read")
    assert read_tool.annotations is not None and read_tool.annotations.read_only_hint is True
    assert not wrote.is_error and wrote.structured_content["revision"] == 1
    assert again.is_error and again.content[0].text.startswith("conflict:")
    assert refused.is_error and refused.content[0].text.startswith("forbidden:")
    assert hidden.is_error and hidden.content[0].text.startswith("not_found:")
    assert bad.is_error and "path" in bad.content[0].text
    record = mesh.mesh.store.get_record("team", path="notes/a.md")
    assert record is not None and record.author == "eng"


def test_a_fenced_seat_is_fenced_over_mcp(
    mesh: Harness, backend_env: dict[str, str], workspace: Path
) -> None:
    eng = mesh.seat("eng", write=("team",))
    stale = SeatHandle(mesh, "eng", eng.token, eng.generation)

    async def scenario(session: ClientSession) -> Any:
        eng.relapse()  # a newer runner takes the seat while the server runs
        return await session.call_tool(
            "memory_write", {"store": "team", "path": "a.md", "text": "late"}
        )

    result = _session(backend_env, workspace, stale, scenario)
    assert result.is_error and result.content[0].text.startswith("fenced:")
    assert mesh.mesh.store.get_record("team", path="a.md") is None


def test_a_token_that_does_not_authenticate_stops_the_server(
    mesh: Harness, backend_env: dict[str, str], workspace: Path
) -> None:
    import subprocess

    eng = mesh.seat("eng")
    done = subprocess.run(
        [tool_path("mcp"), "-C", str(workspace)],
        input="",
        capture_output=True,
        text=True,
        env={**backend_env, "AX_MESH_TOKEN": "axm_wrong", "AX_MESH_LEASE": str(eng.generation)},
        timeout=60,
    )
    assert done.returncode == 1 and "seat token is not valid" in done.stderr
    assert json.dumps(done.stdout) == '""'
