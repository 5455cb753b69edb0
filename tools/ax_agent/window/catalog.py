"""The model catalog: each model's context window and output cap, as data.

``models.json`` ships inside the package and is read once per process. A model
the catalog does not name gets the catalog's ``default`` entry, which is
deliberately modest: a budget that is too small elides early, one that is too
large sends a request the provider refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from libcommon import jsonio
from libcommon.errors import CorruptStore

CATALOG_FILE = "models.json"
CATALOG_VERSION = 1


@dataclass(frozen=True)
class ModelLimits:
    model: str
    context_window: int
    max_output: int
    known: bool


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
    window, output = entry["contextWindow"], entry["maxOutput"]
    if not isinstance(window, int) or not isinstance(output, int) or not 0 < output < window:
        raise ValueError(f"model {name or 'default'}: bad contextWindow/maxOutput")
    return ModelLimits(name, window, output, known)


def model_limits(model: str) -> ModelLimits:
    """The limits of ``model``: its own entry, else the default under the model's name."""
    default, models = _catalog()
    found = models.get(model)
    if found is not None:
        return found
    return ModelLimits(model, default.context_window, default.max_output, known=False)


def catalog_models() -> list[str]:
    return sorted(_catalog()[1])
