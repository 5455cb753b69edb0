"""The base of every pydantic contract at a JSON boundary.

JSON field names are camelCase (``exitCode``); Python attributes stay
snake_case. Unknown keys are refused so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


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
