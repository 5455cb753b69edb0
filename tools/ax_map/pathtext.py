"""Workspace paths as text: lossless, one line, safe in JSON and in a prompt.

A path is held as ``os.fsdecode`` of its bytes (undecodable bytes become lone
surrogates), so ``os.fsencode`` gives the exact name back. Shown anywhere, a path
that holds a control character or a line separator (a newline would start a line of
its own in a map), a double quote, a backslash or an undecodable byte is quoted the
way git quotes it (``core.quotePath`` off): in double quotes, with C escapes and octal bytes. Every
other path, non-ASCII UTF-8 included, is shown as it is. A quoted path starts with
``"`` and an unquoted one never needs to, so ``unquote_path`` is exact.
"""

from __future__ import annotations

import os
import re

_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}
_UNESCAPES = {value[1]: key for key, value in _ESCAPES.items()}
# C0 and C1 controls, the Unicode line and paragraph separators, quote, backslash,
# undecodable bytes.
_QUOTED_CHARS = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029"\\\udc80-\udcff]')
_ESCAPE_SEQUENCE = re.compile(r"\\([0-3][0-7]{2}|.)", re.S)


def _escape(char: str) -> str:
    known = _ESCAPES.get(char)
    if known is not None:
        return known
    # Its bytes in octal: an undecodable byte is the surrogate fsdecode made of it.
    return "".join(f"\\{byte:03o}" for byte in os.fsencode(char))


def quote_path(path: str) -> str:
    """``path`` as one line of valid UTF-8 text, quoted only when it has to be."""
    if not _QUOTED_CHARS.search(path):
        return path
    escaped = _QUOTED_CHARS.sub(lambda match: _escape(match.group()), path)
    return f'"{escaped}"'


def unquote_path(text: str) -> str:
    """The path ``quote_path`` made ``text`` from."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body = os.fsencode(text[1:-1])

    def unescape(match: re.Match[bytes]) -> bytes:
        token = match.group(1)
        if len(token) == 3:
            return bytes([int(token, 8)])
        plain = _UNESCAPES.get(token.decode("ascii", "replace"))
        if plain is None:
            raise ValueError(f"not a quoted path: unknown escape \\{token!r} in {text!r}")
        return plain.encode()

    return os.fsdecode(re.sub(_ESCAPE_SEQUENCE.pattern.encode(), unescape, body, flags=re.S))
