"""Recall: a step's full output, paged, and search over the session's archive.

``archive.jsonl`` keeps every message of the session whole, one per line, as
``{"row": N, "message": {...}}`` with rows numbered from 1. Search matches a
query against the decoded text of each message, so a query holding quotes,
backslashes or newlines finds what the model saw, not its JSON escape. Every
answer is at most ``PAGE_CHARS`` characters and names the exact call that
reads the next page.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

from libcommon import jsonio
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout
from libcommon.redact import redact, redact_value

from .jsonl import append_line, last_line
from .models import RecallPage, SearchHit, SearchResult
from .session import SessionFiles, started_files
from .trail import find_step

PAGE_CHARS = 6_000
RECALL_MAX_BYTES = 64 * 1024 * 1024
SNIPPET_CONTEXT_CHARS = 120
QUERY_MAX_CHARS = 1_000


def _pages(length: int) -> int:
    return max(1, math.ceil(length / PAGE_CHARS))


def _page_of(text: str, page: int) -> tuple[str, int]:
    pages = _pages(len(text))
    if page < 1 or page > pages:
        raise UsageError(f"page {page} does not exist; there are {pages}")
    return text[(page - 1) * PAGE_CHARS : page * PAGE_CHARS], pages


def recall_step(layout: StateLayout, session_id: str, step: int, page: int = 1) -> RecallPage:
    """Page ``page`` of the full output saved for ``step``."""
    files = started_files(layout, session_id)
    entry = find_step(files, step)
    if entry.output is None:
        raise OperationFailed(f"step {step} ({entry.tool}) saved no full output")
    try:
        size = os.path.getsize(entry.output)
        if size > RECALL_MAX_BYTES:
            raise OperationFailed(
                f"the output of step {step} is {size} bytes; recall reads at most "
                f"{RECALL_MAX_BYTES}",
                hint=f"read {entry.output} directly",
            )
        with open(entry.output, encoding="utf-8", errors="replace") as handle:
            text = redact(handle.read())
    except FileNotFoundError:
        raise OperationFailed(
            f"the output of step {step} is gone ({entry.output} is missing)"
        ) from None
    chunk, pages = _page_of(text, page)
    follow = (
        f"ax-slate recall --session {session_id} --step {step} --page {page + 1}"
        if page < pages
        else None
    )
    return RecallPage(step=step, page=page, pages=pages, text=chunk, next=follow)


def archive_message(layout: StateLayout, session_id: str, message: dict[str, Any]) -> int:
    """Append one message to the archive, redacted and whole; returns its row.

    Each line is ``{"row": N, "message": {...}}``; the next row number comes
    from the last line, so an append does not read the archive.
    """
    files = started_files(layout, session_id)
    redacted = redact_value(message)
    with flock_lock(files.archive_lock):
        row = _last_row(files) + 1
        append_line(files.archive, jsonio.dumps_line({"row": row, "message": redacted}))
    return row


def _last_row(files: SessionFiles) -> int:
    line = last_line(files.archive)
    if line is None:
        return 0
    try:
        row = jsonio.loads(line)["row"]
    except (jsonio.JSONDecodeError, KeyError, TypeError):
        raise CorruptStore(str(files.archive), "its last line is not an archived message") from None
    if not isinstance(row, int):
        raise CorruptStore(str(files.archive), "its last line has no integer row")
    return row


def decoded_text(message: Any) -> str:
    """Every string inside a message, decoded and joined: what a reader saw."""
    if isinstance(message, str):
        return message
    if isinstance(message, dict):
        parts = [decoded_text(v) for k, v in message.items() if k not in ("role", "ts")]
        return "\n".join(part for part in parts if part)
    if isinstance(message, list):
        return "\n".join(part for part in (decoded_text(item) for item in message) if part)
    return ""


def _rows(files: SessionFiles) -> Iterator[tuple[int, dict[str, Any]]]:
    if not files.archive.exists():
        return
    for number, value in jsonio.iter_jsonl(files.archive):
        message = value.get("message") if isinstance(value, dict) else None
        if not isinstance(message, dict) or not isinstance(value.get("row"), int):
            raise CorruptStore(str(files.archive), "not an archived message", line=number)
        yield value["row"], message


def _field(message: dict[str, Any], name: str) -> str | None:
    value = message.get(name)
    return value if isinstance(value, str) else None


def _snippet(text: str, at: int, length: int) -> str:
    start = max(0, at - SNIPPET_CONTEXT_CHARS)
    end = min(len(text), at + length + SNIPPET_CONTEXT_CHARS)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def search(
    layout: StateLayout,
    session_id: str,
    *,
    query: str | None = None,
    row: int | None = None,
    page: int = 1,
) -> SearchResult:
    """Find ``query`` in the archive, or read row ``row`` whole, a page at a time."""
    if (query is None) == (row is None):
        raise UsageError("search takes exactly one of a query or a row")
    files = started_files(layout, session_id)
    if row is not None:
        return _read_row(files, row, page)
    assert query is not None
    if not query or len(query) > QUERY_MAX_CHARS:
        raise UsageError(f"the query must be 1-{QUERY_MAX_CHARS} characters")
    needle = query.casefold()
    hits: list[SearchHit] = []
    for number, message in _rows(files):
        text = decoded_text(message)
        at = text.casefold().find(needle)
        if at >= 0:
            hits.append(
                SearchHit(
                    row=number,
                    role=_field(message, "role"),
                    ts=_field(message, "ts"),
                    snippet=_snippet(text, at, len(query)),
                )
            )
    # Pages are cut so that each holds at most PAGE_CHARS of snippet text.
    pages: list[list[SearchHit]] = [[]]
    used = 0
    for hit in hits:
        if pages[-1] and used + len(hit.snippet) > PAGE_CHARS:
            pages.append([])
            used = 0
        pages[-1].append(hit)
        used += len(hit.snippet)
    if page < 1 or page > len(pages):
        raise UsageError(f"page {page} does not exist; there are {len(pages)}")
    follow = None
    if page < len(pages):
        follow = (
            f"ax-slate search --session {session_id} --query {_shell_quote(query)} "
            f"--page {page + 1}"
        )
    return SearchResult(query=query, page=page, pages=len(pages), hits=pages[page - 1], next=follow)


def _read_row(files: SessionFiles, row: int, page: int) -> SearchResult:
    for number, message in _rows(files):
        if number == row:
            role = _field(message, "role")
            head = f"[row {row}" + (f", {role}" if role else "") + "]\n"
            chunk, pages = _page_of(head + decoded_text(message), page)
            follow = (
                f"ax-slate search --session {files.session_id} --row {row} --page {page + 1}"
                if page < pages
                else None
            )
            return SearchResult(row=row, page=page, pages=pages, text=chunk, next=follow)
    raise OperationFailed(f"session {files.session_id} has no archived row {row}")


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
