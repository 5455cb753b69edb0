"""Choosing the seam: in-process by default, real processes under ``AX_COMPOSE=process``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libcommon.errors import UsageError
from libcommon.paths import StateLayout

from . import Seam

COMPOSE_VAR = "AX_COMPOSE"
# What every command and check the agent runs sees on top of the user's environment.
# Python caches bytecode keyed by the source's whole-second mtime and its size, so a
# same-size edit in the same second as the last run would test the old code; a check
# that passed on stale bytecode would be reported CHECKED. No cache written, no risk.
CHILD_ENVIRONMENT = {"PYTHONDONTWRITEBYTECODE": "1"}


def make_seam(
    layout: StateLayout, session_id: str, environ: Mapping[str, str], policy_config: Any
) -> Seam:
    """The seam ``AX_COMPOSE`` asks for: ``inprocess`` (default) or ``process``."""
    mode = environ.get(COMPOSE_VAR, "inprocess") or "inprocess"
    environ = {**environ, **CHILD_ENVIRONMENT}
    if mode == "process":
        from .process import ProcessSeam

        return ProcessSeam(layout, session_id, environ)
    if mode == "inprocess":
        from .local import LocalSeam

        return LocalSeam(layout, session_id, environ, policy_config)
    raise UsageError(
        f"{COMPOSE_VAR}={mode!r} is not a composition mode", hint="inprocess or process"
    )
