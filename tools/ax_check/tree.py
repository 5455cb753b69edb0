"""Did a check change the sources it was checking? A snapshot before the run, compared after.

The sources of a unit are the files under its folder that:

- in a git work tree: git tracks (all of them: a tracked file is a source by
  the maintainers' own declaration, even a committed ``dist/``), plus the
  untracked files git does not ignore (``git ls-files --cached --others
  --exclude-standard``, through libcommon's hardened runner);
- elsewhere, or when git cannot answer: every file under the folder.

Untracked and walked files under a build-output or cache folder
(``BUILD_DIRS``, ``*.egg-info``, and the folders the recipe itself writes by
design, ``Command.outputs``) or named like a tool's artifact
(``ARTIFACT_NAMES``, ``*.pyc``, ``*.tsbuildinfo``) are not sources: a test
that writes ``.pytest_cache``, ``__pycache__``, ``target/``,
``node_modules/.cache`` or ``dist/`` has not changed them. Files the run
creates are not changes either (they were not there before).

Before the run every source is ``lstat``-ed (type and mode, size, mtime_ns,
ctime_ns, inode) and, within ``MAX_SNAPSHOT_HASH_BYTES``, its content hashed.
After it each is ``lstat``-ed again and only those whose signature moved are
read: a file is *deleted* when it is gone, *modified* when its type or mode
changed or its content differs (a file left unhashed by the budget counts on
its signature alone). Symlinks are compared by target, never followed; other
file types (FIFOs, sockets) are not watched. At most ``MAX_SNAPSHOT_FILES``
files are watched; past that the result says it is incomplete.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ax_check.models import TreeChange, TreeCheck
from libcommon.git import run_git

MAX_SNAPSHOT_FILES = 20_000
# Directory entries a walk (no git) looks at before it stops.
MAX_SNAPSHOT_ENTRIES = 100_000
MAX_SNAPSHOT_HASH_BYTES = 32 * 1024 * 1024
MAX_CHANGES_LISTED = 50
# Average bytes per path git may print for the watched files, to bound its output.
GIT_BYTES_PER_FILE = 512
BUILD_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".cache",
        ".eggs",
        "target",
        "dist",
        "build",
        "coverage",
        "htmlcov",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".turbo",
        ".parcel-cache",
        ".gradle",
    }
)
ARTIFACT_NAMES: frozenset[str] = frozenset({".coverage", "coverage.xml", ".dmypy.json"})
ARTIFACT_SUFFIXES: tuple[str, ...] = (".pyc", ".pyo", ".tsbuildinfo")
_READ_CHUNK = 1024 * 1024


def _output(relative: str, outputs: tuple[str, ...]) -> bool:
    return any(relative == folder or relative.startswith(f"{folder}/") for folder in outputs)


def _artifact(relative: str, outputs: tuple[str, ...] = ()) -> bool:
    parts = relative.split("/")
    name = parts[-1]
    if name in ARTIFACT_NAMES or name.startswith(".coverage.") or name.endswith(ARTIFACT_SUFFIXES):
        return True
    if _output(relative, outputs):
        return True
    return any(part in BUILD_DIRS or part.endswith(".egg-info") for part in parts[:-1])


Signature = tuple[int, int, int, int, int]


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _digest(path: str, info: os.stat_result) -> str | None:
    """The content's hash (a symlink's target); None when it cannot be read as it was."""
    if stat.S_ISLNK(info.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError:
            return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.blake2b(digest_size=20)
        while chunk := os.read(fd, _READ_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class _Entry:
    signature: Signature
    digest: str | None


@dataclass
class Snapshot:
    root: Path
    method: str  # "git" or "walk"
    complete: bool
    entries: dict[str, _Entry] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()


def _git_sources(
    root: Path, environ: Mapping[str, str], outputs: tuple[str, ...]
) -> tuple[list[str], bool] | None:
    """Tracked files and untracked non-ignored non-artifacts; None outside a work tree."""
    listing = run_git(
        root,
        ["ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"],
        environ,
        max_output_bytes=MAX_SNAPSHOT_FILES * GIT_BYTES_PER_FILE,
    )
    if listing is None or (listing.returncode != 0 and not listing.truncated):
        return None
    records = listing.stdout.split(b"\0")
    # The last record is empty after a final NUL, or cut short by the cap.
    records.pop()
    paths: list[str] = []
    for record in records:
        tag, _, raw = record.partition(b" ")
        relative = os.fsdecode(raw)
        if not relative or (tag == b"?" and _artifact(relative, outputs)):
            continue
        paths.append(relative)
    if not paths:
        # Nothing listed: the folder is ignored by an enclosing repository (a home
        # directory kept in git), or empty; the walk decides.
        return None
    return list(dict.fromkeys(paths)), not listing.truncated


def _walk(root: Path, outputs: tuple[str, ...]) -> tuple[list[str], bool]:
    paths: list[str] = []
    seen = 0
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(root / folder if folder else root) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > MAX_SNAPSHOT_ENTRIES:
                return paths, False
            relative = f"{folder}/{entry.name}" if folder else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                skipped = entry.name in BUILD_DIRS or entry.name.endswith(".egg-info")
                if not skipped and not _output(relative, outputs):
                    pending.append(relative)
            elif not _artifact(relative, outputs):
                paths.append(relative)
    return paths, True


def _watched(paths: list[str], root: Path) -> Iterator[tuple[str, os.stat_result]]:
    for relative in paths:
        try:
            info = os.lstat(root / relative)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            yield relative, info


def take_snapshot(
    root: Path, environ: Mapping[str, str] | None = None, outputs: tuple[str, ...] = ()
) -> Snapshot:
    """The unit's sources before a run: signatures, and hashes within the byte budget.

    ``outputs`` are unit-relative folders the command writes by design (``Command.outputs``).
    """
    found = _git_sources(root, os.environ if environ is None else environ, outputs)
    method = "git"
    if found is None:
        method = "walk"
        found = _walk(root, outputs)
    paths, complete = found
    snapshot = Snapshot(root, method, complete, outputs=outputs)
    budget = MAX_SNAPSHOT_HASH_BYTES
    for relative, info in _watched(paths, root):
        if len(snapshot.entries) >= MAX_SNAPSHOT_FILES:
            snapshot.complete = False
            break
        digest = None
        if info.st_size <= budget:
            digest = _digest(str(root / relative), info)
            budget -= info.st_size
        snapshot.entries[relative] = _Entry(_signature(info), digest)
    return snapshot


def compare_tree(snapshot: Snapshot) -> TreeCheck:
    """What the run changed among the watched sources (only moved signatures are read)."""
    changes: list[TreeChange] = []
    for relative, before in snapshot.entries.items():
        path = str(snapshot.root / relative)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            changes.append(TreeChange(path=relative, change="deleted"))
            continue
        except OSError:
            continue
        now = _signature(info)
        if now == before.signature:
            continue
        same_kind = now[0] == before.signature[0]
        if same_kind and before.digest is not None and _digest(path, info) == before.digest:
            continue
        changes.append(TreeChange(path=relative, change="modified"))
    return TreeCheck(
        method="git" if snapshot.method == "git" else "walk",
        files=len(snapshot.entries),
        complete=snapshot.complete,
        changed=changes[:MAX_CHANGES_LISTED],
        changed_total=len(changes),
        outputs=list(snapshot.outputs),
    )
