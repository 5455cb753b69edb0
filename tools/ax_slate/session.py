"""A session's slate.json: Anchors, Course, Seeds and Notes, changed under a lock.

The Trail lives beside it in trail.jsonl (see trail.py) so that recording a
step never rewrites this document.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_bytes, atomic_write_json
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import file_lock
from libcommon.paths import StateLayout
from libcommon.redact import redact

from .budget import estimate_tokens
from .models import Note, SessionSlate

NOTE_MAX_CHARS = 2_000
NOTES_MAX_TOKENS = 8_000
NOTE_KEY_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
COURSE_MAX_CHARS = 500


@dataclass(frozen=True)
class SessionFiles:
    """Where one session's slate lives: ``sessions/<id>/``."""

    session_id: str
    dir: Path
    # The workspace the session belongs to, for the command a refusal names.
    workspace: Path

    @property
    def slate(self) -> Path:
        return self.dir / "slate.json"

    @property
    def slate_lock(self) -> Path:
        return self.dir / "slate.lock"

    @property
    def trail(self) -> Path:
        return self.dir / "trail.jsonl"

    @property
    def trail_lock(self) -> Path:
        return self.dir / "trail.lock"

    @property
    def archive(self) -> Path:
        return self.dir / "archive.jsonl"

    @property
    def archive_lock(self) -> Path:
        return self.dir / "archive.lock"

    @property
    def outputs(self) -> Path:
        return self.dir / "outputs"


def session_files(layout: StateLayout, session_id: str) -> SessionFiles:
    """Where the session's files are, whether or not its slate was started."""
    # session_dir checks the id before any path is built.
    return SessionFiles(session_id, layout.session_dir(session_id), layout.workspace)


class SlateUnavailable(OperationFailed):
    """slate.json is missing or unreadable: no frame can be built from it."""


def _no_slate(files: SessionFiles) -> SlateUnavailable:
    import shlex

    start = f"ax-slate start --session {files.session_id} -C {shlex.quote(str(files.workspace))}"
    return SlateUnavailable(
        f"session {files.session_id} has no slate ({files.slate} is missing); nothing was "
        "read or written",
        hint=f"a slate is made when its session starts: `{start}` (ax-agent runs it for you)",
    )


def started_files(layout: StateLayout, session_id: str) -> SessionFiles:
    """The session's files, once its slate exists: every verb but ``start`` needs one.

    Only ``open_session`` makes a slate. A step recorded, an output saved or a
    message archived for a session that never started would leave a trail with
    no slate beside it (and a mistyped id would quietly begin a new one), so
    every other verb refuses here, before it writes anything.
    """
    files = session_files(layout, session_id)
    if not files.slate.exists():
        raise _no_slate(files)
    return files


def read_slate(files: SessionFiles) -> SessionSlate:
    """The slate document; missing → SlateUnavailable, unreadable → CorruptStore."""
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    data = jsonio.read_json(files.slate)
    if data is None:
        raise _no_slate(files)
    try:
        return SessionSlate.model_validate(data)
    except ValidationError as exc:
        raise CorruptStore(str(files.slate), describe_validation_error(exc, "slate")) from None


def _write_slate(files: SessionFiles, slate: SessionSlate) -> None:
    atomic_write_json(files.slate, slate.to_json())


def default_anchors(layout: StateLayout, focus: Sequence[str] = ()) -> dict[str, Any]:
    return {"workspace": str(layout.workspace), "focus": list(focus)}


def open_session(
    layout: StateLayout,
    session_id: str,
    *,
    focus: Sequence[str] = (),
    continues: str | None = None,
) -> SessionSlate:
    """Create a session's slate, or return the one that exists.

    With ``continues``, the new slate starts with the Trail and Notes of that
    session and its step numbers go on from there; Anchors are computed afresh
    and Course and Seeds start empty.
    """
    files = session_files(layout, session_id)
    previous = session_files(layout, continues) if continues is not None else None
    if previous is not None and previous.session_id == files.session_id:
        raise UsageError("a session cannot continue itself")
    # Read what is carried over first, so a bad `continues` leaves nothing behind.
    notes: dict[str, Note] = {}
    if previous is not None:
        try:
            notes = read_slate(previous).notes
        except SlateUnavailable:
            raise SlateUnavailable(
                f"session {continues} has no slate to continue from; nothing was written",
                hint="--continues takes the id of a session that was started",
            ) from None
    files.dir.mkdir(parents=True, exist_ok=True)
    with file_lock(files.slate_lock):
        if files.slate.exists():
            return read_slate(files)
        if previous is not None:
            _carry_trail(previous, files)
        slate = SessionSlate(
            session_id=session_id,
            created_at=clock.timestamp(),
            continues=continues,
            anchors=default_anchors(layout, focus),
            notes=notes,
        )
        _write_slate(files, slate)
        return slate


