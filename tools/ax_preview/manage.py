"""``list``, ``stop``, ``logs`` and ``sweep``: living with previews after start.

Nothing read from the registry is trusted about the present: every verb checks
the recorded processes against /proc (pid *and* start time, plus the token for
the server) before it reports them alive or signals them. When identity is
not positive, the process is left alone and the reason is reported.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import ax_preview.proc as proc
import ax_preview.readiness as readiness
import ax_preview.registry as registry
from ax_preview.models import (
    Identity,
    LiveState,
    Ownership,
    PreviewRecord,
    PreviewRow,
    StopResult,
    SweepItem,
    SweepReport,
)
from libcommon import clock
from libcommon.ansi import strip_ansi
from libcommon.errors import Fenced, OperationFailed
from libcommon.paths import state_layout
from libcommon.redact import redact

STOP_WAIT_S = proc.KILL_GRACE_S + 10.0
FOLLOW_POLL_S = 0.2
LOGS_READ_MAX_BYTES = 1024 * 1024


def _previews_dir(workspace: Path | None) -> Path:
    return state_layout(workspace).previews_dir


def _alive(identity: Identity | None) -> bool:
    return identity is not None and proc.is_alive(identity.pid, identity.start_time)


def server_is_ours(record: PreviewRecord) -> bool:
    """The recorded server is alive *and* still carries this preview's token."""
    server = record.server
    return (
        server is not None
        and proc.is_alive(server.pid, server.start_time)
        and proc.has_token(server.pid, record.command_token)
    )


def _tree_pids(record: PreviewRecord) -> list[int]:
    """The live processes of a supervised preview: the supervisor's descendants and the server's."""
    found: set[int] = set()
    if record.supervisor is not None:
        found.update(info.pid for info in proc.descendants(record.supervisor.pid) if info.alive)
    if record.server is not None:
        server = record.server
        tree = proc.server_tree(server.pid, server.start_time, record.command_token)
        found.update(info.pid for info in tree if info.alive)
    return sorted(found)


def _answer(record: PreviewRecord) -> Ownership | None:
    """Who holds the socket behind the recorded URL, when it answers HTTP now (else None)."""
    if record.url is None:
        return None
    parts = urlsplit(record.url)
    if parts.hostname is None or parts.port is None:
        return None
    if not readiness.probe(parts.hostname, parts.port):
        return None
    return readiness.ownership(parts.hostname, parts.port, _tree_pids(record))


def live_row(record: PreviewRecord) -> PreviewRow:
    supervised = _alive(record.supervisor)
    ours = server_is_ours(record)
    answering: bool | None = None
    owner: Ownership | None = None
    state: LiveState
    if record.state in ("failed", "stopped"):
        state = "orphaned" if ours else record.state
    elif supervised:
        if record.state == "ready":
            owner = _answer(record)
            # An answer from a socket outside the server's tree is not the preview answering.
            answering = owner is not None and owner.status != "other-owner"
            state = "ready" if answering else "unresponsive"
        else:
            state = "starting"
    elif record.supervisor is None and _alive(record.launcher):
        # The supervisor has not stamped the record yet; start is launching it.
        state = "starting"
    else:
        state = "orphaned" if ours else "lost"
    return PreviewRow(
        id=record.id,
        script=record.script,
        project=record.project,
        state=state,
        url=record.url,
        answering=answering,
        pid=record.server.pid if record.server else None,
        reason=record.reason,
        log_path=record.log_path,
        started_at=record.started_at,
        expires_at=record.expires_at,
        note=None if owner is None else owner.note,
        ownership=owner,
    )


def list_previews(workspace: Path | None) -> list[PreviewRow]:
    return [live_row(record) for record in registry.all_records(_previews_dir(workspace))]


def _result(record: PreviewRecord, survivors: list[int] | None = None) -> StopResult:
    return StopResult(
        id=record.id,
        state=record.state,
        stop_reason=record.stop_reason,
        kill_verified=record.kill_verified,
        survivors=survivors or [],
    )


def stop_preview(workspace: Path | None, preview_id: str) -> StopResult:
    """Stop through the supervisor when it lives; otherwise kill a positively identified server."""
    previews = _previews_dir(workspace)
    record = registry.load(previews, preview_id)
    supervisor, launcher = record.supervisor, record.launcher
    if supervisor is None and launcher is not None and _alive(launcher):
        raise Fenced(
            f"preview {preview_id} is still being started by process {launcher.pid}",
            hint="wait for ax-preview start to answer, then stop it",
        )
    if supervisor is not None and _alive(supervisor):
        info = proc.read_proc(supervisor.pid)
        if info is not None and proc.send_signal(info, signal.SIGTERM):
            return _await_stopped(previews, preview_id)
    if server_is_ours(record):
        assert record.server is not None
        server = record.server
        result = proc.kill_tree(
            lambda: proc.server_tree(server.pid, server.start_time, record.command_token)
        )
        updated = registry.update_record(
            previews,
            preview_id,
            lambda current: current.model_copy(
                update={
                    "state": "stopped" if current.state == "ready" else "failed",
                    "reason": "stopped",
                    "stop_reason": "stopped",
                    "kill_verified": result.verified,
                    "stopped_at": clock.timestamp(),
                }
            ),
        )
        return _result(updated, result.survivors)
    recorded = record.server
    if recorded is not None and not _dead(recorded):
        raise OperationFailed(
            f"process {recorded.pid} no longer matches preview {preview_id}'s server "
            "(start time or token differ); not killing it",
            hint="the server has most likely exited and its pid was reused",
        )
    return _result(record)


