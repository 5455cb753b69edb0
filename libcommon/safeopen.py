"""Workspace files reached by walking from the workspace root, never through a link.

A path that was checked once (resolved, decided by the policy, recorded by a
snapshot) can change before it is used: a sandboxed command may replace a
folder with a symlink to ``.git``, and a writer that then opens the path would
write through the link. Every writer of workspace files therefore goes through
here: each folder is opened with ``O_DIRECTORY|O_NOFOLLOW`` relative to the one
above it, starting at the workspace root, and the final entry is created,
replaced, read or removed relative to its folder's descriptor, never followed.
A link anywhere on the way, or as the final name, is refused, as is any name
of ``PROTECTED_NAMES`` (the repository's internals and ax's own workspace
config), wherever it appears in the path.

The model's readers (``open_for_reading``) walk the same way, so a folder
swapped for a link after the policy's decision is refused rather than read
through; they do not refuse the protected names, since whether ``.git`` may be
read is the policy's decision, not the walk's.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from libcommon.atomic import create_at, write_at
from libcommon.errors import OperationFailed

# Compared case-insensitively (a case-insensitive filesystem opens .GIT as .git).
# ax-policy protects the same set (its pathcheck imports this one).
PROTECTED_NAMES = frozenset({".git", ".ax"})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted under a file's name must not hang the writer.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


WRITE_HINT = "ax writes workspace files only through real folders, never into .git or .ax"
READ_HINT = (
    "ax reads a file only through the real folders the policy checked, never through a "
    "link that appeared since; nothing was read"
)


class UnsafePath(OperationFailed):
    """A workspace path that a writer or reader refuses to touch; ``reason`` says why."""

    def __init__(self, relative: str, reason: str, hint: str = WRITE_HINT) -> None:
        super().__init__(f"refused {relative}: {reason}", hint=hint)
        self.relative = relative
        self.reason = reason


def protected_name(parts: Iterable[str]) -> str | None:
    """The first component of ``parts`` that names a protected folder, if any."""
    for part in parts:
        if part.casefold() in PROTECTED_NAMES:
            return part
    return None


def split_relative(relative: str, *, protect: bool = True) -> list[str]:
    """The components of a workspace-relative path; refused when it could leave the root.

    The path must already be normalised (no ``.``, ``..`` or empty component)
    and, with ``protect``, must not name a protected folder anywhere.
    """
    if not relative or "\x00" in relative or relative.startswith("/"):
        raise UnsafePath(relative or "''", "not a relative path inside the workspace")
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(relative, "not a normalised path inside the workspace")
    found = protected_name(parts) if protect else None
    if found is not None:
        raise UnsafePath(relative, f"it is inside a {found} folder, which ax never writes")
    return parts


def _link_target(dir_fd: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "somewhere that changed since"


def _refusal(dir_fd: int, name: str, where: str, relative: str) -> UnsafePath:
    """Why the entry ``name`` could not be opened as a folder: a link, or not a folder."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return UnsafePath(relative, f"{where} changed while it was opened")
    if stat.S_ISLNK(info.st_mode):
        target = _link_target(dir_fd, name)
        return UnsafePath(relative, f"{where} is a symbolic link (to {target}), not a folder")
    return UnsafePath(relative, f"{where} is not a folder")


@contextmanager
def open_folder(
    root: Path, parts: Sequence[str], relative: str, *, create: bool = False
) -> Iterator[int | None]:
    """The folder ``root/parts`` as an open descriptor, reached without following a link.

    Yields None when a folder on the way does not exist (unless ``create``,
    which makes the missing ones). ``relative`` is the path reported in a refusal.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(parts):
            if create:
                with suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                fd = -1
                yield None
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                raise _refusal(fd, name, "/".join(parts[: depth + 1]), relative) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


@contextmanager
def open_parent(
    root: Path, relative: str, *, create: bool = False, protect: bool = True
) -> Iterator[tuple[int | None, str]]:
    """The folder holding ``relative``'s last component (None if missing) and that name."""
    parts = split_relative(relative, protect=protect)
    with open_folder(root, parts[:-1], relative, create=create) as fd:
        yield fd, parts[-1]


