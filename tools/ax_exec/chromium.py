"""The system Chromium, launched contained with a throwaway profile, for ax to drive over CDP.

One launcher serves every part of ax that needs a browser (ax-check's browser
flows, the PDF printing of documents), so the flags, the containment and the
clean-up are decided once:

- the binary is Debian's ``chromium`` found on PATH by its real path, absolute
  PATH entries only (as ``libcommon.git.find_git``): a ``chromium`` planted in a
  workspace and reached through an empty or relative PATH entry is never run.
  Nothing is ever downloaded: no Chromium means ``toolchain-unavailable``
  naming the package (``chromium_unavailable``);
- the flags are fixed (``chromium_flags``): headless, no GPU, no QUIC, no first
  run, no background networking, component updates or sync, no proxy, no
  extensions, DevTools on a port of the kernel's choosing on loopback, and a
  fresh profile under the state root's temp area (never the user's profile,
  never the workspace). ``--no-sandbox`` only when running as root, where
  Chromium refuses to start with its own sandbox;
- the browser runs as an ax-exec service: its own session and process group,
  ax as subreaper, the run marker in its environment (secret-named variables
  removed, HOME and the XDG folders pointed into the profile), its stderr in a
  capped, redacted log, and the verified tree kill when the context ends;
- its DevTools endpoint is read from ``DevToolsActivePort`` in the profile
  within ``CHROMIUM_START_TIMEOUT_S``; the profile and log are removed after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from libcommon.errors import OperationFailed, Unsupported

if TYPE_CHECKING:
    from ax_exec.service import Service

# Debian's package and the binary it puts on PATH (a wrapper script that execs the browser).
CHROMIUM_PACKAGE = "chromium"
CHROMIUM_BINARY = "chromium"
# How long a launch may take to write its DevTools endpoint before it counts as failed.
CHROMIUM_START_TIMEOUT_S = 20.0
# How long a browser is given to exit on SIGTERM before the tree kill.
CHROMIUM_EXIT_GRACE_S = 2.0
CHROMIUM_LOG_MAX_BYTES = 256 * 1024
# How much of the log's end a failed launch quotes.
CHROMIUM_LOG_TAIL_BYTES = 2048
DEVTOOLS_POLL_S = 0.05
DEVTOOLS_PORT_FILE = "DevToolsActivePort"
# The state root's folder for throwaway files (profiles, their logs).
STATE_TEMP_DIR = "tmp"
PROFILE_PREFIX = "chromium-"

# The fixed flags, before the per-launch profile (see the module docstring for why each).
BASE_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-proxy-server",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def find_chromium(env: Mapping[str, str]) -> Path | None:
    """The real path of the first executable ``chromium`` in an absolute folder of PATH."""
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, CHROMIUM_BINARY)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Path(os.path.realpath(candidate))
    return None


def chromium_unavailable() -> Unsupported:
    """What to say when no Chromium is on PATH: the toolchain is missing, and its package."""
    return Unsupported(
        f"no {CHROMIUM_BINARY} on PATH (absolute folders only): browser flows and "
        "printing need the system Chromium",
        reason="toolchain-unavailable",
        hint=f"install Debian's {CHROMIUM_PACKAGE!r} package (apt-get install {CHROMIUM_PACKAGE})",
    )


def chromium_flags(profile: Path, *, as_root: bool) -> list[str]:
    """The command-line flags for one launch with ``profile`` as its user data folder."""
    flags = list(BASE_FLAGS)
    if as_root:
        flags.append("--no-sandbox")
    flags.append(f"--user-data-dir={profile}")
    # A blank first tab: nothing is fetched before the caller opens its own page.
    flags.append("about:blank")
    return flags


@dataclass(frozen=True)
class LaunchedChromium:
    """A running browser: where to connect (``cdp_url``) and what to clean up."""

    cdp_url: str
    port: int
    pid: int
    executable: Path
    profile: Path
    log_path: Path
    _service: Service

    def alive(self) -> bool:
        return self._service.process.poll() is None


def browser_temp_dir(state_root: Path) -> Path:
    """The state root's temp area, created private (0700) when missing."""
    folder = state_root / STATE_TEMP_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def read_devtools_port(profile: Path) -> tuple[int, str] | None:
    """``(port, browser path)`` from the profile's ``DevToolsActivePort``; None until written."""
    try:
        text = (profile / DEVTOOLS_PORT_FILE).read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    # Written in one go but not atomically: wait until both lines are there.
    if len(lines) < 2 or not lines[0].isdigit() or not lines[1].startswith("/devtools/browser/"):
        return None
    port = int(lines[0])
    if not 0 < port < 65536:
        return None
    return port, lines[1]


