"""The one hardened way ax runs git: a repository's own config is untrusted bytes.

Every call runs the git found on PATH by its real path, with ``core.fsmonitor``
off (a configured fsmonitor is a program git would run), hooks pointed at
/dev/null, no external diff (a configured ``diff.external`` is emptied, so a diff
that would run it fails instead), no optional locks (a read never rewrites the
index), no prompts, no system config, and the ``GIT_*`` variables that would
point git at another repository or config removed. A repository's own content
drivers are programs too: ``filter.<driver>.clean``/``smudge``/``process`` run
whenever git hashes a worktree file (``status`` on a file whose stat changed),
``diff.<driver>.textconv``/``command`` on a diff. Every such driver the
repository's config names (includes followed, as git reads them) is overridden
for the run (``_DRIVER_PROGRAMS``), so no attribute can reach its program. Its output is
read up to a cap and the run is bounded in time; stderr is discarded.
Submodules are the caller's to keep out (``--ignore-submodules=all``): git
runs in them with their own config.
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
# At most this many content drivers are neutralised; a config naming more is refused.
MAX_CONTENT_DRIVERS = 64
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


# What each configured driver's programs become for the run. An empty filter runs
# nothing (a required one fails the command instead); a textconv becomes a plain
# cat of the file; an external diff command cannot be made harmless and still
# diff, so it is emptied and a diff that needs it fails rather than run it.
_SYSTEM_CAT = shutil.which("cat", path="/usr/bin:/bin") or "/bin/cat"
_DRIVER_PROGRAMS: dict[str, dict[str, str]] = {
    "filter": {"clean": "", "smudge": "", "process": ""},
    "diff": {"textconv": _SYSTEM_CAT, "command": ""},
}


def _driver_overrides(
    git: str, directory: Path, env: Mapping[str, str], timeout_s: float
) -> list[str] | None:
    """``-c`` pairs emptying every filter and diff driver's program; None if unreadable."""
    try:
        done = subprocess.run(
            [
                git,
                *_HARDENING,
                "-C",
                str(directory),
                "config",
                "--null",
                "--get-regexp",
                r"^(filter|diff)\.",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=dict(env),
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    # 1 is "no such key"; anything else (a config git cannot parse) is not read as none.
    if done.returncode not in (0, 1):
        return None
    # Only the programs the config sets: an override also defines a key (an emptied
    # diff command would turn every diff of that driver into a failure).
    programs: set[tuple[str, str, str]] = set()
    overrides: list[str] = []
    for entry in done.stdout.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "replace")
        if key.lower() == "diff.external" and "diff.external=" not in overrides:
            overrides += ["-c", "diff.external="]
        section, _, rest = key.partition(".")
        name, _, program = rest.rpartition(".")
        if name and program.lower() in _DRIVER_PROGRAMS.get(section.lower(), {}):
            programs.add((section.lower(), name, program.lower()))
    if len({(section, name) for section, name, _ in programs}) > MAX_CONTENT_DRIVERS:
        return None
    for section, name, program in sorted(programs):
        overrides += ["-c", f"{section}.{name}.{program}={_DRIVER_PROGRAMS[section][program]}"]
    return overrides


def run_git(
    directory: Path,
    args: Sequence[str],
    environ: Mapping[str, str],
    *,
    timeout_s: float = GIT_TIMEOUT_S,
    max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
) -> GitOutput | None:
    """``git -C directory ARGS`` hardened; None when git is missing, cannot start or times
    out, or when the repository's config cannot be read for the drivers to neutralise."""
    git = find_git(environ)
    if git is None:
        return None
    env = git_environment(environ)
    deadline = time.monotonic() + timeout_s
    drivers = _driver_overrides(git, directory, env, timeout_s)
    if drivers is None:
        return None
    argv = [git, *_HARDENING, *drivers, "-C", str(directory), *args]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    assert process.stdout is not None
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
