"""The MCP methods: initialize, ping, tools/list and tools/call, over jsonrpc.py.

Messages are handled one at a time, in order, and every reply is flushed as
soon as it exists. Nothing a client sends escapes as an exception: a broken
message gets a JSON-RPC error, a failing tool gets ``isError: true``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from ax_mcp import jsonrpc
from libcommon import __version__, jsonio
from libcommon.cliapp import describe_validation_error
from libcommon.contracts import published_schema
from libcommon.errors import AxError

# Newest first; an unknown offer is answered with the newest.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_NAME = "ax-mcp"
INSTRUCTIONS = (
    "ax gives you a private slate (slate_open, slate_write_seed, slate_close) whose seeds "
    "reach the project only through a human review, typed checks resolved from the "
    "project's own manifests (check_detect, check_run), ax's command review and path "
    "facts (policy_review_command, policy_check_path), and a ranked map of the workspace "
    "with a search over it (workspace_map, retrieve)."
)


@dataclass(frozen=True)
class Tool:
    """One model-facing tool: its contract is its two pydantic models."""

    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    handler: Callable[[Any], BaseModel]
    read_only: bool
    title: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title or self.name,
            "description": self.description,
            "inputSchema": published_schema(self.input_model),
            "outputSchema": published_schema(self.output_model, mode="serialization"),
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "openWorldHint": False,
            },
        }


class Server:
    def __init__(self, tools: list[Tool], log: IO[str] | None = None) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.initialized = False
        self.protocol_version: str | None = None
        self.log = log or sys.stderr

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Answer every message until stdin closes."""
        for line in jsonrpc.read_lines(stdin):
            reply = self.handle_line(line)
            if reply is not None:
                jsonrpc.write(stdout, reply)

    def handle_line(self, line: bytes | jsonrpc.Oversized) -> dict[str, Any] | None:
        decoded = jsonrpc.decode(line)
        if decoded is None:
            return None
        if isinstance(decoded, jsonrpc.Malformed):
            if decoded.code == 0:
                return None
            return jsonrpc.error(decoded.id, decoded.code, decoded.message)
        try:
            return self.handle(decoded)
        except Exception as exc:  # a bug in a handler must not take the server down
            self.log.write(traceback.format_exc())
            if decoded.is_notification:
                return None
            return jsonrpc.error(decoded.id, jsonrpc.INTERNAL_ERROR, f"internal error: {exc}")

    def handle(self, message: jsonrpc.Message) -> dict[str, Any] | None:
        if message.is_notification:
            # notifications/initialized, notifications/cancelled, …: nothing to answer.
            return None
        if message.method == "ping":
            return jsonrpc.result(message.id, {})
        if message.method == "initialize":
            return jsonrpc.result(message.id, self.initialize(message.params))
        if not self.initialized:
            return jsonrpc.error(
                message.id,
                jsonrpc.INVALID_REQUEST,
                f"server not initialized: send initialize before {message.method}",
            )
        if message.method == "tools/list":
            return jsonrpc.result(
                message.id, {"tools": [tool.describe() for tool in self.tools.values()]}
            )
        if message.method == "tools/call":
            return self.call(message)
        return jsonrpc.error(
            message.id, jsonrpc.METHOD_NOT_FOUND, f"method not found: {message.method}"
        )

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        offered = params.get("protocolVersion")
        self.protocol_version = offered if offered in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
        self.initialized = True
        return {
            "protocolVersion": self.protocol_version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def call(self, message: jsonrpc.Message) -> dict[str, Any]:
        name = message.params.get("name")
        arguments = message.params.get("arguments", {})
        if not isinstance(name, str):
            return jsonrpc.error(message.id, jsonrpc.INVALID_PARAMS, 'tools/call needs a "name"')
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return jsonrpc.error(
                message.id, jsonrpc.INVALID_PARAMS, f"unknown tool {name!r}; tools: {known}"
            )
        if not isinstance(arguments, dict):
            return jsonrpc.error(
                message.id, jsonrpc.INVALID_PARAMS, '"arguments" must be an object'
            )
        return jsonrpc.result(message.id, run_tool(tool, arguments, self.log))


def run_tool(tool: Tool, arguments: dict[str, Any], log: IO[str]) -> dict[str, Any]:
    """A tools/call result: structured content and its text copy, or ``isError``."""
    try:
        request = tool.input_model.model_validate(arguments)
    except ValidationError as exc:
        # Per the 2025-11-25 spec, bad arguments are a tool error the model can fix.
        return failure(describe_validation_error(exc, "argument"))
    try:
        outcome = tool.handler(request)
    except AxError as exc:
        return failure(exc.message + (f" ({exc.hint})" if exc.hint else ""))
    except Exception as exc:
        log.write(traceback.format_exc())
        return failure(f"{tool.name} failed unexpectedly: {exc}")
    structured = outcome.model_dump(mode="json", by_alias=True)
    return {
        "content": [{"type": "text", "text": jsonio.dumps(structured).decode()}],
        "structuredContent": structured,
        "isError": False,
    }


def failure(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
