"""An enum or literal field refuses a value by naming the field, the value and what it allows.

The formatter is libcommon's one (``describe_problem``); these tests reach it through
several tools' real front doors, so a tool that formats pydantic errors its own way
shows up here.
"""

from __future__ import annotations

import enum
import io
from pathlib import Path
from typing import Any, Literal

import pytest
from axtest import PLANTED_SECRETS, CliRunner
from pydantic import BaseModel, ConfigDict, ValidationError

from libcommon.cliapp import REFUSED_VALUE_MAX_CHARS, describe_problem, describe_validation_error

SEED_KINDS = "'decision', 'wiki-update', 'memory-entry', 'follow-up', 'contract-change' or 'risk'"


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Demo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED
    version: Literal[1] = 1


def problem_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Demo.model_validate(data)
    return describe_validation_error(caught.value, "request")


def test_a_literal_names_the_field_the_value_and_the_choices() -> None:
    expected = "request field 'kind': 'c' is not allowed; expected 'a' or 'b'"
    assert problem_of({"kind": "c"}) == expected
    assert problem_of({"version": 2}) == "request field 'version': 2 is not allowed; expected 1"


def test_an_enum_names_the_field_the_value_and_the_choices() -> None:
    text = problem_of({"colour": "green"})
    assert text == "request field 'colour': 'green' is not allowed; expected 'red' or 'blue'"


def test_a_value_that_is_not_a_string_is_shown_as_its_repr() -> None:
    assert "None is not allowed" in problem_of({"kind": None})
    assert "['a'] is not allowed" in problem_of({"kind": ["a"]})


def test_a_long_value_is_clipped_to_the_cap() -> None:
    text = problem_of({"kind": "x" * 10_000})
    echoed = text.split(": ", 1)[1].split(" is not allowed")[0]
    assert len(echoed) == REFUSED_VALUE_MAX_CHARS
    assert echoed.startswith("'xxx") and echoed.endswith("…")


def test_a_secret_shaped_value_is_redacted_before_it_is_clipped() -> None:
    secret = PLANTED_SECRETS["anthropic"]
    text = problem_of({"kind": secret})
    assert secret[:24] not in text
    assert "REDACTED" in text
    # Placed so that clipping first would keep a stub too short to look like a key.
    padded = "w" * 60 + " " + secret
    text = problem_of({"kind": padded})
    assert "sk-ant-" not in text


def test_other_problems_keep_pydantic_s_message() -> None:
    with pytest.raises(ValidationError) as caught:
        Demo.model_validate({"junk": 1})
    assert describe_problem(caught.value.errors()[0]) == "unknown field"
    with pytest.raises(ValidationError) as caught:
        Demo.model_validate({"kind": "a", "version": "one"})
    assert describe_problem(caught.value.errors()[0]) == "'one' is not allowed; expected 1"


# ---- through the tools' own front doors -------------------------------------------


def test_ax_slate_write_seed(run_cli: CliRunner, workspace: Path) -> None:
    from ax_slate.cli import main

    opened = run_cli(main, ["open", "-C", str(workspace)], '{"externalSessionId": "e1"}')
    assert opened.exit_code == 0, opened.stderr
    request = '{"externalSessionId": "e1", "text": "t", "kind": "not-a-real-kind"}'
    result = run_cli(main, ["write-seed", "-C", str(workspace)], request)
    assert result.exit_code == 2
    assert (
        f"request field 'kind': 'not-a-real-kind' is not allowed; expected {SEED_KINDS}"
        in result.stderr
    )


def test_ax_policy_decide(run_cli: CliRunner, workspace: Path) -> None:
    from ax_policy.cli import main

    request = (
        '{"tool": "read_file", "facts": {"reads": ["a"]}, '
        '"sessionGrants": [{"tool": "x", "class": "everything"}]}'
    )
    result = run_cli(main, ["decide", "-C", str(workspace)], request)
    assert result.exit_code == 2
    assert (
        "request field 'sessionGrants.0.class': 'everything' is not allowed; "
        "expected 'sensitive' or 'external'" in result.stderr
    )


@pytest.mark.parametrize("how", ["flag", "request"])
def test_ax_exec_sandbox_profile(run_cli: CliRunner, workspace: Path, how: str) -> None:
    from ax_exec.cli import main

    if how == "flag":
        result = run_cli(main, ["run", "--sandbox", "strict", "--", "true"])
        field = "--sandbox"
    else:
        result = run_cli(main, ["run", "--request"], '{"argv": ["true"], "sandbox": "strict"}')
        field = "request field 'sandbox'"
    assert result.exit_code == 2
    expected = "'none', 'read-only' or 'workspace-write'"
    assert f"{field}: 'strict' is not allowed; expected {expected}" in result.stderr


def test_ax_log_append(run_cli: CliRunner, workspace: Path) -> None:
    from ax_log.cli import main

    event = (
        '{"type": "command.ended", "callId": "c1", "termination": "vanished", '
        '"exitCode": null, "durationMs": 1}'
    )
    result = run_cli(main, ["append", "--session", "s1", "-C", str(workspace)], event)
    assert result.exit_code == 2
    assert "field 'termination': 'vanished' is not allowed; expected 'exited'" in result.stderr


def test_ax_check_kind_through_ax_mcp(workspace: Path) -> None:
    from ax_mcp.catalog import build_tools
    from ax_mcp.server import run_tool
    from libcommon.paths import state_layout

    tools = {tool.name: tool for tool in build_tools(state_layout(workspace), {})}
    answer = run_tool(tools["check_run"], {"kind": "tests"}, io.StringIO())
    assert answer["isError"] is True
    text = answer["content"][0]["text"]
    assert "argument field 'kind': 'tests' is not allowed; expected 'build', 'test'," in text


def test_the_ax_agent_run_check_kind() -> None:
    from ax_agent.calls import parse_input
    from ax_agent.tools.registry import get_tool

    tool = get_tool("run_check")
    assert tool is not None
    parsed = parse_input(tool.input_model, {"kind": "unit-tests"})
    assert parsed.problem is not None
    assert "input field 'kind': 'unit-tests' is not allowed; expected 'build'" in parsed.problem
