"""A hand-written stdio MCP server for what an SDK server will not do on purpose.

``python raw_server.py MODE``: ``flood`` answers tools/call with one line of
8 MiB and no end; ``bad-schema`` lists one tool whose input schema is not an
object beside one good tool; ``slow-start`` sleeps before it reads anything.
"""

from __future__ import annotations

import json
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""

TOOLS = [{"name": "ping", "description": "Answer pong.", "inputSchema": {"type": "object"}}]
if MODE == "bad-schema":
    TOOLS.append({"name": "broken", "inputSchema": {"type": "string"}})
    TOOLS.append({"name": "weird name!", "inputSchema": {"type": "object"}})


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if MODE == "slow-start":
    time.sleep(30)

for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        continue
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {
                    "protocolVersion": request["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call" and MODE == "flood":
        sys.stdout.write("x" * (8 * 1024 * 1024))
        sys.stdout.flush()
        time.sleep(60)
    elif method == "tools/call":
        content = [{"type": "text", "text": "pong"}]
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": content}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
