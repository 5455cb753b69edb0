"""Content-addressed pre-images and the events that make an edit undoable.

``snapshot_paths`` stores a file's bytes under ``objects/<sha256>`` before a
change and appends ``snapshot.stored``; ``record_mutations`` hashes the bytes
after the change, pairs them with the path's latest snapshot and appends
``file.mutated``. Paths are recorded relative to the workspace and must stay
inside it, symlinks resolved, and out of ``.git`` and ``.ax``: undo never writes
there, so a change there could never be undone. The bytes are then read by
walking that recorded path without following a link (libcommon.safeopen), the
same walk undo makes.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ax_log.events import FileMutated, SnapshotStored
from ax_log.reader import Record, read_events
from ax_log.writer import append_events, log_path
from libcommon.atomic import fsync_dir
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout, is_within, resolve_lenient
from libcommon.safeopen import UnsafePath, open_parent, open_regular, protected_name

COPY_CHUNK_BYTES = 1024 * 1024


def object_path(layout: StateLayout, sha256: str) -> Path:
    return layout.objects_dir / sha256


def workspace_path(layout: StateLayout, raw: str | os.PathLike[str]) -> tuple[Path, str]:
    """The resolved absolute path and its workspace-relative form; outside paths are refused.

    A relative path is taken relative to the workspace (like ``git -C``).
    """
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = layout.workspace / candidate
    resolved = resolve_lenient(candidate)
    if resolved == layout.workspace or not is_within(resolved, layout.workspace):
        raise UsageError(
            f"path {os.fspath(raw)!r} is not a file inside the workspace {layout.workspace}",
            hint="snapshots and undo only cover files inside the workspace",
        )
    relative = resolved.relative_to(layout.workspace).as_posix()
    found = protected_name(relative.split("/"))
    if found is not None:
        raise UsageError(
            f"path {os.fspath(raw)!r} is inside a {found} folder ({relative})",
            hint=f"undo never writes inside {found}, so ax-log does not snapshot it",
        )
    return resolved, relative


def hash_recorded(layout: StateLayout, relative: str) -> str | None:
    """The sha256 of the workspace file at a recorded path, or None when nothing is there.

    Walked as undo walks it (``open_recorded``): a link on the way or in the
    file's place, a folder or anything but a regular file is refused (UsageError),
    never followed, so bytes reached through a link are never taken for the file's.
    """
    with open_recorded(layout, relative) as handle:
        return None if handle is None else hash_stream(handle)


def replace_if_unchanged(
    layout: StateLayout,
    relative: str,
    data: bytes | None,
    mode: int,
    expected: str | None,
    during: str,
) -> str | None:
    """Write ``data`` to the workspace file at ``relative`` (None: remove it) through the
    no-link walk, only while it still holds the bytes whose sha256 is ``expected`` (None:
    absent); else why not. ``during`` names the operation for that answer ("the restore").
    Restoring a checkpoint and applying a task's changes both write this way: right after
    their snapshot, so nothing that changed since is written over."""
    from libcommon.atomic import write_at

    try:
        with open_parent(layout.workspace, relative, create=data is not None) as (folder, name):
            fd = None if folder is None else open_regular(folder, name, relative)
            if fd is None:
                now = None
            else:
                with os.fdopen(fd, "rb") as handle:
                    now = hash_stream(handle)
            if now != expected:
                return f"drifted: it changed while {during} was running"
            if folder is None:
                return None
            if data is None:
                os.unlink(name, dir_fd=folder)
            else:
                write_at(folder, name, data, mode)
            return None
    except UnsafePath as exc:
        return exc.reason
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"


def hash_stream(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(COPY_CHUNK_BYTES):
        digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def open_recorded(layout: StateLayout, relative: str) -> Iterator[IO[bytes] | None]:
    """The workspace file at a recorded path, walked without following a link; None if absent.

    A link, a folder or anything but a regular file there is refused (UsageError).
    """
    try:
        with open_parent(layout.workspace, relative) as (folder, name):
            fd = None if folder is None else open_regular(folder, name, relative)
    except UnsafePath as exc:
        raise UsageError(exc.message, hint="snapshots and undo only cover regular files") from None
    if fd is None:
        yield None
        return
    with os.fdopen(fd, "rb") as handle:
        yield handle


def store_file(layout: StateLayout, path: Path) -> str | None:
    """Copy a file into the object store (hashing as it streams); None if it does not exist.

    ``path`` is a resolved path inside the workspace (see ``workspace_path``).
    """
    objects = layout.objects_dir
    objects.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open_recorded(layout, path.relative_to(layout.workspace).as_posix()) as source:
        if source is None:
            return None
        fd, tmp_name = tempfile.mkstemp(prefix=".incoming.", dir=objects)
        try:
            digest = hashlib.sha256()
            with os.fdopen(fd, "wb") as out:
                while chunk := source.read(COPY_CHUNK_BYTES):
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            target = object_path(layout, sha)
            if target.exists():
                # Same name, same bytes: the store is content-addressed, so keep the first copy.
                Path(tmp_name).unlink()
            else:
                Path(tmp_name).chmod(0o400)
                Path(tmp_name).replace(target)
                fsync_dir(objects)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    return sha


def store_bytes(layout: StateLayout, data: bytes) -> str:
    """Put ``data`` in the object store (content-addressed, like ``store_file``); its sha256."""
    sha = hashlib.sha256(data).hexdigest()
    target = object_path(layout, sha)
    if target.exists():
        return sha
    objects = layout.objects_dir
    objects.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".incoming.", dir=objects)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(tmp_name).chmod(0o400)
        Path(tmp_name).replace(target)
        fsync_dir(objects)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return sha


def load_object(layout: StateLayout, sha256: str) -> bytes:
    """The bytes stored under ``sha256``, checked against their name."""
    try:
        data = object_path(layout, sha256).read_bytes()
    except FileNotFoundError:
        raise OperationFailed(f"pre-image {sha256} is missing from the object store") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise OperationFailed(f"pre-image {sha256} in the object store does not match its hash")
    return data


def absent_dirs(layout: StateLayout, path: Path) -> list[str]:
    """Workspace folders above ``path`` that do not exist yet, deepest first."""
    missing = []
    parent = path.parent
    while parent != layout.workspace and not parent.exists():
        missing.append(parent.relative_to(layout.workspace).as_posix())
        parent = parent.parent
    return missing


def snapshot_paths(
    layout: StateLayout,
    session_id: str,
    paths: Iterable[str | os.PathLike[str]],
    call_id: str | None = None,
) -> list[Record]:
    """Store each file's current bytes and append one ``snapshot.stored`` per path."""
    return append_events(layout, session_id, snapshot_events(layout, paths, call_id))


