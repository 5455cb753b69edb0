"""The repository map in a session: refreshed at its start, given as a photograph.

In a trusted workspace the start builds or refreshes ax-map's index within
``MAP_SESSION_BUDGET_S`` (a warm index re-extracts only what changed; a cold one
on a large repository comes out partial, says so, and the next build carries on
from there), then renders the map within ``MAP_SESSION_CHARS``. Both go through
the composition seam (``map.build``, then ``map.show``), so ``AX_COMPOSE=process``
runs ``ax-map build`` and ``ax-map show --json``.

The system prompt carries the map last, after the project memory, labelled as a
photograph taken at session start and with ``CONTEXT_NOT_AUTHORITY``, in a
``<<<map-photograph>>>`` region whose text is neutralised so no path can close
it. Being in the system prompt it is fixed overhead for bounded context, like
the instruction files and project memory: never elided and never a reason to
elide. ``map.built`` records what was given (the sha256 ax-map returned, the
characters, the coverage, the build's timings, and whether the index was built
from nothing, refreshed or reused as it was) or ``skipped`` and why: an
untrusted workspace, or a build or render that failed. Nothing here stops a
session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon import delimiters
from libcommon.errors import AxError

from .seam.models import MapBuildRequest, MapShowRequest

if TYPE_CHECKING:
    from ax_map import BuildSummary, MapShown

    from .seam import Seam

# The wall time a session's start gives the index: enough to refresh a warm index of
# a large repository (a stat-diff) or index a small one whole; a cold build of a large
# one stays partial and converges over the next sessions' starts.
MAP_SESSION_BUDGET_S = 2.0
# The map's share of the system prompt: ax-map's own default (about 4,000 tokens).
MAP_SESSION_CHARS = 16_000
# The region's words: not a phrase the map says itself ("Repository map: …"), which
# neutralising would otherwise remove from its own header.
MAP_MARKER_WORDS = "map-photograph"
_MARKERS = delimiters.phrase_pattern([MAP_MARKER_WORDS])
MAP_INTRO = (
    "The repository map below is a photograph taken at session start: it may be out of "
    "date. Use the retrieve tool, or read the files, for the present."
)
SKIPPED_UNTRUSTED = "untrusted"
# The section's own words around the map: the label, the sentence and the two markers.
MAP_FRAMING_MAX_BYTES = 1024
# The worst case the map adds to the system prompt unasked, beside the instruction files'
# and project memory's ceiling (memory.INJECTION_MAX_BYTES): its characters at UTF-8's
# widest, and the framing.
MAP_INJECTION_MAX_BYTES = 4 * MAP_SESSION_CHARS + MAP_FRAMING_MAX_BYTES


@dataclass
class SessionMap:
    """The map section of the system prompt ("" when skipped) and its ``map.built`` event."""

    text: str = ""
    event: dict[str, Any] = field(default_factory=dict)


def load_map(seam: Seam, *, trusted: bool) -> SessionMap:
    """The session's map, built within the budget and rendered; never raises for the map."""
    if not trusted:
        return _skipped(SKIPPED_UNTRUSTED)
    started = time.monotonic()
    try:
        built: BuildSummary = seam.call("map.build", MapBuildRequest(budget_s=MAP_SESSION_BUDGET_S))
    except Exception as exc:  # the map is context: a bug in it must not stop a session
        return _skipped(f"the map index could not be built: {_problem(exc)}")
    rendering = time.monotonic()
    try:
        shown: MapShown = seam.call("map.show", MapShowRequest(chars=MAP_SESSION_CHARS))
    except Exception as exc:  # as above
        return _skipped(f"the map could not be rendered: {_problem(exc)}")
    done = time.monotonic()
    timings = {
        **built.timings_ms,
        "show": round((done - rendering) * 1000),
        "session": round((done - started) * 1000),
    }
    event = {
        "type": "map.built",
        "status": _status(built),
        "budgetS": MAP_SESSION_BUDGET_S,
        "sha256": shown.sha256,
        "chars": shown.chars,
        "filesShown": shown.files_shown,
        "state": shown.state,
        "coverage": shown.coverage.to_json(),
        "rebuilt": built.rebuilt,
        "timingsMs": timings,
    }
    return SessionMap(section(shown.text), event)


def section(text: str) -> str:
    """The map as the system prompt carries it: labelled, and in a region it cannot close."""
    body = delimiters.neutralise(text, _MARKERS).rstrip("\n")
    return (
        f"{MAP_INTRO}\n{delimiters.CONTEXT_NOT_AUTHORITY}\n"
        f"<<<{MAP_MARKER_WORDS}>>>\n{body}\n<<<end {MAP_MARKER_WORDS}>>>"
    )


def _status(built: BuildSummary) -> str:
    if not built.written:
        return "reused"
    return "built" if built.rebuilt is not None else "refreshed"


def _skipped(reason: str) -> SessionMap:
    return SessionMap("", {"type": "map.built", "status": "skipped", "reason": reason})


def _problem(exc: Exception) -> str:
    if isinstance(exc, AxError):
        return exc.message
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    return f"{type(exc).__name__}: {exc} (a bug in ax)"
