"""The inventory: which files the workspace holds, and which of them may be read.

In a git repository the list is ``git ls-files`` (tracked) plus ``git ls-files
--others --exclude-standard`` (untracked, not ignored), run through libcommon's one
hardened git runner; ``git status`` marks the tracked files with uncommitted changes.
A workspace that is not a git repository (or that its repository ignores) is walked,
honouring its ``.gitignore`` files (ax_map.gitignore). The walk never follows a
symbolic link: each folder is opened relative to the one above with O_NOFOLLOW, so
neither a link to outside nor a link loop is ever entered.

At most ``MAX_FILES`` files are kept, the shallowest first (then by path), so the
top of every tree survives a cap; the rest are counted, not listed. Each kept file
is classified by its name and ``lstat`` alone, without reading a byte: a file that is
secret-named, a symbolic link, not a regular file, larger than ``MAX_FILE_BYTES``,
binary or minified by its name, or in a language without a grammar is ``listed``
with that reason and never opened. Every other file is ``pending`` until extraction
reads it.
"""

from __future__ import annotations

import errno
import heapq
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from libcommon.git import GitOutput, run_git, run_git_batch
from libcommon.secretnames import secret_folder, secret_name_pattern

from .gitignore import GITIGNORE_MAX_BYTES, IgnoreFile, is_ignored, parse_file
from .languages import GRAMMARS, binary_by_name, language_of, minified_by_name
from .model import FileEntry

MAX_FILES = 20_000
MAX_FILE_BYTES = 1024 * 1024
# git's listing of a 200,000-file repository is a few MiB; past this it is cut and the
# count becomes a lower bound.
GIT_LIST_MAX_BYTES = 64 * 1024 * 1024
GIT_LIST_TIMEOUT_S = 60.0
# The walk of a workspace that is not a git repository stops counting past this many
# entries (the count is then a lower bound), and does not enter folders deeper than this.
WALK_MAX_ENTRIES = 1_000_000
WALK_MAX_DEPTH = 128
# git never descends into these, and neither does the walk.
WALK_SKIPPED_DIRS = frozenset({".git"})

# The reasons a file is listed and never read (FileEntry.skip), decided here from the
# name and lstat; ax_map.extract adds the ones only a read can tell.
SKIP_SECRET = "secret-named"
SKIP_SYMLINK = "symlink"
SKIP_NOT_REGULAR = "not a regular file"
SKIP_SUBMODULE = "submodule"
SKIP_NESTED_REPOSITORY = "nested repository"
SKIP_TOO_LARGE = "too large"
SKIP_BINARY = "binary"
SKIP_MINIFIED = "minified"
SKIP_NO_GRAMMAR = "no grammar"
SKIP_UNREADABLE = "unreadable"
SKIP_UNREADABLE_DIRECTORY = "unreadable directory"
SKIP_TOO_DEEP = "too deep"
SKIP_DELETED = "deleted"


class InventoryError(Exception):
    """git is there but could not list the repository; ``str()`` says why."""


@dataclass
class Inventory:
    files: list[FileEntry]
    # Files found, kept or not; ``exact`` is False when the listing or the walk was
    # cut short and ``total`` is a lower bound.
    total: int
    capped: int
    git: bool
    exact: bool = True
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Found:
    path: str
    tracked: bool
    changed: bool
    # Decided while listing (a folder the walk could not open, ...); else from lstat.
    skip: str | None = None


def take_inventory(
    workspace: Path, environ: Mapping[str, str], deadline: float | None = None
) -> Inventory:
    """The workspace's files, capped and classified (see the module docstring)."""
    listing = list_files(workspace, environ, deadline)
    return listing.inventory(list(listing.entries()))


@dataclass
class Listing:
    """The inventory before its kept files are classified: a cold build extracts the
    first files while the rest are still being classified (``entries`` is lazy)."""

    kept: list[_Found]
    total: int
    capped: int
    git: bool
    exact: bool
    notes: list[str]
    classify: Callable[[_Found], FileEntry]

    def entries(self) -> Iterator[FileEntry]:
        """Each kept file's entry, in path order, classified as it is asked for."""
        return map(self.classify, self.kept)

    def inventory(self, files: list[FileEntry]) -> Inventory:
        return Inventory(files, self.total, self.capped, self.git, self.exact, self.notes)


