"""ax-mesh: memory stores, work items and messages shared by several agents (seats).

This module is the public face: other tools import only what it names, e.g.
``from ax_mesh import open_mesh, authenticate, call_tool, describe_tools`` (ax-mcp
serves a seat's tools with them). Names load on first use so importing stays cheap.

The backend interface is ``Store`` (``ax_mesh.store``'s docstring says what a backend
guarantees); the catalogue is ``TOOLS`` and ``call_tool`` (``ax_mesh.catalog``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_mesh.catalog import TOOLS, Tool, call_tool, describe_tools, visible_tools
    from ax_mesh.context import Caller
    from ax_mesh.delivery import Turn, fail_turn, finish_turn, next_turn
    from ax_mesh.errors import ToolError
    from ax_mesh.mesh import (
        DSN_VARIABLE,
        LEASE_VARIABLE,
        SEAT_VARIABLE,
        TOKEN_VARIABLE,
        Mesh,
        acquire_lease,
        add_seat,
        authenticate,
        caller_from_env,
        grant,
        open_mesh,
        renew_lease,
    )
    from ax_mesh.models import Manifest, StoreGrant
    from ax_mesh.store import Actor, Store

_EXPORTS = {
    "ax_mesh.catalog": ["TOOLS", "Tool", "call_tool", "describe_tools", "visible_tools"],
    "ax_mesh.context": ["Caller"],
    "ax_mesh.delivery": ["Turn", "fail_turn", "finish_turn", "next_turn"],
    "ax_mesh.errors": ["ToolError"],
    "ax_mesh.mesh": [
        "DSN_VARIABLE",
        "LEASE_VARIABLE",
        "SEAT_VARIABLE",
        "TOKEN_VARIABLE",
        "Mesh",
        "acquire_lease",
        "add_seat",
        "authenticate",
        "caller_from_env",
        "grant",
        "next_turn",
        "open_mesh",
        "renew_lease",
    ],
    "ax_mesh.models": ["Manifest", "StoreGrant"],
    "ax_mesh.store": ["Actor", "Store"],
}

__all__ = [
    "DSN_VARIABLE",
    "LEASE_VARIABLE",
    "SEAT_VARIABLE",
    "TOKEN_VARIABLE",
    "TOOLS",
    "Actor",
    "Caller",
    "Manifest",
    "Mesh",
    "Store",
    "StoreGrant",
    "Tool",
    "ToolError",
    "Turn",
    "acquire_lease",
    "add_seat",
    "authenticate",
    "call_tool",
    "caller_from_env",
    "describe_tools",
    "fail_turn",
    "finish_turn",
    "grant",
    "next_turn",
    "open_mesh",
    "renew_lease",
    "visible_tools",
]
__getattr__ = lazy_getattr(__name__, {n: m for m, ns in _EXPORTS.items() for n in ns})
