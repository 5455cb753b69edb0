"""The one hardened way ax runs git: a repository's own config is untrusted bytes.

Every call runs the git found on PATH by its real path (absolute PATH entries
only: an empty or relative entry names a folder relative to wherever ax runs,
so a ``git`` planted in a workspace could answer), with ``core.fsmonitor``
off (a configured fsmonitor is a program git would run), hooks pointed at
/dev/null, no external diff (a configured ``diff.external`` is emptied, so a diff
that would run it fails instead), no optional locks (a read never rewrites the
index), no prompts, no stdin, no system config, and every ``GIT_*`` variable
removed but the few named in ``GIT_ENV_KEPT``: git reads dozens of them (where
the repository, its index, objects, namespace and config are, where its own
programs live, how pathspecs match), later versions add more, and only an
allowlist stays complete. A git older than the features the runner relies on
(``GIT_FEATURES``) is refused as if it were missing (``git_problem`` says why).
A repository's own content drivers are programs too:
``filter.<driver>.clean``/``smudge``/``process`` run whenever git hashes a
worktree file (``status`` on a file whose stat changed),
``diff.<driver>.textconv``/``command`` on a diff. Every such driver the
repository's config names (includes followed, as git reads them) is overridden
for the run (``_DRIVER_PROGRAMS``), so no attribute can reach its program. Its
output is read up to a cap and the run is bounded in time; of stderr only the end is
kept (``GIT_STDERR_MAX_BYTES``), for a failure's message (``GitOutput.said``).
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
# A command that writes objects for a whole tree (add -A into a temporary index) gets longer.
GIT_WRITE_TIMEOUT_S = 60.0
# Live checkpoint refs (refs/ax/checkpoints/<session>/) one session may hold: ax-log
# refuses the next, and ax-policy denies the git_checkpoint fact at it.
MAX_CHECKPOINTS_PER_SESSION = 20
# At most this many content drivers are neutralised; a config naming more is refused.
MAX_CONTENT_DRIVERS = 64
GIT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
# Of what git writes on stderr, the end kept (its last line is why it failed), and the
# most of that one line a message quotes.
GIT_STDERR_MAX_BYTES = 4096
GIT_SAID_MAX_CHARS = 300
# How git begins the line that says why it failed (its messages are read with LC_ALL=C).
_GIT_FAILURES = ("fatal:", "error:")
# The most commands one run_git_batch starts at once (each is a process and a pipe).
MAX_BATCH_COMMANDS = 8
_READ_CHUNK = 64 * 1024
_STDERR_READS_AFTER_EXIT = 16
# The only GIT_* variables a child git sees from ax's environment: who a person's
# commit is by, and where the user's own global config is (the same authority as
# HOME, never the repository's). Every other GIT_* is dropped: GIT_DIR, GIT_WORK_TREE,
# GIT_COMMON_DIR, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY and the alternates point git
# at another repository; GIT_NAMESPACE, GIT_REPLACE_REF_BASE, GIT_SHALLOW_FILE and
# GIT_ATTR_SOURCE change what a repository's refs, history and attributes read as;
# GIT_CEILING_DIRECTORIES and GIT_DISCOVERY_ACROSS_FILESYSTEM change which
# repository a folder finds; GIT_CONFIG*, GIT_EXEC_PATH, GIT_EXTERNAL_DIFF,
# GIT_SSH*, GIT_PAGER and GIT_EDITOR name config or programs git would run;
# GIT_*_PATHSPECS change what a path argument matches; GIT_TRACE* write files.
GIT_ENV_KEPT: frozenset[str] = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CONFIG_GLOBAL",
    }
)
# What a caller may set for one run: a temporary index (checkpoints) and a fixed identity.
GIT_ENV_SETTABLE: frozenset[str] = frozenset(
    {
        "GIT_INDEX_FILE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
    }
)
# What the runner relies on, and the git release that brought it: an older git would
# ignore the setting silently (run the hooks, let a read rewrite the index).
GIT_FEATURES: tuple[tuple[str, tuple[int, int]], ...] = (
    ("core.hooksPath, so no repository hook runs", (2, 9)),
    ("GIT_OPTIONAL_LOCKS=0, so a read never rewrites the index", (2, 15)),
    ("status --porcelain=v1 -z with rename pairs", (2, 11)),
)
MIN_GIT_VERSION: tuple[int, int] = max(version for _, version in GIT_FEATURES)
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
    # The end of what git wrote on stderr (``GIT_STDERR_MAX_BYTES``).
    stderr: bytes = b""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.truncated

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def said(self) -> str:
        """Why a failed command failed, in git's words, for a message: its last ``fatal:``
        or ``error:`` line on stderr (usage hints may follow it), else its last line that
        says something, cut at ``GIT_SAID_MAX_CHARS``; "" when it said nothing."""
        lines = [line.strip() for line in self.stderr.decode("utf-8", "replace").splitlines()]
        lines = [line for line in lines if line]
        why = next((line for line in reversed(lines) if line.startswith(_GIT_FAILURES)), None)
        return (why or (lines[-1] if lines else ""))[:GIT_SAID_MAX_CHARS]


def git_said(done: GitOutput | None) -> str:
    """``": <what git said>"`` to end a failure's message, or "" (no run, or git said
    nothing)."""
    said = done.said() if done is not None else ""
    return f": {said}" if said else ""


def git_environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = {
        key: value
        for key, value in environ.items()
        if not key.upper().startswith("GIT_") or key in GIT_ENV_KEPT
    }
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
    """The real path of the first executable ``git`` in an absolute folder of PATH.

    Not ``shutil.which``: it joins an empty or relative entry to the current
    folder, so ``PATH=:/usr/bin`` or ``PATH=bin:/usr/bin`` run in a workspace
    would run the workspace's own ``git``.
    """
    for folder in environ.get("PATH", os.defpath).split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None


# Versions already asked, by (real path, inode, mtime): one `git version` per binary.
_VERSIONS: dict[tuple[str, int, int], tuple[int, ...] | None] = {}


def parse_git_version(text: str) -> tuple[int, ...] | None:
    """``git version 2.39.5`` (or ``2.37.1 (Apple Git-137.1)``, ``2.41.0.windows.1``)."""
    words = text.split()
    if len(words) < 3 or words[:2] != ["git", "version"]:
        return None
    numbers: list[int] = []
    for part in words[2].split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers) if len(numbers) >= 2 else None


def git_version(git: str, env: Mapping[str, str], timeout_s: float) -> tuple[int, ...] | None:
    """The version of the git at ``git`` (asked once per binary), None when it cannot say."""
    try:
        info = os.stat(git)
    except OSError:
        return None
    key = (git, info.st_ino, info.st_mtime_ns)
    if key not in _VERSIONS:
        try:
            done = subprocess.run(
                [git, "version"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=dict(env),
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        _VERSIONS[key] = parse_git_version(done.stdout.decode("utf-8", "replace"))
    return _VERSIONS[key]


def _version_text(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def git_problem(environ: Mapping[str, str], timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """Why ax will not run git here (missing, silent, too old), or None when it will."""
    git = find_git(environ)
    if git is None:
        return "git is not installed (no executable git in an absolute folder of PATH)"
    version = git_version(git, git_environment(environ), timeout_s)
    if version is None:
        return f"{git} did not say its version (`git version`)"
    if version < MIN_GIT_VERSION:
        needs = "; ".join(
            f"{feature} ({_version_text(since)})"
            for feature, since in GIT_FEATURES
            if version < since
        )
        return (
            f"git {_version_text(version)} at {git} is older than "
            f"{_version_text(MIN_GIT_VERSION)}, the oldest ax runs: it lacks {needs}"
        )
    return None


def usable_git(environ: Mapping[str, str], timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """The git to run: found on PATH and new enough (``git_problem`` says why not)."""
    git = find_git(environ)
    if git is None:
        return None
    version = git_version(git, git_environment(environ), timeout_s)
    return git if version is not None and version >= MIN_GIT_VERSION else None


@dataclass(frozen=True)
class StatusEntry:
    """One record of ``git status --porcelain=v1 -z``: ``xy`` is the two status letters
    (index, worktree), ``orig_path`` the source of a rename or copy."""

    xy: str
    path: str
    orig_path: str | None = None


def split_z(data: bytes) -> list[str]:
    """The NUL-terminated names of ``ls-files -z`` and kin, as file-system strings
    (``os.fsdecode``: a name that is not UTF-8 survives the round trip)."""
    return [os.fsdecode(item) for item in data.split(b"\0")[:-1]] if data else []


def parse_status_z(data: bytes) -> list[StatusEntry]:
    """``git status --porcelain=v1 -z``: ``XY PATH\\0``, a rename or copy followed by its
    source path as one more NUL-terminated field. Refuses what is not that shape."""
    fields = data.split(b"\0")
    if fields[-1] != b"":
        raise ValueError("status output does not end with a NUL")
    entries: list[StatusEntry] = []
    index = 0
    while index < len(fields) - 1:
        field = fields[index]
        if len(field) < 4 or field[2:3] != b" ":
            raise ValueError(f"status record {field[:40]!r} is not 'XY PATH'")
        xy = field[:2].decode("ascii", "replace")
        orig: str | None = None
        if "R" in xy or "C" in xy:
            index += 1
            if index >= len(fields) - 1:
                raise ValueError(f"rename record {field[:40]!r} has no source path")
            orig = os.fsdecode(fields[index])
        entries.append(StatusEntry(xy, os.fsdecode(field[3:]), orig))
        index += 1
    return entries


# What each configured driver's programs become for the run. An empty filter runs
# nothing (a required one fails the command instead); a textconv becomes a plain
# cat of the file; an external diff command cannot be made harmless and still
# diff, so it is emptied and a diff that needs it fails rather than run it.
_SYSTEM_CAT = shutil.which("cat", path="/usr/bin:/bin") or "/bin/cat"
_DRIVER_PROGRAMS: dict[str, dict[str, str]] = {
    "filter": {"clean": "", "smudge": "", "process": ""},
    "diff": {"textconv": _SYSTEM_CAT, "command": ""},
}
# A filter marked required fails the command once its programs are emptied (git-lfs sets
# ``filter.lfs.required`` in every user's global config): it is made optional, so the
# file's own bytes pass through unfiltered, which is what git does for a filter it lacks.
_REQUIRED_OFF = "required=false"


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
        elif name and section.lower() == "filter" and program.lower() == "required":
            programs.add(("filter", name, "required"))
    if len({(section, name) for section, name, _ in programs}) > MAX_CONTENT_DRIVERS:
        return None
    filters = sorted({name for section, name, _ in programs if section == "filter"})
    for section, name, program in sorted(programs):
        if program != "required":
            value = _DRIVER_PROGRAMS[section][program]
            overrides += ["-c", f"{section}.{name}.{program}={value}"]
    for name in filters:
        overrides += ["-c", f"filter.{name}.{_REQUIRED_OFF}"]
    return overrides


def run_git(
    directory: Path,
    args: Sequence[str],
    environ: Mapping[str, str],
    *,
    timeout_s: float = GIT_TIMEOUT_S,
    max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
    set_env: Mapping[str, str] | None = None,
) -> GitOutput | None:
    """``git -C directory ARGS`` hardened; None when git is missing, too old, cannot start
    or times out, or when the repository's config cannot be read for the drivers to
    neutralise. ``set_env`` sets variables of ``GIT_ENV_SETTABLE`` for this run."""
    return run_git_batch(
        directory,
        [args],
        environ,
        timeout_s=timeout_s,
        max_output_bytes=max_output_bytes,
        set_env=set_env,
    )[0]


def run_git_batch(
    directory: Path,
    commands: Sequence[Sequence[str]],
    environ: Mapping[str, str],
    *,
    timeout_s: float = GIT_TIMEOUT_S,
    max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
    set_env: Mapping[str, str] | None = None,
) -> list[GitOutput | None]:
    """Each of ``commands`` as ``run_git`` runs it, all at once, in one answer per command.

    The repository's drivers are read once for the batch, just before the commands
    start together: the same read-then-run window a single run has, for one probe
    instead of one per command. ``timeout_s`` bounds the whole batch, probe included;
    ``max_output_bytes`` caps each command's output. An answer is None when its command
    could not start or was still running at the deadline; all are None when git is
    missing or too old, or the repository's config cannot be read.
    """
    _check_batch(commands, set_env)
    if not commands:
        return []
    deadline = time.monotonic() + timeout_s
    runner = GitRunner.open(directory, environ, timeout_s=timeout_s)
    if runner is None:
        return [None] * len(commands)
    return runner.batch(
        commands,
        timeout_s=max(deadline - time.monotonic(), 0.01),
        max_output_bytes=max_output_bytes,
        set_env=set_env,
    )


def _check_batch(commands: Sequence[Sequence[str]], set_env: Mapping[str, str] | None) -> None:
    if len(commands) > MAX_BATCH_COMMANDS:
        raise ValueError(f"at most {MAX_BATCH_COMMANDS} git commands run at once")
    unknown = sorted(set(set_env or ()) - GIT_ENV_SETTABLE)
    if unknown:
        raise ValueError(f"the git runner does not set {', '.join(unknown)}")


@dataclass(frozen=True)
class GitRunner:
    """Several steps of one operation (a checkpoint: list, add, write-tree, commit-tree,
    update-ref) under one read of the repository's drivers, each step hardened exactly
    as ``run_git`` hardens a command. The read-then-run window is the operation's length
    (tens of milliseconds), as a batch's is its own; a caller opens one per operation,
    never keeps one."""

    directory: Path
    prefix: tuple[str, ...]
    env: Mapping[str, str]

    @classmethod
    def open(
        cls, directory: Path, environ: Mapping[str, str], *, timeout_s: float = GIT_TIMEOUT_S
    ) -> GitRunner | None:
        """None when git is missing or too old, or the config cannot be read."""
        deadline = time.monotonic() + timeout_s
        git = usable_git(environ, timeout_s)
        if git is None:
            return None
        env = git_environment(environ)
        drivers = _driver_overrides(git, directory, env, max(deadline - time.monotonic(), 0.01))
        if drivers is None:
            return None
        return cls(directory, (git, *_HARDENING, *drivers, "-C", str(directory)), env)

    def run(
        self,
        args: Sequence[str],
        *,
        timeout_s: float = GIT_TIMEOUT_S,
        max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
        set_env: Mapping[str, str] | None = None,
    ) -> GitOutput | None:
        return self.batch(
            [args], timeout_s=timeout_s, max_output_bytes=max_output_bytes, set_env=set_env
        )[0]

    def batch(
        self,
        commands: Sequence[Sequence[str]],
        *,
        timeout_s: float = GIT_TIMEOUT_S,
        max_output_bytes: int = GIT_MAX_OUTPUT_BYTES,
        set_env: Mapping[str, str] | None = None,
    ) -> list[GitOutput | None]:
        _check_batch(commands, set_env)
        env = {**self.env, **(set_env or {})}
        deadline = time.monotonic() + timeout_s
        argvs = [[*self.prefix, *args] for args in commands]
        return _run_all(argvs, env, deadline, max_output_bytes)


def _run_all(
    argvs: list[list[str]], env: dict[str, str], deadline: float, max_output_bytes: int
) -> list[GitOutput | None]:
    """Run every argv at once, reading each one's stdout up to the cap until the deadline,
    and the end of its stderr. The run ends with stdout: a process git left behind that
    holds stderr open is not waited for."""
    processes: list[subprocess.Popen[bytes] | None] = []
    try:
        for argv in argvs:
            try:
                process: subprocess.Popen[bytes] | None = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                )
            except OSError:
                process = None
            processes.append(process)
        outputs = [bytearray() for _ in argvs]
        errors = [b""] * len(argvs)
        # Whose stdout was read to its end, or cut at the cap (and the process killed).
        ended = [False] * len(argvs)
        truncated = [False] * len(argvs)
        with selectors.DefaultSelector() as selector:
            reading = 0
            for index, process in enumerate(processes):
                if process is not None:
                    assert process.stdout is not None and process.stderr is not None
                    os.set_blocking(process.stderr.fileno(), False)
                    selector.register(process.stdout, selectors.EVENT_READ, (index, False))
                    selector.register(process.stderr, selectors.EVENT_READ, (index, True))
                    reading += 1
            while reading:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                for key, _events in selector.select(remaining):
                    index, is_stderr = key.data
                    if is_stderr:
                        if _keep_stderr(key.fd, errors, index) is False:
                            selector.unregister(key.fileobj)
                        continue
                    chunk = os.read(key.fd, _READ_CHUNK)
                    data = outputs[index]
                    room = max_output_bytes - len(data)
                    data += chunk[:room]
                    if chunk and len(chunk) <= room:
                        continue
                    selector.unregister(key.fileobj)
                    reading -= 1
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
            assert process.stderr is not None
            # What is left in the pipe; bounded, as a process git left may still write.
            for _read in range(_STDERR_READS_AFTER_EXIT):
                if not _keep_stderr(process.stderr.fileno(), errors, index):
                    break
            results.append(
                GitOutput(returncode, bytes(outputs[index]), truncated[index], errors[index])
            )
        return results
    finally:
        for process in processes:
            if process is None:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stdout is not None and process.stderr is not None
            process.stdout.close()
            process.stderr.close()


def _keep_stderr(fd: int, errors: list[bytes], index: int) -> bool | None:
    """Read a chunk of stderr ``fd`` (non-blocking) into ``errors[index]``, keeping its end:
    True when one was read, None when none is there now, False when stderr ended."""
    try:
        chunk = os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    errors[index] = (errors[index] + chunk)[-GIT_STDERR_MAX_BYTES:]
    return bool(chunk)


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
    group (git and its hooks) is killed. None when git is missing or older than the
    version gate (``git_problem`` says which), cannot start, runs out of time, or the
    repository's config cannot be read.
    """
    import signal
    import tempfile

    git = usable_git(environ, min(timeout_s, GIT_TIMEOUT_S))
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
