"""Reading single keys from a terminal in raw mode (for the approval menu).

In raw mode Ctrl+C arrives as a byte, not a signal; the menu turns it into
KeyboardInterrupt itself, which the loop treats as an interrupt at the question.
"""

from __future__ import annotations

import os
import select
import termios
from collections.abc import Iterator
from contextlib import contextmanager

# How long to wait for the rest of an escape sequence before taking a lone Esc.
ESCAPE_WAIT_S = 0.05

_SEQUENCES = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1bOA": "up",
    "\x1bOB": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
}
_NAMED = {
    "\r": "enter",
    "\n": "enter",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x03": "ctrl-c",
    "\x04": "ctrl-d",
}


def pending(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


@contextmanager
def raw_mode(fd: int) -> Iterator[None]:
    """Key-at-a-time input on ``fd`` for the duration; the old mode comes back without a flush.

    Input is raw (no line editing, no echo, Ctrl+C and Ctrl+D arrive as bytes),
    output is left as it was, so the menu's newlines still return the carriage.
    """
    saved = termios.tcgetattr(fd)
    mode = list(saved)
    mode[0] &= ~(termios.IXON | termios.ICRNL | termios.INLCR | termios.IGNCR)
    mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
    mode[6] = list(mode[6])
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


@contextmanager
def echo_mode(fd: int) -> Iterator[None]:
    """Line input with echo for the duration (a typed answer during a quiet turn)."""
    saved = termios.tcgetattr(fd)
    mode = list(saved)
    mode[3] |= termios.ECHO | termios.ICANON
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def drain(fd: int) -> bytes:
    """Everything already typed (in raw mode, partial lines too)."""
    data = b""
    while pending(fd):
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


class KeyReader:
    """Keys from a raw-mode terminal: named keys (``up``, ``enter``, …) or one character."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __iter__(self) -> Iterator[str]:
        while True:
            key = self.read_key()
            if key is None:
                return
            yield key

    def read_key(self) -> str | None:
        first = os.read(self.fd, 1)
        if not first:
            return None
        if first == b"\x1b":
            sequence = "\x1b"
            while len(sequence) < 3 and select.select([self.fd], [], [], ESCAPE_WAIT_S)[0]:
                sequence += os.read(self.fd, 1).decode("latin-1")
            return _SEQUENCES.get(sequence, "esc" if sequence == "\x1b" else "unknown")
        data = first
        # A UTF-8 character may take several bytes.
        while True:
            try:
                char = data.decode("utf-8")
                break
            except UnicodeDecodeError:
                if len(data) >= 4:
                    return "unknown"
                data += os.read(self.fd, 1)
        return _NAMED.get(char, char)
