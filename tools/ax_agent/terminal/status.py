"""The live area and the status line: the only code that moves the cursor.

The live area is a block of lines at the bottom of stderr that is redrawn in
place: the status line while the model or a command works, the approval menu
while a question waits. Off a terminal there is no live area at all (not a
byte of it is written). The status line is cleared at the end of every turn.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import IO

from .screen import Screen, clean

# How often the status line redraws (elapsed time, spinner).
STATUS_TICK_S = 0.1
# The width used when the terminal cannot say.
FALLBACK_COLUMNS = 80

_ERASE_LINE = "\r\x1b[2K"
_UP_AND_ERASE = "\x1b[1A\x1b[2K"


def columns(stream: IO[str]) -> int:
    try:
        found = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return FALLBACK_COLUMNS
    # A pseudo-terminal nobody sized says 0.
    return found or FALLBACK_COLUMNS


class LiveArea:
    """Lines drawn at the cursor and replaced in place; the caller holds the screen's lock."""

    def __init__(self, err: IO[str], more: str = "...") -> None:
        self.err = err
        self.more = more
        self.height = 0

    def draw(self, lines: list[str]) -> None:
        self.erase()
        if not lines:
            return
        width = max(columns(self.err) - 1, 10)
        # A line wider than the terminal would wrap and break the erase that follows.
        shown = [
            line if _visible_len(line) <= width else _strip_sgr(line)[: width - 3] + self.more
            for line in lines
        ]
        self.err.write("\n".join(shown))
        self.err.flush()
        self.height = len(shown)

    def erase(self) -> None:
        if self.height == 0:
            return
        self.err.write(_ERASE_LINE + _UP_AND_ERASE * (self.height - 1) + "\r")
        self.err.flush()
        self.height = 0


def _visible_len(text: str) -> int:
    return len(_strip_sgr(text))


def _strip_sgr(text: str) -> str:
    out = []
    skipping = False
    for char in text:
        if char == "\x1b":
            skipping = True
        elif skipping:
            skipping = char != "m"
        else:
            out.append(char)
    return "".join(out)


def compact_count(value: int) -> str:
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def elapsed_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


class StatusLine:
    """Elapsed time, tokens so far and what is running, redrawn by a ticking thread."""

    def __init__(self, screen: Screen, clock: Callable[[], float] = time.monotonic) -> None:
        self.screen = screen
        self.clock = clock
        self.activity = ""
        self.tokens = 0
        self.started = 0.0
        self.active = False
        self._frame = 0
        # One line per delegated task still running (issue 21), under the turn's own.
        self.tasks: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if screen.escapes:
            screen.attach_area(LiveArea(screen.err, screen.glyphs.more))

    def text(self) -> str:
        glyphs = self.screen.glyphs
        spinner = glyphs.spinner[self._frame % len(glyphs.spinner)]
        parts = [elapsed_text(self.clock() - self.started)]
        if self.tokens:
            parts.append(f"{compact_count(self.tokens)} tokens")
        parts.append("Ctrl+C to interrupt")
        return self.screen.style(f"{spinner} {self.activity} ({glyphs.sep.join(parts)})", "dim")

    def lines(self) -> list[str]:
        return [self.text(), *(self.screen.style(f"  {task}", "dim") for task in self.tasks)]

    def set_tasks(self, lines: list[str]) -> None:
        """The running delegated tasks, one line each (an empty list: none runs now).

        A task's line holds what its model chose (a tool's name), so it is cleaned of
        control characters before it reaches the terminal.
        """
        with self.screen.lock:
            self.tasks = [clean(line) for line in lines]
            if self.active and self.screen.escapes and self.screen.live == self.lines:
                self.screen.redraw()

    def begin(self, activity: str = "thinking") -> None:
        """A turn starts: show the line and keep it fresh until ``end``."""
        self.started = self.clock()
        self.tokens = 0
        self.activity = activity
        self.tasks = []
        self.active = True
        if not self.screen.escapes:
            return
        self.screen.live = self.lines
        self.screen.redraw()
        self._stop.clear()
        self._thread = threading.Thread(target=self._tick, name="ax-status", daemon=True)
        self._thread.start()

    def set(self, activity: str) -> None:
        self.activity = activity
        if self.active and self.screen.escapes:
            self.screen.redraw()

    def add_tokens(self, count: int) -> None:
        self.tokens += count

    def pause(self) -> None:
        """Hide the line while something else (a menu) owns the live area."""
        with self.screen.lock:
            self.screen.clear_live()
            if self.screen.live == self.lines:
                self.screen.live = None

    def resume(self) -> None:
        with self.screen.lock:
            if self.active and self.screen.escapes:
                self.screen.live = self.lines
                self.screen.redraw()

    def end(self) -> None:
        """The turn is over: stop the ticker and clear the line."""
        self.active = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self.screen.lock:
            if self.screen.live == self.lines:
                self.screen.live = None
            self.screen.clear_live()

    def _tick(self) -> None:
        while not self._stop.wait(STATUS_TICK_S):
            self._frame += 1
            with self.screen.lock:
                # A menu may own the live area meanwhile; it is redrawn by its own keys.
                if self.screen.live == self.lines:
                    self.screen.redraw()
