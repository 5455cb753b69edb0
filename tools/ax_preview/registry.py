"""The preview registry: one JSON record and one log file per preview.

``<state>/projects/<slug>/previews/<id>.json`` is written atomically, and every
read-modify-write happens under one lock for the folder, so the CLI and a
supervisor never lose each other's changes. A record that cannot be read is a
hard error (CorruptStore), never treated as absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from ax_preview.models import PreviewRecord
from libcommon import jsonio
from libcommon.atomic import atomic_write_json
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import file_lock

PREVIEW_ID_PATTERN = re.compile(r"^pv-[A-Za-z0-9_-]{1,64}$")
LOCK_NAME = ".registry.lock"


def check_preview_id(preview_id: str) -> str:
    if not PREVIEW_ID_PATTERN.fullmatch(preview_id):
        raise UsageError(
            f"invalid preview id {preview_id!r}",
            hint="ids look like pv-20261130T100000-1a2b3c4d; see ax-preview list",
        )
    return preview_id


def record_path(previews_dir: Path, preview_id: str) -> Path:
    return previews_dir / f"{check_preview_id(preview_id)}.json"


def log_path(previews_dir: Path, preview_id: str) -> Path:
    return previews_dir / f"{check_preview_id(preview_id)}.log"


@contextmanager
def locked(previews_dir: Path) -> Iterator[None]:
    previews_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with file_lock(previews_dir / LOCK_NAME):
        yield


def _parse(path: Path, data: object) -> PreviewRecord:
    try:
        return PreviewRecord.model_validate(data)
    except ValidationError as exc:
        from libcommon.cliapp import describe_validation_error

        problem = describe_validation_error(exc, "record")
        raise CorruptStore(str(path), f"not a preview record ({problem})") from None


def read_record(path: Path) -> PreviewRecord | None:
    data = jsonio.read_json(path)
    return None if data is None else _parse(path, data)


def write_record(previews_dir: Path, record: PreviewRecord) -> None:
    atomic_write_json(record_path(previews_dir, record.id), record.to_json())


def update_record(
    previews_dir: Path, preview_id: str, change: Callable[[PreviewRecord], PreviewRecord]
) -> PreviewRecord:
    """Read, change and write one record under the registry lock."""
    path = record_path(previews_dir, preview_id)
    with locked(previews_dir):
        current = read_record(path)
        if current is None:
            raise OperationFailed(f"preview {preview_id} is not in the registry")
        updated = change(current)
        atomic_write_json(path, updated.to_json())
        return updated


def load(previews_dir: Path, preview_id: str) -> PreviewRecord:
    record = read_record(record_path(previews_dir, preview_id))
    if record is None:
        raise OperationFailed(
            f"no preview {preview_id} in this workspace",
            hint="see ax-preview list for the previews that exist",
        )
    return record


def all_records(previews_dir: Path) -> list[PreviewRecord]:
    """Every record, oldest first."""
    if not previews_dir.is_dir():
        return []
    records = []
    for path in previews_dir.glob("pv-*.json"):
        record = read_record(path)
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda record: (record.started_at, record.id))


def drop(previews_dir: Path, preview_id: str) -> None:
    """Remove a record and its log (caller holds the lock)."""
    record_path(previews_dir, preview_id).unlink(missing_ok=True)
    log_path(previews_dir, preview_id).unlink(missing_ok=True)
