"""Project memory's common ground: the documents, their caps, and how they are read and written.

Four Markdown documents live in ``projects/<slug>/memory/`` under the state
root: JOURNAL.md, CODEBASE.md, LESSONS.md and RESEARCH.md (see ``ax_slate.memory`` for the
API). Everything here is shared by their modules:

- Caps are bytes of UTF-8, one named constant per document.
- A document is read with ``O_NOFOLLOW`` (a link in its place is refused), at
  most ``MEMORY_READ_MAX_BYTES``; a file that is not UTF-8 text, holds a NUL
  byte or is larger than that is a corrupt store: refused, kept, never rewritten.
- Every write holds the project's one memory lock (``memory/memory.lock``, a
  ``flock``), re-reads the document from disk under it, and replaces the file
  atomically (``libcommon.atomic``), so two sessions ending at once both land
  and a crash leaves the old file whole.
- Text a model wrote passes through ``model_text``: redacted, line breaks made
  plain ``\\n``, control characters made visible, and every heading-shaped line
  defused with a backslash, so model text can never start an entry or a section.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from libcommon.atomic import atomic_write_bytes
from libcommon.errors import CorruptStore, UsageError
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout
from libcommon.safeopen import open_state_file

JOURNAL_MAX_BYTES = 12 * 1024
CODEBASE_MAX_BYTES = 16 * 1024
LESSONS_MAX_BYTES = 8 * 1024
# ax-agent folds it (ax_agent.research.notes, whose cap is pinned equal to this one).
RESEARCH_MAX_BYTES = 8 * 1024
# A memory document is read whole; past this it cannot be one ax wrote or a person keeps.
MEMORY_READ_MAX_BYTES = 1024 * 1024
MEMORY_LOCK_FILE = "memory.lock"

DocName = Literal["journal", "codebase", "lessons", "research"]
DOC_NAMES: tuple[DocName, ...] = get_args(DocName)


@dataclass(frozen=True)
class MemoryDoc:
    name: DocName
    file: str
    cap: int


DOCS: dict[DocName, MemoryDoc] = {
    "journal": MemoryDoc("journal", "JOURNAL.md", JOURNAL_MAX_BYTES),
    "codebase": MemoryDoc("codebase", "CODEBASE.md", CODEBASE_MAX_BYTES),
    "lessons": MemoryDoc("lessons", "LESSONS.md", LESSONS_MAX_BYTES),
    "research": MemoryDoc("research", "RESEARCH.md", RESEARCH_MAX_BYTES),
}


def check_doc(name: str) -> MemoryDoc:
    """The document called ``name``; anything else is a usage error naming the allowed ones."""
    for doc in DOCS.values():
        if doc.name == name:
            return doc
    raise UsageError(
        f"unknown memory document {name!r}; expected one of: {', '.join(DOC_NAMES)}",
        hint="`ax-slate memory list` shows them",
    )


def doc_path(layout: StateLayout, doc: MemoryDoc) -> Path:
    return layout.memory_dir / doc.file


# ---- reading ------------------------------------------------------------------


def read_doc(path: Path) -> bytes | None:
    """The document's bytes, or None when it does not exist. A link is refused."""
    try:
        fd = open_state_file(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise CorruptStore(str(path), "not a regular file")
        data = handle.read(MEMORY_READ_MAX_BYTES + 1)
    if len(data) > MEMORY_READ_MAX_BYTES:
        raise CorruptStore(
            str(path), f"larger than {MEMORY_READ_MAX_BYTES} bytes, too large for a memory document"
        )
    return data


def decode_doc(path: Path, data: bytes) -> str:
    """``data`` as text; bytes that are not UTF-8, or a NUL, make it a corrupt store."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorruptStore(str(path), "not UTF-8 text", line=line) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise CorruptStore(str(path), "holds a NUL byte", line=text.count("\n", 0, nul) + 1)
    return text


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their endings, split at ``\\n`` only.

    ``str.splitlines`` also splits at form feeds, U+2028 and others; a document's
    lines are what a file's bytes say they are, so a person's ``\\r\\n`` stays
    inside its line and is written back unchanged.
    """
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def line_ending(text: str) -> str:
    """``\\r\\n`` when most of ``text``'s lines end so (a person's editor), else ``\\n``."""
    lines = text.count("\n")
    return "\r\n" if lines and text.count("\r\n") * 2 > lines else "\n"


# ---- writing --------------------------------------------------------------------


@contextmanager
def memory_lock(layout: StateLayout) -> Iterator[None]:
    """The project's memory lock: held across each re-read and write of a document."""
    with flock_lock(
        layout.memory_dir / MEMORY_LOCK_FILE,
        what="project memory lock",
        hint="another session is writing this project's memory; retry when it has finished",
    ):
        yield


def write_doc(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


# ---- model-written text ---------------------------------------------------------

# Every line break a reader might split on, made one plain newline.
_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# A Markdown heading (ATX, up to three spaces in) or a setext underline.
_HEADING_SHAPED = re.compile(r"^( {0,3})(?=#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)


def visible_controls(text: str) -> str:
    """Control characters other than tab and newline shown as ``\\xNN``."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def defuse_headings(text: str) -> str:
    """Every heading-shaped line escaped with a backslash (``\\## x``), so it opens nothing.

    Idempotent: a defused line is no longer heading-shaped.
    """
    return _HEADING_SHAPED.sub(lambda m: m.group(1) + "\\", text)


def model_text(text: str) -> str:
    """Text a model wrote, made fit for a memory document.

    Redacted; every line break (``\\r``, ``\\r\\n``, U+2028, …) a plain ``\\n``;
    control characters visible; heading-shaped lines defused; blank lines at
    either end dropped.
    """
    from libcommon.redact import redact

    text = visible_controls(_BREAKS.sub("\n", text))
    return defuse_headings(redact(text)).strip("\n")


def one_line(text: str, max_bytes: int) -> str:
    """``text`` as one clean line of at most ``max_bytes`` bytes (cut with an ellipsis)."""
    flat = model_text(text).replace("\n", " ⏎ ")
    return clip_bytes(flat, max_bytes)


def clip_bytes(text: str, max_bytes: int) -> str:
    """``text`` cut at a character boundary to at most ``max_bytes`` bytes, ``…`` marking a cut."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    ellipsis = "…"
    room = max_bytes - len(ellipsis.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + ellipsis


def omission_marker(omitted: int, what: str) -> str:
    return f"[… {omitted} bytes of {what} not shown]"


def cut_to_bytes(text: str, budget: int, what: str) -> tuple[str, int]:
    """``text`` within ``budget`` bytes: whole, or its leading whole lines and a marker line.

    The marker reads ``[… N bytes of <what> not shown]``. When not even the first
    line fits, it is cut at a character boundary instead (a paragraph is often
    one long line). Returns the text and how many bytes were left out.
    """
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text, 0
    reserve = len(omission_marker(len(data), what).encode("utf-8")) + 1
    if budget < reserve:
        raise ValueError(f"a budget of {budget} bytes cannot hold the omission marker")
    room = budget - reserve
    kept: list[str] = []
    used = 0
    for line in split_lines(text):
        size = len(line.encode("utf-8"))
        if used + size > room:
            break
        kept.append(line)
        used += size
    if not kept:
        head = data[:room].decode("utf-8", "ignore")
        kept, used = [head], len(head.encode("utf-8"))
    body = "".join(kept)
    omitted = len(data) - used
    separator = "" if not body or body.endswith("\n") else "\n"
    return body + separator + omission_marker(omitted, what), omitted
