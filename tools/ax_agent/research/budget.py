"""The one research allowance: searches, extracts, provider credits and characters.

One ``ResearchBudget`` object is shared by reference by a session and every
researcher it starts (one process, one lock), so a sibling's spend is seen at
once. A call reserves its worst case before anything is sent (``reserve``:
refused whole, naming the bound, when any bound would be overshot); what it
did not use of the characters is given back when it ends (``settle``). Both
are events (``research.spent``, ``research.settled``), and ``rebuilt`` folds
them back on resume, so a restart cannot refill the allowance: a call that
reserved and never settled stays charged at its worst case.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from .errors import ResearchError
from .settings import ResearchLimits

# Per call: results one search returns, the characters of each result's snippet, the
# URLs one extract names and the characters kept of each page.
SEARCH_MAX_RESULTS = 8
SNIPPET_MAX_CHARS = 1_000
EXTRACT_MAX_URLS = 5
PAGE_MAX_CHARS = 20_000
# The provider's pricing as the estimate: a basic search is one credit, an advanced
# one two; an extract is one credit (two advanced) per started group of five URLs.
EXTRACT_URLS_PER_CREDIT = 5

Depth = Literal["basic", "advanced"]
SPENT_EVENT = "research.spent"
SETTLED_EVENT = "research.settled"


@dataclass(frozen=True)
class Spend:
    searches: int = 0
    extracts: int = 0
    credits: int = 0
    chars: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: Spend) -> Spend:
        return Spend(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def as_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def text(self) -> str:
        return (
            f"{self.searches} search(es), {self.extracts} page extract(s), "
            f"{self.credits} credit(s), {self.chars:,} characters"
        )


def search_cost(depth: Depth, max_results: int) -> Spend:
    return Spend(
        searches=1,
        credits=2 if depth == "advanced" else 1,
        chars=max_results * SNIPPET_MAX_CHARS,
    )


def extract_cost(urls: int, depth: Depth) -> Spend:
    groups = math.ceil(urls / EXTRACT_URLS_PER_CREDIT)
    return Spend(
        extracts=urls,
        credits=groups * (2 if depth == "advanced" else 1),
        chars=urls * PAGE_MAX_CHARS,
    )


class ResearchBudget:
    """The shared allowance (see the module docstring); every method takes the lock."""

    def __init__(self, limits: ResearchLimits, spent: Spend = Spend()) -> None:
        self.limits = Spend(limits.searches, limits.extracts, limits.credits, limits.chars)
        self._spent = spent
        self._lock = threading.Lock()

    @property
    def spent(self) -> Spend:
        with self._lock:
            return self._spent

    def remaining(self) -> Spend:
        with self._lock:
            return self.limits - self._spent

    def check(self, cost: Spend) -> None:
        """Refuse ``cost`` when it would overshoot any bound (nothing is reserved)."""
        with self._lock:
            self._refuse_overshoot(cost)

    def reserve(self, cost: Spend) -> Spend:
        """Charge ``cost`` whole, or refuse it whole; returns what remains after it."""
        with self._lock:
            self._refuse_overshoot(cost)
            self._spent = self._spent + cost
            return self.limits - self._spent

    def settle(self, reserved_chars: int, used_chars: int) -> None:
        """Give back the characters a call reserved and did not use."""
        with self._lock:
            back = max(0, reserved_chars - max(0, used_chars))
            self._spent = self._spent - Spend(chars=back)

    def _refuse_overshoot(self, cost: Spend) -> None:
        left = self.limits - self._spent
        over = [
            f"{f.name} ({getattr(cost, f.name):,} asked, {max(0, getattr(left, f.name)):,} left)"
            for f in fields(cost)
            if getattr(cost, f.name) > getattr(left, f.name)
        ]
        if over:
            raise ResearchError(
                "budget",
                "the research allowance would be overshot, so the call is refused whole "
                f"and nothing is sent: {', '.join(over)}. Ask for less (fewer results or "
                "URLs, basic depth), or answer with what you have",
            )

    @classmethod
    def rebuilt(cls, limits: ResearchLimits, events: Iterable[Mapping[str, Any]]) -> ResearchBudget:
        """The allowance as the events left it (see the module docstring)."""
        spent = Spend()
        reserved: dict[tuple[str, str], int] = {}
        settled: dict[tuple[str, str], int] = {}
        for event in events:
            key = (str(event.get("session", "")), str(event.get("callId", "")))
            if event.get("type") == SPENT_EVENT:
                cost = Spend(*(_count(event, f.name) for f in fields(Spend)))
                spent = spent + cost
                reserved[key] = cost.chars
            elif event.get("type") == SETTLED_EVENT:
                settled[key] = _count(event, "chars")
        for key, used in settled.items():
            if key in reserved:
                spent = spent - Spend(chars=max(0, reserved[key] - used))
        return cls(limits, spent)


def _count(event: Mapping[str, Any], name: str) -> int:
    value = event.get(name)
    return value if isinstance(value, int) and value >= 0 else 0
