"""Bounded context over a scripted 2,000-step session: tokens sent, rewrites, cache cost.

Runs the scripted session of tests/agent/context/test_session.py (2,000 model
calls in four user turns, outputs from a line to ~40 KiB) through the real
turn loop with the script provider and the default model budget (128,000-token
window), capturing every request the provider is sent. Then, side by side:

- tokens sent with elision (the bounded requests) and without it (the whole
  history every time; most of those requests would not fit the window);
- cache-invalidating rewrites (``context.compacted``), by reason, and the tokens
  each re-sent uncached;
- a prompt-cache cost in uncached-token equivalents (cached read 0.1, cache
  write 1.25): a request reuses the previous one's cache only when it starts
  with it unchanged;
- the same history replayed through ``elide`` with the cache gate switched off
  (every saving taken at once), to show what the gate saves;
- every elided output read back through history_search, compared byte for byte.

Run: .venv/bin/python tests/bench/context.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

STEPS = 2_000
TURNS = 4
CACHE_READ = 0.1
CACHE_WRITE = 1.25


def cache_cost(sizes: list[int], reused: list[bool], overhead: int) -> float:
    """Uncached-token equivalents: the previous request is a cache hit when reused."""
    cost = 0.0
    previous = 0
    for size, hit in zip(sizes, reused, strict=True):
        cached = previous if hit else min(overhead, size)
        cost += cached * CACHE_READ + (size - cached) * CACHE_WRITE
        previous = size
    return cost


def starts_with(view: list[Any], previous: list[Any]) -> bool:
    return len(view) >= len(previous) and all(a == b for a, b in zip(view, previous, strict=False))


def main() -> int:
    here = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(here)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        os.environ["AX_STATE_DIR"] = str(root / "state")
        return run(root)


def run(root: Path) -> int:
    from agent.context.scripted import EMIT, emitted, recall_output, session_turns
    from agenttest import events_of, open_session, real_tools, write_script

    from ax_agent.loop import run_turn
    from ax_agent.providers import ProviderRequest
    from ax_agent.window.budget import budget_for
    from ax_agent.window.elide import NO_CACHE, ContextState, ElisionMemo, elide
    from ax_agent.window.tokens import TokenMemo, fixed_tokens

    turns = session_turns(STEPS, TURNS)
    script = write_script(root / "s.json", [turn for calls in turns for turn in calls])
    session = open_session(root / "ws", script, tools=[*real_tools(), EMIT], max_steps=STEPS)
    memo = TokenMemo()
    bounded: list[int] = []
    whole: list[int] = []
    reused: list[bool] = []
    lengths: list[int] = []
    frames: list[str | None] = []
    previous: list[Any] = []
    complete = session.provider.complete

    def capture(request: ProviderRequest, **options: Any) -> Any:
        nonlocal previous
        overhead = fixed_tokens(request)
        bounded.append(overhead + sum(memo.message(m) for m in request.messages))
        whole.append(overhead + sum(memo.message(m) for m in session.messages))
        reused.append(starts_with(request.messages, previous))
        lengths.append(len(session.messages))
        frames.append(session.window.state.frame if session.window else None)
        previous = list(request.messages)
        return complete(request, **options)

    session.provider.complete = capture  # type: ignore[method-assign]
    started = time.perf_counter()
    for number in range(TURNS):
        run_turn(session, f"Part {number + 1} of the work: keep going.")
    loop_s = time.perf_counter() - started
    session.end("done")
    assert session.window is not None
    state = session.window.state
    schemas = [tool.schema() for tool in session.tools.values()]
    probe = ProviderRequest(session.system, [], schemas, session.model)
    overhead = fixed_tokens(probe)
    budget = budget_for(session.model)

    events = events_of(session)
    compacted = [e for e in events if e["type"] == "context.compacted"]
    held = [e for e in events if e["type"] == "context.held"]
    reasons = Counter(e["reason"] for e in compacted)
    cuts = sum(1 for e in compacted if e["cutTo"] > e["cutFrom"])

    # The same growing history through elide with the cache gate off.
    ungated = ContextState()
    replay = ElisionMemo()
    gate_off_sizes: list[int] = []
    gate_off_reused: list[bool] = []
    gate_off_rewrites = 0
    prior: list[Any] = []
    for length, frame in zip(lengths, frames, strict=True):
        view, decision = elide(
            session.messages[:length],
            budget,
            ungated,
            frame=frame or "[frame]",
            overhead=overhead,
            pricing=NO_CACHE,
            memo=replay,
        )
        ungated = decision.state
        gate_off_rewrites += decision.action == "rewrite"
        gate_off_sizes.append(overhead + sum(memo.message(m) for m in view))
        gate_off_reused.append(starts_with(view, prior))
        prior = view

    started = time.perf_counter()
    recalled = sum(
        recall_output(session, target, item.row) == emitted(int(target.removeprefix("toolu_")))
        for target, item in state.elided.items()
    )
    recall_s = time.perf_counter() - started

    with_cost = cache_cost(bounded, reused, overhead)
    without_cost = cache_cost(whole, [True] * len(whole), overhead)
    gate_off_cost = cache_cost(gate_off_sizes, gate_off_reused, overhead)
    over = sum(size > budget.request for size in whole)
    print(f"session: {STEPS} steps, {len(bounded)} requests, model {session.model}")
    print(
        f"budget: window {budget.context_window}, request {budget.request}, "
        f"trigger {budget.trigger}, target {budget.target}; loop ran in {loop_s:.1f} s"
    )
    print(f"tokens sent with elision:    {sum(bounded):>13,}  (largest request {max(bounded):,})")
    print(f"tokens sent without elision: {sum(whole):>13,}  (largest request {max(whole):,})")
    print(f"  ratio without/with: {sum(whole) / sum(bounded):.1f}x")
    print(
        f"  requests over the budget without elision: {over} of {len(whole)}; with: "
        f"{sum(size > budget.request for size in bounded)}"
    )
    print(
        f"cache-invalidating rewrites: {len(compacted)} ({dict(reasons)}; {cuts} moved the cut), "
        f"{sum(e['invalidated'] for e in compacted):,} tokens re-sent uncached; "
        f"{len(held)} held stretches logged"
    )
    kinds: dict[str, list[int]] = {"rounds left": [], "markers": [], "packs only": []}
    for event in compacted:
        kind = (
            "rounds left"
            if event["cutTo"] > event["cutFrom"]
            else "packs only"
            if all(item["form"] == "pack" for item in event["elided"])
            else "markers"
        )
        kinds[kind].append(event["invalidated"])
    for kind, invalidated in kinds.items():
        if invalidated:
            print(
                f"  {kind}: {len(invalidated)} rewrites, on average "
                f"{sum(invalidated) // len(invalidated):,} tokens re-sent uncached"
            )
    print(f"  requests that reused the previous request's cache: {sum(reused)} of {len(reused)}")
    print(
        f"cache-weighted cost (uncached-token equivalents): with elision {with_cost:,.0f}; "
        f"without {without_cost:,.0f} (ratio {without_cost / with_cost:.1f}x, and infeasible)"
    )
    print(
        f"gate off (every saving at once): {gate_off_rewrites} rewrites, "
        f"{sum(gate_off_sizes):,} tokens sent, cost {gate_off_cost:,.0f} "
        f"({gate_off_cost / with_cost:.2f}x the gated cost)"
    )
    print(
        f"elided at the end: {len(state.elided)} results, {state.cut} messages left the request; "
        f"recalled byte-identical: {recalled} of {len(state.elided)} in {recall_s:.1f} s"
    )
    return 0 if recalled == len(state.elided) else 1


if __name__ == "__main__":
    sys.exit(main())
