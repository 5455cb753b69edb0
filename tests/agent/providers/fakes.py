"""Fake model servers on loopback, speaking the Anthropic and OpenAI wire formats.

Each test plans the replies (status, headers, the exact bytes of each streamed
chunk, a cut or a hang) and reads back every request the server received.
Real sockets, real HTTP/1.1 chunked streaming, the real SDK and httpx clients.
The ``server`` fixture (conftest.py) starts one per test.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Long enough for any test, short enough that a forgotten hang cannot stall the suite.
HANG_LIMIT_S = 10.0


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # Each item is written and flushed as its own HTTP chunk.
    chunks: list[bytes] = field(default_factory=list)
    # After the chunks: close the socket without ending the body (a cut transfer).
    cut: bool = False
    # After the chunks: send nothing more until the test ends.
    hang: bool = False


@dataclass
class Captured:
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """``tls``: serve HTTPS with this context (the url then names ``localhost``)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Captured] = []
        self.release = threading.Event()
        self.hung = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self.httpd.daemon_threads = True
        self.tls = tls is not None
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        if self.tls:
            return f"https://localhost:{self.httpd.server_address[1]}"
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def plan(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            server.requests.append(
                Captured(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
            )
            reply = (
                server.replies.pop(0)
                if server.replies
                else Reply(500, chunks=[b'{"error": {"message": "no reply planned"}}'])
            )
            self.send_response(reply.status)
            content_type = "text/event-stream" if reply.status == 200 else "application/json"
            self.send_header("content-type", content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                self._send_body(reply)
            except (BrokenPipeError, ConnectionResetError):
                # The client hung up (an abort): that is its right.
                self.close_connection = True

        def _send_body(self, reply: Reply) -> None:
            for chunk in reply.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if reply.hang:
                server.hung.set()
                server.release.wait(HANG_LIMIT_S)
            if reply.cut or reply.hang:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


# --- Anthropic Messages API stream -----------------------------------------------------------


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def message_start(model: str = "claude-fake", **usage: int) -> bytes:
    counts = {
        "input_tokens": 0,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    counts.update(usage)
    return sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": counts,
            },
        },
    )


def text_block(index: int, pieces: list[str]) -> list[bytes]:
    return [
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        *(
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in pieces
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def tool_block(index: int, tool_id: str, name: str, json_pieces: list[str]) -> list[bytes]:
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
    }
    return [
        sse("content_block_start", start),
        *(
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                },
            )
            for p in json_pieces
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def message_end(stop_reason: str = "end_turn", output_tokens: int = 7) -> list[bytes]:
    return [
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]


def anthropic_text_reply(pieces: list[str], stop_reason: str = "end_turn") -> Reply:
    return Reply(chunks=[message_start(), *text_block(0, pieces), *message_end(stop_reason)])


def anthropic_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Reply(status, headers=headers, chunks=[json.dumps(body).encode()])


# --- OpenAI Chat Completions stream ----------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": "local-fake",
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


def openai_text_reply(pieces: list[str], finish: str = "stop") -> Reply:
    return Reply(
        chunks=[
            chunk({"role": "assistant", "content": ""}),
            *(chunk({"content": p}) for p in pieces),
            chunk({}, finish),
            chunk(None, usage={"prompt_tokens": 12, "completion_tokens": 4}),
            DONE,
        ]
    )


def openai_error(status: int, message: str, **headers: str) -> Reply:
    body = {"error": {"message": message, "type": "server_error"}}
    return Reply(status, headers=headers, chunks=[json.dumps(body).encode()])
