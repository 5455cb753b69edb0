"""The OpenAI Responses API's stream, as a fake server (fakes.FakeServer) sends it.

Each event is ``event: <type>`` plus a ``data:`` line carrying the same type,
numbered by ``sequence_number`` as OpenAI numbers them.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from agent.providers.fakes import Reply

MODEL = "gpt-5-2025-08-07"
ENCRYPTED = "gAAAAABo" + "Zm9vYmFy" * 40 + "-sk-_AAAAAAAAAAAAAAAAAAAAAAAAA=="


def event(kind: str, **fields: Any) -> bytes:
    data = {"type": kind, **fields}
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def reasoning_item(item_id: str = "rs_1", encrypted: str = ENCRYPTED) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": [],
        "encrypted_content": encrypted,
    }


def message_item(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(call_id: str, name: str, arguments: str, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def response_body(
    output: list[dict[str, Any]], status: str = "completed", **extra: Any
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": MODEL,
        "output": output,
        "usage": {
            "input_tokens": 30,
            "input_tokens_details": {"cached_tokens": 10},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 35,
        },
        **extra,
    }


def stream(
    output: list[dict[str, Any]],
    *,
    text_deltas: dict[int, list[str]] | None = None,
    terminal: str | None = "response.completed",
    terminal_output: list[dict[str, Any]] | None = None,
    **terminal_extra: Any,
) -> list[bytes]:
    """The events of one response: each item added, its deltas, done; then the terminal."""
    numbers = itertools.count()
    events = [
        event(
            "response.created",
            sequence_number=next(numbers),
            response=response_body([], "in_progress"),
        )
    ]
    for index, item in enumerate(output):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        if item["type"] == "function_call":
            added["arguments"] = ""
        events.append(
            event(
                "response.output_item.added",
                sequence_number=next(numbers),
                output_index=index,
                item=added,
            )
        )
        if item["type"] == "message":
            pieces = (text_deltas or {}).get(index) or [item["content"][0]["text"]]
            events.extend(
                event(
                    "response.output_text.delta",
                    sequence_number=next(numbers),
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
                for piece in pieces
            )
        if item["type"] == "function_call":
            events.append(
                event(
                    "response.function_call_arguments.delta",
                    sequence_number=next(numbers),
                    item_id=item["id"],
                    output_index=index,
                    delta=item["arguments"],
                )
            )
        events.append(
            event(
                "response.output_item.done",
                sequence_number=next(numbers),
                output_index=index,
                item=item,
            )
        )
    if terminal is not None:
        final = output if terminal_output is None else terminal_output
        status = {"response.completed": "completed", "response.incomplete": "incomplete"}.get(
            terminal, "failed"
        )
        events.append(
            event(
                terminal,
                sequence_number=next(numbers),
                response=response_body(final, status, **terminal_extra),
            )
        )
    return events


def text_reply(text: str, *, reasoning: dict[str, Any] | None = None) -> Reply:
    output = ([reasoning] if reasoning else []) + [message_item(text)]
    return Reply(chunks=stream(output))


def responses_error(status: int, message: str, **headers: str) -> Reply:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return Reply(status, headers=headers, chunks=[json.dumps(body).encode()])
