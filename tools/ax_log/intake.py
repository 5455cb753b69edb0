"""Events arriving as text: one JSON object, or JSON Lines with one event per line."""

from __future__ import annotations

from typing import Any

from ax_log.events import EventBody, parse_body
from libcommon import jsonio
from libcommon.errors import UsageError

INPUT_MAX_BYTES = 16 * 1024 * 1024
EXAMPLE_EVENT = '{"type":"custom","kind":"note","data":{}}'


def parse_event_text(text: str) -> list[EventBody]:
    """Every event in ``text``, validated; the first bad one raises UsageError naming its line.

    A single object may span several lines (pretty-printed); otherwise each
    non-blank line must be one event object.
    """
    if not text.strip():
        raise UsageError(
            "no events on stdin", hint='send e.g. {"type":"custom","kind":"note","data":{}}'
        )
    try:
        whole = jsonio.loads(text)
    except jsonio.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [parse_body(whole, "line 1")]
    if whole is not None:
        raise UsageError(
            f"stdin holds a JSON {type(whole).__name__}, not an event object",
            hint="send one object, or JSON Lines with one object per line",
        )
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append((number, jsonio.loads(line)))
        except jsonio.JSONDecodeError as exc:
            raise UsageError(f"line {number}: not valid JSON ({exc})") from None
    for number, value in items:
        if not isinstance(value, dict):
            raise UsageError(f"line {number}: a JSON {type(value).__name__}, not an event object")
    return [parse_body(value, f"line {number}") for number, value in items]


def read_event_input(stream: Any, is_tty: bool) -> list[EventBody]:
    """Read and parse stdin, refusing a terminal and anything over INPUT_MAX_BYTES."""
    if is_tty:
        raise UsageError(
            "ax-log append reads events on stdin, and stdin is a terminal",
            hint=f"pipe them in: echo '{EXAMPLE_EVENT}' | ax-log append --session ID",
        )
    text = stream.read(INPUT_MAX_BYTES + 1)
    if len(text) > INPUT_MAX_BYTES:
        raise UsageError(f"stdin holds more than {INPUT_MAX_BYTES} bytes of events")
    return parse_event_text(text)
