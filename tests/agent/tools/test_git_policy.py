"""No git mutation reaches the model by falling through to an allow.

ax-policy cannot see what a tool's ``run`` does, only the facts it declares. A tool that
declares nothing is denied; one that declares ``internal`` is allowed (the engine cannot
check that claim). So the guard has two halves, both pinned here: the engine denies
every shape a git-mutating tool could take short of lying, and the registry refuses
the lie: a registered tool whose code reaches the git runner must declare a
``git_read`` fact (which the engine proves a read) and cannot claim ``internal``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_architecture import ROOT, module_files, read_imports

from ax_agent.seam import VERBS
from ax_agent.tools.registry import all_tools
from ax_policy import (
    DecisionContext,
    DecisionRequest,
    GitReadFact,
    SessionGrants,
    ToolFacts,
    decide,
    decide_request,
)
from ax_policy.grants import Grants

# Modules whose import means "this code runs git".
GIT_RUNNERS = {"libcommon.git", "ax_agent.git.repo"}


@pytest.fixture
def ctx(workspace: Path) -> DecisionContext:
    return DecisionContext(workspace=workspace)


def test_a_git_tool_with_no_command_writes_or_reads_is_denied_not_observed(
    ctx: DecisionContext, workspace: Path
) -> None:
    # The reference engine allowed this shape as "observe"; here it is a deny.
    bare = decide(ToolFacts("git_commit"), {"message": "x"}, ctx)
    assert (bare.verdict, bare.rule) == ("deny", "no-facts")
    # The same through the JSON request, with a session grant that must not matter.
    request = DecisionRequest.model_validate(
        {
            "tool": "git_commit",
            "facts": {},
            "sessionGrants": [{"tool": "git_commit", "class": "external"}],
        }
    )
    assert decide_request(request, workspace).verdict == "deny"


@pytest.mark.parametrize(
    "argv",
    [
        ["commit", "-m", "x"],
        ["push", "origin", "HEAD"],
        ["branch", "-D", "main"],
        ["stash", "drop"],
        ["reset", "--hard", "HEAD"],
        ["update-ref", "refs/heads/main", "HEAD"],
        ["log", "--output=/tmp/x", "HEAD"],
        ["log", "-c", "core.hooksPath=x"],
        ["status", "--porcelain=v2", "--untracked-cache"],
        ["log", "HEAD..refs/heads/x"],
        ["log", "origin/main"],
        ["config", "--get", "user.name"],
        [],
    ],
)
def test_a_git_read_fact_naming_anything_but_a_proven_read_denies(
    ctx: DecisionContext, argv: list[str]
) -> None:
    # GitReadFact refuses an empty argv itself; the engine's answer to that is fact-error.
    tool = ToolFacts("git_x", git_read=lambda _i: {"commands": [["status"], argv]})
    decision = decide(tool, {}, ctx)
    assert decision.verdict == "deny"
    assert decision.rule in ("git-read-unproven", "fact-error")
    assert not decision.grantable


def test_a_proven_read_is_observe_and_names_its_argv(ctx: DecisionContext) -> None:
    fact = GitReadFact(commands=[["log", "-z", "--max-count=3", "--format=%h", "HEAD"]])
    decision = decide(ToolFacts("git_x", git_read=lambda _i: fact), {}, ctx)
    assert (decision.verdict, decision.decision_class, decision.rule) == (
        "allow",
        "observe",
        "git-read",
    )
    assert "git log -z --max-count=3 --format=%h HEAD" in decision.reason


@pytest.mark.parametrize(
    "other",
    [
        {"internal": True},
        {"reads": lambda _i: ["."]},
        {"writes": lambda _i: [".git/HEAD"]},
        {"external": lambda _i: {"host": "example.com"}},
    ],
)
def test_a_git_read_beside_any_other_fact_conflicts(
    ctx: DecisionContext, other: dict[str, Any]
) -> None:
    fact = GitReadFact(commands=[["status", "-z"]])
    decision = decide(ToolFacts("git_x", git_read=lambda _i: fact, **other), {}, ctx)
    assert (decision.verdict, decision.rule) == ("deny", "conflicting-facts")


def test_internal_is_an_unchecked_claim_so_the_registry_guards_it(ctx: DecisionContext) -> None:
    # Pinned as it is: the engine allows whatever says it touches only ax's own state.
    # A git tool saying so would commit unasked; the registry test below is the guard.
    decision = decide(ToolFacts("git_commit", internal=True), {}, ctx)
    assert (decision.verdict, decision.rule) == ("allow", "internal")
    grants = Grants(session=SessionGrants([]))
    assert decide(ToolFacts("git_commit"), {}, ctx, grants).verdict == "deny"


def _reachable(start: str, imports: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(imports.get(module, ()))
    return seen


def _import_graph(root: Path) -> dict[str, set[str]]:
    files = dict(module_files(root))
    graph: dict[str, set[str]] = {}
    for module, file in files.items():
        targets: set[str] = set()
        for found in read_imports(module, file):
            targets.add(found.target)
            targets.update(f"{found.target}.{name}" for name in found.names)
        graph[module] = {target for target in targets if target in files}
    return graph


def git_tools(root: Path, tools: dict[str, str]) -> set[str]:
    """The tools (name -> module) whose code reaches a git runner through its imports."""
    graph = _import_graph(root)
    return {name for name, module in tools.items() if _reachable(module, graph) & GIT_RUNNERS}


def _runner_importers(start: str, graph: dict[str, set[str]]) -> set[str]:
    """The modules reachable from ``start`` that import a git runner themselves."""
    return {m for m in _reachable(start, graph) if graph.get(m, set()) & GIT_RUNNERS}


# Modules whose only git command is a text merge of temporary files, outside any
# repository (ax_agent.tasks.merge): a tool reaching git only through them is decided
# by the facts it declares (apply_task_changes: the writes it makes), not as a git read.
MERGE_ONLY = {"ax_agent.tasks.merge"}


def test_every_tool_that_reaches_git_declares_a_git_read_and_nothing_else() -> None:
    tools = {tool.name: tool.run.__module__ for tool in all_tools()}
    graph = _import_graph(ROOT)
    merge_only = {
        name
        for name, module in tools.items()
        if (found := _runner_importers(module, graph)) and found <= MERGE_ONLY
    }
    assert merge_only == {"apply_task_changes"}
    reaching = git_tools(ROOT, tools) - merge_only
    assert "git_status" in reaching
    for tool in all_tools():
        if tool.name in reaching and tool.facts.declared_kinds() == ["delegates"]:
            # delegate_task reaches git through its children: each child's start probes
            # git read-only, each call a child makes is decided on its own facts, and an
            # executor's worktree is made only after the delegate-mutating question.
            continue
        if tool.name in reaching:
            assert tool.facts.git_read is not None, f"{tool.name} reaches git undeclared"
            assert tool.facts.declared_kinds() == ["git_read"], tool.name
    # Nothing reaches git through the seam either: a git verb there needs this guard widened.
    assert not [verb for verb in VERBS if verb.startswith("git")]


def test_the_merge_module_runs_one_git_command_merge_file() -> None:
    import ast

    source = (ROOT / "tools" / "ax_agent" / "tasks" / "merge.py").read_text()
    calls = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_git"
    ]
    assert len(calls) == 1
    argv = calls[0].args[1]
    assert isinstance(argv, ast.List) and isinstance(argv.elts[0], ast.Constant)
    assert argv.elts[0].value == "merge-file" and "TemporaryDirectory" in source


def test_the_guard_catches_a_tool_that_imports_the_runner(tmp_path: Path) -> None:
    # A planted tree: an "internal" tool importing the runner through a helper module.
    package = tmp_path / "tools" / "ax_agent" / "tools"
    package.mkdir(parents=True)
    (tmp_path / "libcommon").mkdir()
    (tmp_path / "libcommon" / "__init__.py").write_text("")
    (tmp_path / "libcommon" / "git.py").write_text("def run_git(): ...\n")
    (tmp_path / "tools" / "ax_agent" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("from libcommon.git import run_git\n")
    (package / "sneaky.py").write_text("from .helper import run_git\n")
    (package / "honest.py").write_text("import os\n")
    found = git_tools(
        tmp_path, {"sneaky": "ax_agent.tools.sneaky", "honest": "ax_agent.tools.honest"}
    )
    assert found == {"sneaky"}


def test_the_loop_evaluates_every_fact_kind_the_engine_knows() -> None:
    # The loop turns facts into a JSON request with its own list; a kind missing there
    # would be dropped, and the tool would reach the engine declaring less than it does.
    import dataclasses

    from pydantic import BaseModel

    from ax_agent.calls import declared_facts
    from ax_policy import FACT_KINDS, ToolFacts

    class Empty(BaseModel):
        pass

    asked: list[str] = []

    def fact(kind: str) -> Any:
        def evaluate(value: Any) -> None:
            asked.append(kind)

        return evaluate

    kinds = [f.name for f in dataclasses.fields(ToolFacts) if f.name not in ("name", "internal")]
    assert sorted(kinds) == sorted(FACT_KINDS)
    declared_facts(ToolFacts("every", **{kind: fact(kind) for kind in kinds}), Empty())
    assert sorted(asked) == sorted(FACT_KINDS)
