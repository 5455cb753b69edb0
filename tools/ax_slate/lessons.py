"""LESSONS.md: durable pitfalls, proposed by the model, merged by ax by slug, kept for people.

For the harness, one call per ``propose_lesson`` tool call (its input schema is
``LessonInput``'s; the harness adds the session id)::

    result = propose_lesson(layout, session_id, LessonInput(slug="...", text="..."))

Rules, all enforced here:

- A session proposes at most ``LESSONS_PER_SESSION`` distinct slugs. The count
  is kept per session id in ``memory/lessons-ledger.json`` (the newest
  ``LESSONS_LEDGER_SESSIONS`` sessions), so a resumed session keeps its count;
  re-proposing a slug the session already proposed is an update and costs nothing.
  Past the limit: OperationFailed (exit 1), nothing written.
- Merge by slug: a new slug is added at the front; a reused slug replaces its
  entry, which moves to the front. The entry ends with a provenance line naming
  the session (``_Proposed in session `…` at <time> (model-written)._``).
- The body is model text (``memstore.model_text``): its heading-shaped lines are
  defused, so a proposal cannot forge an entry boundary. At most
  ``LESSON_TEXT_MAX_BYTES``; more is refused (UsageError, exit 2).
- The file is parsed into raw spans (the lines above the first ``##`` heading,
  then one span per ``##`` heading) and written back by joining them: every
  span but the merged one — a person's edits, CRLF line endings, odd spacing
  and all — stays byte for byte.
- Past the cap, the oldest model-written entries (those whose last line is
  ax's provenance line) are evicted from the end; entries without it (a
  person's) are never evicted. When that is not enough the proposal is refused
  (OperationFailed) and nothing is written.
- Re-read under the memory lock, written atomically. A file that is not UTF-8
  text, or holds two entries with one heading, is refused (CorruptStore) and kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from libcommon import clock, jsonio
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.paths import StateLayout, check_session_id

from .memstore import (
    DOCS,
    LESSONS_MAX_BYTES,
    decode_doc,
    doc_path,
    line_ending,
    memory_lock,
    model_text,
    read_doc,
    split_lines,
    write_doc,
)
from .models import LedgerSession, LessonInput, LessonResult, LessonsLedger

LESSONS_PER_SESSION = 3
LESSON_TEXT_MAX_BYTES = 1024
LESSON_SLUG_PATTERN = re.compile(r"^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$")
LESSONS_LEDGER_SESSIONS = 512
LESSONS_LEDGER_FILE = "lessons-ledger.json"
LESSONS_TITLE = "# Lessons"
PREAMBLE_LINES = (
    LESSONS_TITLE,
    "",
    "Durable pitfalls of this project, newest first. A model proposes them (at most "
    f"{LESSONS_PER_SESSION} per session) and ax merges them by slug: a reused slug replaces its "
    "entry and moves it to the front. Edit freely: ax rewrites only the entry it merges, "
    "and never evicts an entry without its provenance line.",
    "",
)

# A level-two heading at the start of a line: where an entry begins.
_BOUNDARY = re.compile(r"^##(?:[ \t]+(?P<key>.*?))?[ \t]*\r?\n?$")
_PROVENANCE = re.compile(r"^_(?:Proposed|Updated) in session `[^`]+` at \S+ \(model-written\)\._$")


@dataclass(frozen=True)
class Span:
    """An entry as it is on disk: its heading's text and every byte up to the next heading."""

    key: str
    text: str

    @property
    def model_written(self) -> bool:
        lines = [line.strip() for line in split_lines(self.text) if line.strip()]
        return bool(lines) and _PROVENANCE.match(lines[-1]) is not None


@dataclass(frozen=True)
class LessonsFile:
    preamble: str
    entries: list[Span]


def lessons_path(layout: StateLayout) -> Path:
    return doc_path(layout, DOCS["lessons"])


def ledger_path(layout: StateLayout) -> Path:
    return layout.memory_dir / LESSONS_LEDGER_FILE


def parse_lessons(path: Path, text: str) -> LessonsFile:
    """The raw spans of a LESSONS.md text; joined back they give ``text`` exactly."""
    preamble: list[str] = []
    entries: list[Span] = []
    current: list[str] | None = None
    key = ""
    seen: dict[str, int] = {}
    for number, line in enumerate(split_lines(text), start=1):
        boundary = _BOUNDARY.match(line)
        if boundary is None:
            (preamble if current is None else current).append(line)
            continue
        if current is not None:
            entries.append(Span(key, "".join(current)))
        key, current = (boundary["key"] or "").strip(), [line]
        if key and key in seen:
            raise CorruptStore(
                str(path),
                f"two entries are headed '## {key}' (the other at line {seen[key]}); "
                "ax cannot tell which to merge into",
                line=number,
            )
        seen[key] = number
    if current is not None:
        entries.append(Span(key, "".join(current)))
    return LessonsFile("".join(preamble), entries)


def read_lessons(layout: StateLayout) -> LessonsFile | None:
    path = lessons_path(layout)
    data = read_doc(path)
    if data is None:
        return None
    return parse_lessons(path, decode_doc(path, data))


