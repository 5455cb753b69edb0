"""``start``: resolve the script, hand the server to a detached supervisor, wait for a verdict.

The CLI never owns the server. It writes the registry record, starts the
supervisor (which detaches itself), and waits until the supervisor records
``ready`` or ``failed``. If the CLI dies meanwhile, the supervisor carries on
and the preview stays visible to ``list``, ``stop`` and ``sweep``.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import ax_preview.proc as proc
import ax_preview.registry as registry
from ax_preview.models import Identity, PreviewRecord, StartResult
from ax_preview.scripts import resolve_script
from ax_preview.supervisor import LOG_TAIL_BYTES, log_tail
from libcommon import clock
from libcommon.errors import UsageError
from libcommon.paths import StateLayout, check_session_id, is_within, state_layout

DEFAULT_TTL_S = 30 * 60.0
MAX_TTL_S = 24 * 3600.0
DEFAULT_LOG_CAP_BYTES = 16 * 1024 * 1024
MIN_LOG_CAP_BYTES = 4096
MAX_LOG_CAP_BYTES = 1024 * 1024 * 1024
DEFAULT_READY_TIMEOUT_S = 30.0
MAX_READY_TIMEOUT_S = 600.0
# How long past the ready timeout start waits for the supervisor's verdict:
# its own start-up, one last probe, and the kill of a server that failed.
VERDICT_GRACE_S = 15.0
WAIT_POLL_S = 0.05
MIN_PORT = 1
MAX_PORT = 65535

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")
_SIZE = re.compile(r"^(\d+)([KMG]i?B?|B)?$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_duration(text: str, what: str) -> float:
    """``90``, ``90s``, ``10m``, ``2h``, ``1h30m`` -> seconds."""
    match = _DURATION.fullmatch(text.strip())
    if not text.strip() or match is None or not any(match.groups()):
        raise UsageError(f"{what} {text!r} is not a duration", hint="use e.g. 90s, 10m, 2h, 1h30m")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0)


def parse_size(text: str, what: str) -> int:
    """``65536``, ``64K``, ``16M``, ``1G`` (binary units) -> bytes."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"{what} {text!r} is not a size", hint="use bytes or e.g. 64K, 16M, 1G")
    unit = (match.group(2) or "")[:1].upper()
    return int(match.group(1)) * _SIZE_UNITS[unit]


@dataclass(frozen=True)
class StartRequest:
    workspace: Path | None = None
    project: str | None = None
    script: str | None = None
    ttl_s: float = DEFAULT_TTL_S
    log_cap_bytes: int = DEFAULT_LOG_CAP_BYTES
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    session: str | None = None
    # --port: probe this port too (still verified by ownership), and tell the server PORT=N.
    port: int | None = None

    def check(self) -> None:
        if self.port is not None and not MIN_PORT <= self.port <= MAX_PORT:
            raise UsageError(
                f"--port {self.port} is not a TCP port",
                hint=f"use a number from {MIN_PORT} to {MAX_PORT}",
            )
        if not 0 < self.ttl_s <= MAX_TTL_S:
            raise UsageError(f"--ttl must be more than 0 and at most {MAX_TTL_S:g}s")
        if not MIN_LOG_CAP_BYTES <= self.log_cap_bytes <= MAX_LOG_CAP_BYTES:
            raise UsageError(
                f"--log-cap must be between {MIN_LOG_CAP_BYTES} and {MAX_LOG_CAP_BYTES} bytes"
            )
        if not 0 < self.ready_timeout_s <= MAX_READY_TIMEOUT_S:
            raise UsageError(
                f"--ready-timeout must be more than 0 and at most {MAX_READY_TIMEOUT_S:g}s"
            )
        if self.session is not None:
            check_session_id(self.session)


def project_dir(layout: StateLayout, project: str | None) -> Path:
    """The unit folder inside the workspace (default: the workspace itself)."""
    if not project:
        return layout.workspace
    target = Path(os.path.realpath(layout.workspace / project))
    if not is_within(target, layout.workspace):
        raise UsageError(f"--project {project!r} is outside the workspace {layout.workspace}")
    if not target.is_dir():
        raise UsageError(f"--project {project!r} is not a folder in the workspace")
    return target


def start_preview(request: StartRequest) -> StartResult:
    """Start a preview and return once it is ready or has failed (and been stopped)."""
    request.check()
    layout = state_layout(request.workspace)
    unit = project_dir(layout, request.project)
    script = resolve_script(unit, request.script, layout.workspace)
    previews = layout.previews_dir
    preview_id = clock.new_id("pv")
    log_file = registry.log_path(previews, preview_id)
    started = clock.now()
    record = PreviewRecord(
        id=preview_id,
        workspace=str(layout.workspace),
        project=os.path.relpath(unit, layout.workspace),
        script=script.name,
        source=script.source,
        command=script.argv,
        cwd=str(script.cwd),
        command_token=secrets.token_hex(16),
        session=request.session,
        ttl_s=request.ttl_s,
        log_cap_bytes=request.log_cap_bytes,
        ready_timeout_s=request.ready_timeout_s,
        log_path=str(log_file),
        port_hint=request.port,
        environment=None if script.environment is None else str(script.environment),
        state="starting",
        launcher=Identity(pid=os.getpid(), start_time=_own_start_time()),
        started_at=clock.timestamp(started),
        expires_at=clock.timestamp(started + timedelta(seconds=request.ttl_s)),
    )
    with registry.locked(previews):
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        registry.write_record(previews, record)
    try:
        launcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ax_preview.supervisor",
                "--state-root",
                str(layout.root),
                "--workspace",
                str(layout.workspace),
                "--id",
                preview_id,
            ],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
        )
    finally:
        os.close(fd)
    # The launcher forks the supervisor and exits at once; collect it so no zombie stays.
    if launcher.wait() != 0:
        failed = registry.update_record(
            previews,
            preview_id,
            lambda current: current.model_copy(
                update={"state": "failed", "reason": "supervisor-spawn-error"}
            ),
        )
        return result_of(failed)
    return _await_verdict(previews, preview_id, request.ready_timeout_s + VERDICT_GRACE_S)


def _own_start_time() -> int:
    info = proc.read_proc(os.getpid())
    assert info is not None  # this process is alive
    return info.start_time


def _await_verdict(previews: Path, preview_id: str, wait_s: float) -> StartResult:
    deadline = time.monotonic() + wait_s
    while True:
        record = registry.load(previews, preview_id)
        if record.state != "starting":
            return result_of(record)
        supervisor = record.supervisor
        lost = supervisor is not None and not proc.is_alive(supervisor.pid, supervisor.start_time)
        if lost or time.monotonic() >= deadline:
            # The server (if any) is left to a later sweep: without a live
            # supervisor we cannot be sure what still belongs to this preview.
            reason = "supervisor-lost" if lost else "supervisor-unresponsive"
            return result_of(record.model_copy(update={"state": "failed", "reason": reason}))
        time.sleep(WAIT_POLL_S)


def result_of(record: PreviewRecord) -> StartResult:
    ready = record.state == "ready"
    owner = record.ownership
    return StartResult(
        id=record.id,
        pid=record.server.pid if record.server else None,
        url=record.url if ready else None,
        state="ready" if ready else "failed",
        reason=None if ready else record.reason,
        log_path=record.log_path,
        ttl=record.ttl_s,
        started_at=record.started_at,
        note=None if owner is None else owner.note,
        ownership=owner,
        hint=None if ready else record.hint,
        environment=record.environment,
        log_tail=None if ready else log_tail(Path(record.log_path), LOG_TAIL_BYTES),
    )
