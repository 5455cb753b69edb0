"""run_managed: start one command, capture it, bound it in time, and leave nothing behind.

The child gets /dev/null for stdin, its own session, a secret-free environment
and, when asked, a sandbox set up by the launcher before the exec. One loop
multiplexes its stdout, stderr and a pidfd: output is captured as it comes, and
the deadline and the abort hook are checked at least every ``ABORT_POLL_S``.
Once the child is gone (exited, or killed on timeout or abort), every process
of the run still alive is killed and the kill verified, and the pipes are
drained for at most ``DRAIN_TIMEOUT_S``, so a process holding them cannot hang
the call. ``run_captured`` is the same run, its output left as bytes (a
CapturedRun): ``ax-exec run`` prints from those without decoding them whole.
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

from ax_exec.capture import READ_CHUNK_BYTES, HeadTail, Spill, StreamName, split_caps
from ax_exec.environment import RUN_MARKER, clean_environment
from ax_exec.models import (
    ExecOutcome,
    ExecSpec,
    KillReport,
    SandboxStatus,
    StreamCapture,
    Termination,
)
from ax_exec.outcome import CapturedRun
from ax_exec.proctree import KillResult, RunTree, become_subreaper, kill_tree
from ax_exec.sandbox import SCRATCH_PREFIX, launch_config, launcher_command, profile_status
from libcommon import clock
from libcommon.paths import is_within, state_root
from libcommon.trust import derived_parent

ABORT_POLL_S = 0.05
DRAIN_TIMEOUT_S = 2.0
LAUNCH_TIMEOUT_S = 10.0
EXIT_WAIT_S = 5.0
TRACK_INTERVAL_S = 0.5
# Reads per stream when checking for end-of-file after the child exits (64 KiB each).
READY_READS = 16
SHELL = "bash"

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
            self.spill.feed(name, chunk)
        if self.on_output is not None:
            self.on_output(name, chunk)

    def read(self, fd: int, selector: selectors.BaseSelector) -> None:
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        self.consume(fd, chunk, selector)

    def consume(self, fd: int, chunk: bytes, selector: selectors.BaseSelector) -> None:
        """Capture a chunk, or close the pipe at end-of-file (an empty chunk)."""
        if chunk:
            self.feed(self.open_fds[fd], chunk)
            return
        if fd in selector.get_map():
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
    """The stream's counts; its text stays bytes in ``capture`` (see CapturedRun)."""
    return StreamCapture(head="", tail="", bytes=capture.total, truncated=capture.truncated)


@dataclass(frozen=True)
class _Facts:
    """What is known about a run before its child starts."""

    run_id: str
    argv: list[str]
    cwd: str
    started: float
    sandbox: SandboxStatus
    env_removed: list[str]

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


def _state_overlap(workspace: Path, environ: Mapping[str, str]) -> str | None:
    """Why a workspace-write sandbox rooted at ``workspace`` would reach ax's state, if so.

    The sandbox lets the command write the whole workspace: with the state root
    inside it, or the workspace inside the state root, a confined command could
    rewrite session logs, pre-images, slates or grants.
    """
    root = state_root(environ)
    if not (is_within(workspace, root) or is_within(root, workspace)):
        return None
    if derived_parent(root, workspace) is not None:
        # An executor's registered worktree: the sandbox's writable place is that
        # worktree alone, none of the rest of the state root.
        return None
    where = "inside" if is_within(workspace, root) else "around"
    return (
        f"the workspace {workspace} is {where} ax's state root {root}: a workspace-write "
        "sandbox there would let the command change ax's own state; run it on a project "
        "folder apart from the state root"
    )


def _spawn_error(facts: _Facts, message: str) -> CapturedRun:
    empty = StreamCapture(head="", tail="", bytes=0, truncated=False)
    outcome = ExecOutcome(
        run_id=facts.run_id,
        argv=facts.argv,
        cwd=facts.cwd,
        termination="spawn-error",
        exit_code=None,
        duration_ms=facts.elapsed_ms(),
        stdout=empty,
        stderr=empty,
        kill=KillReport(attempted=False, verified=True, leftovers=0),
        sandbox=facts.sandbox,
        env_removed=facts.env_removed,
        error=message,
    )
    return CapturedRun(outcome, stdout=HeadTail(0, 0), stderr=HeadTail(0, 0))


class _LaunchTimedOut(Exception):
    pass


