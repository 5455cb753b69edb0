"""edit_file: replace an exact piece of a file, or show the model where it went wrong.

The replacement is exact: ``old_string`` must occur once (or ``replace_all``).
When it does not occur, the error shows the region of the file that resembles
it most (line windows ranked by shared lines, then by difflib's ratio) and a
diff against it, so the next attempt can copy the real text. When it occurs
several times, the error lists where, so the model can add context.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from pydantic import Field

from ax_policy import ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import (
    Refused,
    ToolInput,
    clip_line,
    count,
    guarded,
    read_for_edit,
    resolve,
    shown,
    write_atomically,
)

EDIT_MAX_BYTES = 10 * 1024 * 1024
# Windows compared with difflib after the cheap shared-line ranking.
EDIT_CANDIDATES = 20
# When no line is shared, how many windows are ranked by their first line alone.
EDIT_FIRST_LINE_SCAN = 20_000
EDIT_REGION_MAX_LINES = 40
EDIT_DIFF_MAX_LINES = 40
EDIT_MATCHES_SHOWN = 10
EDIT_SNIPPET_CONTEXT_LINES = 3
EDIT_SNIPPET_MAX_LINES = 40
EDIT_LINE_MAX_CHARS = 500


class EditFileInput(ToolInput):
    path: str = Field(min_length=1, description="The file to edit, relative to the workspace root.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation, "
        "without the line-number prefix read_file shows. It must occur exactly once unless "
        "replace_all is true; include surrounding lines to make it unique."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


@dataclass
class _Text:
    text: str
    crlf: bool


@guarded
def run(request: EditFileInput, ctx: ToolContext) -> ToolResult:
    path = resolve(request.path, ctx, write=True)
    name = shown(path, ctx)
    if not request.old_string:
        raise Refused("old_string is empty; to create or overwrite a file use write_file")
    if request.old_string == request.new_string:
        raise Refused("old_string and new_string are the same; there is nothing to change")
    if path.is_dir():
        raise Refused(f"{name} is a folder, not a file")
    data = read_for_edit(path, EDIT_MAX_BYTES, ctx)
    if data is None:
        raise Refused(f"{name} does not exist; create it with write_file")
    if len(data) > EDIT_MAX_BYTES:
        raise Refused(
            f"{name} is more than {EDIT_MAX_BYTES} bytes; edit_file edits files of at most "
            f"{EDIT_MAX_BYTES}"
        )
    if b"\0" in data:
        raise Refused(f"{name} is a binary file; edit_file edits text")
    text = data.decode("utf-8", "surrogateescape")
    old, new = request.old_string, request.new_string
    occurrences = text.count(old)
    if occurrences == 0 and "\r\n" in text and "\r" not in old:
        # The model writes '\n'; the file keeps its Windows line ends.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        occurrences = text.count(old)
    if occurrences == 0:
        raise Refused(_no_match(name, text, request.old_string))
    if occurrences > 1 and not request.replace_all:
        raise Refused(_several(name, text, old, occurrences))
    first = text.index(old)
    updated = text.replace(old, new) if request.replace_all else text.replace(old, new, 1)
    write_atomically(path, updated.encode("utf-8", "surrogateescape"), ctx)
    replaced = occurrences if request.replace_all else 1
    summary = f"edited {name}: replaced {count(replaced, 'occurrence')}"
    snippet = _snippet(updated, first, len(new))
    return ToolResult(
        content=f"{summary}. The edited region now reads:\n{snippet}", summary=summary
    )


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{number:>6}\t{clip_line(line.rstrip(chr(13)), EDIT_LINE_MAX_CHARS)}"
        for number, line in enumerate(lines, first)
    )


def _snippet(text: str, start: int, length: int) -> str:
    lines = text.split("\n")
    first = max(1, _line_of(text, start) - EDIT_SNIPPET_CONTEXT_LINES)
    last = min(len(lines), _line_of(text, start + length) + EDIT_SNIPPET_CONTEXT_LINES)
    last = min(last, first + EDIT_SNIPPET_MAX_LINES - 1)
    return _numbered(lines[first - 1 : last], first)


def _several(name: str, text: str, old: str, occurrences: int) -> str:
    lines = text.split("\n")
    rows: list[str] = []
    start = text.find(old)
    while start != -1 and len(rows) < EDIT_MATCHES_SHOWN:
        number = _line_of(text, start)
        rows.append(_numbered([lines[number - 1]], number))
        start = text.find(old, start + len(old))
    more = "" if occurrences <= EDIT_MATCHES_SHOWN else f"\n   … and {occurrences - len(rows)} more"
    return (
        f"old_string occurs {occurrences} times in {name}; it must occur exactly once. "
        "Include more surrounding lines to pick one, or set replace_all to true to change "
        f"them all. It starts on these lines:\n" + "\n".join(rows) + more
    )


def _no_match(name: str, text: str, old: str) -> str:
    message = f"old_string was not found in {name}."
    if _squash(old) and _squash(old) in _squash(text):
        message += (
            " It does occur when whitespace is ignored: check indentation (tabs or "
            "spaces), trailing spaces and line ends."
        )
    region = closest_region(text, old)
    if region is None:
        return message + " Read the file again and copy the text exactly."
    first, lines, ratio = region
    last = first + len(lines) - 1
    shown_lines = lines[:EDIT_REGION_MAX_LINES]
    diff = list(
        difflib.unified_diff(
            old.split("\n"), lines, "old_string", f"{name} lines {first}-{last}", lineterm="", n=1
        )
    )
    if len(diff) > EDIT_DIFF_MAX_LINES:
        diff = [*diff[:EDIT_DIFF_MAX_LINES], "…"]
    return (
        f"{message} The closest region is lines {first}-{last} ({ratio:.0%} similar):\n"
        f"{_numbered(shown_lines, first)}\n"
        "The difference from old_string to that region:\n"
        + "\n".join(clip_line(line, EDIT_LINE_MAX_CHARS) for line in diff)
        + "\nCopy the text exactly as the file has it (without the line numbers) and retry."
    )


def _squash(text: str) -> str:
    return "".join(text.split())


def closest_region(text: str, old: str) -> tuple[int, list[str], float] | None:
    """The window of the file's lines most like ``old``: (first line, lines, ratio)."""
    lines = text.split("\n")
    wanted = old.strip("\n").split("\n")
    size = min(len(wanted), len(lines))
    if not text.strip() or size == 0:
        return None
    targets = {_squash(line) for line in wanted if line.strip()}
    shared = [1 if _squash(line) in targets else 0 for line in lines]
    # Rank every window by how many of its lines appear in old_string (a running sum).
    scores: list[tuple[float, int]] = []
    running = sum(shared[:size])
    for start in range(len(lines) - size + 1):
        if start:
            running += shared[start + size - 1] - shared[start - 1]
        scores.append((running, -start))
    if not any(score for score, _ in scores):
        # No line is shared: rank windows by how much their first line resembles old's.
        head = wanted[0].strip()
        scores = [
            (difflib.SequenceMatcher(None, head, lines[-negative].strip()).ratio(), negative)
            for _, negative in scores[:EDIT_FIRST_LINE_SCAN]
        ]
    scores.sort(reverse=True)
    wanted_text = "\n".join(wanted)
    best: tuple[float, int] | None = None
    for _, negative in scores[:EDIT_CANDIDATES]:
        start = -negative
        window = "\n".join(lines[start : start + size])
        ratio = difflib.SequenceMatcher(None, wanted_text, window, autojunk=False).ratio()
        if best is None or ratio > best[0]:
            best = (ratio, start)
    assert best is not None
    ratio, start = best
    return start + 1, [line.rstrip("\r") for line in lines[start : start + size]], ratio


TOOL = ModelTool(
    name="edit_file",
    description=(
        "Replace an exact piece of a file: old_string must match the file's text exactly "
        "(whitespace included) and occur once, unless replace_all is true. On no match the "
        "error shows the closest region of the file and how it differs; on several matches "
        "it shows where they are. Read the file first. Returns the edited region."
    ),
    input_model=EditFileInput,
    facts=ToolFacts(name="edit_file", writes=lambda request: [request.path]),
    run=run,
)
