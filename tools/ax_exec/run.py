"""run_managed: start one command, capture it, bound it in time, and leave nothing behind.

The child gets /dev/null for stdin, its own session, a secret-free environment
and, when asked, a sandbox set up by the launcher before the exec. One loop
multiplexes its stdout, stderr and a pidfd: output is captured as it comes, and
the deadline and the abort hook are checked at least every ``ABORT_POLL_S``.
Once the child is gone (exited, or killed on timeout or abort), every process
of the run still alive is killed and the kill verified, and the pipes are
drained for at most ``DRAIN_TIMEOUT_S``, so a process holding them cannot hang
the call.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ax_exec import sandbox
from ax_exec.capture import READ_CHUNK_BYTES, HeadTail, Spill, split_caps
from ax_exec.environment import RUN_MARKER, clean_environment
from ax_exec.models import ExecOutcome, ExecSpec, KillReport, SandboxStatus, StreamCapture
from ax_exec.proctree import KillResult, RunTree, become_subreaper, kill_tree
from libcommon import clock

ABORT_POLL_S = 0.05
DRAIN_TIMEOUT_S = 2.0
LAUNCH_TIMEOUT_S = 10.0
EXIT_WAIT_S = 5.0
TRACK_INTERVAL_S = 0.5
SHELL = "bash"

StreamName = Literal["stdout", "stderr"]
OutputHook = Callable[[StreamName, bytes], None]
AbortHook = threading.Event | Callable[[], bool]


def _aborted(abort: AbortHook | None) -> bool:
    if abort is None:
        return False
    if isinstance(abort, threading.Event):
        return abort.is_set()
    return bool(abort())


def command_argv(spec: ExecSpec, environ: Mapping[str, str]) -> list[str]:
    """The argv to run: the spec's, or bash with the shell string."""
    if spec.shell is not None:
        bash = shutil.which(SHELL, path=environ.get("PATH", os.defpath)) or SHELL
        # No rc files: the string runs the same way for everyone, and bash's own
        # exit status (the last command's) is what the caller gets.
        return [bash, "--noprofile", "--norc", "-c", spec.shell]
    assert spec.argv is not None
    return list(spec.argv)


@dataclass
class _Capture:
    stdout: HeadTail
    stderr: HeadTail
    spill: Spill | None
    on_output: OutputHook | None
    open_fds: dict[int, StreamName] = field(default_factory=dict)

    def feed(self, name: StreamName, chunk: bytes) -> None:
        (self.stdout if name == "stdout" else self.stderr).feed(chunk)
        if self.spill is not None:
            self.spill.feed(chunk)
        if self.on_output is not None:
            self.on_output(name, chunk)

    def read(self, fd: int, selector: selectors.BaseSelector) -> None:
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.feed(self.open_fds[fd], chunk)
            return
        selector.unregister(fd)
        os.close(fd)
        del self.open_fds[fd]


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _stream(capture: HeadTail) -> StreamCapture:
    head, tail = capture.decoded()
    return StreamCapture(head=head, tail=tail, bytes=capture.total, truncated=capture.truncated)


def _spawn_error(
    spec_argv: list[str],
    cwd: str,
    run_id: str,
    started: float,
    status: SandboxStatus,
    removed: list[str],
    message: str,
) -> ExecOutcome:
    empty = StreamCapture(head="", tail="", bytes=0, truncated=False)
    return ExecOutcome(
        run_id=run_id,
        argv=spec_argv,
        cwd=cwd,
        termination="spawn-error",
        exit_code=None,
        duration_ms=int((time.monotonic() - started) * 1000),
        stdout=empty,
        stderr=empty,
        kill=KillReport(attempted=False, verified=True, leftovers=0),
        sandbox=status,
        env_removed=removed,
        error=message,
    )


