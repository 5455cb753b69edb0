"""The detached supervisor that owns one dev server for its whole life.

``ax-preview start`` runs ``python -m ax_preview.supervisor`` in a new
session; that process forks once more and exits, so the supervisor is nobody's
child and has no controlling terminal. The supervisor then:

- starts the server in its own session with stdout and stderr on the preview's
  log file (an inherited descriptor: no pipe can fill up and wedge the server),
  and a random token in its environment for later identification;
- becomes a child subreaper, so processes the server orphans stay below it;
- watches, every ``POLL_S``: the server's exit, the TTL, the log cap, a stop
  request (SIGTERM), the end of the session, and, until ready, readiness (an
  announced or hinted port that answers, on a socket its own tree holds);
- kills the whole tree (verified), and writes why the server stopped, and,
  when it never became ready, why not and what to do about it.

Every registry write goes through the registry lock and an atomic rename.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import ax_preview.proc as proc
import ax_preview.readiness as readiness
import ax_preview.registry as registry
from ax_preview.models import Identity, Ownership, PreviewRecord, StopReason
from libcommon import clock, jsonio
from libcommon.ansi import strip_ansi
from libcommon.errors import OperationFailed
from libcommon.paths import StateLayout
from libcommon.safeopen import open_state_file

POLL_S = 0.05
PROBE_INTERVAL_S = 0.2
SESSION_POLL_S = 0.5
READY_SCAN_MAX_BYTES = 256 * 1024
SESSION_READ_MAX_BYTES = 1024 * 1024
LOG_TAIL_BYTES = 4096
EVENT_LOG_TAIL_CHARS = 2000
PR_SET_CHILD_SUBREAPER = 36


def server_environment(
    parent: Mapping[str, str],
    token: str,
    port: int | None = None,
    environment: str | None = None,
) -> dict[str, str]:
    """The parent's environment without secret-named variables (ax-exec's filter), plus the token.

    ``BROWSER=none``: dev servers that would open a browser on start should not.
    ``port`` (``--port``) becomes ``PORT``, which most servers read for where to
    listen. ``environment``, the project's virtualenv, is activated as its own
    ``activate`` script would: first on PATH, ``VIRTUAL_ENV`` set, no ``PYTHONHOME``;
    ax-preview's own virtualenv is never on the server's PATH (libcommon.projectenv).
    """
    from ax_exec import clean_environment
    from libcommon.projectenv import child_env, own_venv

    child = child_env(parent, Path(environment) if environment is not None else None, own_venv())
    overrides = {**child.set, proc.TOKEN_VARIABLE: token, "BROWSER": "none"}
    if port is not None:
        overrides["PORT"] = str(port)
    variables = clean_environment(parent, overrides=overrides).variables
    for name in child.unset:
        variables.pop(name, None)
    return variables


def log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a log, ANSI stripped and redacted, for a failure report."""
    from libcommon.redact import redact

    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read(limit)
    except FileNotFoundError:
        return ""
    return redact(strip_ansi(data.decode("utf-8", "replace")))


@dataclass
class LogScanner:
    """Reads what the server wrote so far (up to a bound) to look for its port."""

    path: Path
    text: str = ""
    _offset: int = 0
    _partial: str = ""

    def ports(self) -> list[int]:
        """The announced ports, latest first (see readiness.announced_ports)."""
        room = READY_SCAN_MAX_BYTES - self._offset
        if room > 0:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read(room)
            self._offset += len(data)
            self.text += data.decode("utf-8", "replace")
        whole, _, partial = self.text.rpartition("\n")
        # A line still being written may be a complaint cut short ("Port 5173 is in u"):
        # it is read only once it stayed the same from one scan to the next.
        stable = partial == self._partial
        self._partial = partial
        text = self.text if stable else whole
        return readiness.announced_ports(text)[: readiness.MAX_CANDIDATE_PORTS]


