"""A seat's mesh tools as model tools, when ax-agent runs as a seat of an ax-mesh.

The runner (``ax-mesh run``) starts ax-agent with the seat's token, lease generation and
name in its environment (``AX_MESH_TOKEN``, ``AX_MESH_LEASE``, ``AX_MESH_SEAT``); the
mesh is found where the runner found it (``AX_STATE_DIR``, ``AX_MESH_DSN``). Each tool
the seat may see (``ax_mesh.describe_tools``) becomes ``mesh_<name with underscores>``
(``mesh_memory_write``), the same names the fake harness calls.

Two authorities decide a call, never conflated: ax-policy decides it like every model
tool (its facts say it touches only ax's own state: the mesh is ax's), and the mesh
decides what the seat may do (its manifest, set by a person, and its execution lease),
checked again on every call: each call authenticates the token and the lease afresh, so
a runner fenced mid-turn fences the turn's calls too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from libcommon import jsonio
from libcommon.contracts import Contract

if TYPE_CHECKING:
    from .tools.base import ModelTool, ToolContext, ToolResult

TOKEN_VARIABLE = "AX_MESH_TOKEN"


class MeshArguments(Contract):
    """Whatever object the model sends: the mesh validates it against the tool's schema
    (the one the model was shown) and names any bad field."""

    model_config = ConfigDict(extra="allow", alias_generator=None)


def seat_tools(environ: Mapping[str, str]) -> list[ModelTool]:
    """The seat's mesh tools, or none when ax-agent does not run as a seat.

    A seat that cannot authenticate (a bad token, a fenced or expired lease) stops the
    start here, before anything is written: fail closed.
    """
    if not environ.get(TOKEN_VARIABLE):
        return []
    from ax_mesh import caller_from_env, describe_tools, open_mesh

    mesh = open_mesh(environ)
    try:
        caller = caller_from_env(mesh, environ)
        described = describe_tools(caller)
    finally:
        mesh.close()
    return [_model_tool(entry, environ) for entry in described]


def _model_tool(entry: dict[str, Any], environ: Mapping[str, str]) -> ModelTool:
    from ax_policy import ToolFacts

    from .providers.mesh_fake import mesh_tool
    from .tools.base import ModelTool

    name = str(entry["name"])
    model_name = mesh_tool(name)  # the one naming rule, shared with the fake harness

    def run(value: MeshArguments, ctx: ToolContext) -> ToolResult:
        return call(name, value.model_dump(mode="json", by_alias=False), environ)

    return ModelTool(
        model_name,
        f"[ax-mesh] {entry['description']}",
        MeshArguments,
        ToolFacts(name=model_name, internal=True),
        run,
        input_schema=dict(entry["arguments"]),
    )


def call(name: str, arguments: dict[str, Any], environ: Mapping[str, str]) -> ToolResult:
    """One mesh call as the seat, authenticated afresh; a refusal is an error result."""
    from ax_mesh import ToolError, call_tool, caller_from_env, open_mesh
    from libcommon.errors import Fenced, UsageError

    from .tools.base import ToolResult

    mesh = open_mesh(environ)
    try:
        try:
            caller = caller_from_env(mesh, environ)
            result = call_tool(mesh, caller, name, arguments)
        except ToolError as exc:
            return _error(name, exc.to_json(), exc.code)
        except Fenced as exc:
            return _error(name, {"error": {"code": "fenced", "message": exc.message}}, "fenced")
        except UsageError as exc:
            body = {"error": {"code": "invalid", "message": exc.message, "hint": exc.hint}}
            return _error(name, body, "invalid")
    finally:
        mesh.close()
    return ToolResult(jsonio.dumps(result).decode(), summary=f"mesh {name}: ok")


def _error(name: str, body: dict[str, Any], code: str) -> ToolResult:
    from .tools.base import ToolResult

    return ToolResult(jsonio.dumps(body).decode(), is_error=True, summary=f"mesh {name}: {code}")
