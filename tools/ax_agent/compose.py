"""Choosing the seam: in-process by default, real processes under ``AX_COMPOSE=process``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libcommon.errors import UsageError
from libcommon.paths import StateLayout

from .seam import Seam

COMPOSE_VAR = "AX_COMPOSE"


def make_seam(
    layout: StateLayout, session_id: str, environ: Mapping[str, str], policy_config: Any
) -> Seam:
    """The seam ``AX_COMPOSE`` asks for: ``inprocess`` (default) or ``process``."""
    mode = environ.get(COMPOSE_VAR, "inprocess") or "inprocess"
    if mode == "process":
        from .seam_process import ProcessSeam

        return ProcessSeam(layout, session_id, environ)
    if mode == "inprocess":
        from .seam_local import LocalSeam

        return LocalSeam(layout, session_id, environ, policy_config)
    raise UsageError(
        f"{COMPOSE_VAR}={mode!r} is not a composition mode", hint="inprocess or process"
    )