def list_files(
    workspace: Path, environ: Mapping[str, str], deadline: float | None = None
) -> Listing:
    """The workspace's files, capped, in path order, not classified yet."""
    remaining = GIT_LIST_TIMEOUT_S if deadline is None else deadline - time.monotonic()
    timeout = min(max(remaining, 1.0), GIT_LIST_TIMEOUT_S)
    listing = _git_listing(workspace, environ, timeout)
    walker: _Walker | None = None
    if listing is not None:
        found: Iterable[_Found] = listing[0]
        git = True
    else:
        walker = _Walker(workspace, deadline)
        found = (_Found(path, False, False, skip) for path, skip in walker.run())
        git = False
    counted = _Counted(found)
    # Only the kept files are ever held: a walk of a million entries holds 20,000.
    kept = heapq.nsmallest(MAX_FILES, counted, key=lambda item: (item.path.count("/"), item.path))
    kept.sort(key=lambda item: item.path)
    if walker is None:
        assert listing is not None
        exact, notes = listing[1], listing[2]
    else:
        exact = walker.exact
        notes = [] if exact else [walker.stopped or "the walk stopped early"]
    classify = _Classifier(workspace, git)
    return Listing(kept, counted.count, counted.count - len(kept), git, exact, notes, classify)


class _Counted:
    """An iterable that counts what passed through it."""

    def __init__(self, items: Iterable[_Found]) -> None:
        self.items = items
        self.count = 0

    def __iter__(self) -> Iterator[_Found]:
        for item in self.items:
            self.count += 1
            yield item


def _git_listing(
    workspace: Path, environ: Mapping[str, str], timeout: float
) -> tuple[list[_Found], bool, list[str]] | None:
    """The git listing, or None when the workspace is not (usefully) a git repository.

    The four commands run at once (one read of the repository's drivers for all): the
    listing is never wanted outside a repository, where its answers are dropped.
    """
    probe, tracked, others, status = run_git_batch(
        workspace,
        [
            ["rev-parse", "--show-prefix"],
            ["ls-files", "-z"],
            ["ls-files", "-z", "--others", "--exclude-standard"],
            ["status", "--porcelain", "-z", "--ignore-submodules=all", "--untracked-files=no"],
        ],
        environ,
        timeout_s=timeout,
        max_output_bytes=GIT_LIST_MAX_BYTES,
    )
    if probe is None or probe.returncode != 0:
        return None
    prefix = probe.stdout.rstrip(b"\n")
    if prefix:
        # A folder its repository ignores lists nothing through git: walk it instead.
        ignored = run_git(workspace, ["check-ignore", "-q", "."], environ, timeout_s=timeout)
        if ignored is None or ignored.returncode == 0:
            return None
    tracked = _listed("ls-files", tracked, timeout)
    others = _listed("ls-files --others", others, timeout)
    status = _listed("status", status, timeout)
    notes = [
        f"git {what} output passed {GIT_LIST_MAX_BYTES} bytes: the listing is cut there"
        for what, done in (("ls-files", tracked), ("ls-files --others", others))
        if done.truncated
    ]
    changed = _changed_paths(status.stdout, prefix)
    found: dict[str, _Found] = {}
    for raw in _entries(tracked):
        path = os.fsdecode(raw)
        found[path] = _Found(path, True, path in changed)
    for raw in _entries(others):
        path = os.fsdecode(raw.rstrip(b"/"))
        skip = SKIP_NESTED_REPOSITORY if raw.endswith(b"/") else None
        found.setdefault(path, _Found(path, False, True, skip))
    return list(found.values()), not notes, notes


def _listed(what: str, done: GitOutput | None, timeout: float) -> GitOutput:
    if done is None or done.returncode != 0:
        raise InventoryError(f"git {what} failed or took longer than {timeout:g}s")
    return done


def _entries(done: GitOutput) -> list[bytes]:
    parts = done.stdout.split(b"\0")
    # The last part is empty after a final NUL, or an entry cut by the output cap.
    return [part for part in parts[:-1] if part]


