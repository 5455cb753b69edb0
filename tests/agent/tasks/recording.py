"""An event recorder for the worktree tests: each body checked against its contract."""

from __future__ import annotations

from typing import Any

from ax_log.events import parse_body


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        parse_body(event)
        self.events.append(event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]
