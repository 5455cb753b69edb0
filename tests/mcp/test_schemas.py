"""Every schema ax-mcp publishes describes every property and carries no generated title.

A model choosing a tool and filling its arguments reads these schemas: a property
without a description is a guess, and pydantic's titles ("External Session Id") are
tokens that say nothing. The schemas are read from the installed ax-mcp through a real
initialize + tools/list exchange, as a client sees them.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from axtest import tool_path

from libcommon import jsonio

TOOLS = [
    "slate_open",
    "slate_write_seed",
    "slate_close",
    "check_detect",
    "check_run",
    "policy_review_command",
    "policy_check_path",
    "workspace_map",
    "retrieve",
]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    workspace = tmp_path_factory.mktemp("ws")
    state = tmp_path_factory.mktemp("state")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.run(
        [tool_path("mcp"), "-C", str(workspace)],
        input=b"".join(jsonio.dumps(message) + b"\n" for message in messages),
        capture_output=True,
        timeout=60,
        env={"AX_STATE_DIR": str(state), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr.decode()
    replies = [jsonio.loads(line) for line in proc.stdout.splitlines()]
    listed = next(reply for reply in replies if reply.get("id") == 2)["result"]["tools"]
    return {tool["name"]: tool for tool in listed}


def problems(schema: Any, where: str) -> list[str]:
    """Every title key and every undescribed property in a JSON Schema, walked by keyword."""
    found: list[str] = []
    if isinstance(schema, list):
        for number, item in enumerate(schema):
            found += problems(item, f"{where}[{number}]")
        return found
    if not isinstance(schema, dict):
        return found
    if "title" in schema:
        found.append(f"{where}: title {schema['title']!r}")
    for name, sub in schema.get("properties", {}).items():
        if not (isinstance(sub, dict) and str(sub.get("description", "")).strip()):
            found.append(f"{where}.{name}: no description")
        found += problems(sub, f"{where}.{name}")
    for name, sub in schema.get("$defs", {}).items():
        found += problems(sub, f"{where}.$defs.{name}")
    for keyword in ("anyOf", "oneOf", "allOf", "prefixItems", "items", "additionalProperties"):
        if keyword in schema:
            found += problems(schema[keyword], f"{where}.{keyword}")
    return found


def test_the_list_is_every_tool(published: dict[str, dict[str, Any]]) -> None:
    assert sorted(published) == sorted(TOOLS)


@pytest.mark.parametrize(
    ("tool", "which"),
    [(name, which) for name in TOOLS for which in ("inputSchema", "outputSchema")],
)
def test_every_property_is_described_and_no_title_remains(
    published: dict[str, dict[str, Any]], tool: str, which: str
) -> None:
    assert problems(published[tool][which], f"{tool}.{which}") == []


def test_the_tool_itself_keeps_its_title(published: dict[str, dict[str, Any]]) -> None:
    # MCP's Tool.title is a display name, not a schema title.
    assert all(tool["title"] == name for name, tool in published.items())


def test_a_described_schema_still_validates_what_the_tool_accepts(
    published: dict[str, dict[str, Any]],
) -> None:
    import jsonschema

    schema = published["slate_write_seed"]["inputSchema"]
    jsonschema.validate({"externalSessionId": "e", "text": "t", "kind": "risk"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"externalSessionId": "e", "text": "t", "kind": "nope"}, schema)
