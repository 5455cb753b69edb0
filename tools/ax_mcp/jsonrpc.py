"""JSON-RPC 2.0 over newline-delimited stdio: framing, parsing and replies.

Kept separate from the MCP methods so the transport rules (one message per
line, a size cap, every malformed input answered) are in one small place.

A message over the cap is never held or parsed whole, but its answer still
carries its id, or the client waiting for that id would wait forever: while
the line is read and discarded, ``IdScanner`` follows its JSON structure in
constant memory and keeps the value of the top-level ``"id"`` member, wherever
in the object it comes (the TypeScript SDK writes it after ``params``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, Any

from libcommon import jsonio

MAX_MESSAGE_BYTES = 1024 * 1024
# What the id scan of an over-long message holds at most: a member name (the longest
# spelling of "id" is "\u0069\u0064", 14 bytes with its quotes) and the id's value.
ID_SCAN_KEY_BYTES = 16
ID_SCAN_VALUE_BYTES = 1024
# Strings and plain runs are skipped at C speed; each bracket (and, at the top level,
# each quote, escape, colon or comma) is one step in Python, under two microseconds.
# Past this many the scan gives up (the answer then carries a null id), so no line
# costs more than about a second of work.
ID_SCAN_MAX_STEPS = 500_000

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = str | int | None


@dataclass(frozen=True)
class Message:
    """One decoded JSON-RPC request or notification (``id`` absent for a notification)."""

    method: str
    params: dict[str, Any]
    id: RequestId
    is_notification: bool


@dataclass(frozen=True)
class Malformed:
    """A line that is not a usable message; ``id`` is echoed when it could be read."""

    code: int
    message: str
    id: RequestId = None


@dataclass(frozen=True)
class Oversized:
    """A line over MAX_MESSAGE_BYTES, skipped; ``id`` is its top-level id when one was found."""

    id: RequestId


_STRUCTURE = re.compile(rb'["{}\[\]:,]')
# Below the top level only nesting matters: one match skips everything up to the next
# bracket, whole strings included (possessive, so a string cut off by the end of a
# piece fails at once instead of backtracking).
_NESTED_RUN = re.compile(rb'(?:[^"{}\[\]]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
_STRING_END = re.compile(rb'["\\]')
_SPACE = b" \t\r\n"


class IdScanner:
    """The top-level ``"id"`` of a JSON object fed in pieces, in constant memory.

    Only the structure is followed (strings, nesting, member names at the top
    level); the text is not validated, since the message is refused anyway.
    A member name or id value longer than its bound is not an id, and an id
    after ID_SCAN_MAX_STEPS steps is not found.
    """

    def __init__(self) -> None:
        self.found: RequestId = None
        self._depth = 0
        self._started = False
        self._stopped = False
        self._in_string = False
        self._escaped = False
        self._expect_name = False
        self._name_is_id = False
        self._in_id_value = False
        self._held: bytearray | None = None
        self._held_max = 0
        self._steps = 0

    def feed(self, data: bytes) -> None:
        position = 0
        while position < len(data) and not self._stopped:
            self._steps += 1
            if self._steps > ID_SCAN_MAX_STEPS:
                self._stopped = True
            elif self._in_string:
                position = self._string(data, position)
            elif not self._started:
                position = self._start(data, position)
            else:
                position = self._structure(data, position)

    def _start(self, data: bytes, position: int) -> int:
        rest = data[position:].lstrip(_SPACE)
        if not rest:
            return len(data)
        if rest[:1] != b"{":
            self._stopped = True
            return len(data)
        self._started = True
        self._depth = 1
        self._expect_name = True
        return len(data) - len(rest) + 1

    def _string(self, data: bytes, position: int) -> int:
        if self._escaped:
            self._hold(data[position : position + 1])
            self._escaped = False
            return position + 1
        found = _STRING_END.search(data, position)
        end = len(data) if found is None else found.start()
        self._hold(data[position:end])
        if found is None:
            return end
        self._hold(data[end : end + 1])
        if data[end] == ord("\\"):
            self._escaped = True
        else:
            self._in_string = False
            if self._depth == 1 and self._expect_name:
                self._name_ended()
        return end + 1

    def _structure(self, data: bytes, position: int) -> int:
        if self._depth > 1:
            return self._nested(data, position)
        found = _STRUCTURE.search(data, position)
        end = len(data) if found is None else found.start()
        if self._in_id_value:
            self._hold(data[position:end])
        if found is None:
            return end
        char = data[end : end + 1]
        top = self._depth == 1
        if char == b'"':
            self._in_string = True
            if top and self._expect_name:
                self._begin(b'"', ID_SCAN_KEY_BYTES)
            else:
                self._hold(char)
        elif char in (b"{", b"["):
            if top and self._in_id_value:
                self._in_id_value = False
                self._held = None
            self._depth += 1
        elif char in (b"}", b"]"):
            if top:
                self._value_ended()
                self._stopped = True
            self._depth -= 1
        elif char == b":" and top:
            self._expect_name = False
            self._in_id_value, self._name_is_id = self._name_is_id, False
            if self._in_id_value:
                self._begin(b"", ID_SCAN_VALUE_BYTES)
        elif char == b"," and top:
            self._value_ended()
            self._expect_name = True
        return end + 1

    def _nested(self, data: bytes, position: int) -> int:
        skipped = _NESTED_RUN.match(data, position)
        end = position if skipped is None else skipped.end()
        if end == len(data):
            return end
        if data[end : end + 1] == b'"':
            # A string that goes on in the next piece.
            self._in_string = True
        elif data[end : end + 1] in (b"{", b"["):
            self._depth += 1
        else:
            self._depth -= 1
        return end + 1

    def _begin(self, first: bytes, limit: int) -> None:
        self._held = bytearray(first)
        self._held_max = limit

    def _hold(self, piece: bytes) -> None:
        if self._held is None:
            return
        if len(self._held) + len(piece) > self._held_max:
            self._held = None
            return
        self._held += piece

    def _name_ended(self) -> None:
        held, self._held = self._held, None
        try:
            self._name_is_id = held is not None and jsonio.loads(bytes(held)) == "id"
        except jsonio.JSONDecodeError:
            self._name_is_id = False

    def _value_ended(self) -> None:
        held, self._held = self._held, None
        if not self._in_id_value:
            return
        self._in_id_value = False
        if held is None:
            return
        try:
            value = jsonio.loads(bytes(held))
        except jsonio.JSONDecodeError:
            return
        if isinstance(value, str | int) and not isinstance(value, bool):
            # A repeated member: the last one wins, as when the whole message is parsed.
            self.found = value


def read_lines(stream: IO[bytes]) -> Any:
    """Yield each line (without its newline); an over-long line yields ``Oversized``.

    The cap is applied while reading, so a client cannot make the server hold
    an unbounded line in memory: the rest of an over-long line is read in
    pieces, scanned for its id and dropped.
    """
    while True:
        line = stream.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
            scanner = IdScanner()
            scanner.feed(line)
            del line
            while True:
                rest = stream.readline(MAX_MESSAGE_BYTES)
                scanner.feed(rest)
                if not rest or rest.endswith(b"\n"):
                    break
            yield Oversized(scanner.found)
            continue
        yield line.rstrip(b"\r\n")


def decode(line: bytes | Oversized) -> Message | Malformed | None:
    """A message, a description of what is wrong with the line, or None for a blank line."""
    if isinstance(line, Oversized):
        return Malformed(INVALID_REQUEST, f"message larger than {MAX_MESSAGE_BYTES} bytes", line.id)
    if not line.strip():
        return None
    try:
        data = jsonio.loads(line)
    except jsonio.JSONDecodeError as exc:
        return Malformed(PARSE_ERROR, f"parse error: {exc}")
    if isinstance(data, list):
        # MCP dropped JSON-RPC batches in 2025-06-18; one message per line.
        return Malformed(INVALID_REQUEST, "batches are not supported: send one message per line")
    return decode_object(data)


def decode_object(data: Any) -> Message | Malformed:
    if not isinstance(data, dict):
        return Malformed(INVALID_REQUEST, "a message must be a JSON object")
    raw_id = data.get("id")
    request_id: RequestId = (
        raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    )
    if data.get("jsonrpc") != "2.0":
        return Malformed(INVALID_REQUEST, 'the "jsonrpc" member must be "2.0"', request_id)
    if "id" in data and request_id is None and raw_id is not None:
        return Malformed(INVALID_REQUEST, '"id" must be a string or an integer')
    method = data.get("method")
    if not isinstance(method, str):
        if "result" in data or "error" in data:
            # A response to a request we never send; nothing to answer.
            return Malformed(0, "response ignored", request_id)
        return Malformed(INVALID_REQUEST, 'a request needs a string "method"', request_id)
    params = data.get("params", {})
    if not isinstance(params, dict):
        return Malformed(INVALID_PARAMS, '"params" must be an object', request_id)
    return Message(method, params, request_id, "id" not in data)


def result(request_id: RequestId, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: RequestId, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def write(stream: IO[bytes], reply: dict[str, Any]) -> None:
    """One reply per line, flushed at once so a client that closes early still has it."""
    stream.write(jsonio.dumps_line(reply))
    stream.flush()