def snapshot_events(
    layout: StateLayout,
    paths: Iterable[str | os.PathLike[str]],
    call_id: str | None = None,
) -> list[SnapshotStored]:
    """Store each file's current bytes; the ``snapshot.stored`` events, not yet appended.

    A caller appending them in one batch with events of its own uses this;
    everyone else calls ``snapshot_paths``.
    """
    events = []
    for raw in paths:
        resolved, relative = workspace_path(layout, raw)
        sha = store_file(layout, resolved)
        events.append(
            SnapshotStored(
                path=relative,
                sha256=sha,
                call_id=call_id,
                absent_dirs=absent_dirs(layout, resolved) if sha is None else [],
            )
        )
    if not events:
        raise UsageError("name at least one path to snapshot")
    return events


def latest_snapshots(layout: StateLayout, session_id: str) -> dict[str, Record]:
    """The newest ``snapshot.stored`` record of each path in a session (a strict read)."""
    log = log_path(layout, session_id)
    found: dict[str, Record] = {}
    if not log.exists():
        return found
    for record in read_events(log, session_id):
        if record["type"] == "snapshot.stored":
            found[record["path"]] = record
    return found


def record_mutations(
    layout: StateLayout,
    session_id: str,
    paths: Iterable[str | os.PathLike[str]],
    call_id: str | None = None,
    snapshots: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Record]:
    """Hash each file now and append ``file.mutated`` against its latest snapshot.

    ``snapshots`` maps a workspace-relative path to the ``snapshot.stored``
    record to pair with; a caller that just took the snapshots passes them and
    saves a read of the whole log. A path with no snapshot is refused: without
    a pre-image the change could not be undone.
    """
    events = mutation_events(layout, session_id, paths, call_id, snapshots)
    return append_events(layout, session_id, events)


def mutation_events(
    layout: StateLayout,
    session_id: str,
    paths: Iterable[str | os.PathLike[str]],
    call_id: str | None = None,
    snapshots: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[FileMutated]:
    """The ``file.mutated`` events ``record_mutations`` appends, not yet appended."""
    resolved_paths = [workspace_path(layout, raw) for raw in paths]
    if not resolved_paths:
        raise UsageError("name at least one changed path")
    known = latest_snapshots(layout, session_id) if snapshots is None else dict(snapshots)
    events = []
    for _resolved, relative in resolved_paths:
        snapshot = known.get(relative)
        if snapshot is None:
            raise UsageError(
                f"no snapshot of {relative} in session {session_id}",
                hint=f"run `ax-log snapshot --session {session_id} {relative}` before changing it",
            )
        created = [
            item for item in snapshot.get("absentDirs", []) if (layout.workspace / item).is_dir()
        ]
        with open_recorded(layout, relative) as handle:
            post = None if handle is None else hash_stream(handle)
        events.append(
            FileMutated(
                call_id=call_id,
                path=relative,
                pre=snapshot["sha256"],
                post=post,
                created_dirs=created,
            )
        )
    return events
