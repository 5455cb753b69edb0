"""Hand-built and scripted histories for the context tests and the benchmark.

``scripted_history(steps)`` is a long coding session: one user message, then
rounds of one tool call each whose outputs range from a line to tens of KiB,
a slate_note now and then, and a new user message every few hundred steps.
It is deterministic (seeded) so figures compare run to run.
"""

from __future__ import annotations

import random

from ax_agent.providers import Message, TextBlock, ToolResultBlock, ToolUseBlock

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
