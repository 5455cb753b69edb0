"""A long-lived child (an MCP server) under the same containment as a run.

``run_managed`` runs a command to its end; a service is a process another part
of ax talks to over its stdin and stdout for as long as a session lasts. It gets
what a run gets: its own session and process group, the run marker in its
environment (so a descendant that double-forks is still found), ax as its
subreaper, and at ``stop`` the verified tree kill (TERM, grace, KILL). Its
stderr goes to a log file, each line redacted, the file capped at
``max_log_bytes`` (what is past the cap is counted, not kept).

The environment is exactly what the caller passes (plus the marker): deciding
what a service may see is the caller's job.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ax_exec.environment import RUN_MARKER
from ax_exec.proctree import RunTree, become_subreaper, kill_tree
from libcommon import clock
from libcommon.errors import OperationFailed
from libcommon.redact import redact

# Time a service is given to exit after its stdin closes, before the tree kill.
SERVICE_EXIT_GRACE_S = 1.0
# How much of one stderr line is kept (the rest of the line is dropped).
STDERR_LINE_MAX_BYTES = 8 * 1024
STDERR_READ_BYTES = 64 * 1024


@dataclass(frozen=True)
class ServiceStop:
    """How a service ended: its exit code (None if it had to be killed) and the kill's count."""

    returncode: int | None
    killed: int
    verified: bool


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    tree: RunTree
    log_path: Path
    max_log_bytes: int
    logged: int = 0
    dropped: int = 0
    _reader: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def stdin_fd(self) -> int:
        assert self.process.stdin is not None
        return self.process.stdin.fileno()

    @property
    def stdout_fd(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def stop(self) -> ServiceStop:
        """Close its stdin, give it a moment, then kill whatever of its tree is left."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        returncode: int | None
        try:
            returncode = self.process.wait(SERVICE_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            returncode = None
        result = kill_tree(self.tree, exclude_root=returncode is not None)
        if returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(SERVICE_EXIT_GRACE_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._reader is not None:
            self._reader.join(SERVICE_EXIT_GRACE_S)
        return ServiceStop(returncode, result.leftovers, result.verified)

    def _copy_stderr(self, stream: int) -> None:
        """Lines of stderr into the log, redacted, until the cap; then only counted."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            log = os.open(self.log_path, flags, 0o600)
        except OSError:
            # Still read it all: a service blocked on a full stderr pipe would hang.
            log = -1
        pending = b""
        try:
            while chunk := os.read(stream, STDERR_READ_BYTES):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > STDERR_LINE_MAX_BYTES:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    self._log_line(log, line)
            if pending:
                self._log_line(log, pending)
            if self.dropped and log >= 0:
                os.write(log, f"[ax: {self.dropped} more bytes of stderr not kept]\n".encode())
        finally:
            if log >= 0:
                os.close(log)
            os.close(stream)

    def _log_line(self, log: int, line: bytes) -> None:
        kept = line[:STDERR_LINE_MAX_BYTES]
        text = redact(kept.decode("utf-8", "replace")) + "\n"
        data = text.encode()
        if log < 0 or self.logged + len(data) > self.max_log_bytes:
            self.dropped += len(line) + 1
            return
        os.write(log, data)
        self.logged += len(data)
        self.dropped += len(line) - len(kept)


def start_service(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log_path: Path,
    max_log_bytes: int,
) -> Service:
    """Start ``argv`` as a contained service; OperationFailed when it cannot start."""
    become_subreaper()
    run_id = clock.new_id("run")
    child_env = {name: value for name, value in env.items() if name != RUN_MARKER}
    child_env[RUN_MARKER] = run_id
    err_r, err_w = os.pipe()
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_w,
            cwd=cwd,
            env=child_env,
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        os.close(err_r)
        raise OperationFailed(
            f"cannot start {argv[0]!r}: {exc.strerror or exc}",
            hint="give the command's absolute path, or put it on PATH",
        ) from None
    finally:
        os.close(err_w)
    assert process.stdout is not None
    inodes = (os.fstat(process.stdout.fileno()).st_ino, os.fstat(err_r).st_ino)
    tree = RunTree(process.pid, run_id, pipe_inodes=inodes)
    service = Service(process, tree, log_path, max_log_bytes)
    reader = threading.Thread(
        target=service._copy_stderr, args=(err_r,), name=f"service-stderr-{process.pid}"
    )
    reader.daemon = True
    reader.start()
    service._reader = reader
    return service
