"""What the fold knows besides the sections' own state: position, workspace, problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ax_report.intake import InvalidLine

# Invalid lines beyond this many are counted but not listed one by one.
LISTED_PROBLEMS_MAX = 100


@dataclass
class Context:
    workspace: str | None = None  # from the first session.started
    session: str | None = None  # the envelope's session id, from the first event that has one
    last_ts: str | None = None  # ts of the newest event that has one
    by_type: dict[str, int] = field(default_factory=dict)
    position: int = 0  # 1-based index of the current item in the stream
    seq: int | None = None  # highest seq seen so far
    event_seq: int | None = None  # seq of the event being folded (None when it has none)
    events: int = 0  # usable events
    invalid: int = 0  # items that could not be used
    notes: int = 0  # usable events with a remark (out-of-order seq)
    listed: list[InvalidLine] = field(default_factory=list)

    def reject(self, line: InvalidLine) -> None:
        self.invalid += 1
        self._list(line)

    def note(self, line: InvalidLine) -> None:
        self.notes += 1
        self._list(line)

    def _list(self, line: InvalidLine) -> None:
        if len(self.listed) < LISTED_PROBLEMS_MAX:
            self.listed.append(line)

    def problems_json(self) -> dict[str, Any]:
        return {
            "invalid": self.invalid,
            "remarks": self.notes,
            "listed": [line.to_json() for line in self.listed],
            "unlisted": self.invalid + self.notes - len(self.listed),
        }
