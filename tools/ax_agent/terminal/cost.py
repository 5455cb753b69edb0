"""What the tokens of a session cost, where the price is known.

Prices are list prices in US dollars per million tokens (input, output, cache
write, cache read), matched by model-name prefix, longest first. A model not in
the table says so rather than guessing; the script and local providers cost
nothing that ax can see.
"""

from __future__ import annotations

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
