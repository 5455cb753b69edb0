"""The JSON-RPC and MCP rules of ax-mcp's server, driven in-process line by line.

The tool here is a real Tool with real pydantic models; it stands in for the
catalogue so these tests pin the protocol alone. The catalogue's tools are
exercised through the official SDK client in test_sdk_client.py.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from ax_mcp import jsonrpc
from ax_mcp.jsonrpc import ID_SCAN_VALUE_BYTES, MAX_MESSAGE_BYTES, IdScanner
from ax_mcp.server import SUPPORTED_VERSIONS, Server, Tool
from libcommon import jsonio
from libcommon.contracts import Contract
from libcommon.errors import UsageError


class EchoIn(Contract):
    text: str
    times: int = 1


class EchoOut(Contract):
    echoed: str


def echo(request: EchoIn) -> BaseModel:
    if request.times < 0:
        raise UsageError("times must not be negative", hint="pass 0 or more")
    if request.text == "boom":
        raise RuntimeError("kaboom")
    return EchoOut(echoed=request.text * request.times)


TOOLS = [Tool("echo", "Echo text.", EchoIn, EchoOut, echo, read_only=True)]


def line(message: Any) -> bytes:
    return jsonio.dumps(message)


def request(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return line(body)


@pytest.fixture
def server() -> Server:
    return Server(TOOLS, log=io.StringIO())


@pytest.fixture
def ready(server: Server) -> Server:
    reply = server.handle_line(request("initialize", {"protocolVersion": "2025-11-25"}))
    assert reply is not None and "result" in reply
    return server


def error_code(reply: dict[str, Any] | None) -> int:
    assert reply is not None and "error" in reply, reply
    return int(reply["error"]["code"])


@pytest.mark.parametrize("offered", SUPPORTED_VERSIONS)
def test_initialize_accepts_each_supported_version(server: Server, offered: str) -> None:
    reply = server.handle_line(request("initialize", {"protocolVersion": offered}))
    assert reply is not None
    assert reply["result"]["protocolVersion"] == offered
    assert reply["result"]["serverInfo"]["name"] == "ax-mcp"
    assert reply["result"]["capabilities"] == {"tools": {"listChanged": False}}


def test_an_unknown_version_gets_the_newest(server: Server) -> None:
    reply = server.handle_line(request("initialize", {"protocolVersion": "1999-01-01"}))
    assert reply is not None
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_requests_before_initialize_are_refused_but_ping_works(server: Server) -> None:
    assert server.handle_line(request("ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    refused = server.handle_line(request("tools/list"))
    assert error_code(refused) == -32600
    assert refused is not None and "initialize" in refused["error"]["message"]


def test_malformed_json_is_answered_never_dropped(ready: Server) -> None:
    assert error_code(ready.handle_line(b'{"jsonrpc": "2.0", "id": 1,')) == -32700


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"[1, 2]", -32600),
        (b'"just a string"', -32600),
        (b'{"id": 1, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600),
        (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}', -32602),
    ],
)
def test_invalid_requests(ready: Server, raw: bytes, code: int) -> None:
    assert error_code(ready.handle_line(raw)) == code


def test_unknown_method(ready: Server) -> None:
    assert error_code(ready.handle_line(request("resources/list"))) == -32601


def test_notifications_get_no_reply(ready: Server) -> None:
    note = line({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert ready.handle_line(note) is None
    assert ready.handle_line(line({"jsonrpc": "2.0", "method": "no/such"})) is None


def test_tools_list_carries_both_schemas(ready: Server) -> None:
    reply = ready.handle_line(request("tools/list"))
    assert reply is not None
    (tool,) = reply["result"]["tools"]
    assert tool["name"] == "echo"
    assert tool["inputSchema"]["type"] == "object"
    assert tool["inputSchema"]["required"] == ["text"]
    assert tool["outputSchema"]["properties"]["echoed"]["type"] == "string"
    assert tool["annotations"]["readOnlyHint"] is True


def test_a_call_returns_structured_content_and_a_text_copy(ready: Server) -> None:
    reply = ready.handle_line(
        request("tools/call", {"name": "echo", "arguments": {"text": "ab", "times": 2}})
    )
    assert reply is not None
    result = reply["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"echoed": "abab"}
    assert jsonio.loads(result["content"][0]["text"]) == {"echoed": "abab"}


def test_unknown_tool_and_malformed_call_params(ready: Server) -> None:
    assert error_code(ready.handle_line(request("tools/call", {"name": "nope"}))) == -32602
    assert error_code(ready.handle_line(request("tools/call", {}))) == -32602
    bad_args = request("tools/call", {"name": "echo", "arguments": [1]})
    assert error_code(ready.handle_line(bad_args)) == -32602


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({}, "argument field 'text': Field required"),
        ({"text": 3}, "argument field 'text'"),
        ({"text": "a", "colour": "red"}, "argument field 'colour': unknown field"),
        ({"text": "a", "times": -1}, "times must not be negative (pass 0 or more)"),
        ({"text": "boom"}, "echo failed unexpectedly: kaboom"),
    ],
)
def test_tool_failures_are_results_a_model_can_act_on(
    ready: Server, arguments: dict[str, Any], needle: str
) -> None:
    reply = ready.handle_line(request("tools/call", {"name": "echo", "arguments": arguments}))
    assert reply is not None
    assert reply["result"]["isError"] is True
    assert needle in reply["result"]["content"][0]["text"]


def test_an_oversized_message_is_refused_and_the_next_one_still_served(ready: Server) -> None:
    huge = b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "pad": "' + b"x" * MAX_MESSAGE_BYTES
    stream = io.BytesIO(huge + b'"}\n' + request("ping", rid=10) + b"\n")
    out = io.BytesIO()
    ready.serve(stream, out)
    replies = [jsonio.loads(raw) for raw in out.getvalue().splitlines()]
    assert replies[0]["error"]["code"] == -32600
    assert "larger than" in replies[0]["error"]["message"]
    assert replies[1] == {"jsonrpc": "2.0", "id": 10, "result": {}}


def test_every_reply_is_written_before_stdin_closes_mid_message(server: Server) -> None:
    stream = io.BytesIO(
        request("initialize", {"protocolVersion": "2025-11-25"})
        + b"\n"
        + request("ping", rid=2)
        + b"\n"
        + b'{"jsonrpc": "2.0", "id": 3, "meth'
    )
    out = io.BytesIO()
    server.serve(stream, out)
    replies = [jsonio.loads(raw) for raw in out.getvalue().splitlines()]
    assert [r.get("id") for r in replies] == [1, 2, None]
    assert replies[2]["error"]["code"] == -32700


def scan(*pieces: bytes) -> Any:
    scanner = IdScanner()
    for piece in pieces:
        scanner.feed(piece)
    return scanner.found


PAD = b"x" * (2 * MAX_MESSAGE_BYTES)
NAMES = st.sampled_from(["id", "params", "ID", "i", "d", 'i"d']) | st.text(max_size=6)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"p":"' + PAD + b'"}}', 7),
        # The TypeScript SDK writes the id after the params.
        (b'{"method":"m","params":{"p":"' + PAD + b'"},"jsonrpc":"2.0","id":"req-9"}', "req-9"),
        (b'{"params":{"id":1,"deep":[{"id":2}]},"id":3}', 3),
        (b'{"params":{"id":1}}', None),
        (b'{"text":"\\"id\\": 5","other":"x\\\\","id" : -12 }', -12),
        (b'{"\\u0069d":"escaped name"}', "escaped name"),
        (b'{"id":"a \\"quoted\\" id"}', 'a "quoted" id'),
        (b'{"id":true}', None),
        (b'{"id":null}', None),
        (b'{"id":1.5}', None),
        (b'{"id":{"x":1},"y":2}', None),
        (b'{"id":[1]}', None),
        (b'{"id":1,"id":2}', 2),
        (b'  \n{"idx":1,"xid":2,"i":3}', None),
        (b'["id",1]', None),
        (b'{"id":"' + b"z" * (ID_SCAN_VALUE_BYTES + 1) + b'"}', None),
        (b'{"id":4,"m":"' + PAD, 4),
        (b'{"p":["a]b{c",{"x":"\\"]}\\\\"},[[]]],"q":{"id":0},"id":9}', 9),
        (b'{"p":[' + b'{"a":"]","b":[1,{"id":2}]},' * 1000 + b'0],\n"id":10}', 10),
    ],
)
def test_the_id_of_an_oversized_message_is_its_top_level_member(
    message: bytes, expected: Any
) -> None:
    assert scan(message) == expected
    # However the line arrives in pieces, the answer is the same.
    assert scan(*[message[i : i + 7] for i in range(0, min(len(message), 4096), 7)]) == (
        scan(message[:4096])
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(members=st.dictionaries(NAMES, JSON_VALUES, max_size=6), cut=st.integers(1, 64))
def test_the_scan_agrees_with_a_full_parse(members: dict[str, Any], cut: int) -> None:
    raw = jsonio.dumps(members)
    value = members.get("id")
    expected = value if isinstance(value, str | int) and not isinstance(value, bool) else None
    if isinstance(value, str) and len(jsonio.dumps(value)) > ID_SCAN_VALUE_BYTES:
        expected = None
    assert scan(*[raw[i : i + cut] for i in range(0, len(raw), cut)]) == expected


def test_the_scan_gives_up_after_its_step_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    message = b'{"p":' + b"[" * 300 + b"]" * 300 + b',"id":1}'
    assert scan(message) == 1
    monkeypatch.setattr(jsonrpc, "ID_SCAN_MAX_STEPS", 500)
    assert scan(message) is None
    assert scan(b'{"id":1,"p":' + b"[" * 300 + b"]" * 300 + b"}") == 1


def test_an_oversized_request_is_answered_with_its_id(ready: Server) -> None:
    huge = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    huge += PAD + b'"}},"id":41}\n'
    out = io.BytesIO()
    ready.serve(io.BytesIO(huge + request("ping", rid=42) + b"\n"), out)
    replies = [jsonio.loads(raw) for raw in out.getvalue().splitlines()]
    assert replies[0]["id"] == 41
    assert replies[0]["error"]["code"] == -32600
    assert replies[1] == {"jsonrpc": "2.0", "id": 42, "result": {}}
