"""The two streams and what they may carry.

Model text goes to stdout, everything else (chrome) to stderr. Escape bytes
are written only to a real terminal (and never under ``TERM=dumb``); colour
also stops at ``NO_COLOR``. Off a terminal the glyphs are ASCII. Every write
goes through one lock, so the status line (drawn by a ticking thread) never
lands in the middle of a line; a write first erases the live area.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Protocol

# Control bytes a model or a command could use to drive the terminal; tab and
# newline pass, everything else in C0, DEL and C1 is shown as a placeholder.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CONTROL_PLACEHOLDER = "?"

_STYLES = {
    "dim": "2",
    "bold": "1",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
    "reverse": "7",
}


@dataclass(frozen=True)
class Glyphs:
    call: str
    result: str
    ok: str
    failed: str
    more: str
    pointer: str
    sep: str
    spinner: tuple[str, ...]


UNICODE_GLYPHS = Glyphs(
    "●", "⎿", "✓", "✗", "…", "❯", " · ", ("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧")
)
ASCII_GLYPHS = Glyphs("*", "|", "ok", "x", "...", ">", " - ", ("-", "\\", "|", "/"))


def clean(text: str) -> str:
    """``text`` with every terminal-driving control byte replaced."""
    return _CONTROL.sub(CONTROL_PLACEHOLDER, text)


class Screen:
    """stdout for model text, stderr for chrome, and the rules for both."""

    def __init__(
        self,
        out: IO[str],
        err: IO[str],
        *,
        out_tty: bool,
        err_tty: bool,
        environ: Mapping[str, str],
    ) -> None:
        self.out = out
        self.err = err
        self.out_tty = out_tty
        # Escapes (the status line, the menu, colour) only where a terminal reads them.
        self.escapes = err_tty and environ.get("TERM", "") != "dumb"
        self.color = self.escapes and "NO_COLOR" not in environ
        encoding = (getattr(err, "encoding", None) or "").lower().replace("-", "")
        self.glyphs = UNICODE_GLYPHS if self.escapes and encoding == "utf8" else ASCII_GLYPHS
        self.lock = threading.RLock()
        self._out_mid_line = False
        self._err_mid_line = False
        # What the live area shows now (the status line or a menu); a write erases it.
        self.live: Callable[[], list[str]] | None = None
        self._area: LiveAreaLike | None = None

    def attach_area(self, area: LiveAreaLike) -> None:
        self._area = area

    @property
    def at_line_start(self) -> bool:
        """Both streams end with a newline (only then may a live area be drawn)."""
        return not self._err_mid_line and not (self.out_tty and self._out_mid_line)

    def style(self, text: str, *names: str) -> str:
        if not self.color or not names:
            return text
        codes = ";".join(_STYLES[name] for name in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def text(self, chunk: str) -> None:
        """Streamed model text, on stdout."""
        if chunk:
            self._write(self.out, clean_keep_newlines(chunk), stdout=True)

    def end_text(self) -> None:
        """End the model's line on stdout, if it is mid-line."""
        if self._out_mid_line:
            self._write(self.out, "\n", stdout=True)

    def line(self, text: str = "") -> None:
        """One line of chrome on stderr (ending model text's line first on a shared screen)."""
        with self.lock:
            if self.out_tty and self._out_mid_line:
                self._write(self.out, "\n", stdout=True)
            self._write(self.err, text + "\n", stdout=False)

    def at_new_line(self) -> None:
        """The person pressed Enter at a prompt: both streams are at a line start."""
        self._out_mid_line = self._err_mid_line = False

    def raw_err(self, text: str) -> None:
        """Chrome without a newline (a prompt); no live area is drawn after it."""
        with self.lock:
            self._write(self.err, text, stdout=False)

    def redraw(self) -> None:
        """Draw the live area again (the status ticker calls this)."""
        with self.lock:
            self._draw_live()

    def clear_live(self) -> None:
        with self.lock:
            if self._area is not None:
                self._area.erase()

    def _write(self, stream: IO[str], text: str, *, stdout: bool) -> None:
        with self.lock:
            if self._area is not None:
                self._area.erase()
            stream.write(text)
            stream.flush()
            mid = not text.endswith("\n")
            if stdout:
                self._out_mid_line = mid
            else:
                self._err_mid_line = mid
            # The live area comes back at the status line's next tick (or the menu's next
            # key), not after every line: a burst of output is not interleaved with it.

    def _draw_live(self) -> None:
        if self._area is None or self.live is None or not self.at_line_start:
            return
        self._area.draw(self.live())


def clean_keep_newlines(text: str) -> str:
    return clean(text.replace("\r\n", "\n"))


class LiveAreaLike(Protocol):
    """What the screen needs of the live area (``status.LiveArea``)."""

    def draw(self, lines: list[str]) -> None: ...

    def erase(self) -> None: ...
