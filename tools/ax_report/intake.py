"""What the report accepts as an event, and what it reports instead.

The report reads plain event dicts (the JSON objects ax-log stores). Anything
else in the stream, a line that is not JSON, an object without a ``type``, an
event missing a field the report relies on, becomes an ``InvalidLine``: it is
shown and counted in the report, never dropped without a word.

The field table below holds only what the report needs from each core type
(issue 3 lists them); fields added later by other tools are ignored, so a
newer producer never makes an older report refuse a line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ax_log import Overlong

SCHEMA_VERSION = 1
# How much of an unreadable line is quoted back in a problem message.
QUOTE_CHARS = 80

Event = Mapping[str, Any]


@dataclass(frozen=True)
class InvalidLine:
    """A line (or stream item) the report could not use, with why."""

    line: int
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "problem": self.problem}


NoneType = type(None)
Rule = tuple[frozenset[type] | None, str]
STRING: Rule = (frozenset({str}), "a string")
OPTIONAL_STRING: Rule = (frozenset({str, NoneType}), "a string or null")
STRINGS: Rule = (frozenset({str, list}), "a string or a list of strings")
OPTIONAL_INT: Rule = (frozenset({int, NoneType}), "an integer or null")
NUMBER: Rule = (frozenset({int, float}), "a non-negative number")
BOOLEAN: Rule = (frozenset({bool}), "true or false")
LIST: Rule = (frozenset({list}), "a list")
OBJECT: Rule = (frozenset({dict}), "an object")
ANY: Rule = (None, "present")

# type -> {field: (the JSON types it may have, what to call them)}. Compared with
# type() rather than isinstance so that true/false never pass for an integer.
REQUIRED: dict[str, dict[str, Rule]] = {
    "session.started": {"workspace": STRING},
    "session.ended": {"reason": STRING},
    "tool.requested": {"callId": STRING, "tool": STRING, "input": ANY},
    "policy.decision": {
        "callId": STRING,
        "verdict": STRING,
        "class": STRING,
        "rule": STRING,
        "reason": STRING,
    },
    "approval.resolved": {"callId": STRING, "answer": STRING, "scope": STRING},
    "tool.completed": {"callId": STRING, "ok": BOOLEAN, "summary": STRING},
    "snapshot.stored": {"path": STRING, "sha256": OPTIONAL_STRING},
    "file.mutated": {
        "callId": OPTIONAL_STRING,
        "path": STRING,
        "pre": OPTIONAL_STRING,
        "post": OPTIONAL_STRING,
    },
    "undo.applied": {"paths": LIST, "reverted": LIST, "refused": LIST},
    "command.started": {"callId": STRING, "command": STRINGS, "cwd": STRING, "sandbox": ANY},
    "command.ended": {
        "callId": STRING,
        "termination": STRING,
        "exitCode": OPTIONAL_INT,
        "durationMs": NUMBER,
    },
    "check.started": {
        "kind": STRING,
        "project": STRING,
        "scope": STRINGS,
        "recipeId": OPTIONAL_STRING,
    },
    "check.completed": {
        "kind": STRING,
        "project": STRING,
        "scope": STRINGS,
        "recipeId": OPTIONAL_STRING,
        "verdict": STRING,
        "exitCode": OPTIONAL_INT,
        "termination": OPTIONAL_STRING,
        "reason": OPTIONAL_STRING,
    },
    "custom": {"kind": STRING, "data": OBJECT},
    "checkpoint.created": {"ref": STRING, "kind": STRING, "commit": STRING},
    "checkpoint.restored": {"ref": STRING, "callId": STRING, "restored": LIST, "removed": LIST},
    "checkpoint.skipped": {"kind": STRING, "reason": STRING},
    "checkpoint.pruned": {"refs": LIST},
}
# Fields whose list form must hold only strings, and numbers that may not be negative.
_STRING_LISTS = ("command", "scope")
_NON_NEGATIVE = ("durationMs",)

_ENDINGS = ("command.ended", "check.completed")


def event_problem(event: Any) -> str | None:
    """Why ``event`` cannot be used, or None when it can."""
    if type(event) is not dict and not isinstance(event, Mapping):
        return f"not a JSON object but {type(event).__name__}"
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return "field 'type' is missing or not a string"
    version = event.get("v", SCHEMA_VERSION)
    if type(version) is not int or version < 1:
        return "field 'v' is not a schema version"
    if version > SCHEMA_VERSION:
        return f"written with schema v{version}, newer than this report's v{SCHEMA_VERSION}"
    seq = event.get("seq")
    if seq is not None and (type(seq) is not int or seq < 1):
        return "field 'seq' is not a positive integer"
    fields = REQUIRED.get(kind)
    if fields is None:
        return None
    for name, (allowed, what) in fields.items():
        if name not in event:
            return f"{kind}: field '{name}' is missing"
        value = event[name]
        if allowed is not None and type(value) not in allowed:
            return f"{kind}: field '{name}' must be {what}"
        if name in _STRING_LISTS and type(value) is list:
            if not all(type(item) is str for item in value):
                return f"{kind}: field '{name}' must be {what}"
        elif name in _NON_NEGATIVE and value < 0:
            return f"{kind}: field '{name}' must be {what}"
    if kind in _ENDINGS:
        # A process that did not exit has no exit code: such a line could only mislead.
        exited = event["termination"] == "exited"
        if exited and event["exitCode"] is None:
            return f"{kind}: exitCode is required when termination is 'exited'"
        if not exited and event["exitCode"] is not None:
            return f"{kind}: exitCode must be null when termination is {event['termination']!r}"
    return None


def read_jsonl(stream: Iterable[str | bytes | Overlong]) -> Iterator[Event | InvalidLine]:
    """One item per input line: the parsed object, or an InvalidLine saying why not.

    A blank line is an item too, so the n-th item is the n-th line and a
    problem's line number points into the input. A stream read through
    ``ax_log.capped_lines`` gives an ``Overlong`` for a line over the log's
    line cap, which is reported, never parsed.
    """
    for number, raw in enumerate(stream, start=1):
        if isinstance(raw, Overlong):
            yield InvalidLine(number, raw.problem())
            continue
        if not raw.strip():
            yield InvalidLine(number, "blank line")
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
            quoted = text[:QUOTE_CHARS].rstrip("\n")
            yield InvalidLine(number, f"not valid JSON ({exc}): {quoted!r}")
            continue
        yield value
