"""A session's tokens and turns, read from its log, and what they cost where the price is known.

Prices are list prices in US dollars per million tokens (input, output, cache
write, cache read), matched by model-name prefix, longest first. A model not in
the table says so rather than guessing; the script and local providers cost
nothing that ax can see.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from libcommon.paths import StateLayout

from ..providers import Usage

# (prefix, input, output, cache write, cache read) in USD per million tokens.
PRICES_PER_MTOK: tuple[tuple[str, float, float, float, float], ...] = (
    ("claude-opus-4-5", 5.0, 25.0, 6.25, 0.5),
    ("claude-opus-4", 15.0, 75.0, 18.75, 1.5),
    ("claude-sonnet-4", 3.0, 15.0, 3.75, 0.3),
    ("claude-haiku-4-5", 1.0, 5.0, 1.25, 0.1),
    ("claude-3-5-haiku", 0.8, 4.0, 1.0, 0.08),
)
_FREE_PROVIDERS = {"script": "no cost (the script provider calls no model)"}


def cost_text(provider: str, model: str, usage: Usage) -> str:
    if provider in _FREE_PROVIDERS:
        return _FREE_PROVIDERS[provider]
    if provider == "openai-compatible":
        return "not known (a server of your own; ax has no price for it)"
    for prefix, inp, out, write, read in sorted(PRICES_PER_MTOK, key=lambda row: -len(row[0])):
        if model.startswith(prefix):
            dollars = (
                usage.input_tokens * inp
                + usage.output_tokens * out
                + usage.cache_creation_input_tokens * write
                + usage.cache_read_input_tokens * read
            ) / 1_000_000
            return f"about ${dollars:.4f} at list prices"
    return f"not known for model {model}"


@dataclass
class Totals:
    usage: Usage = field(default_factory=Usage)
    turns: int = 0

    @property
    def tokens(self) -> int:
        usage = self.usage
        return (
            usage.input_tokens
            + usage.output_tokens
            + usage.cache_creation_input_tokens
            + usage.cache_read_input_tokens
        )


def session_totals(layout: StateLayout, session_id: str) -> Totals:
    """Every life of the session counts: the log holds each model call's usage."""
    from ax_log import log_path, read_events

    totals = Totals()
    for record in read_events(log_path(layout, session_id), session_id):
        kind = record.get("type")
        if kind == "user.message":
            totals.turns += 1
        elif kind in ("assistant.message", "memory.narrative"):
            # The journal's narrative call costs tokens too, though it is no message.
            usage = record.get("usage") or {}
            totals.usage.add(
                Usage(
                    input_tokens=int(usage.get("inputTokens", 0)),
                    output_tokens=int(usage.get("outputTokens", 0)),
                    cache_creation_input_tokens=int(usage.get("cacheCreationInputTokens", 0)),
                    cache_read_input_tokens=int(usage.get("cacheReadInputTokens", 0)),
                )
            )
    return totals
