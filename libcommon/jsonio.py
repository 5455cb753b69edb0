"""JSON and JSON Lines on orjson, with errors that name the file and line."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from libcommon.errors import CorruptStore

# iter_dumps encodes a longer string a slice at a time.
SLICE_CHARS = 64 * 1024


def dumps(value: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(value, option=option)


def iter_dumps(value: Any, *, indent: bool = False) -> Iterator[bytes]:
    """``dumps(value)`` in pieces, each string longer than ``SLICE_CHARS`` encoded a slice
    at a time, so a document carrying long strings is never whole in memory.

    The long strings are swapped for placeholders named by a random nonce; the skeleton
    is encoded, then written with each string in the place of its placeholder.
    """
    nonce = os.urandom(8).hex()
    long: list[str] = []
    skeleton = dumps(_swap_long(value, long, nonce), indent=indent)
    parts = re.split(rb'"' + nonce.encode() + rb":(\d+)\"", skeleton)
    if [int(index) for index in parts[1::2]] != list(range(len(long))):
        # The nonce also stands in a short string: encode the document whole.
        yield dumps(value, indent=indent)
        return
    for index, string in enumerate(long):
        yield parts[2 * index]
        yield b'"'
        for start in range(0, len(string), SLICE_CHARS):
            yield orjson.dumps(string[start : start + SLICE_CHARS])[1:-1]
        yield b'"'
    yield parts[-1]


def _swap_long(value: Any, long: list[str], nonce: str) -> Any:
    if isinstance(value, str):
        if len(value) <= SLICE_CHARS:
            return value
        long.append(value)
        return f"{nonce}:{len(long) - 1}"
    if isinstance(value, dict):
        return {key: _swap_long(item, long, nonce) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_swap_long(item, long, nonce) for item in value]
    return value


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
