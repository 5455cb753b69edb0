"""A parent's worker threads as its log tells them (issue 26): pure folding, no session.

``thread.started`` opens a thread, each ``thread.message`` from the worker is
one more answer, ``thread.ended`` closes it. Listing, recording an episode and
the terminal's ``/orchestrator`` read this; it starts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..tools.common import one_line


@dataclass(frozen=True)
class ThreadView:
    thread_id: str
    label: str
    ended: bool
    turns: int
    last: str
    # The whitelisted servers it was given when it started here.
    extensions: tuple[str, ...] = ()


def fold_threads(events: Iterable[Mapping[str, Any]]) -> dict[str, ThreadView]:
    """The threads a parent's log knows, in the order first started."""
    views: dict[str, ThreadView] = {}
    for event in events:
        kind = event.get("type")
        thread_id = event.get("threadId")
        if not isinstance(thread_id, str):
            continue
        old = views.get(thread_id)
        if kind == "thread.started":
            label = str(event.get("label", ""))
            given = tuple(str(name) for name in event.get("extensions") or [])
            turns = old.turns if old else 0
            views[thread_id] = ThreadView(thread_id, label, False, turns, "", given)
        elif old is None:
            continue
        elif kind == "thread.message" and event.get("sender") == "worker":
            last = one_line(str(event.get("text", "")))
            views[thread_id] = replace(old, turns=old.turns + 1, last=last)
        elif kind == "thread.ended":
            views[thread_id] = replace(old, ended=True)
    return views
