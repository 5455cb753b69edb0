"""The injectable clock and id source.

Core code asks ``now()`` and ``new_id()`` instead of reading the system clock or
``secrets`` directly, so tests can pin both and get byte-identical output.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class IdSource(Protocol):
    def new_id(self, prefix: str) -> str: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class StepClock:
    """Starts at ``start`` and advances by ``step`` on every reading."""

    start: datetime
    step: timedelta = timedelta(milliseconds=1)
    _readings: int = field(default=0, init=False)

    def now(self) -> datetime:
        value = self.start + self.step * self._readings
        self._readings += 1
        return value


class RandomIds:
    def new_id(self, prefix: str) -> str:
        stamp = _clock.now().strftime("%Y%m%dT%H%M%S")
        # os.urandom is what secrets.token_hex reads, without secrets' imports (hmac,
        # random, base64: ~10 ms of every tool's start).
        return f"{prefix}-{stamp}-{os.urandom(4).hex()}"


@dataclass
class SequentialIds:
    """Deterministic ids for tests: ``<prefix>-0001``, ``<prefix>-0002``, …"""

    counter: int = 0

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter:04d}"


_clock: Clock = SystemClock()
_ids: IdSource = RandomIds()


def now() -> datetime:
    return _clock.now()


def new_id(prefix: str) -> str:
    return _ids.new_id(prefix)


def timestamp(moment: datetime | None = None) -> str:
    """RFC 3339 in UTC with millisecond precision: ``2026-11-30T10:00:00.123Z``."""
    moment = (moment or now()).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@contextmanager
def use(clock: Clock | None = None, ids: IdSource | None = None) -> Iterator[None]:
    """Swap the clock and/or id source for the duration of a block."""
    global _clock, _ids
    saved = (_clock, _ids)
    _clock = clock or _clock
    _ids = ids or _ids
    try:
        yield
    finally:
        _clock, _ids = saved
