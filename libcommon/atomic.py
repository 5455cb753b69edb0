"""Atomic document writes: tmp file + fsync + rename + fsync of the folder.

A reader sees the old bytes or the new bytes, never a mix, and a crash after
the call returns cannot lose the write. ``write_at`` is the one implementation;
it works on an open folder, so a caller that reached the folder without
following links (libcommon.safeopen) writes exactly there.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from libcommon import jsonio

# How much of the target's name a temporary file's name repeats (a crash leftover says
# whose it was); short enough that the whole name stays under NAME_MAX in any encoding.
TMP_NAME_KEEP_CHARS = 40


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Atomically make ``name`` in the open folder ``dir_fd`` hold ``data``.

    The temporary file is created with O_EXCL|O_NOFOLLOW, so a link planted
    under its name is never written through; the rename replaces the entry
    ``name`` itself (a link there is replaced, not followed).
    """
    _publish(dir_fd, name, data, mode, replace=True)


def create_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Like ``write_at``, but only when nothing is at ``name``: FileExistsError otherwise.

    The whole file appears at once (a hard link to the written temporary file), and
    ``linkat`` fails rather than replace any entry, a link included, even one that
    appeared while the data was being written.
    """
    _publish(dir_fd, name, data, mode, replace=False)


def _tmp_token() -> str:
    # os.urandom is what secrets.token_hex reads, without secrets' imports (~10 ms a start).
    return os.urandom(6).hex()


def _publish(dir_fd: int, name: str, data: bytes, mode: int, *, replace: bool) -> None:
    tmp_name = f".{name[:TMP_NAME_KEEP_CHARS]}.{_tmp_token()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp_name, flags, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            os.link(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            os.unlink(tmp_name, dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_at(dir_fd, path.name, data, mode)
    finally:
        os.close(dir_fd)


def atomic_write_json(path: Path, document: Any, mode: int = 0o600) -> None:
    atomic_write_bytes(path, jsonio.dumps(document, indent=True) + b"\n", mode)
