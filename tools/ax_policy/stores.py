"""Reading and writing ax-policy's small stores (trust, grants) and their logs.

A store is one strict JSON document, rewritten atomically under a lock, plus
an append-only JSON Lines log of every change. A store that cannot be read
(bad JSON, wrong shape, oversized, not a regular file) is a hard error: it is
never read as empty and never rewritten.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_json
from libcommon.cliapp import describe_validation_error
from libcommon.errors import CorruptStore
from libcommon.safeopen import open_state_file

if TYPE_CHECKING:
    from libcommon.contracts import Contract

MAX_STORE_BYTES = 4 * 1024 * 1024

# A string bound: read_capped serves the configuration's fast path, which must not import pydantic.
StoreT = TypeVar("StoreT", bound="Contract")


class UnreadableFile(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def read_capped(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file (None when missing); refuses FIFOs, devices and oversize."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableFile(f"cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnreadableFile("is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(f"is larger than {limit} bytes")
    return data


def load_store(path: Path, model: type[StoreT]) -> StoreT:
    """The store at ``path``, or an empty one when the file does not exist yet."""
    try:
        data = read_capped(path, MAX_STORE_BYTES)
    except UnreadableFile as exc:
        raise CorruptStore(str(path), exc.problem) from None
    if data is None:
        return model()
    try:
        document = jsonio.loads(data)
    except jsonio.JSONDecodeError as exc:
        raise CorruptStore(str(path), f"not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise CorruptStore(str(path), "the document is not a JSON object")
    from pydantic import ValidationError

    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise CorruptStore(str(path), describe_validation_error(exc, "store")) from None


def save_store(path: Path, store: Contract, log: Path, record: dict[str, Any]) -> None:
    """Rewrite a store and append the change to its audit log, durably.

    The log is opened before the store changes: a log that cannot be written (a
    link planted in its place) refuses the change, never leaves it unrecorded.
    """
    line = jsonio.dumps_line({"ts": clock.timestamp(), **record})
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = open_state_file(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        atomic_write_json(path, store.to_json())
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_path(store: Path) -> Path:
    return store.with_name(store.name + ".lock")
