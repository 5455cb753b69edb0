"""published_schema: a model's JSON Schema without pydantic's generated titles."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from libcommon.contracts import Contract, published_schema


class Inner(Contract):
    """An inner thing."""

    title: str = Field(description="A field that happens to be called title.")


class Outer(Contract):
    inner: Inner = Field(description="One inner.")
    maybe: Inner | None = Field(default=None, description="Perhaps one.")
    many: list[Inner] = Field(default_factory=list, description="Several.")
    by_name: dict[str, Inner] = Field(default_factory=dict, description="Keyed.")
    extra: dict[str, Any] = Field(default={"title": "data, not a schema"}, description="Free-form.")


def titles(schema: Any) -> int:
    if isinstance(schema, list):
        return sum(titles(item) for item in schema)
    if not isinstance(schema, dict):
        return 0
    own = 1 if isinstance(schema.get("title"), str) else 0
    return own + sum(titles(value) for key, value in schema.items() if key != "default")


def test_titles_go_at_every_depth_and_names_and_data_stay() -> None:
    raw = Outer.model_json_schema(by_alias=True)
    assert titles(raw) > 5
    schema = published_schema(Outer)
    # The property named "title" is a name in a properties map, not a title keyword.
    assert schema["$defs"]["Inner"]["properties"]["title"]["description"].startswith("A field")
    assert schema["properties"]["extra"]["default"] == {"title": "data, not a schema"}
    # Nothing else that pydantic wrote is lost.
    assert schema["properties"]["byName"]["description"] == "Keyed."
    assert schema["$defs"]["Inner"]["description"] == "An inner thing."

    def strip(value: Any) -> Any:
        if isinstance(value, list):
            return [strip(item) for item in value]
        if not isinstance(value, dict):
            return value
        return {
            key: (value[key] if key == "default" else strip(sub))
            for key, sub in value.items()
            if not (key == "title" and isinstance(sub, str))
        }

    assert schema == strip(raw)


def test_the_serialization_schema_is_stripped_too() -> None:
    schema = published_schema(Outer, mode="serialization")
    assert "title" not in schema
    assert "title" not in schema["properties"]["inner"]
    assert "title" in schema["$defs"]["Inner"]["properties"]