def _wait_for_launch(status_r: int, deadline: float) -> str | None:
    """Block until the launcher execs (EOF) or reports a failure; None when it exec'd."""
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(status_r, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"the sandbox launcher did not exec within {LAUNCH_TIMEOUT_S:g}s"
            if not selector.select(remaining):
                continue
            chunk = os.read(status_r, 4096)
            if not chunk:
                break
            data += chunk
    if not data:
        return None
    try:
        report = json.loads(data)
        return f"{report['stage']}: {report['error']}"
    except (ValueError, KeyError, TypeError):
        return f"the sandbox launcher failed: {data[:200]!r}"


def run_managed(
    spec: ExecSpec,
    *,
    abort: AbortHook | None = None,
    on_output: OutputHook | None = None,
    environ: Mapping[str, str] | None = None,
) -> ExecOutcome:
    """Run ``spec`` to completion, timeout or abort, and report what happened.

    ``abort`` (an Event or a callable polled every ``ABORT_POLL_S``) kills the
    tree and returns ``aborted``; ``on_output`` sees each chunk as it arrives.
    Never raises for a command that cannot start: that is ``spawn-error``.
    """
    started = time.monotonic()
    run_id = clock.new_id("run")
    parent_env = os.environ if environ is None else environ
    argv = command_argv(spec, parent_env)
    cwd = os.path.realpath(spec.cwd or os.getcwd())
    clean = clean_environment(parent_env, spec.env_deny_patterns, spec.env)
    child_env = dict(clean.variables)
    child_env[RUN_MARKER] = run_id

    status = sandbox.profile_status(spec.sandbox, spec.allow_net)
    if spec.sandbox != "none" and not status.enforced:
        # Fail closed: a sandboxed run is never silently run unconfined.
        return _spawn_error(
            argv, cwd, run_id, started, status, clean.removed,
            f"sandbox {spec.sandbox} is not enforced here: {status.reason}",
        )
    become_subreaper()

    scratch: Path | None = None
    status_r = status_w = -1
    child_argv = argv
    pass_fds: tuple[int, ...] = ()
    if spec.sandbox != "none":
        scratch = Path(tempfile.mkdtemp(prefix=sandbox.SCRATCH_PREFIX))
        child_env["TMPDIR"] = str(scratch)
        workspace = Path(os.path.realpath(spec.workspace or cwd))
        status_r, status_w = os.pipe()
        config = sandbox.launch_config(spec.sandbox, scratch, workspace, status.network, status_w)
        child_argv = sandbox.launcher_command(config, argv)
        pass_fds = (status_w,)

    # Our own pipes, so the raw read ends are ours to multiplex and close.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        try:
            process = subprocess.Popen(
                child_argv,
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=child_env,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except OSError as exc:
            return _spawn_error(
                argv, cwd, run_id, started, status, clean.removed,
                f"{exc.strerror or exc}: {exc.filename or argv[0]!r}",
            )
        finally:
            for fd in (out_w, err_w, status_w):
                if fd >= 0:
                    os.close(fd)
        pipes: dict[int, StreamName] = {out_r: "stdout", err_r: "stderr"}
        out_r = err_r = -1
        return _supervise(
            spec, process, pipes, argv, cwd, run_id, started, status, clean.removed,
            status_r, abort, on_output,
        )
    finally:
        for fd in (status_r, out_r, err_r):
            if fd >= 0:
                os.close(fd)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _supervise(
    spec: ExecSpec,
    process: subprocess.Popen[bytes],
    pipes: dict[int, StreamName],
    argv: list[str],
    cwd: str,
    run_id: str,
    started: float,
    status: SandboxStatus,
    removed: list[str],
    status_r: int,
    abort: AbortHook | None,
    on_output: OutputHook | None,
) -> ExecOutcome:
    tree = RunTree(process.pid, run_id)
    deadline = started + spec.timeout_s
    capture = _Capture(
        stdout=HeadTail(*split_caps(spec.max_output_bytes, keep_end=False)),
        stderr=HeadTail(*split_caps(spec.max_output_bytes, keep_end=True)),
        spill=Spill(Path(spec.spill_dir)) if spec.spill_dir else None,
        on_output=on_output,
        open_fds=pipes,
    )
    for fd in pipes:
        os.set_blocking(fd, False)

    launch_error = None
    if status_r >= 0:
        launch_error = _wait_for_launch(status_r, min(deadline, started + LAUNCH_TIMEOUT_S))

    termination: Literal["exited", "timeout", "aborted", "spawn-error"] = "exited"
    pidfd = os.pidfd_open(process.pid)
    selector = selectors.DefaultSelector()
    try:
        for fd in capture.open_fds:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(pidfd, selectors.EVENT_READ)
        next_track = time.monotonic() + TRACK_INTERVAL_S
        while launch_error is None:
            now = time.monotonic()
            if now >= deadline:
                termination = "timeout"
                break
            if _aborted(abort):
                termination = "aborted"
                break
            if now >= next_track:
                tree.scan()
                next_track = now + TRACK_INTERVAL_S
            child_gone = False
            for key, _ in selector.select(min(ABORT_POLL_S, deadline - now)):
                if key.fd == pidfd:
                    child_gone = True
                else:
                    capture.read(int(key.fd), selector)
            if child_gone:
                break
        selector.unregister(pidfd)

        if termination == "exited" and launch_error is None:
            process.wait()
            result = kill_tree(tree, exclude_root=True)
            attempted = result.leftovers > 0
        else:
            result = kill_tree(tree)
            attempted = True
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(EXIT_WAIT_S)
        drain_timed_out = _drain(capture, selector)
    finally:
        os.close(pidfd)
        for fd in list(capture.open_fds):
            selector.unregister(fd)
            os.close(fd)
        selector.close()

    if launch_error is not None:
        if capture.spill is not None:
            capture.spill.discard()
        return _spawn_error(argv, cwd, run_id, started, status, removed, launch_error)
    return _outcome(
        argv, cwd, run_id, started, status, removed, termination, process, capture,
        result, attempted, drain_timed_out,
    )


def _drain(capture: _Capture, selector: selectors.BaseSelector) -> bool:
    """Read what is left for at most DRAIN_TIMEOUT_S; True when the pipes stayed open."""
    drain_deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while capture.open_fds:
        remaining = drain_deadline - time.monotonic()
        if remaining <= 0:
            return True
        for key, _ in selector.select(remaining):
            capture.read(int(key.fd), selector)
    return False


def _outcome(
    argv: list[str],
    cwd: str,
    run_id: str,
    started: float,
    status: SandboxStatus,
    removed: list[str],
    termination: Literal["exited", "timeout", "aborted", "spawn-error"],
    process: subprocess.Popen[bytes],
    capture: _Capture,
    result: KillResult,
    attempted: bool,
    drain_timed_out: bool,
) -> ExecOutcome:
    returncode = process.returncode
    exit_code = returncode if termination == "exited" and returncode is not None else None
    if exit_code is not None and exit_code < 0:
        exit_code = None
    spill_path = None
    spill_complete = None
    if capture.spill is not None:
        if capture.stdout.truncated or capture.stderr.truncated:
            spill_path = str(capture.spill.keep())
            spill_complete = capture.spill.complete
        else:
            capture.spill.discard()
    return ExecOutcome(
        run_id=run_id,
        argv=argv,
        cwd=cwd,
        termination=termination,
        exit_code=exit_code,
        signal=_signal_name(returncode),
        duration_ms=int((time.monotonic() - started) * 1000),
        stdout=_stream(capture.stdout),
        stderr=_stream(capture.stderr),
        kill=KillReport(
            attempted=attempted,
            verified=result.verified,
            leftovers=result.leftovers,
            survivors=result.survivors,
        ),
        sandbox=status,
        spill_path=spill_path,
        spill_complete=spill_complete,
        drain_timed_out=drain_timed_out,
        env_removed=removed,
    )

