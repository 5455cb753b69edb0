"""The one hardened way ax runs git: a repository's own config is untrusted bytes.

Every call runs the git found on PATH by its real path, with ``core.fsmonitor``
off (a configured fsmonitor is a program git would run), hooks pointed at
/dev/null, no external diff, no optional locks (a read never rewrites the
index), no prompts, no system config, and the ``GIT_*`` variables that would
point git at another repository or config removed. Its output is read up to a
cap and the run is bounded in time; stderr is discarded. The caller picks the
subcommand: nothing here makes a writing or content-filtering one (``status``,
``diff``, ``add``) safe against a repository's ``filter.*`` drivers.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 5.0
GIT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
_READ_CHUNK = 64 * 1024
# Environment variables that would point git at another repository or config.
GIT_ENV_DROPPED: tuple[str, ...] = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
)
_HARDENING: tuple[str, ...] = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
)


@dataclass(frozen=True)
class GitOutput:
    returncode: int
    stdout: bytes
    # True when the output reached the cap: the run was killed and stdout is its start.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.truncated

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def git_environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = {key: value for key, value in environ.items() if key not in GIT_ENV_DROPPED}
    env.update(
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        LC_ALL="C",
    )
    return env


def find_git(environ: Mapping[str, str]) -> str | None:
    found = shutil.which("git", path=environ.get("PATH", os.defpath))
    return os.path.realpath(found) if found is not None else None


def run_git(
    directory: Path,
    args: Sequence[str],
    environ: Mapping[str, str],
    *,
    timeout_s: float = GIT_TIMEOUT_S,
    max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
) -> GitOutput | None:
    """``git -C directory ARGS`` hardened; None when git is missing, cannot start or times out."""
    git = find_git(environ)
    if git is None:
        return None
    argv = [git, *_HARDENING, "-C", str(directory), *args]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_environment(environ),
        )
    except OSError:
        return None
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    data = bytearray()
    truncated = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if not selector.select(remaining):
                    continue
                chunk = os.read(process.stdout.fileno(), _READ_CHUNK)
                if not chunk:
                    break
                room = max_output_bytes - len(data)
                data += chunk[:room]
                if len(chunk) > room:
                    truncated = True
                    break
        if truncated:
            process.kill()
        returncode = process.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        return None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    return GitOutput(returncode, bytes(data), truncated)