def _dead(identity: Identity) -> bool:
    """True when the recorded process is gone: no such pid, or a zombie of it."""
    info = proc.read_proc(identity.pid)
    return info is None or (info.start_time == identity.start_time and not info.alive)


def _await_stopped(previews: Path, preview_id: str) -> StopResult:
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        record = registry.load(previews, preview_id)
        if record.stopped_at is not None:
            return _result(record)
        time.sleep(proc.KILL_POLL_S * 5)
    raise OperationFailed(
        f"preview {preview_id}'s supervisor did not finish stopping within {STOP_WAIT_S:g}s",
        hint="run ax-preview stop again, or ax-preview sweep once the supervisor is gone",
    )


def _token_holders(token: str) -> list[int]:
    return [info.pid for info in proc.all_processes() if proc.has_token(info.pid, token)]


def _sweep_one(previews: Path, record: PreviewRecord) -> SweepItem:
    supervisor, launcher = record.supervisor, record.launcher
    if supervisor is None and launcher is not None and _alive(launcher):
        return SweepItem(
            id=record.id,
            action="skipped",
            why=f"it is still being started by process {launcher.pid}",
            pids=[launcher.pid],
        )
    if supervisor is not None and _alive(supervisor):
        return SweepItem(
            id=record.id,
            action="skipped",
            why=f"its supervisor (pid {supervisor.pid}) is alive and owns it",
            pids=[supervisor.pid],
        )
    server = record.server
    if server is None or _dead(server):
        strays = _token_holders(record.command_token)
        with registry.locked(previews):
            registry.drop(previews, record.id)
        why = "supervisor and server are gone"
        if strays:
            why += (
                f"; {len(strays)} process(es) still carry its token but have no recorded "
                "start time, so they were not killed"
            )
        return SweepItem(id=record.id, action="dropped", why=why, pids=strays)
    info = proc.read_proc(server.pid)
    if info is None or info.start_time != server.start_time:
        return SweepItem(
            id=record.id,
            action="skipped",
            why=f"pid {server.pid} is alive but its start time does not match the record "
            "(a reused pid?); not killing it",
            pids=[server.pid],
        )
    if not proc.has_token(server.pid, record.command_token):
        return SweepItem(
            id=record.id,
            action="skipped",
            why=f"pid {server.pid} does not carry the preview's command token; not killing it",
            pids=[server.pid],
        )
    result = proc.kill_tree(
        lambda: proc.server_tree(server.pid, server.start_time, record.command_token)
    )
    if not result.verified:
        return SweepItem(
            id=record.id,
            action="kill-unverified",
            why="orphaned server killed, but some processes survived; record kept",
            pids=result.survivors,
        )
    with registry.locked(previews):
        registry.drop(previews, record.id)
    return SweepItem(
        id=record.id,
        action="killed",
        why=f"orphaned server (pid {server.pid}) matched token and start time; tree killed",
        pids=[server.pid],
    )


def sweep_previews(workspace: Path | None) -> SweepReport:
    """Drop dead previews and kill orphans proven to be ours; never kill by age."""
    previews = _previews_dir(workspace)
    return SweepReport(items=[_sweep_one(previews, r) for r in registry.all_records(previews)])


def _clean(data: bytes) -> str:
    return redact(strip_ansi(data.decode("utf-8", "replace")))


def read_logs(
    workspace: Path | None, preview_id: str, tail: int | None, follow: bool
) -> Iterator[str]:
    """The preview's log as text (last ``tail`` lines), then, with ``follow``, what comes next.

    Following ends when the supervisor is gone and nothing more was written.
    Text is ANSI stripped and redacted; only whole lines are shown while following.
    """
    previews = _previews_dir(workspace)
    record = registry.load(previews, preview_id)
    path = Path(record.log_path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise OperationFailed(f"preview {preview_id} has no log file at {path}") from None
    start = max(0, size - LOGS_READ_MAX_BYTES)
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(size - start)
    lines = data.splitlines(keepends=True)
    if start > 0 and lines:
        lines = lines[1:]  # the first line was cut by the read window
    if tail is not None:
        lines = lines[-tail:] if tail > 0 else []
    partial = b""
    if follow and lines and not lines[-1].endswith(b"\n"):
        partial = lines.pop()
    if lines:
        yield _clean(b"".join(lines))
    if not follow:
        return
    offset = size
    with path.open("rb") as handle:
        while True:
            handle.seek(offset)
            chunk = handle.read(LOGS_READ_MAX_BYTES)
            offset += len(chunk)
            *complete, partial = (partial + chunk).split(b"\n")
            if complete:
                yield _clean(b"\n".join(complete) + b"\n")
            if not chunk and not _alive(registry.load(previews, preview_id).supervisor):
                if partial:
                    yield _clean(partial + b"\n")
                return
            if not chunk:
                time.sleep(FOLLOW_POLL_S)
