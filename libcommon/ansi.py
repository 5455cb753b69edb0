"""Terminal escape sequences, removed from text that programs printed.

Tools that read another program's output (ax-check's parsers, ax-preview's port
announcements) must see the words, not the colours around them.
"""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)