@dataclass
class SessionWatcher:
    """Notices a ``session.ended`` event appended to the session's log."""

    path: Path
    _offset: int = 0
    _partial: bytes = b""
    _next_check: float = 0.0

    def __post_init__(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._offset = self.path.stat().st_size

    def ended(self, now: float) -> bool:
        if now < self._next_check:
            return False
        self._next_check = now + SESSION_POLL_S
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read(SESSION_READ_MAX_BYTES)
        except FileNotFoundError:
            return False
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            with contextlib.suppress(jsonio.JSONDecodeError):
                event = jsonio.loads(line)
                if isinstance(event, dict) and event.get("type") == "session.ended":
                    return True
        return False


@dataclass
class Supervisor:
    layout: StateLayout
    record: PreviewRecord
    stop_requested: bool = False
    server_status: int | None = None
    # Why the server did not become ready, beyond the reason: what to do, who held the port.
    hint: str | None = None
    foreign: Ownership | None = None

    @property
    def previews_dir(self) -> Path:
        return self.layout.previews_dir

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        self.stop_requested = True

    def update(self, **changes: object) -> None:
        self.record = registry.update_record(
            self.previews_dir,
            self.record.id,
            lambda current: current.model_copy(update=changes),
        )

    def emit(self, event_type: str, **fields: object) -> None:
        """Append a preview event to the session's log, when the preview has a session."""
        if self.record.session is None:
            return
        import ax_preview.events as events

        model = {
            "preview.started": events.PreviewStarted,
            "preview.ready": events.PreviewReady,
            "preview.failed": events.PreviewFailed,
            "preview.stopped": events.PreviewStopped,
        }[event_type]
        try:
            events.record_event(
                self.layout,
                self.record.session,
                model(preview_id=self.record.id, **fields),
            )
        except Exception as exc:  # a log problem must not orphan the server
            self.note(f"could not append {event_type} to session {self.record.session}: {exc}")

    def note(self, message: str) -> None:
        """A line from the supervisor itself, in the preview's log."""
        try:
            fd = open_state_file(Path(self.record.log_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except (OSError, OperationFailed):
            # A note is called on the way to killing the server; losing it must not stop that.
            return
        with os.fdopen(fd, "ab") as handle:
            handle.write(f"[ax-preview] {message}\n".encode())

    def reap(self, server_pid: int) -> None:
        """Collect every exited child (we are a subreaper); keep the server's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == server_pid:
                self.server_status = os.waitstatus_to_exitcode(status)

    def run(self) -> None:
        record = self.record
        me = Identity(pid=os.getpid(), start_time=_start_time(os.getpid()))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self.request_stop)
        log_path = Path(record.log_path)
        log_fd = open_state_file(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            server = subprocess.Popen(
                record.command,
                cwd=record.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                env=server_environment(
                    os.environ, record.command_token, record.port_hint, record.environment
                ),
                start_new_session=True,
            )
        except OSError as exc:
            os.close(log_fd)
            self.note(f"could not start {record.command[0]}: {exc}")
            self.emit(
                "preview.failed",
                reason="spawn-error",
                log_tail=log_tail(log_path)[-EVENT_LOG_TAIL_CHARS:],
            )
            self.update(
                supervisor=me,
                state="failed",
                reason="spawn-error",
                stop_reason="crashed",
                stopped_at=clock.timestamp(),
                kill_verified=True,
            )
            return
        os.close(log_fd)
        server_id = Identity(pid=server.pid, start_time=_start_time(server.pid))
        self.update(supervisor=me, server=server_id)
        self.emit(
            "preview.started",
            script=record.script,
            command=record.command,
            cwd=record.cwd,
            pid=server.pid,
            log_path=record.log_path,
            ttl_s=record.ttl_s,
        )
        try:
            stop_reason, failure = self.watch(server_id, log_path)
        except BaseException as exc:
            # Whatever broke the watch, the server must not outlive its supervisor
            # unnoticed: kill it, say why, and let the record show a dead owner.
            self.note(f"supervisor error, stopping the server: {exc!r}")
            proc.kill_tree(lambda: self.tree(server_id, me.pid))
            raise
        result = proc.kill_tree(lambda: self.tree(server_id, me.pid))
        self.reap(server.pid)
        if self.server_status is not None:
            server.returncode = self.server_status
        if stop_reason == "log-cap":
            _cap_log(log_path, record.log_cap_bytes)
        if not result.verified:
            self.note(f"processes survived the kill: {result.survivors}")
        was_ready = self.record.state == "ready"
        # Events first, then the record: whoever sees the verdict in the
        # registry finds it in the session log too.
        if not was_ready:
            self.emit(
                "preview.failed",
                reason=failure,
                exit_code=self.server_status,
                log_tail=log_tail(log_path)[-EVENT_LOG_TAIL_CHARS:],
                hint=self.hint,
            )
        self.emit(
            "preview.stopped",
            reason=stop_reason,
            exit_code=self.server_status,
            kill_verified=result.verified,
        )
        failed = {}
        if not was_ready:
            owned = failure == "port-owned-by-another-process"
            failed = {"hint": self.hint, "ownership": self.foreign if owned else None}
        self.update(
            state="stopped" if was_ready else "failed",
            reason=stop_reason if was_ready else failure,
            **failed,
            stop_reason=stop_reason,
            exit_code=self.server_status,
            kill_verified=result.verified,
            stopped_at=clock.timestamp(),
        )

    def tree(self, server: Identity, me: int) -> list[proc.ProcInfo]:
        found = {info.pid: info for info in proc.descendants(me)}
        for info in proc.server_tree(server.pid, server.start_time, self.record.command_token):
            found.setdefault(info.pid, info)
        return list(found.values())

    def tree_pids(self, server: Identity) -> list[int]:
        """The live processes of the server's tree: who may own the socket that answers."""
        return [info.pid for info in self.tree(server, os.getpid()) if info.alive]

    def exit_failure(self, log_path: Path) -> str:
        """Why a server that exited before it was ready failed, setting ``hint`` when known."""
        from libcommon.missing import MissingScanner

        assert self.server_status is not None
        scanner = MissingScanner()
        for line in log_tail(log_path).splitlines():
            scanner.line(line)
        scanner.finish()
        missing = scanner.explained(self.server_status)
        if missing:
            program = ", ".join(dict.fromkeys(item.program for item in missing))
            self.hint = (
                f"the server's command could not find {program}: install it (for a package.json "
                "script, declare it in the project's dependencies and install them) and start again"
            )
            return "toolchain-unavailable"
        return "exited" if self.server_status == 0 else "crashed"

    def not_ready(self, ports: list[int]) -> str:
        """Why the ready timeout passed, setting ``hint``."""
        timeout = f"{self.record.ready_timeout_s:g}s"
        if self.foreign is not None:
            owner = self.foreign
            holder = f"pid {owner.pid} ({owner.command})" if owner.pid else "another process"
            self.hint = (
                f"port {owner.port} is held by {holder}, not by the server: stop that process "
                "or have the server listen on a free port (--port N sets PORT=N for it)"
            )
            return "port-owned-by-another-process"
        if ports:
            shown = ", ".join(str(port) for port in ports)
            hinted = " (from --port)" if ports == [self.record.port_hint] else ""
            self.hint = (
                f"nothing answered HTTP on loopback port {shown}{hinted} within {timeout}: "
                "check the log for the address the server uses, or raise --ready-timeout"
            )
            return "no-answer"
        self.hint = (
            f"the server printed no address it listens on within {timeout}; if it listens "
            "on a known port, pass --port N (ax also sets PORT=N in its environment, which "
            "most servers read), or raise --ready-timeout if it is still starting"
        )
        return "no-port-announced"

    def watch(self, server: Identity, log_path: Path) -> tuple[StopReason, str]:
        """Wait until the server must stop; return (why it stopped, why not ready)."""
        record = self.record
        started = time.monotonic()
        ttl_deadline = started + record.ttl_s
        ready_deadline = started + record.ready_timeout_s
        scanner = LogScanner(log_path)
        watcher = None
        if record.session is not None:
            watcher = SessionWatcher(self.layout.session_log(record.session))
        next_probe = started
        ports: list[int] = []
        while True:
            self.reap(server.pid)
            now = time.monotonic()
            if self.server_status is not None:
                reason: StopReason = "exited" if self.server_status == 0 else "crashed"
                if self.record.state != "starting":
                    return reason, reason
                return reason, self.exit_failure(log_path)
            if self.stop_requested:
                return "stopped", "stopped"
            if log_path.stat().st_size > record.log_cap_bytes:
                return "log-cap", "log-cap"
            if now >= ttl_deadline:
                return "ttl", "ttl"
            if watcher is not None and watcher.ended(now):
                return "session-end", "session-end"
            if self.record.state == "starting":
                if now >= ready_deadline:
                    return "not-ready", self.not_ready(ports)
                if now >= next_probe:
                    next_probe = now + PROBE_INTERVAL_S
                    ports = scanner.ports()
                    hint = record.port_hint
                    if hint is not None and hint not in ports:
                        ports.append(hint)
                    found = readiness.assess(ports, lambda: self.tree_pids(server))
                    self.foreign = found.foreign
                    self.reap(server.pid)
                    # The answer counts only if our server is still alive after it.
                    if (
                        found.url is not None
                        and found.owner is not None
                        and self.server_status is None
                        and proc.is_alive(server.pid, server.start_time)
                    ):
                        self.emit(
                            "preview.ready",
                            url=found.url,
                            pid=server.pid,
                            note=found.owner.note,
                            ownership=found.owner.status,
                        )
                        self.update(
                            state="ready",
                            url=found.url,
                            ownership=found.owner,
                            ready_at=clock.timestamp(),
                        )
            time.sleep(POLL_S)


def _start_time(pid: int) -> int:
    info = proc.read_proc(pid)
    if info is None:
        raise RuntimeError(f"process {pid} vanished before its start time was read")
    return info.start_time


def _cap_log(path: Path, cap: int) -> None:
    """Keep the first ``cap`` bytes and say why the rest is missing."""
    with os.fdopen(open_state_file(path, os.O_RDWR), "r+b") as handle:
        handle.truncate(cap)
        handle.seek(0, os.SEEK_END)
        handle.write(f"\n[ax-preview] log cap of {cap} bytes reached; server stopped\n".encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ax_preview.supervisor")
    parser.add_argument("--state-root", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--id", required=True)
    args = parser.parse_args(argv)
    # Second fork: the first process exits so the supervisor is re-parented
    # away from the CLI, and (not a session leader) can never get a terminal.
    if os.fork() > 0:
        os._exit(0)
    layout = StateLayout(root=Path(args.state_root), workspace=Path(args.workspace))
    record = registry.load(layout.previews_dir, args.id)
    Supervisor(layout, record).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
