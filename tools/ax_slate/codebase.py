"""CODEBASE.md: the model's architecture summary, replaced whole, stamped with the map's digests.

For the harness::

    write_codebase(layout, CodebaseRequest(
        session_id=sid, text=summary, digests=CodebaseDigests(file_set=..., content=...)))
    stamp = read_codebase(layout).stamp                  # None-safe: read_codebase may be None
    codebase_staleness(stamp, CodebaseDigests(file_set=..., content=...))

The digests come from the repository map (the map's digest of which files
exist, and of what they hold); ax-slate takes them as inputs and stores them in
the stamp line, so staleness is computed by comparing strings, never guessed:
``fresh`` when both match, ``stale`` with a reason per digest that differs,
``unknown`` when the current digests were not given.

The document::

    # Codebase summary

    Stamp: file-set digest `…`, content digest `…`, written by session `…` at <time>.
    <a note saying the text below is model-written>

    <the model's summary: redacted, headings defused, cut at whole lines to the cap>

A file whose first line is not the title or whose third line is not a stamp is
refused (CorruptStore) and kept; a person may edit the summary below it freely.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from libcommon import clock
from libcommon.errors import CorruptStore, UsageError
from libcommon.paths import SESSION_ID_PATTERN, StateLayout, check_session_id

from .memstore import (
    CODEBASE_MAX_BYTES,
    DOCS,
    cut_to_bytes,
    decode_doc,
    doc_path,
    memory_lock,
    model_text,
    read_doc,
    split_lines,
    write_doc,
)
from .models import (
    CodebaseDigests,
    CodebaseRequest,
    CodebaseStamp,
    CodebaseWriteResult,
    Staleness,
)

CODEBASE_TITLE = "# Codebase summary"
# What a digest may look like: one token (hex, or "sha256:hex"), so it fits the stamp line.
DIGEST_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._+/=-]{0,127}$")
# How much of a digest a staleness reason shows.
DIGEST_SHOWN_CHARS = 12
CODEBASE_NOTE = (
    "The summary below is model-written. ax compares the stamp with the map's current "
    "digests to say whether it is stale."
)
_STAMP = re.compile(
    r"^Stamp: file-set digest `(?P<file_set>[^`]*)`, content digest `(?P<content>[^`]*)`, "
    r"written by session `(?P<session>[^`]*)` at (?P<at>\S+)\.[ \t]*\r?\n?$"
)
_STAMP_LINE = 3


def codebase_path(layout: StateLayout) -> Path:
    return doc_path(layout, DOCS["codebase"])


def check_digests(digests: CodebaseDigests) -> CodebaseDigests:
    for name, value in (("fileSet", digests.file_set), ("content", digests.content)):
        if not DIGEST_PATTERN.fullmatch(value):
            raise UsageError(
                f"digest {name} {value[:80]!r} is not one token of letters, digits and "
                "':._+/=-' (at most 128 characters)",
                hint="pass the map's digests as it prints them",
            )
    return digests


def stamp_line(stamp: CodebaseStamp) -> str:
    return (
        f"Stamp: file-set digest `{stamp.file_set}`, content digest `{stamp.content}`, "
        f"written by session `{stamp.session_id}` at {stamp.written_at}.\n"
    )


def parse_codebase(path: Path, text: str) -> CodebaseStamp:
    """The stamp of a CODEBASE.md text; CorruptStore when the title or the stamp is not there."""
    lines = split_lines(text)
    if not lines or lines[0].rstrip("\r\n") != CODEBASE_TITLE:
        raise CorruptStore(str(path), f"the first line is not {CODEBASE_TITLE!r}", line=1)
    found = _STAMP.match(lines[_STAMP_LINE - 1]) if len(lines) >= _STAMP_LINE else None
    if (
        found is None
        or not DIGEST_PATTERN.fullmatch(found["file_set"])
        or not DIGEST_PATTERN.fullmatch(found["content"])
        or not SESSION_ID_PATTERN.fullmatch(found["session"])
    ):
        raise CorruptStore(
            str(path),
            "no stamp ('Stamp: file-set digest `…`, content digest `…`, written by session "
            "`…` at <time>.')",
            line=_STAMP_LINE,
        )
    return CodebaseStamp(
        file_set=found["file_set"],
        content=found["content"],
        session_id=found["session"],
        written_at=found["at"],
    )


def read_codebase(layout: StateLayout) -> tuple[CodebaseStamp, str] | None:
    """(stamp, whole text) of CODEBASE.md, or None when there is none yet."""
    path = codebase_path(layout)
    data = read_doc(path)
    if data is None:
        return None
    text = decode_doc(path, data)
    return parse_codebase(path, text), text


def codebase_staleness(stamp: CodebaseStamp, current: CodebaseDigests | None) -> Staleness:
    """Whether the summary still describes the repository, computed from the two digests."""
    if current is None:
        return Staleness(state="unknown", reasons=["the map's current digests were not given"])
    reasons = []
    if stamp.file_set != current.file_set:
        reasons.append(
            f"the set of files changed (file-set digest {_short(stamp.file_set)} when written, "
            f"{_short(current.file_set)} now)"
        )
    if stamp.content != current.content:
        reasons.append(
            f"file contents changed (content digest {_short(stamp.content)} when written, "
            f"{_short(current.content)} now)"
        )
    return Staleness(state="stale" if reasons else "fresh", reasons=reasons)


def _short(digest: str) -> str:
    return digest[:DIGEST_SHOWN_CHARS]


def write_codebase(layout: StateLayout, request: CodebaseRequest) -> CodebaseWriteResult:
    """Replace CODEBASE.md with the model's summary, stamped; cut at whole lines to the cap.

    The existing file is re-read under the memory lock first: one that cannot
    be parsed is refused (CorruptStore) and kept. An empty summary is refused.
    """
    check_session_id(request.session_id)
    check_digests(request.digests)
    body = model_text(request.text)
    if not body.strip():
        raise UsageError("the codebase summary is empty; nothing was written")
    stamp = CodebaseStamp(
        file_set=request.digests.file_set,
        content=request.digests.content,
        session_id=request.session_id,
        written_at=clock.timestamp(),
    )
    head = f"{CODEBASE_TITLE}\n\n{stamp_line(stamp)}{CODEBASE_NOTE}\n\n"
    room = CODEBASE_MAX_BYTES - len(head.encode()) - 1
    body, omitted = cut_to_bytes(body, room, "the codebase summary")
    text = f"{head}{body}\n"
    path = codebase_path(layout)
    with memory_lock(layout):
        read_codebase(layout)
        write_doc(path, text)
    return CodebaseWriteResult(
        path=str(path),
        stamp=stamp,
        bytes=len(text.encode()),
        omitted_bytes=omitted,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
