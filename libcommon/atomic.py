"""Atomic document writes: tmp file + fsync + rename + fsync of the folder.

A reader sees the old bytes or the new bytes, never a mix, and a crash after
the call returns cannot lose the write.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from libcommon import jsonio


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, document: Any, mode: int = 0o600) -> None:
    atomic_write_bytes(path, jsonio.dumps(document, indent=True) + b"\n", mode)
