"""Raw bytes into the installed ax-mcp: stdout carries only protocol messages."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from axtest import tool_path

from libcommon import jsonio


def exchange(workspace: Path, payload: bytes) -> tuple[list[dict[str, Any]], str, int]:
    proc = subprocess.run(
        [tool_path("mcp"), "-C", str(workspace)],
        input=payload,
        capture_output=True,
        timeout=60,
    )
    lines = proc.stdout.decode().splitlines()
    return [jsonio.loads(line) for line in lines], proc.stderr.decode(), proc.returncode


def msg(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return jsonio.dumps(body) + b"\n"


INIT = msg(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})


def test_refusals_before_and_after_initialize(workspace: Path) -> None:
    payload = (
        msg(0, "tools/list")
        + INIT
        + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + b"this is not json\n"
        + msg(2, "prompts/list")
        + msg(3, "tools/call", {"name": "slate_open", "arguments": {"anchors": {}}})
        + msg(4, "ping")
    )
    replies, stderr, code = exchange(workspace, payload)
    assert code == 0
    assert "Traceback" not in stderr
    assert [r.get("id") for r in replies] == [0, 1, None, 2, 3, 4]
    assert replies[0]["error"]["code"] == -32600
    assert replies[1]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[2]["error"]["code"] == -32700
    assert replies[3]["error"]["code"] == -32601
    assert replies[4]["result"]["isError"] is True
    assert "externalSessionId" in replies[4]["result"]["content"][0]["text"]
    assert replies[5]["result"] == {}


def test_stdin_closed_mid_request_still_flushes_finished_replies(workspace: Path) -> None:
    payload = INIT + msg(2, "tools/list") + b'{"jsonrpc":"2.0","id":3,"method":"tools/ca'
    replies, stderr, code = exchange(workspace, payload)
    assert code == 0
    assert "Traceback" not in stderr
    assert [r.get("id") for r in replies] == [1, 2, None]
    assert len(replies[1]["result"]["tools"]) >= 5
    assert replies[2]["error"]["code"] == -32700


def test_an_oversized_message_does_not_stop_the_server(workspace: Path) -> None:
    from ax_mcp.jsonrpc import MAX_MESSAGE_BYTES

    huge = b'{"jsonrpc":"2.0","id":2,"method":"ping","x":"' + b"a" * MAX_MESSAGE_BYTES + b'"}\n'
    replies, _, code = exchange(workspace, INIT + huge + msg(3, "ping"))
    assert code == 0
    assert replies[1]["error"]["code"] == -32600
    assert replies[2] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_check_path_of_an_unresolvable_path_is_an_answer_not_a_failure(workspace: Path) -> None:
    # ENAMETOOLONG, and EACCES where /proc/1/root is closed to us: the path is not
    # valid, said as facts, never "failed unexpectedly".
    paths = ["a" * 300, "d" * 256 + "/x.txt"]
    try:
        os.readlink("/proc/1/root")
    except PermissionError:
        paths.append("/proc/1/root/etc/passwd")
    calls = b"".join(
        msg(10 + index, "tools/call", {"name": "policy_check_path", "arguments": {"path": raw}})
        for index, raw in enumerate(paths)
    )
    replies, stderr, code = exchange(workspace, INIT + calls)
    assert code == 0 and "Traceback" not in stderr
    for reply in replies[1:]:
        result = reply["result"]
        assert result["isError"] is False, result
        facts = result["structuredContent"]
        assert facts["valid"] is False and facts["ok"] is False
        assert facts["invalidReason"].startswith("it cannot be resolved: ")
    assert len(replies) == 1 + len(paths)


def test_an_oversized_request_is_answered_with_its_id_wherever_it_is(workspace: Path) -> None:
    from ax_mcp.jsonrpc import MAX_MESSAGE_BYTES

    pad = b"a" * (3 * MAX_MESSAGE_BYTES)
    # Python's SDK writes the id first; the TypeScript SDK writes it after the params.
    first = b'{"jsonrpc":"2.0","id":"py-1","method":"tools/call","params":{"x":"' + pad + b'"}}\n'
    last = (
        b'{"method":"tools/call","params":{"x":"' + pad + b'","id":"no"},"jsonrpc":"2.0","id":7}\n'
    )
    replies, stderr, code = exchange(workspace, INIT + first + last + msg(8, "ping"))
    assert code == 0
    assert "Traceback" not in stderr
    assert [r.get("id") for r in replies] == [1, "py-1", 7, 8]
    assert replies[1]["error"] == replies[2]["error"]
    assert replies[1]["error"] == {
        "code": -32600,
        "message": f"message larger than {MAX_MESSAGE_BYTES} bytes",
    }
