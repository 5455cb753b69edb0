"""The role table: depth 1 by construction, pinned against ax-policy's fact table."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import pytest

from ax_agent.delegation import roles
from ax_agent.delegation.roles import PARENT_ONLY_TOOLS, ROLES, check_table, registry_for
from ax_agent.tools.registry import all_tools
from ax_policy import DELEGATE_ROLES


def test_every_role_holds_a_strict_subset_of_the_parents_tools_and_no_parent_only_tool() -> None:
    parent = {tool.name: tool for tool in all_tools()}
    assert PARENT_ONLY_TOOLS & set(parent) >= {"delegate_task", "plan_write", "browser_flow"}
    for role in ROLES.values():
        tools = registry_for(role, parent)
        assert set(tools) < set(parent)
        assert not set(tools) & PARENT_ONLY_TOOLS
        assert all(tools[name] is parent[name] for name in tools)


def test_a_parent_only_tool_in_the_parents_registry_never_reaches_a_child() -> None:
    parent = {tool.name: tool for tool in all_tools()}
    sneaky = replace(ROLES["executor"], tools=(*ROLES["executor"].tools, "delegate_task"))
    assert "delegate_task" not in registry_for(sneaky, parent)
    flows = replace(ROLES["executor"], tools=(*ROLES["executor"].tools, "browser_flow"))
    assert "browser_flow" not in registry_for(flows, parent)


def test_the_parent_never_holds_a_researchers_page_tools_and_a_researcher_only_reads() -> None:
    from ax_agent.tools.registry import CHILD_ONLY, child_only_tools, every_tool

    parent = {tool.name: tool for tool in all_tools()}
    assert "web_search" in parent
    assert not {"web_extract", "record_source"} & set(parent)
    assert set(child_only_tools()) == CHILD_ONLY == {"web_extract", "record_source"}
    researcher = registry_for(ROLES["researcher"], {**parent, **child_only_tools()})
    assert {"web_search", "web_extract", "record_source"} <= set(researcher)
    # Nothing a researcher holds writes, runs a command or a check, or delegates.
    facts = {tool.name: tool.facts for tool in every_tool()}
    for name in researcher:
        kinds = set(facts[name].declared_kinds())
        assert not kinds & {"writes", "deletes", "command", "check", "setup", "checkpoint"}, name
        assert "delegates" not in kinds, name
    # Only the researcher's registry names the child-only tools.
    for role in ROLES.values():
        if role.name != "researcher":
            assert not CHILD_ONLY & set(role.tools), role.name


def test_the_table_matches_the_policys_fact_table() -> None:
    check_table(DELEGATE_ROLES)
    assert set(ROLES) == set(DELEGATE_ROLES)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda t: {**t, "spy": "read-only"}, "'spy' is missing from the role table"),
        (lambda t: {k: v for k, v in t.items() if k != "inspector"}, "'inspector' is missing"),
        (lambda t: {**t, "explorer": "mutating"}, "explorer: the policy says 'mutating'"),
    ],
)
def test_a_table_that_disagrees_with_the_policy_refuses_to_load(
    change: Callable[[dict[str, str]], dict[str, str]], problem: str
) -> None:
    with pytest.raises(RuntimeError, match=problem):
        check_table(change(dict(DELEGATE_ROLES)))


def test_a_read_only_role_holding_a_writer_refuses_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = replace(ROLES["reviewer"], tools=(*ROLES["reviewer"].tools, "write_file"))
    monkeypatch.setitem(roles.ROLES, "reviewer", bad)
    with pytest.raises(RuntimeError, match="reviewer is read-only but holds write_file"):
        check_table(DELEGATE_ROLES)


def test_a_role_holding_a_parent_only_tool_refuses_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = replace(ROLES["executor"], tools=(*ROLES["executor"].tools, "apply_task_changes"))
    monkeypatch.setitem(roles.ROLES, "executor", bad)
    with pytest.raises(RuntimeError, match="executor holds parent-only tool"):
        check_table(DELEGATE_ROLES)


@pytest.mark.parametrize(
    ("task", "problem"),
    [
        ({"role": "explorer", "prompt": "x"}, "exactly one of task_id"),
        ({"role": "explorer", "prompt": "x", "task_id": "a", "label": "b"}, "exactly one of"),
        ({"role": "executor", "prompt": "x", "task_id": "\x1b[31m"}, "is no plan task id"),
        ({"role": "executor", "prompt": "x", "label": "../up"}, "is not a slug"),
        ({"role": "boss", "prompt": "x", "label": "a"}, "role"),
        ({"role": "explorer", "prompt": "", "label": "a"}, "prompt"),
    ],
)
def test_a_task_the_call_cannot_name_safely_is_refused_as_input(
    task: dict[str, str], problem: str
) -> None:
    from pydantic import ValidationError

    from ax_agent.tools.delegate_task import DelegateInput

    with pytest.raises(ValidationError, match=re.escape(problem)):
        DelegateInput.model_validate({"tasks": [task]})


def test_a_group_holds_one_to_three_tasks_with_distinct_labels() -> None:
    from pydantic import ValidationError

    from ax_agent.tools.delegate_task import MAX_GROUP_TASKS, DelegateInput

    one = {"role": "explorer", "prompt": "x"}
    with pytest.raises(ValidationError):
        DelegateInput.model_validate({"tasks": []})
    with pytest.raises(ValidationError):
        DelegateInput.model_validate(
            {"tasks": [{**one, "label": f"t{n}"} for n in range(MAX_GROUP_TASKS + 1)]}
        )
    with pytest.raises(ValidationError, match="same label"):
        DelegateInput.model_validate({"tasks": [{**one, "label": "a"}, {**one, "label": "a"}]})
