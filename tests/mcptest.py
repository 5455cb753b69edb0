"""The official MCP SDK's stdio client on the installed ``ax-mcp``, as Claude Code or Codex
would run it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axtest import tool_path
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

Scenario = Callable[[ClientSession], Awaitable[Any]]


def run_session(workspace: Path, scenario: Scenario, timeout: float = 60) -> Any:
    params = StdioServerParameters(
        command=tool_path("mcp"),
        args=["-C", str(workspace)],
        env={"AX_STATE_DIR": os.environ["AX_STATE_DIR"], "PATH": os.environ.get("PATH", "")},
    )

    async def go() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "ax-mcp"
            return await asyncio.wait_for(scenario(session), timeout=timeout)

    return asyncio.run(go())


def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Awaitable[Any]:
    return session.call_tool(name, arguments)
