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

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

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


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _optional_string(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _string_or_list(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


def _optional_int(value: Any) -> bool:
    return value is None or type(value) is int


def _number(value: Any) -> bool:
    return type(value) in (int, float) and value >= 0


def _boolean(value: Any) -> bool:
    return type(value) is bool


def _list(value: Any) -> bool:
    return isinstance(value, list)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _present(value: Any) -> bool:
    return True


Check = Callable[[Any], bool]

# type -> {field: (test, what the field must be)}
REQUIRED: dict[str, dict[str, tuple[Check, str]]] = {
    "session.started": {"workspace": (_string, "a string")},
    "session.ended": {"reason": (_string, "a string")},
    "tool.requested": {
        "callId": (_string, "a string"),
        "tool": (_string, "a string"),
        "input": (_present, "present"),
    },
    "policy.decision": {
        "callId": (_string, "a string"),
        "verdict": (_string, "a string"),
        "class": (_string, "a string"),
        "rule": (_string, "a string"),
        "reason": (_string, "a string"),
    },
    "approval.resolved": {
        "callId": (_string, "a string"),
        "answer": (_string, "a string"),
        "scope": (_string, "a string"),
    },
    "tool.completed": {
        "callId": (_string, "a string"),
        "ok": (_boolean, "true or false"),
        "summary": (_string, "a string"),
    },
    "snapshot.stored": {"path": (_string, "a string"), "sha256": (_optional_string, "a string")},
    "file.mutated": {
        "callId": (_optional_string, "a string or null"),
        "path": (_string, "a string"),
        "pre": (_optional_string, "a string or null"),
        "post": (_optional_string, "a string or null"),
    },
    "undo.applied": {
        "paths": (_list, "a list"),
        "reverted": (_list, "a list"),
        "refused": (_list, "a list"),
    },
    "command.started": {
        "callId": (_string, "a string"),
        "command": (_string_or_list, "a string or a list of strings"),
        "cwd": (_string, "a string"),
        "sandbox": (_present, "present"),
    },
    "command.ended": {
        "callId": (_string, "a string"),
        "termination": (_string, "a string"),
        "exitCode": (_optional_int, "an integer or null"),
        "durationMs": (_number, "a non-negative number"),
    },
    "check.started": {
        "kind": (_string, "a string"),
        "project": (_string, "a string"),
        "scope": (_string_or_list, "a string or a list of strings"),
        "recipeId": (_optional_string, "a string or null"),
    },
    "check.completed": {
        "kind": (_string, "a string"),
        "project": (_string, "a string"),
        "scope": (_string_or_list, "a string or a list of strings"),
        "recipeId": (_optional_string, "a string or null"),
        "verdict": (_string, "a string"),
        "exitCode": (_optional_int, "an integer or null"),
        "termination": (_optional_string, "a string or null"),
        "reason": (_optional_string, "a string or null"),
    },
    "custom": {"kind": (_string, "a string"), "data": (_object, "an object")},
}

_ENDINGS = ("command.ended", "check.completed")


def event_problem(event: Any) -> str | None:
    """Why ``event`` cannot be used, or None when it can."""
    if not isinstance(event, Mapping):
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
    if fields is not None:
        for name, (test, what) in fields.items():
            if name not in event:
                return f"{kind}: field '{name}' is missing"
            if not test(event[name]):
                return f"{kind}: field '{name}' must be {what}"
    if kind in _ENDINGS:
        # A process that did not exit has no exit code: such a line could only mislead.
        exited = event["termination"] == "exited"
        if exited and event["exitCode"] is None:
            return f"{kind}: exitCode is required when termination is 'exited'"
        if not exited and event["exitCode"] is not None:
            return f"{kind}: exitCode must be null when termination is {event['termination']!r}"
    return None


def read_jsonl(stream: Iterable[str | bytes]) -> Iterator[Event | InvalidLine]:
    """One item per input line: the parsed object, or an InvalidLine saying why not.

    A blank line is an item too, so the n-th item is the n-th line and a
    problem's line number points into the input.
    """
    for number, raw in enumerate(stream, start=1):
        text = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogateescape")
        if not text.strip():
            yield InvalidLine(number, "blank line")
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            quoted = text[:QUOTE_CHARS].decode("utf-8", "replace").rstrip("\n")
            yield InvalidLine(number, f"not valid JSON ({exc}): {quoted!r}")
            continue
        yield value
