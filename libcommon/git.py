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

``run_git_batch`` runs several commands at once with one read of the drivers, taken
just before they all start (the same read-then-run window as a single run), each
command hardened exactly as ``run_git`` hardens one.
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
# The most commands one run_git_batch starts at once (each is a process and a pipe).
MAX_BATCH_COMMANDS = 8
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
    return run_git_batch(
        directory, [args], environ, timeout_s=timeout_s, max_output_bytes=max_output_bytes
    )[0]


def run_git_batch(
    directory: Path,
    commands: Sequence[Sequence[str]],
    environ: Mapping[str, str],
    *,
    timeout_s: float = GIT_TIMEOUT_S,
    max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
) -> list[GitOutput | None]:
    """Each of ``commands`` as ``run_git`` runs it, all at once, in one answer per command.

    The repository's drivers are read once for the batch, just before the commands
    start together: the same read-then-run window a single run has, for one probe
    instead of one per command. ``timeout_s`` bounds the whole batch, probe included;
    ``max_output_bytes`` caps each command's output. An answer is None when its command
    could not start or was still running at the deadline; all are None when git is
    missing or the repository's config cannot be read.
    """
    if len(commands) > MAX_BATCH_COMMANDS:
        raise ValueError(f"at most {MAX_BATCH_COMMANDS} git commands run at once")
    none: list[GitOutput | None] = [None] * len(commands)
    git = find_git(environ)
    if git is None or not commands:
        return none
    env = git_environment(environ)
    deadline = time.monotonic() + timeout_s
    drivers = _driver_overrides(git, directory, env, timeout_s)
    if drivers is None:
        return none
    prefix = [git, *_HARDENING, *drivers, "-C", str(directory)]
    return _run_all([[*prefix, *args] for args in commands], env, deadline, max_output_bytes)


def _run_all(
    argvs: list[list[str]], env: dict[str, str], deadline: float, max_output_bytes: int
) -> list[GitOutput | None]:
    """Run every argv at once, reading each one's stdout up to the cap until the deadline."""
    processes: list[subprocess.Popen[bytes] | None] = []
    try:
        for argv in argvs:
            try:
                process: subprocess.Popen[bytes] | None = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
            except OSError:
                process = None
            processes.append(process)
        outputs = [bytearray() for _ in argvs]
        # Whose stdout was read to its end, or cut at the cap (and the process killed).
        ended = [False] * len(argvs)
        truncated = [False] * len(argvs)
        with selectors.DefaultSelector() as selector:
            for index, process in enumerate(processes):
                if process is not None:
                    assert process.stdout is not None
                    selector.register(process.stdout, selectors.EVENT_READ, index)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                for key, _events in selector.select(remaining):
                    index = key.data
                    chunk = os.read(key.fd, _READ_CHUNK)
                    data = outputs[index]
                    room = max_output_bytes - len(data)
                    data += chunk[:room]
                    if chunk and len(chunk) <= room:
                        continue
                    selector.unregister(key.fileobj)
                    ended[index] = True
                    if chunk:
                        truncated[index] = True
                        process = processes[index]
                        assert process is not None
                        process.kill()
        results: list[GitOutput | None] = []
        for index, process in enumerate(processes):
            if process is None or not ended[index]:
                results.append(None)
                continue
            try:
                returncode = process.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                results.append(None)
                continue
            results.append(GitOutput(returncode, bytes(outputs[index]), truncated[index]))
        return results
    finally:
        for process in processes:
            if process is None:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stdout is not None
            process.stdout.close()


# --- A person's deliberate git: their hooks and identity, everything else hardened ----------

# A person's own hooks may run a test suite; the run is still bounded.
DELIBERATE_TIMEOUT_S = 600.0
# Of what git and the hooks print, this much is kept to show the person.
DELIBERATE_MAX_OUTPUT_BYTES = 64 * 1024
# Tokens in the environment never reach git or a hook it starts: git authenticates
# through its own credential helpers, and a hook has no business with them.
DELIBERATE_ENV_DROPPED: tuple[str, ...] = ("GH_TOKEN", "GITHUB_TOKEN")


@dataclass(frozen=True)
class DeliberateOutput:
    returncode: int
    stdout: bytes
    # stderr and the hooks' output, capped: what git said when it refused.
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def said(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


def run_git_deliberate(
    directory: Path,
    args: Sequence[str],
    environ: Mapping[str, str],
    *,
    timeout_s: float = DELIBERATE_TIMEOUT_S,
) -> DeliberateOutput | None:
    """``git -C directory ARGS`` for an action a person confirmed (a commit, a push).

    Their own hooks run (``core.hooksPath`` is not overridden) and git takes their
    identity from their config; everything else is as ``run_git``: the real path of
    git, fsmonitor off, every filter and diff driver overridden, no optional locks, no
    prompts, no system config, the retargeting ``GIT_*`` variables removed, and also
    ``GH_TOKEN``/``GITHUB_TOKEN``. The run is bounded; at the deadline the whole process
    group (git and its hooks) is killed. None when git is missing, cannot start, runs
    out of time, or the repository's config cannot be read.
    """
    import signal
    import tempfile

    git = find_git(environ)
    if git is None:
        return None
    env = git_environment(
        {key: value for key, value in environ.items() if key not in DELIBERATE_ENV_DROPPED}
    )
    drivers = _driver_overrides(git, directory, env, min(timeout_s, GIT_TIMEOUT_S))
    if drivers is None:
        return None
    argv = [git, "-c", "core.fsmonitor=false", *drivers, "-C", str(directory), *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
            )
        except OSError:
            return None
        try:
            returncode = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None
        out.seek(0)
        err.seek(0)
        return DeliberateOutput(
            returncode,
            out.read(DELIBERATE_MAX_OUTPUT_BYTES),
            err.read(DELIBERATE_MAX_OUTPUT_BYTES),
        )
