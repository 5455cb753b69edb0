"""Repository text made safe to print on one line of a map, a prompt or a terminal.

A file name may hold a newline, a carriage return, an escape sequence, a
right-to-left override or bytes that are not UTF-8 (kept by Python as lone
surrogates). Printed raw, such a name could start a line of its own and pass for
the map's own words, repaint a terminal, or make the text impossible to encode.
``printable`` writes every such character as a backslash escape (and a backslash
as two), so one name is always one visible run of characters on its line, and
the result always encodes as UTF-8. Runs of angle brackets long enough to
imitate a harness marker are softened the way libcommon.delimiters does it.
"""

from __future__ import annotations

import re

from libcommon.delimiters import CLOSING, MARKER_RUN, OPENING

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
_RUNS = re.compile(f"[{OPENING}]{{{MARKER_RUN},}}|[{CLOSING}]{{{MARKER_RUN},}}")
_SOFTENED = str.maketrans(dict.fromkeys(OPENING, "‹") | dict.fromkeys(CLOSING, "›"))
_SURROGATE_ESCAPES = range(0xDC80, 0xDD00)


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code in _SURROGATE_ESCAPES:
        # A byte that was not UTF-8 (os.fsdecode's surrogateescape): show the byte.
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every unprintable character and backslash escaped, on one line."""
    if not (text.isprintable() and "\\" not in text):
        text = "".join(
            _escape(char) if char == "\\" or not char.isprintable() else char for char in text
        )
    return _RUNS.sub(lambda run: run.group(0).translate(_SOFTENED), text)