@contextlib.contextmanager
def launched_chromium(
    state_root: Path,
    env: Mapping[str, str],
    *,
    timeout_s: float = CHROMIUM_START_TIMEOUT_S,
) -> Iterator[LaunchedChromium]:
    """Start the system Chromium contained, yield its CDP endpoint, tree-kill it and clean up.

    ``Unsupported`` (``toolchain-unavailable``) when there is no Chromium;
    ``OperationFailed`` (with the log's tail) when it exits or stays silent past
    ``timeout_s`` before writing its DevTools endpoint.
    """
    from ax_exec.environment import clean_environment
    from ax_exec.service import start_service

    executable = find_chromium(env)
    if executable is None:
        raise chromium_unavailable()
    profile = Path(tempfile.mkdtemp(prefix=PROFILE_PREFIX, dir=browser_temp_dir(state_root)))
    log_path = profile.with_name(profile.name + ".log")
    private = {"HOME": str(profile), "XDG_CONFIG_HOME": str(profile / ".config")}
    private["XDG_CACHE_HOME"] = str(profile / ".cache")
    variables = clean_environment(env, overrides=private).variables
    service: Service | None = None
    try:
        service = start_service(
            [str(executable), *chromium_flags(profile, as_root=os.geteuid() == 0)],
            env=variables,
            cwd=profile,
            log_path=log_path,
            max_log_bytes=CHROMIUM_LOG_MAX_BYTES,
        )
        port, path = _wait_for_endpoint(service, profile, log_path, timeout_s)
        yield LaunchedChromium(
            cdp_url=f"ws://127.0.0.1:{port}{path}",
            port=port,
            pid=service.pid,
            executable=executable,
            profile=profile,
            log_path=log_path,
            _service=service,
        )
    finally:
        if service is not None:
            _stop(service)
        shutil.rmtree(profile, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            log_path.unlink()


def _wait_for_endpoint(
    service: Service, profile: Path, log_path: Path, timeout_s: float
) -> tuple[int, str]:
    deadline = time.monotonic() + timeout_s
    while (found := read_devtools_port(profile)) is None:
        code = service.process.poll()
        if code is not None or time.monotonic() >= deadline:
            # Stopped first, so the log holds everything the browser said.
            _stop(service)
            if code is not None:
                raise OperationFailed(
                    f"chromium exited (status {code}) before it opened its DevTools port"
                    f"{_tail(log_path)}",
                    hint="run `chromium --headless --no-sandbox about:blank` to see why",
                )
            raise OperationFailed(
                f"chromium did not open its DevTools port within {timeout_s:g}s{_tail(log_path)}",
                hint="the machine may be overloaded; try again",
            )
        time.sleep(DEVTOOLS_POLL_S)
    return found


def _stop(service: Service) -> None:
    """SIGTERM first (Chromium ignores its closed stdin), then the service's verified tree kill."""
    with contextlib.suppress(OSError):
        # Still our unreaped child, so its pid cannot have been recycled.
        if service.process.poll() is None:
            service.process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        service.process.wait(CHROMIUM_EXIT_GRACE_S)
    service.stop()


def _tail(log_path: Path) -> str:
    try:
        with log_path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - CHROMIUM_LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f"; its log ends:\n{text}" if text else ""