def check_lesson(lesson: LessonInput) -> str:
    """The lesson's body as it will be stored; a bad slug or an empty or long text is refused."""
    if not LESSON_SLUG_PATTERN.fullmatch(lesson.slug):
        raise UsageError(
            f"invalid lesson slug {lesson.slug[:80]!r}",
            hint="use 1-64 lowercase letters and digits in words joined by '-', e.g. "
            "'migrations-need-downgrade'",
        )
    body = model_text(lesson.text)
    if not body.strip():
        raise UsageError(f"lesson {lesson.slug} has no text; nothing was written")
    size = len(body.encode())
    if size > LESSON_TEXT_MAX_BYTES:
        raise UsageError(
            f"lesson {lesson.slug} is {size} bytes; a lesson holds at most {LESSON_TEXT_MAX_BYTES}",
            hint="say the pitfall and its cure in a few lines",
        )
    return body


def render_lesson(slug: str, body: str, session_id: str, updated: bool, newline: str) -> str:
    verb = "Updated" if updated else "Proposed"
    lines = [
        f"## {slug}",
        "",
        *body.split("\n"),
        "",
        f"_{verb} in session `{session_id}` at {clock.timestamp()} (model-written)._",
        "",
    ]
    return newline.join(lines) + newline


def _read_ledger(layout: StateLayout) -> LessonsLedger:
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    path = ledger_path(layout)
    data = read_doc(path)
    if data is None:
        return LessonsLedger()
    try:
        return LessonsLedger.model_validate(jsonio.loads(data))
    except jsonio.JSONDecodeError as exc:
        raise CorruptStore(str(path), f"not valid JSON ({exc})") from None
    except ValidationError as exc:
        problem = describe_validation_error(exc, "ledger")
        raise CorruptStore(str(path), f"not a lessons ledger ({problem})") from None


def _count(ledger: LessonsLedger, session_id: str, slug: str) -> list[str]:
    """The session's slugs with ``slug`` counted; past the limit, refused."""
    row = next((r for r in ledger.sessions if r.session_id == session_id), None)
    slugs = list(row.slugs) if row else []
    if slug in slugs:
        return slugs
    if len(slugs) >= LESSONS_PER_SESSION:
        raise OperationFailed(
            f"session {session_id} has already proposed {len(slugs)} lessons "
            f"({', '.join(slugs)}); a session proposes at most {LESSONS_PER_SESSION}; "
            "nothing was written",
            hint="update one of them by reusing its slug",
        )
    return [*slugs, slug]


def propose_lesson(layout: StateLayout, session_id: str, lesson: LessonInput) -> LessonResult:
    """Merge one proposed lesson into LESSONS.md (see the module's rules)."""
    check_session_id(session_id)
    body = check_lesson(lesson)
    path = lessons_path(layout)
    with memory_lock(layout):
        ledger = _read_ledger(layout)
        slugs = _count(ledger, session_id, lesson.slug)
        data = read_doc(path)
        original = decode_doc(path, data) if data is not None else None
        parsed = (
            parse_lessons(path, original)
            if original is not None
            else LessonsFile("\n".join(PREAMBLE_LINES) + "\n", [])
        )
        newline = line_ending(original) if original else "\n"
        kept = [span for span in parsed.entries if span.key != lesson.slug]
        updated = len(kept) != len(parsed.entries)
        entry = render_lesson(lesson.slug, body, session_id, updated, newline)
        preamble = parsed.preamble
        if preamble and not preamble.endswith("\n"):
            preamble += newline
        text, evicted = _fit(preamble, entry, kept, path)
        rows = [r for r in ledger.sessions if r.session_id != session_id]
        rows.append(LedgerSession(session_id=session_id, slugs=slugs))
        ledger.sessions = rows[-LESSONS_LEDGER_SESSIONS:]
        # The count is taken before the lesson lands: a crash between the two writes
        # costs the session a proposal, never lets it make a fourth.
        write_doc(ledger_path(layout), jsonio.dumps(ledger.to_json(), indent=True).decode())
        write_doc(path, text)
    return LessonResult(
        slug=lesson.slug,
        action="updated" if updated else "added",
        path=str(path),
        bytes=len(text.encode()),
        evicted=evicted,
        session_slugs=slugs,
        remaining=LESSONS_PER_SESSION - len(slugs),
    )


def _fit(preamble: str, entry: str, kept: list[Span], path: Path) -> tuple[str, list[str]]:
    """The file's text within the cap, evicting the oldest model-written entries if need be."""
    kept = list(kept)
    evicted: list[str] = []
    while True:
        text = preamble + entry + "".join(span.text for span in kept)
        size = len(text.encode())
        if size <= LESSONS_MAX_BYTES:
            return text, evicted
        oldest = next((i for i in range(len(kept) - 1, -1, -1) if kept[i].model_written), None)
        if oldest is None:
            raise OperationFailed(
                f"{path} would be {size} bytes with this lesson, over its cap of "
                f"{LESSONS_MAX_BYTES}, and no model-written entry is left to evict; "
                "nothing was written",
                hint=f"shorten or remove entries by hand in {path}",
            )
        evicted.append(kept.pop(oldest).key)
