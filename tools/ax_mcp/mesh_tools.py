"""A seat's mesh tools over MCP, when ax-mcp is started as a seat of an ax-mesh.

With a seat's token in the environment (``AX_MESH_TOKEN``, with ``AX_MESH_LEASE`` and
optionally ``AX_MESH_SEAT``; the mesh where ``AX_STATE_DIR`` / ``AX_MESH_DSN`` say),
ax-mcp serves the tools that seat may see, dots as underscores (``memory_search``), each
with the mesh's own argument model. The mesh decides every call: the token and the
lease are authenticated afresh on each one, and the manifest is checked, exactly as on
the CLI and over HTTP (``ax_mesh.call_tool`` is the one path). A seat that cannot
authenticate stops the server's start (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ax_mcp.server import Tool
from libcommon.errors import AxError

TOKEN_VARIABLE = "AX_MESH_TOKEN"
# The mesh tools that change nothing (MCP's readOnlyHint); any other may.
READ_ONLY = frozenset(
    {
        "self",
        "status",
        "memory.stores",
        "memory.list",
        "memory.read",
        "memory.search",
        "memory.history",
        "work.get",
        "work.list",
        "messages.recipients",
        "messages.history",
        "automations.list",
        "clock.now",
        "connections.list",
        "operations.get",
    }
)


class MeshResult(BaseModel):
    """A mesh tool's JSON result, as the mesh returned it."""

    model_config = ConfigDict(extra="allow")


def mcp_name(name: str) -> str:
    return name.replace(".", "_")


def mesh_tools(environ: Mapping[str, str]) -> list[Tool]:
    """The seat's tools, or none when ax-mcp is not started as a seat."""
    if not environ.get(TOKEN_VARIABLE):
        return []
    from ax_mesh import caller_from_env, open_mesh, visible_tools

    mesh = open_mesh(environ)
    try:
        caller = caller_from_env(mesh, environ)
        visible = visible_tools(caller)
    except BaseException:
        mesh.close()
        raise
    return [
        Tool(
            mcp_name(tool.name),
            f"[ax-mesh, seat {caller.name}] {tool.description}",
            tool.args,
            MeshResult,
            _handler(mesh, tool.name, environ),
            tool.name in READ_ONLY,
        )
        for tool in visible
    ]


def _handler(mesh: Any, name: str, environ: Mapping[str, str]) -> Any:
    def handle(request: BaseModel) -> MeshResult:
        from ax_mesh import ToolError, call_tool, caller_from_env
        from libcommon.errors import Fenced

        # Only the fields the client set: for automations.update, null removes a limit and
        # an absent field keeps it.
        arguments = request.model_dump(mode="json", by_alias=True, exclude_unset=True)
        try:
            caller = caller_from_env(mesh, environ)
            return MeshResult.model_validate(call_tool(mesh, caller, name, arguments))
        except ToolError as exc:
            raise AxError(f"{exc.code}: {exc.message}", exc.hint) from None
        except Fenced as exc:
            raise AxError(f"fenced: {exc.message}", exc.hint) from None

    return handle
