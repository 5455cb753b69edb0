"""JSON and JSON Lines on orjson, with errors that name the file and line."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from libcommon.errors import CorruptStore


def dumps(value: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(value, option=option)


def placeholder() -> str:
    """A string to stand in a document for a text given to ``iter_dumps``.

    Random, so that nothing else in the document holds it unless it was guessed.
    """
    return "ax-text-" + os.urandom(12).hex()


def iter_dumps(
    value: Any, texts: Mapping[str, Iterable[str]], *, indent: bool = False
) -> Iterator[bytes]:
    """``dumps(value)`` in pieces, each string of ``value`` that is a key of ``texts``
    replaced by the text its iterable yields, escaped and written one slice at a time:
    a document carrying texts of many megabytes is never whole in memory, and neither
    is a text, when its iterable produces it as it goes.

    Each key must stand in ``value`` exactly once (use ``placeholder()``); otherwise
    ValueError, before anything is yielded.
    """
    skeleton = dumps(value, indent=indent)
    if not texts:
        yield skeleton
        return
    encoded = {dumps(key): key for key in texts}
    parts = re.split(b"(" + b"|".join(re.escape(token) for token in encoded) + b")", skeleton)
    found = parts[1::2]
    if sorted(found) != sorted(encoded):
        raise ValueError("each placeholder must stand exactly once in the document")
    for literal, token in zip(parts[::2], found, strict=False):
        yield literal
        yield b'"'
        for text in texts[encoded[token]]:
            yield dumps(text)[1:-1]
        yield b'"'
    yield parts[-1]


def dumps_line(value: Any) -> bytes:
    """One JSON Lines record: compact JSON and a newline."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


JSONDecodeError = orjson.JSONDecodeError


def read_json(path: Path, default: Any = None) -> Any:
    """Read a JSON document; a missing file gives ``default``, a corrupt one raises."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return default
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptStore(str(path), f"not valid JSON ({exc})") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each line; a bad line raises CorruptStore."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield number, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise CorruptStore(str(path), f"not valid JSON ({exc})", line=number) from None
