"""Progress for people while a check runs: what runs and for how long, on a terminal only."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

PROGRESS_INTERVAL_S = 1.0


@dataclass
class Progress:
    """Polled by ax-exec as its abort hook: redraws one status line, reports Ctrl-C."""

    stream: IO[str]
    enabled: bool
    label: str = ""
    abort: threading.Event = field(default_factory=threading.Event)
    _started: float = field(default_factory=time.monotonic)
    _last: float = 0.0
    _width: int = 0

    def start(self, label: str) -> None:
        self.label = label
        self._started = time.monotonic()

    def __call__(self) -> bool:
        now = time.monotonic()
        if self.enabled and self.label and now - self._last >= PROGRESS_INTERVAL_S:
            self._last = now
            line = f"ax-check: running {self.label} ({int(now - self._started)}s)"
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self._width = len(line)
        return self.abort.is_set()

    def clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


@contextlib.contextmanager
def interrupt_sets(event: threading.Event) -> Iterator[None]:
    """While the block runs, Ctrl-C sets ``event`` (so the tree is killed) instead of raising."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: event.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
