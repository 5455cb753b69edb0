"""Hand-built and scripted histories for the context tests and the benchmark.

``scripted_history(steps)`` is a long coding session: one user message, then
rounds of one tool call each whose outputs range from a line to tens of KiB,
a slate_note now and then, and a new user message every few hundred steps.
It is deterministic (seeded) so figures compare run to run.
"""

from __future__ import annotations

import random
from typing import Any

from ax_agent.providers import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_policy import ToolFacts
from libcommon.contracts import Contract

TOOLS = ("read_file", "grep", "run_command", "run_check", "list_dir", "edit_file")


def output_text(step: int, rng: random.Random) -> str:
    """A tool output of a realistic shape: numbered lines, sometimes large."""
    roll = rng.random()
    if roll < 0.08:
        lines = rng.randint(300, 900)  # a big log or a whole file: 12-40 KiB
    elif roll < 0.4:
        lines = rng.randint(20, 120)
    else:
        lines = rng.randint(1, 15)
    return "\n".join(
        f"{i + 1:5d}  step {step} line {i}: {'x' * rng.randint(5, 40)} é" for i in range(lines)
    )


def round_messages(step: int, rng: random.Random) -> list[Message]:
    call_id = f"toolu_{step:05d}"
    if step % 97 == 0:
        use = ToolUseBlock(call_id, "slate_note", {"key": f"k{step}", "text": "progress"})
        result = "saved note"
    else:
        tool = TOOLS[step % len(TOOLS)]
        use = ToolUseBlock(call_id, tool, {"path": f"src/mod{step % 50}.py"})
        result = output_text(step, rng)
    return [
        Message("assistant", [TextBlock(f"Step {step}: looking further."), use]),
        Message("user", [ToolResultBlock(call_id, result)]),
    ]


def scripted_history(steps: int, seed: int = 13, operator_every: int = 300) -> list[Message]:
    rng = random.Random(seed)
    history = [Message("user", [TextBlock("Please fix the failing tests in this project.")])]
    for step in range(1, steps + 1):
        if step % operator_every == 0:
            history.append(Message("assistant", [TextBlock(f"Progress report at step {step}.")]))
            history.append(Message("user", [TextBlock(f"Operator message {step}: keep going.")]))
        history.extend(round_messages(step, rng))
    return history


# --- a scripted session through the real turn loop ----------------------------------------


def emitted(step: int) -> str:
    """What the ``emit`` tool outputs at ``step``: the same text on every run."""
    return output_text(step, random.Random(step))


class EmitInput(Contract):
    step: int


def _emit(value: EmitInput, ctx: ToolContext) -> ToolResult:
    return ToolResult(content=emitted(value.step), summary=f"emitted step {value.step}")


# A test tool, not a mock: it stands for any tool with a large output (a build log, a
# whole file) so that 2,000 steps run in seconds; real tools' outputs take the same path.
EMIT = ModelTool(
    "emit", "Print a step's output.", EmitInput, ToolFacts(name="emit", internal=True), _emit
)


def call_id(step: int) -> str:
    return f"toolu_{step:05d}"


def session_turns(steps: int, turns: int) -> list[list[dict[str, Any]]]:
    """``turns`` user turns of ``steps // turns`` model calls each, then a final answer."""
    script: list[list[dict[str, Any]]] = []
    per_turn = steps // turns
    step = 0
    for _ in range(turns):
        calls: list[dict[str, Any]] = []
        for _ in range(per_turn):
            step += 1
            if step % 97 == 0:
                use = {
                    "name": "slate_note",
                    "id": call_id(step),
                    "input": {"key": f"progress-{step // 97 % 5}", "text": f"done up to {step}"},
                }
            else:
                use = {"name": "emit", "id": call_id(step), "input": {"step": step}}
            calls.append({"toolCalls": [use]})
        calls.append({"text": f"Finished {step} steps."})
        script.append(calls)
    return script


def tool_context(session: Any, tool: ModelTool, tool_input: Any) -> ToolContext:
    """A context for calling ``tool`` directly in ``session``, as the loop would."""
    from ax_policy import DecisionContext, decide

    decision = decide(
        tool.facts,
        tool_input,
        DecisionContext(
            workspace=session.workspace,
            sandbox=session.sandbox.policy,
            state_dir=session.layout.root,
        ),
    )
    return ToolContext(
        layout=session.layout,
        session_id=session.id,
        call_id="recall",
        step=0,
        seam=session.seam,
        decision=decision,
    )


def recall_output(session: Any, target: str, row: int | None = None) -> str:
    """A call's output read back through history_search, every page joined."""
    from ax_agent.tools.history_search import TOOL, HistorySearchInput, read_call

    pages = []
    page, total = 1, 1
    while page <= total:
        request = HistorySearchInput(call=target, page=page, row=row or 0)
        text, page, total = read_call(tool_context(session, TOOL, request), target, page, row)
        pages.append(text)
        page += 1
    return "".join(pages)