def _wait_for_launch(status_r: int, deadline: float) -> str | None:
    """Block until the launcher execs (EOF) or reports a failure; None when it exec'd.

    Raises _LaunchTimedOut when ``deadline`` passes first.
    """
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(status_r, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _LaunchTimedOut
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
    A command that cannot start is ``spawn-error``, not an exception; an
    exception raised while it runs (from ``on_output``, or KeyboardInterrupt)
    kills the tree before it propagates.
    """
    return run_captured(spec, abort=abort, on_output=on_output, environ=environ).decode()


def run_captured(
    spec: ExecSpec,
    *,
    abort: AbortHook | None = None,
    on_output: OutputHook | None = None,
    environ: Mapping[str, str] | None = None,
) -> CapturedRun:
    """``run_managed``, its output left as the captured bytes (what ``ax-exec run``
    prints from, never holding a stream's text whole)."""
    started = time.monotonic()
    parent_env = os.environ if environ is None else environ
    clean = clean_environment(parent_env, spec.env_deny_patterns, spec.env)
    facts = _Facts(
        run_id=clock.new_id("run"),
        argv=command_argv(spec, parent_env),
        cwd=os.path.realpath(spec.cwd or Path.cwd()),
        started=started,
        sandbox=profile_status(spec.sandbox, spec.allow_net),
        env_removed=clean.removed,
    )
    child_env = dict(clean.variables)
    child_env[RUN_MARKER] = facts.run_id
    if spec.sandbox != "none" and not facts.sandbox.enforced:
        # Fail closed: a sandboxed run is never silently run unconfined.
        return _spawn_error(
            facts, f"sandbox {spec.sandbox} is not enforced here: {facts.sandbox.reason}"
        )
    workspace = Path(os.path.realpath(spec.workspace or facts.cwd))
    if spec.sandbox == "workspace-write":
        overlap = _state_overlap(workspace, parent_env)
        if overlap is not None:
            return _spawn_error(facts, overlap)
    try:
        spill = Spill(Path(spec.spill_dir)) if spec.spill_dir else None
    except OSError as exc:
        return _spawn_error(facts, f"cannot write the spill directory {spec.spill_dir}: {exc}")
    become_subreaper()

    scratch: Path | None = None
    status_r = status_w = -1
    child_argv = facts.argv
    pass_fds: tuple[int, ...] = ()
    if spec.sandbox != "none":
        scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        child_env["TMPDIR"] = str(scratch)
        status_r, status_w = os.pipe()
        config = launch_config(spec.sandbox, scratch, workspace, facts.sandbox.network, status_w)
        child_argv = launcher_command(config, facts.argv)
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
                cwd=facts.cwd,
                env=child_env,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except OSError as exc:
            if spill is not None:
                spill.discard()
            return _spawn_error(facts, f"{exc.strerror or exc}: {exc.filename or facts.argv[0]!r}")
        finally:
            for fd in (out_w, err_w, status_w):
                if fd >= 0:
                    os.close(fd)
        capture = _Capture(
            stdout=HeadTail(*split_caps(spec.max_output_bytes, keep_end=False)),
            stderr=HeadTail(*split_caps(spec.max_output_bytes, keep_end=True)),
            spill=spill,
            on_output=on_output,
            open_fds={out_r: "stdout", err_r: "stderr"},
        )
        out_r = err_r = -1
        return _supervise(facts, spec.timeout_s, process, capture, status_r, abort)
    finally:
        for fd in (status_r, out_r, err_r):
            if fd >= 0:
                os.close(fd)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _supervise(
    facts: _Facts,
    timeout_s: float,
    process: subprocess.Popen[bytes],
    capture: _Capture,
    status_r: int,
    abort: AbortHook | None,
) -> CapturedRun:
    """Watch the child to its end, kill what is left, drain, and build the outcome."""
    tree = RunTree(
        process.pid, facts.run_id, pipe_inodes=tuple(os.fstat(fd).st_ino for fd in capture.open_fds)
    )
    deadline = facts.started + timeout_s
    for fd in capture.open_fds:
        os.set_blocking(fd, False)
    pidfd = os.pidfd_open(process.pid)
    selector = selectors.DefaultSelector()
    try:
        launch_error = None
        termination: Termination = "exited"
        launch_deadline = facts.started + LAUNCH_TIMEOUT_S
        try:
            if status_r >= 0:
                launch_error = _wait_for_launch(status_r, min(deadline, launch_deadline))
        except _LaunchTimedOut:
            if deadline <= launch_deadline:
                termination = "timeout"
            else:
                launch_error = f"the sandbox launcher did not exec within {LAUNCH_TIMEOUT_S:g}s"
        if launch_error is None and termination == "exited":
            termination = _watch(process, pidfd, capture, selector, tree, deadline, abort)
        if termination == "exited" and launch_error is None:
            # Pipes already at end-of-file prove nobody holds them: skip that search.
            result = kill_tree(tree, exclude_root=True, deep=not _read_ready(capture, selector))
            attempted = result.leftovers > 0
            process.wait()
        else:
            result = kill_tree(tree)
            attempted = True
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(EXIT_WAIT_S)
        drain_timed_out = _drain(capture, selector)
    except BaseException:
        # Whatever interrupted us, the run's processes must not outlive the call.
        kill_tree(tree)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(EXIT_WAIT_S)
        if capture.spill is not None:
            capture.spill.discard()
        raise
    finally:
        os.close(pidfd)
        for fd in list(capture.open_fds):
            if fd in selector.get_map():
                selector.unregister(fd)
            os.close(fd)
        selector.close()

    if launch_error is not None:
        if capture.spill is not None:
            capture.spill.discard()
        return _spawn_error(facts, launch_error)
    return _outcome(facts, termination, process, capture, result, attempted, drain_timed_out)


def _watch(
    process: subprocess.Popen[bytes],
    pidfd: int,
    capture: _Capture,
    selector: selectors.BaseSelector,
    tree: RunTree,
    deadline: float,
    abort: AbortHook | None,
) -> Termination:
    """Capture output until the child exits, the deadline passes or abort is asked."""
    for fd in capture.open_fds:
        selector.register(fd, selectors.EVENT_READ)
    selector.register(pidfd, selectors.EVENT_READ)
    next_track = time.monotonic() + TRACK_INTERVAL_S
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if _aborted(abort):
                return "aborted"
            if now >= next_track:
                # Remember descendants while their parent links still lead to us.
                tree.scan()
                next_track = now + TRACK_INTERVAL_S
            for key, _ in selector.select(min(ABORT_POLL_S, deadline - now)):
                if key.fd == pidfd:
                    return "exited"
                capture.read(int(key.fd), selector)
    finally:
        selector.unregister(pidfd)


def _read_ready(capture: _Capture, selector: selectors.BaseSelector) -> bool:
    """Read what is buffered now; True when every pipe has reached end-of-file.

    Bounded to a pipe buffer's worth of reads per stream: a writer that keeps
    writing keeps the pipe open, which is the answer anyway.
    """
    for fd in list(capture.open_fds):
        for _ in range(READY_READS):
            try:
                chunk = os.read(fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                break
            capture.consume(fd, chunk, selector)
            if fd not in capture.open_fds:
                break
    return not capture.open_fds


def _drain(capture: _Capture, selector: selectors.BaseSelector) -> bool:
    """Read what is left for at most DRAIN_TIMEOUT_S; True when the pipes stayed open."""
    for fd in capture.open_fds:
        if fd not in selector.get_map():
            selector.register(fd, selectors.EVENT_READ)
    drain_deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while capture.open_fds:
        remaining = drain_deadline - time.monotonic()
        if remaining <= 0:
            return True
        for key, _ in selector.select(remaining):
            capture.read(int(key.fd), selector)
    return False


def _outcome(
    facts: _Facts,
    termination: Termination,
    process: subprocess.Popen[bytes],
    capture: _Capture,
    result: KillResult,
    attempted: bool,
    drain_timed_out: bool,
) -> CapturedRun:
    returncode = process.returncode
    # A negative return code is death by signal: no exit code, the signal is named.
    exited_normally = termination == "exited" and returncode is not None and returncode >= 0
    spill_path = None
    spill_complete = None
    if capture.spill is not None:
        if capture.stdout.truncated or capture.stderr.truncated:
            spill_path = str(capture.spill.keep())
            spill_complete = capture.spill.complete
        else:
            capture.spill.discard()
    outcome = ExecOutcome(
        run_id=facts.run_id,
        argv=facts.argv,
        cwd=facts.cwd,
        termination=termination,
        exit_code=returncode if exited_normally else None,
        signal=_signal_name(returncode),
        duration_ms=facts.elapsed_ms(),
        stdout=_stream(capture.stdout),
        stderr=_stream(capture.stderr),
        kill=KillReport(
            attempted=attempted,
            verified=result.verified,
            leftovers=result.leftovers,
            survivors=result.survivors,
        ),
        sandbox=facts.sandbox,
        spill_path=spill_path,
        spill_complete=spill_complete,
        drain_timed_out=drain_timed_out,
        env_removed=facts.env_removed,
    )
    return CapturedRun(outcome, stdout=capture.stdout, stderr=capture.stderr)
