"""The model catalog: what each model can take and do, as data.

``models.json`` ships inside the package and is read once per process. Per
model: the context window and the output cap, whether it takes images
(``vision``), its reasoning mode (``none``; ``optional``, thinking when asked;
``always``, a reasoning model whose reasoning items must go back to it), its
prompt caching (``none``; ``automatic``, the provider caches prefixes itself;
``breakpoints``, the request marks what to cache), lifecycle and quirk notes,
and ``budgetTokens``, the most input a request may hold when the provider caps
input below the window. Retired ids are not listed.

A model the catalog does not name gets the catalog's ``default`` entry, which
is deliberately modest: a budget that is too small elides early, one that is
too large sends a request the provider refuses; no images and no reasoning
replay are assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from libcommon import jsonio
from libcommon.errors import CorruptStore

CATALOG_FILE = "models.json"
CATALOG_VERSION = 1

Reasoning = Literal["none", "optional", "always"]
Caching = Literal["none", "automatic", "breakpoints"]
REASONING_MODES: tuple[Reasoning, ...] = ("none", "optional", "always")
CACHING_STYLES: tuple[Caching, ...] = ("none", "automatic", "breakpoints")


@dataclass(frozen=True)
class ModelLimits:
    model: str
    context_window: int
    max_output: int
    known: bool
    vision: bool = False
    reasoning: Reasoning = "none"
    caching: Caching = "none"
    notes: str = ""
    # The most input a request may hold, when the provider caps input below the window.
    budget_tokens: int | None = None


@cache
def _catalog() -> tuple[ModelLimits, dict[str, ModelLimits]]:
    raw = resources.files(__package__).joinpath(CATALOG_FILE).read_bytes()
    try:
        data = jsonio.loads(raw)
        if data["version"] != CATALOG_VERSION:
            raise CorruptStore(CATALOG_FILE, f"unknown version {data['version']!r}")
        default = _entry("", data["default"], known=False)
        models = {name: _entry(name, entry, known=True) for name, entry in data["models"].items()}
    except (jsonio.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptStore(CATALOG_FILE, f"not a model catalog ({exc})") from None
    return default, models


def _entry(name: str, entry: dict[str, object], *, known: bool) -> ModelLimits:
    label = name or "default"
    window, output = entry["contextWindow"], entry["maxOutput"]
    if not isinstance(window, int) or not isinstance(output, int) or not 0 < output < window:
        raise ValueError(f"model {label}: bad contextWindow/maxOutput")
    vision, reasoning, caching = entry["vision"], entry["reasoning"], entry["caching"]
    notes, budget = entry.get("notes", ""), entry.get("budgetTokens")
    if not isinstance(vision, bool) or not isinstance(notes, str):
        raise ValueError(f"model {label}: bad vision/notes")
    if reasoning not in REASONING_MODES or caching not in CACHING_STYLES:
        raise ValueError(f"model {label}: bad reasoning/caching")
    if budget is not None and not (isinstance(budget, int) and 0 < budget <= window):
        raise ValueError(f"model {label}: bad budgetTokens")
    return ModelLimits(
        name,
        window,
        output,
        known,
        vision=vision,
        reasoning=reasoning,
        caching=caching,
        notes=notes,
        budget_tokens=budget,
    )


def model_limits(model: str) -> ModelLimits:
    """The entry of ``model``: its own, else the default under the model's name."""
    default, models = _catalog()
    found = models.get(model)
    if found is not None:
        return found
    return ModelLimits(
        model,
        default.context_window,
        default.max_output,
        known=False,
        vision=default.vision,
        reasoning=default.reasoning,
        caching=default.caching,
        notes=default.notes,
        budget_tokens=default.budget_tokens,
    )


def catalog_models() -> list[str]:
    return sorted(_catalog()[1])
