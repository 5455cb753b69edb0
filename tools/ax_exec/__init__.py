"""ax-exec: managed execution.

Timeouts, verified tree kill, secret-free environments and the Linux sandbox.

This module is the public face: other tools import only what it names.
``run_managed(spec, abort=..., on_output=...)`` runs one command and returns
its ExecOutcome; ``probe_sandbox()`` reports every sandbox backend (probed once
per process) and ``profile_status(profile, allow_net)`` what one profile enforces;
``start_service`` starts a long-lived child (an MCP server) under the same containment;
``launched_chromium`` runs the system Chromium that way and yields its CDP endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_exec.chromium import (
        CHROMIUM_PACKAGE,
        LaunchedChromium,
        chromium_unavailable,
        find_chromium,
        launched_chromium,
    )
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
    "CHROMIUM_PACKAGE": "ax_exec.chromium",
    "LaunchedChromium": "ax_exec.chromium",
    "chromium_unavailable": "ax_exec.chromium",
    "find_chromium": "ax_exec.chromium",
    "launched_chromium": "ax_exec.chromium",
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
    "CHROMIUM_PACKAGE",
    "AbortHook",
    "BackendReport",
    "CleanEnvironment",
    "ExecOutcome",
    "ExecSpec",
    "KillReport",
    "LaunchedChromium",
    "OutputHook",
    "SandboxProbe",
    "SandboxProfile",
    "SandboxStatus",
    "Service",
    "ServiceStop",
    "StreamCapture",
    "Termination",
    "chromium_unavailable",
    "clean_environment",
    "find_chromium",
    "launched_chromium",
    "probe_sandbox",
    "profile_status",
    "run_managed",
    "start_service",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