def _open_entry(dir_fd: int, name: str, relative: str) -> int | None:
    """``name`` in ``dir_fd`` opened read-only whatever it is, or None; a link is refused."""
    try:
        return os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            target = _link_target(dir_fd, name)
            raise UnsafePath(relative, f"it is a symbolic link (to {target})") from None
        raise


def open_regular(dir_fd: int, name: str, relative: str) -> int | None:
    """``name`` in ``dir_fd`` opened for reading, or None when nothing is there.

    A link is refused, never followed; so is a folder or anything that is not
    a regular file.
    """
    fd = _open_entry(dir_fd, name, relative)
    if fd is None:
        return None
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        what = "a directory, not a file" if kind == stat.S_IFDIR else "not a regular file"
        raise UnsafePath(relative, f"it is {what}")
    return fd


@contextmanager
def open_for_reading(root: Path, relative: str) -> Iterator[int | None]:
    """``root/relative`` opened read-only, reached without following a link; None if absent.

    ``relative`` is ``.`` for ``root`` itself. What is opened may be a file, a
    folder or anything else (O_NONBLOCK, so a FIFO never blocks the open): the
    caller looks (``fstat``) before it reads. A link on the way or as the entry
    itself is refused; a ``.git`` or ``.ax`` component is not, since reading
    them is the policy's decision. The descriptor is closed on leaving.
    """
    try:
        if relative == ".":
            fd: int | None = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            with open_parent(root, relative, protect=False) as (folder, name):
                fd = None if folder is None else _open_entry(folder, name, relative)
    except UnsafePath as exc:
        raise UnsafePath(exc.relative, exc.reason, hint=READ_HINT) from None
    if fd is None:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def entry_mode(dir_fd: int, name: str, relative: str) -> int | None:
    """The permission bits of the regular file ``name``, or None when nothing is there."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        target = _link_target(dir_fd, name)
        raise UnsafePath(relative, f"it is a symbolic link (to {target})")
    if stat.S_ISDIR(info.st_mode):
        raise UnsafePath(relative, "it is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(relative, "it is not a regular file")
    return stat.S_IMODE(info.st_mode)


def read_bytes(root: Path, relative: str, limit: int) -> bytes | None:
    """At most ``limit`` + 1 bytes of a workspace file, or None when it does not exist."""
    with open_parent(root, relative) as (folder, name):
        fd = None if folder is None else open_regular(folder, name, relative)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit + 1)


def write_bytes(root: Path, relative: str, data: bytes, new_mode: int) -> bool:
    """Atomically write a workspace file, making missing folders; True when it is new.

    An existing file keeps its permission bits; a new one gets ``new_mode``.
    """
    with open_parent(root, relative, create=True) as (folder, name):
        assert folder is not None  # create=True makes every folder on the way
        mode = entry_mode(folder, name, relative)
        write_at(folder, name, data, new_mode if mode is None else mode)
        return mode is None


def create_bytes(root: Path, relative: str, data: bytes, new_mode: int) -> None:
    """Atomically create a workspace file that does not exist, making missing folders.

    Anything already at the name (a file, a folder, a link) is refused and left as it
    was, even when it appeared a moment before the file would have.
    """
    with open_parent(root, relative, create=True) as (folder, name):
        assert folder is not None  # create=True makes every folder on the way
        try:
            create_at(folder, name, data, new_mode)
        except FileExistsError:
            raise UnsafePath(
                relative,
                "something is there already, and this write never replaces anything",
                hint="nothing was written; move the existing one aside first",
            ) from None


def remove_empty_folder(root: Path, relative: str) -> bool:
    """Remove an empty workspace folder; False when it is not there or not empty.

    ``rmdir`` relative to its parent's descriptor never follows a link.
    """
    with open_parent(root, relative) as (folder, name):
        if folder is None:
            return False
        try:
            os.rmdir(name, dir_fd=folder)
        except OSError:
            return False
        return True


def open_state_file(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of one of ax's own state files, refusing a symbolic link in its place.

    The state root holds logs, locks and trails that ax alone creates; a link
    there (planted to make an append or a lock write somewhere else) is never
    followed. O_NOFOLLOW covers the final name; the root itself was resolved.
    """
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        raise OperationFailed(
            f"{path} is a symbolic link{target}; ax never follows a link among its state files",
            hint="remove the link; ax creates its own files there, and nothing was written",
        ) from None
