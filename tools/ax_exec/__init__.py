"""ax-exec: managed execution.

Timeouts, verified tree kill, secret-free environments and the Linux sandbox.

This module is the public face: other tools import only what it names.
``run_managed(spec, abort=..., on_output=...)`` runs one command and returns
its ExecOutcome; ``probe_sandbox()`` reports every sandbox backend (probed once
per process) and ``profile_status(profile, allow_net)`` what one profile enforces.
"""

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

__all__ = [
    "AbortHook",
    "BackendReport",
    "ExecOutcome",
    "ExecSpec",
    "KillReport",
    "OutputHook",
    "SandboxProbe",
    "SandboxProfile",
    "SandboxStatus",
    "StreamCapture",
    "Termination",
    "probe_sandbox",
    "profile_status",
    "run_managed",
]
