"""Harness cost per tool call in ax-agent's loop, early and late in one session (not collected).

    .venv/bin/python tests/bench/agent_call.py [CALLS]

One session, one turn, CALLS model steps of one write_file call each (a new
content every time, so loop detection stays quiet): per call the loop records
the request, asks ax-policy, snapshots, runs the tool, records the mutation
and the completion, and appends a Trail entry. A stand-in provider answers
instantly, so the time is the harness's. Prints the median per call around
step 100 and around the last step, and their ratio (DESIGN.md wants it
within 1.2x). Every append is fdatasync-ed, so the absolute figure is mostly
the disk's.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ax_agent.loop import run_turn
from ax_agent.providers import ProviderRequest, ProviderResponse, TextBlock, ToolUseBlock
from ax_agent.session import StartOptions, start_session
from ax_agent.tools.registry import all_tools

WINDOW = 50


class TimedProvider:
    """Answers each request at once with one write_file call, and times the steps."""

    name = "bench"
    model = "bench"

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.stamps: list[float] = []

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        self.stamps.append(time.perf_counter())
        step = len(self.stamps)
        if step > self.calls:
            return ProviderResponse([TextBlock("done")], "end_turn")
        call = ToolUseBlock(f"c{step}", "write_file", {"path": "f.txt", "content": str(step)})
        return ProviderResponse([call], "tool_use")


def window_ms(stamps: list[float], around: int) -> float:
    start = max(1, around - WINDOW // 2)
    gaps = [(stamps[i] - stamps[i - 1]) * 1000 for i in range(start, start + WINDOW)]
    return statistics.median(gaps)


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        os.environ["AX_STATE_DIR"] = str(root / "state")
        provider = TimedProvider(calls)
        # An empty script gets the session started; the stand-in provider then answers.
        script = root / "empty.json"
        script.write_text('{"turns": []}')
        options = StartOptions(
            workspace=root / "ws",
            environ=dict(os.environ),
            provider="script",
            script=script,
            max_steps=calls + 1,
            trust_once=True,
            tools=all_tools(),
        )
        session = start_session(options)
        session.provider = provider
        started = time.perf_counter()
        result = run_turn(session, "write")
        total = time.perf_counter() - started
        session.end("bench")
    assert result.stop_reason == "end_turn", result.detail
    early = window_ms(provider.stamps, 100)
    late = window_ms(provider.stamps, calls - WINDOW)
    print(f"calls: {calls}, total {total:.1f} s, mean {total / calls * 1000:.2f} ms per call")
    print(f"median per call around step 100:   {early:.2f} ms")
    print(f"median per call around step {calls - WINDOW}: {late:.2f} ms")
    print(f"ratio late/early: {late / early:.2f}x")


if __name__ == "__main__":
    main()
