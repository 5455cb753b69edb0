"""The registry and the JSON Schemas the model sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from ax_agent.tools.registry import all_tools, every_tool, get_tool

NAMES = [
    "read_file",
    "view_image",
    "list_dir",
    "glob",
    "grep",
    "retrieve",
    "write_file",
    "edit_file",
    "run_command",
    "run_check",
    "browser_flow",
    "project_setup",
    "slate_note",
    "recall_step",
    "slate_trail",
    "history_search",
    "propose_lesson",
    "git_status",
    "git_checkpoint",
    "plan_write",
    "delegate_task",
    "apply_task_changes",
    "report_finding",
    "triage_finding",
    "web_search",
    "read_document",
    "render_document",
    "inspect_pages",
    "thread",
    "threads",
    "episode",
]
# Registered, and held only by a delegated role's registry (registry.CHILD_ONLY).
CHILD_ONLY_NAMES = ["web_extract", "record_source"]


DOCS = Path(__file__).resolve().parents[3] / "docs" / "ax-agent-tools.md"
COUNT_WORDS = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three", "twenty-four",
    "twenty-five", "twenty-six", "twenty-seven", "twenty-eight", "twenty-nine", "thirty",
    "thirty-one", "thirty-two", "thirty-three", "thirty-four", "thirty-five",
]  # fmt: skip


def test_the_tools_page_counts_and_names_every_tool() -> None:
    # Branches that each add a tool merge into a page whose count must still be true.
    text = DOCS.read_text()
    first = text.split("\n\n")[1]
    count = len(every_tool())
    assert count == len(NAMES) + len(CHILD_ONLY_NAMES)
    assert first.startswith(f"The {COUNT_WORDS[count]} tools "), first[:40]
    for name in [*NAMES, *CHILD_ONLY_NAMES]:
        assert f"`{name}`" in text, name


def test_stable_order_and_lookup() -> None:
    assert [tool.name for tool in all_tools()] == NAMES
    assert [tool.name for tool in all_tools()] == NAMES
    listed = all_tools()
    listed.clear()
    assert len(all_tools()) == len(NAMES)
    grep = get_tool("grep")
    assert grep is not None and grep.name == "grep"
    assert get_tool("Grep") is None
    assert get_tool("bash") is None


@pytest.mark.parametrize("name", [*NAMES, *CHILD_ONLY_NAMES])
def test_schema_is_flat_and_described(name: str) -> None:
    tool = get_tool(name)
    assert tool is not None
    assert tool.facts.name == name
    assert len(tool.description) > 40
    schema = tool.schema()
    assert schema.name == name
    body = schema.input_schema
    text = json.dumps(body)
    assert "$ref" not in text and "$defs" not in text
    assert "anyOf" not in text
    assert body["type"] == "object"
    assert body["additionalProperties"] is False
    # pydantic's generated titles restate the names; the model is sent descriptions only.
    assert "title" not in body
    for field, spec in body["properties"].items():
        assert field == field.lower(), f"{name}.{field} is not snake_case"
        assert spec.get("description"), f"{name}.{field} has no description"
        assert "title" not in spec, f"{name}.{field} has a title"
        assert "title" not in spec.get("items", {}), f"{name}.{field} items have a title"


def test_inputs_refuse_unknown_and_camel_case_names() -> None:
    edit = get_tool("edit_file")
    assert edit is not None
    with pytest.raises(ValidationError, match="oldString"):
        edit.input_model.model_validate({"path": "a", "oldString": "x", "new_string": "y"})
    read = get_tool("read_file")
    assert read is not None
    with pytest.raises(ValidationError, match="limit"):
        read.input_model.model_validate({"path": "a", "limit": 0})


def test_parent_only_names_registered_tools() -> None:
    from ax_agent.tools.registry import PARENT_ONLY

    assert set(NAMES) >= PARENT_ONLY
    assert "project_setup" in PARENT_ONLY
