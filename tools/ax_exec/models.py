"""The JSON contracts of ax-exec: what a run asks for and what it returns."""

from __future__ import annotations

import signal
from typing import Literal

from pydantic import Field, model_validator

from ax_exec.capture import DEFAULT_MAX_OUTPUT_BYTES, MAX_MAX_OUTPUT_BYTES, MIN_MAX_OUTPUT_BYTES
from libcommon.contracts import Contract
from libcommon.errors import ExitStatus

DEFAULT_TIMEOUT_S = 600.0
MAX_TIMEOUT_S = 24 * 3600.0

Termination = Literal["exited", "timeout", "aborted", "spawn-error"]
SandboxProfile = Literal["none", "read-only", "workspace-write"]
BackendName = Literal["landlock", "none"]
NetworkMethod = Literal["netns", "landlock-tcp", "none"]


class ExecSpec(Contract):
    """One command to run. Exactly one of ``argv`` and ``shell``."""

    argv: list[str] | None = Field(default=None, min_length=1)
    shell: str | None = Field(default=None, min_length=1)
    cwd: str | None = None
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    sandbox: SandboxProfile = "none"
    # The folder workspace-write may change (default: cwd). Its .git and .ax stay read-only.
    workspace: str | None = None
    allow_net: bool = False
    max_output_bytes: int = Field(
        default=DEFAULT_MAX_OUTPUT_BYTES, ge=MIN_MAX_OUTPUT_BYTES, le=MAX_MAX_OUTPUT_BYTES
    )
    # Where the combined output is kept, named by its sha256, when a stream was truncated.
    spill_dir: str | None = None
    # Set in the child after the secret filter (not filtered: the caller chose them).
    env: dict[str, str] = Field(default_factory=dict)
    # Extra case-insensitive glob patterns of variable names to remove.
    env_deny_patterns: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_command(self) -> ExecSpec:
        if (self.argv is None) == (self.shell is None):
            raise ValueError("give exactly one of argv and shell")
        return self


class StreamCapture(Contract):
    head: str
    tail: str
    bytes: int
    truncated: bool


class KillReport(Contract):
    attempted: bool
    verified: bool
    # Processes of the run found alive when the kill began (the child's leftovers
    # after a normal exit, or the whole tree on timeout/abort).
    leftovers: int
    # Pids still alive after the kill; empty when verified.
    survivors: list[int] = Field(default_factory=list)


class SandboxStatus(Contract):
    backend: BackendName
    profile: SandboxProfile
    enforced: bool
    abi: int | None = None
    network: NetworkMethod = "none"
    # Every mount but the writable roots read-only in a private mount namespace (what
    # confines chmod, chown, utime and setxattr outside them).
    read_only_mounts: bool = False
    confines: list[str] = Field(default_factory=list)
    does_not_confine: list[str] = Field(default_factory=list)
    reason: str | None = None


class ExecOutcome(Contract):
    run_id: str
    argv: list[str]
    cwd: str
    termination: Termination
    exit_code: int | None
    signal: str | None = None
    duration_ms: int
    stdout: StreamCapture
    stderr: StreamCapture
    kill: KillReport
    sandbox: SandboxStatus
    spill_path: str | None = None
    # The spill holds the combined output only up to its cap.
    spill_complete: bool | None = None
    # True when the pipes were still open (held by an unfound process) after the drain window.
    drain_timed_out: bool = False
    env_removed: list[str] = Field(default_factory=list)
    error: str | None = None

    @model_validator(mode="after")
    def _exit_code_only_when_exited(self) -> ExecOutcome:
        if self.exit_code is not None and self.termination != "exited":
            raise ValueError("only an exited command carries an exit code")
        return self

    @property
    def passed(self) -> bool:
        return self.termination == "exited" and self.exit_code == 0

    @property
    def shell_status(self) -> int:
        """The status ``ax-exec run`` exits with: the child's, as a shell reports it
        (128+N for death by signal N), or 124 timeout, 130 aborted, 127 spawn error."""
        if self.termination == "timeout":
            return ExitStatus.TIMEOUT
        if self.termination == "aborted":
            return ExitStatus.ABORTED
        if self.termination == "spawn-error":
            return ExitStatus.SPAWN_ERROR
        if self.exit_code is not None:
            return self.exit_code
        if self.signal is not None and self.signal in signal.Signals.__members__:
            return 128 + int(signal.Signals[self.signal])
        return ExitStatus.FAILED


class BackendReport(Contract):
    backend: BackendName
    available: bool
    enforced: bool
    abi: int | None = None
    reason: str | None = None
    profiles: list[SandboxStatus] = Field(default_factory=list)


class SandboxProbe(Contract):
    selected: BackendName
    # The effective uid the probe ran as: what it found holds for that user.
    uid: int | None = None
    backends: list[BackendReport]
