"""The base of every pydantic contract at a JSON boundary.

JSON field names are camelCase (``exitCode``); Python attributes stay
snake_case. Unknown keys are refused so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# JSON Schema keywords whose value is a schema (or a list of them), and those whose value
# maps names to schemas; every other keyword's value is data (a default, an enum) and is
# left as it is.
_SCHEMA_VALUED = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "contains",
        "else",
        "if",
        "items",
        "not",
        "oneOf",
        "prefixItems",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)


class Contract(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        # Build each model's validator on first use, not at import: a verb pays only for
        # the models it touches (ax-policy review-command: ~60 ms less per start).
        defer_build=True,
    )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def published_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"] = "validation"
) -> dict[str, Any]:
    """``model``'s JSON Schema as a model is shown it: camelCase names, no ``title`` keys.

    pydantic titles every model and field with its own name respelled ("External Session
    Id"): tokens that tell a reader nothing the property name does not. What a field means
    belongs in its description.
    """
    schema: dict[str, Any] = _untitled(model.model_json_schema(by_alias=True, mode=mode))
    return schema


def _untitled(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: _untitled(sub) for name, sub in value.items()}
        elif key in _SCHEMA_VALUED:
            kept[key] = _untitled(value)
        else:
            kept[key] = value
    return kept
