"""JSON and JSON Lines on orjson, with errors that name the file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from libcommon.errors import CorruptStore


def dumps(value: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(value, option=option)


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
