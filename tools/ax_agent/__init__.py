"""ax-agent: the coding agent: the turn loop, providers, model-facing tools, approvals and resume.

This module is the public face: other tools import only what it names. No ax
tool composes ax-agent today; a program drives it with ``start_session`` and
``run_turn`` (see docs/ax-agent.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ax_agent.loop import TurnResult, run_turn
    from ax_agent.session import Session, StartOptions, start_session

_EXPORTS = {
    "TurnResult": "ax_agent.loop",
    "run_turn": "ax_agent.loop",
    "Session": "ax_agent.session",
    "StartOptions": "ax_agent.session",
    "start_session": "ax_agent.session",
}

__all__ = ["Session", "StartOptions", "TurnResult", "run_turn", "start_session"]


def __getattr__(name: str) -> Any:
    import importlib

    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ax_agent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
