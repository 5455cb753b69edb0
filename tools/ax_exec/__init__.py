"""ax-exec: managed execution.

Timeouts, verified tree kill, secret-free environments and the Linux sandbox.

This module is the public face: other tools import only what it names.
``run_managed(spec, abort=..., on_output=...)`` runs one command and returns
its ExecOutcome; ``probe_sandbox()`` reports every sandbox backend (probed once
per process) and ``profile_status(profile, allow_net)`` what one profile enforces;
``start_service`` starts a long-lived child (an MCP server) under the same containment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_exec.environment import CleanEnvironment, clean_environment
    from ax_exec.models import (
        BackendReport,
        ExecOutcome,
        ExecSpec,
        KillReport,
        SandboxProbe,
        SandboxProfile,
        SandboxStatus,
        StreamCapture,
        Termination,
    )
    from ax_exec.run import AbortHook, OutputHook, run_managed
    from ax_exec.sandbox import probe_sandbox, profile_status
    from ax_exec.service import Service, ServiceStop, start_service

_MODULE_OF = {
    "CleanEnvironment": "ax_exec.environment",
    "clean_environment": "ax_exec.environment",
    "BackendReport": "ax_exec.models",
    "ExecOutcome": "ax_exec.models",
    "ExecSpec": "ax_exec.models",
    "KillReport": "ax_exec.models",
    "SandboxProbe": "ax_exec.models",
    "SandboxProfile": "ax_exec.models",
    "SandboxStatus": "ax_exec.models",
    "StreamCapture": "ax_exec.models",
    "Termination": "ax_exec.models",
    "AbortHook": "ax_exec.run",
    "OutputHook": "ax_exec.run",
    "run_managed": "ax_exec.run",
    "probe_sandbox": "ax_exec.sandbox",
    "profile_status": "ax_exec.sandbox",
    "Service": "ax_exec.service",
    "ServiceStop": "ax_exec.service",
    "start_service": "ax_exec.service",
}

__all__ = [
    "AbortHook",
    "BackendReport",
    "CleanEnvironment",
    "ExecOutcome",
    "ExecSpec",
    "KillReport",
    "OutputHook",
    "SandboxProbe",
    "SandboxProfile",
    "SandboxStatus",
    "Service",
    "ServiceStop",
    "StreamCapture",
    "Termination",
    "clean_environment",
    "probe_sandbox",
    "profile_status",
    "run_managed",
    "start_service",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
