"""The request budget: what a request may hold so that request plus output fits the window.

``request`` is the hard cap: the context window less the output the request
asks for and a safety margin for the estimate's error. Elision starts when a
request would cross ``trigger`` and, once it rewrites, cuts down to ``target``,
so each rewrite buys many requests before the next one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import model_limits

# The estimate can be off by this share of the window; it is kept free.
SAFETY_MARGIN_RATIO = 0.05
TRIGGER_RATIO = 0.75
TARGET_RATIO = 0.5
# The least output a request asks for, however full the window is.
MIN_OUTPUT_TOKENS = 1024


@dataclass(frozen=True)
class Budget:
    """Token figures for one model and output cap."""

    context_window: int
    max_output: int
    request: int
    trigger: int
    target: int

    @classmethod
    def of(cls, context_window: int, max_output: int, input_cap: int | None = None) -> Budget:
        if context_window <= 0 or max_output <= 0:
            raise ValueError("the context window and the output cap must be positive")
        margin = int(context_window * SAFETY_MARGIN_RATIO)
        request = context_window - max_output - margin
        if input_cap is not None:
            request = min(request, input_cap - margin)
        if request <= 0:
            raise ValueError(
                f"an output cap of {max_output} leaves no room for a request in a window "
                f"of {context_window}"
            )
        return cls(
            context_window=context_window,
            max_output=max_output,
            request=request,
            trigger=int(request * TRIGGER_RATIO),
            target=int(request * TARGET_RATIO),
        )


def budget_for(model: str, max_tokens: int | None = None) -> Budget:
    """The budget of ``model`` when a request asks for ``max_tokens`` of output.

    The output asked for is capped at the model's own output cap.
    """
    limits = model_limits(model)
    output = limits.max_output if max_tokens is None else min(max_tokens, limits.max_output)
    return Budget.of(limits.context_window, output, limits.budget_tokens)


def output_cap(model: str, asked: int, input_tokens: int) -> int:
    """The output a request of ``input_tokens`` may ask ``model`` for: input plus output fit.

    ``asked``, capped at the model's output cap and at what the window leaves
    once the input and the safety margin are in; never below
    ``MIN_OUTPUT_TOKENS`` (or ``asked``, when that is less), since a request with
    no room to answer is for the provider to refuse, by name, not to starve.
    """
    limits = model_limits(model)
    room = limits.context_window - input_tokens - int(limits.context_window * SAFETY_MARGIN_RATIO)
    return max(min(asked, MIN_OUTPUT_TOKENS), min(asked, limits.max_output, room))