def _carry_trail(previous: SessionFiles, files: SessionFiles) -> None:
    """Copy the earlier trail so the new one goes on at the next step number."""
    with file_lock(previous.trail_lock), file_lock(files.trail_lock):
        if files.trail.exists() and files.trail.stat().st_size > 0:
            raise OperationFailed(
                f"session {files.session_id} already has a trail; it cannot take over "
                f"the trail of {previous.session_id}"
            )
        if previous.trail.exists():
            atomic_write_bytes(files.trail, previous.trail.read_bytes())


@contextmanager
def _changing(files: SessionFiles) -> Iterator[SessionSlate]:
    """Read-modify-write slate.json under its lock; the change lands atomically."""
    with file_lock(files.slate_lock):
        slate = read_slate(files)
        yield slate
        _write_slate(files, slate)


def update_slate(
    layout: StateLayout, session_id: str, change: Callable[[SessionSlate], None]
) -> SessionSlate:
    files = started_files(layout, session_id)
    with _changing(files) as slate:
        change(slate)
    return slate


def set_course(layout: StateLayout, session_id: str, course: str | None) -> SessionSlate:
    if course is not None and len(course) > COURSE_MAX_CHARS:
        raise UsageError(f"course is {len(course)} characters; the cap is {COURSE_MAX_CHARS}")

    def change(slate: SessionSlate) -> None:
        slate.course = redact(course) if course is not None else None

    return update_slate(layout, session_id, change)


def check_note_key(key: str) -> str:
    if not NOTE_KEY_PATTERN.fullmatch(key):
        raise UsageError(
            f"invalid note key {key!r}",
            hint="use 1-64 characters: letters, digits, '.', '_' or '-'",
        )
    return key


def note_tokens(note: Note) -> int:
    return estimate_tokens(note.key) + estimate_tokens(note.text)


def set_note(layout: StateLayout, session_id: str, key: str, text: str) -> Note:
    """Set or replace a note; refused past the per-note or whole-shelf cap."""
    check_note_key(key)
    if not text.strip():
        raise UsageError("a note cannot be empty", hint="to remove it, delete it by key")
    if len(text) > NOTE_MAX_CHARS:
        raise UsageError(
            f"note {key!r} is {len(text)} characters; a note holds at most {NOTE_MAX_CHARS}",
            hint="shorten it, or split it across keys",
        )
    note = Note(key=key, text=redact(text), updated_at=clock.timestamp())

    def change(slate: SessionSlate) -> None:
        others = sum(note_tokens(n) for k, n in slate.notes.items() if k != key)
        total = others + note_tokens(note)
        if total > NOTES_MAX_TOKENS:
            raise UsageError(
                f"the notes would hold about {total} tokens; the shelf holds at most "
                f"{NOTES_MAX_TOKENS}",
                hint="delete or shorten notes you no longer need",
            )
        slate.notes[key] = note

    update_slate(layout, session_id, change)
    return note


def delete_note(layout: StateLayout, session_id: str, key: str) -> bool:
    """Delete a note; False when there was none by that key."""
    check_note_key(key)
    found: list[bool] = []

    def change(slate: SessionSlate) -> None:
        found.append(slate.notes.pop(key, None) is not None)

    update_slate(layout, session_id, change)
    return found[0]


def list_notes(layout: StateLayout, session_id: str, key: str | None = None) -> list[Note]:
    slate = read_slate(started_files(layout, session_id))
    if key is None:
        return list(slate.notes.values())
    check_note_key(key)
    if key not in slate.notes:
        raise OperationFailed(f"session {session_id} has no note {key!r}")
    return [slate.notes[key]]
