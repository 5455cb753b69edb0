"""Turning recorded values into short, safe, deterministic text."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson

from libcommon.redact import redact

# A command line or tool input longer than this is cut in the report (the log keeps it whole).
SHOWN_MAX_CHARS = 300
# Distinct texts whose redacted form is remembered: sessions repeat the same commands often.
SHOWN_CACHE_ENTRIES = 4096

_BACKTICKS = re.compile(r"`+")


def shown(value: Any) -> str:
    """A recorded value as one redacted line, cut to SHOWN_MAX_CHARS."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        text = " ".join(_quote_arg(item) for item in value)
    else:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return _one_line(text)


@lru_cache(maxsize=SHOWN_CACHE_ENTRIES)
def _one_line(text: str) -> str:
    text = redact(text).replace("\r", "\\r").replace("\n", "\\n")
    if len(text) > SHOWN_MAX_CHARS:
        text = text[: SHOWN_MAX_CHARS - 1] + "…"
    return text


def _quote_arg(arg: str) -> str:
    if arg and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def code(text: str) -> str:
    """A Markdown code span that survives backticks inside ``text``."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def region_label(region: str | None) -> str:
    """How a workspace-relative folder is named to people."""
    if region is None:
        return "a folder outside the workspace"
    return code(region or ".")


def seconds(duration_ms: float) -> str:
    return f"{duration_ms / 1000:.1f} s"


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"
