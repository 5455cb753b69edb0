"""JSON-RPC 2.0 over newline-delimited stdio: framing, parsing and replies.

Kept separate from the MCP methods so the transport rules (one message per
line, a size cap, every malformed input answered) are in one small place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from libcommon import jsonio

MAX_MESSAGE_BYTES = 1024 * 1024

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


def read_lines(stream: IO[bytes]) -> Any:
    """Yield each line (without its newline); an over-long line yields ``None``.

    The cap is applied while reading, so a client cannot make the server hold
    an unbounded line in memory: the rest of an over-long line is skipped.
    """
    while True:
        line = stream.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
            while True:
                rest = stream.readline(MAX_MESSAGE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line.rstrip(b"\r\n")


def decode(line: bytes | None) -> Message | Malformed | None:
    """A message, a description of what is wrong with the line, or None for a blank line."""
    if line is None:
        return Malformed(INVALID_REQUEST, f"message larger than {MAX_MESSAGE_BYTES} bytes")
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