def _changed_paths(porcelain: bytes, prefix: bytes) -> set[str]:
    """Workspace-relative paths ``git status --porcelain -z`` reports (root-relative)."""
    changed: set[str] = set()
    parts = iter(porcelain.split(b"\0"))
    for entry in parts:
        if len(entry) < 4:
            continue
        if entry[:1] in (b"R", b"C"):
            next(parts, None)  # the rename's or copy's source follows
        path = entry[3:]
        if path.startswith(prefix):
            changed.add(os.fsdecode(path[len(prefix) :]))
    return changed


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Walker:
    """A depth-first walk holding one open folder per level, never through a link."""

    def __init__(self, workspace: Path, deadline: float | None) -> None:
        self.workspace = workspace
        self.deadline = deadline
        self.entries = 0
        self.exact = True
        self.stopped: str | None = None

    def run(self) -> Iterator[tuple[str, str | None]]:
        root = os.open(self.workspace, _DIR_FLAGS)
        stack: list[tuple[int, str, tuple[IgnoreFile, ...], Iterator[str]]] = []
        try:
            chain, subdirs, files = self._read_folder(root, "", ())
            yield from files
            stack.append((root, "", chain, iter(subdirs)))
            while stack:
                fd, base, chain, pending = stack[-1]
                name = next(pending, None)
                if name is None:
                    stack.pop()
                    os.close(fd)
                    continue
                relative = base + name
                if len(stack) >= WALK_MAX_DEPTH:
                    yield relative, SKIP_TOO_DEEP
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    # A link swapped in since the listing is refused, not followed.
                    gone = exc.errno in (errno.ENOENT, errno.ENOTDIR)
                    if not gone:
                        yield (
                            relative,
                            (
                                SKIP_SYMLINK
                                if exc.errno == errno.ELOOP
                                else SKIP_UNREADABLE_DIRECTORY
                            ),
                        )
                    continue
                try:
                    child_chain, subdirs, files = self._read_folder(child, relative + "/", chain)
                except OSError:
                    os.close(child)
                    yield relative, SKIP_UNREADABLE_DIRECTORY
                    continue
                yield from files
                stack.append((child, relative + "/", child_chain, iter(subdirs)))
                if not self.exact:
                    break
        finally:
            for fd, *_ in stack:
                os.close(fd)

    def _read_folder(
        self, fd: int, base: str, chain: tuple[IgnoreFile, ...]
    ) -> tuple[tuple[IgnoreFile, ...], list[str], list[tuple[str, str | None]]]:
        with os.scandir(fd) as listing:
            entries = [(entry.name, _kind(entry)) for entry in listing]
        ignore = _read_gitignore(fd, base)
        if ignore is not None:
            chain = (*chain, ignore)
        subdirs: list[str] = []
        files: list[tuple[str, str | None]] = []
        for name, is_dir in sorted(entries):
            if is_dir and name in WALK_SKIPPED_DIRS:
                continue
            relative = base + name
            if is_ignored(chain, relative, is_dir):
                continue
            self.entries += 1
            if is_dir:
                subdirs.append(name)
            else:
                files.append((relative, None))
        if self.entries > WALK_MAX_ENTRIES:
            self._stop(f"the walk stopped counting after {WALK_MAX_ENTRIES} entries")
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self._stop("the walk ran out of the wall budget")
        return chain, subdirs, files

    def _stop(self, why: str) -> None:
        self.exact = False
        self.stopped = why


def _kind(entry: os.DirEntry[str]) -> bool:
    """Is the entry a real folder (never a link to one)?"""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _read_gitignore(dir_fd: int, base: str) -> IgnoreFile | None:
    try:
        fd = os.open(".gitignore", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, GITIGNORE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > GITIGNORE_MAX_BYTES:
        return None
    return parse_file(base, data)


class _Classifier:
    """Each kept file's entry, from its name and its lstat alone."""

    def __init__(self, workspace: Path, git: bool) -> None:
        # One string prefix, not os.path.join per file: 20,000 joins cost ~15 ms.
        self.prefix = os.path.join(workspace, "")
        self.git = git
        # Folder -> whether a secret folder holds it: thousands of files share a folder.
        self.secret_folders: dict[str, bool] = {}

    def __call__(self, item: _Found) -> FileEntry:
        path = item.path
        folder, _, name = path.rpartition("/")
        language = language_of(name)
        secret = self.secret_folders.get(folder)
        if secret is None:
            secret = secret_folder(folder.split("/")) is not None if folder else False
            self.secret_folders[folder] = secret
        tracked = item.tracked or not self.git
        skip = SKIP_SECRET if secret or secret_name_pattern(name) is not None else item.skip
        try:
            info = os.lstat(self.prefix + path)
        except OSError as exc:
            gone = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            reason = skip or (SKIP_DELETED if gone else SKIP_UNREADABLE)
            return FileEntry(path, 0, 0, language, "listed", reason, tracked, item.changed)
        size, mtime_ns = info.st_size, info.st_mtime_ns
        if skip is None:
            skip = _skip_by_stat(info.st_mode, size, name, language, item.tracked)
        if skip is not None:
            return FileEntry(path, size, mtime_ns, language, "listed", skip, tracked, item.changed)
        return FileEntry(path, size, mtime_ns, language, "pending", None, tracked, item.changed)


def _skip_by_stat(
    mode: int, size: int, name: str, language: str | None, tracked: bool
) -> str | None:
    if stat.S_ISLNK(mode):
        return SKIP_SYMLINK
    if stat.S_ISDIR(mode):
        return SKIP_SUBMODULE if tracked else SKIP_NESTED_REPOSITORY
    if not stat.S_ISREG(mode):
        return SKIP_NOT_REGULAR
    if size > MAX_FILE_BYTES:
        return SKIP_TOO_LARGE
    if binary_by_name(name):
        return SKIP_BINARY
    if minified_by_name(name):
        return SKIP_MINIFIED
    if language not in GRAMMARS:
        return SKIP_NO_GRAMMAR
    return None
