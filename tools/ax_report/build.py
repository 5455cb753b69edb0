"""The fold: events in, one pass, every section fed; then JSON and Markdown out.

``build_report`` is a pure function of its input: no clock, no disk, no
environment. Events are folded one at a time into each section's small state
and never kept, so memory follows the files, commands and checks a session
had, not its length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ax_report.context import Context
from ax_report.intake import Event, InvalidLine, event_problem
from ax_report.sections import SECTIONS, Section
from ax_report.sections import Acceptance as AcceptanceSection
from libcommon import jsonio
from libcommon.errors import UsageError

REPORT_FORMAT = 1


def render_json(document: dict[str, Any]) -> str:
    """The JSON document as text: indented, key order as built, so byte-identical per input."""
    return jsonio.dumps(document, indent=True).decode() + "\n"


class _Dispatch:
    """Which sections' ``consume`` each event type goes to, worked out once per type."""

    def __init__(self, sections: list[Section]) -> None:
        self.sections = sections
        self.by_type: dict[str, list[Callable[[Event, Context], None]]] = {}

    def handlers(self, kind: str) -> list[Callable[[Event, Context], None]]:
        found = self.by_type.get(kind)
        if found is None:
            found = [section.consume for section in self.sections if _handles(section, kind)]
            self.by_type[kind] = found
        return found


def _handles(section: Section, kind: str) -> bool:
    for pattern in section.handles:
        if pattern in ("*", kind):
            return True
        if pattern.endswith(".*") and kind.startswith(pattern[:-1]):
            return True
    return False


def section_names() -> list[str]:
    return [section.name for section in SECTIONS]


def _instantiate(only: Sequence[str] | None) -> list[Section]:
    if only:
        unknown = [name for name in only if name not in section_names()]
        if unknown:
            raise UsageError(
                f"unknown report section {unknown[0]!r}",
                hint=f"choose from: {', '.join(section_names())}",
            )
    # Every section folds (a section may depend on the whole stream); `only` filters output.
    return [section() for section in SECTIONS]


def fold(items: Iterable[Any], sections: list[Section]) -> Context:
    """Feed each usable event to the sections that handle its type."""
    ctx = Context()
    table = _Dispatch(sections)
    for item in items:
        ctx.position += 1
        if isinstance(item, InvalidLine):
            ctx.reject(item)
            continue
        problem = event_problem(item)
        if problem is not None:
            ctx.reject(InvalidLine(ctx.position, _where(item) + problem))
            continue
        seq = item.get("seq")
        if seq is not None and ctx.seq is not None and seq <= ctx.seq:
            # Still used: the line itself is sound, but its place in the order is suspect.
            ctx.note(InvalidLine(ctx.position, f"seq {seq} follows seq {ctx.seq} (used anyway)"))
        ctx.seq = seq if seq is not None else ctx.seq
        ctx.event_seq = seq
        ctx.events += 1
        kind = item["type"]
        ctx.by_type[kind] = ctx.by_type.get(kind, 0) + 1
        ts = item.get("ts")
        if type(ts) is str:
            ctx.last_ts = ts
        if ctx.session is None and type(item.get("session")) is str:
            ctx.session = item["session"]
        if kind == "session.started" and ctx.workspace is None:
            ctx.workspace = item["workspace"]
        for handler in table.handlers(kind):
            handler(item, ctx)
    return ctx


def _where(item: Any) -> str:
    seq = item.get("seq") if isinstance(item, dict) else None
    return f"seq {seq}: " if type(seq) is int else ""


def build_report(
    events: Iterable[Any],
    only: Sequence[str] | None = None,
    acceptance: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """The report over ``events`` as (JSON document, Markdown).

    ``events`` holds event dicts, and InvalidLine items for input lines that
    were not JSON; ``only`` names the sections to render (all by default);
    ``acceptance`` is the session's acceptance state as ax-agent computed it
    (``complete``, ``blockers``, ``caveats``), shown instead of the recorded one.
    """
    sections = _instantiate(only)
    ctx = fold(events, sections)
    for section in sections:
        if isinstance(section, AcceptanceSection) and acceptance is not None:
            section.live = dict(acceptance)
    chosen = [section for section in sections if not only or section.name in only]
    document: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "events": {"read": ctx.events, "invalid": ctx.invalid},
    }
    blocks: list[list[str]] = []
    for section in chosen:
        document[section.name] = section.to_json(ctx)
        blocks.append(section.to_markdown(ctx))
    markdown = "\n".join("\n".join(block) + "\n" for block in blocks)
    return document, markdown
