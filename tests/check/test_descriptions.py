"""The field descriptions ax-check publishes (through ax-mcp's schemas) quote its limits truly.

tests/mcp/test_schemas.py sees that every field is described; this sees that a number a
description states is the constant it comes from, so changing a limit without its
description fails here.
"""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel

from ax_check import models
from ax_check.check import EXEC_OUTPUT_BYTES
from ax_check.detection import MAX_UNUSED_SHOWN
from ax_check.parsers import (
    MAX_DETAIL_CHARS,
    MAX_FINDINGS,
    MAX_SIGNALS,
    OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
)
from ax_check.tree import MAX_CHANGES_LISTED, MAX_SNAPSHOT_FILES
from ax_check.units import MAX_UNITS

# (model, field) -> the limits its description quotes, spelled as it spells them.
QUOTED: dict[tuple[type[BaseModel], str], list[str]] = {
    (models.OutputExcerpt, "head"): [f"{OUTPUT_HEAD_BYTES // 1024} KiB"],
    (models.OutputExcerpt, "tail"): [f"{OUTPUT_TAIL_BYTES // 1024} KiB"],
    (models.OutputExcerpt, "spill_path"): [f"{EXEC_OUTPUT_BYTES // 1024} KiB"],
    (models.Signal, "detail"): [f"at most {MAX_DETAIL_CHARS} characters"],
    (models.Finding, "message"): [f"at most {MAX_DETAIL_CHARS} characters"],
    (models.TreeCheck, "complete"): [f"at most {MAX_SNAPSHOT_FILES:,} files"],
    (models.TreeCheck, "changed"): [f"at most {MAX_CHANGES_LISTED}"],
    (models.TreeCheck, "changed_total"): [f"at most {MAX_CHANGES_LISTED}"],
    (models.CheckResult, "signals"): [f"at most {MAX_SIGNALS}"],
    (models.CheckResult, "findings"): [f"at most {MAX_FINDINGS}"],
    (models.UnitReport, "unused"): [f"at most {MAX_UNUSED_SHOWN} lines"],
    (models.DetectReport, "units"): [f"at most {MAX_UNITS}"],
    (models.DetectReport, "notes"): [f"the {MAX_UNITS} listed"],
}
# A number standing alone (not in "sha256", "UTF-8", "E0308" or "3.12").
NUMBER = re.compile(r"(?<![\w.-])\d[\d,]*(?![\w.]\w)")
# Numbers that are facts, not limits: an exit status, a count of nothing.
NOT_LIMITS = {"0"}


def described_fields() -> list[tuple[type[BaseModel], str, str]]:
    found = []
    for value in vars(models).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
            for name, info in value.model_fields.items():
                found.append((value, name, info.description or ""))
    return found


@pytest.mark.parametrize(("model", "field"), list(QUOTED))
def test_a_quoted_limit_is_the_constant(model: type[BaseModel], field: str) -> None:
    description = model.model_fields[field].description or ""
    for quoted in QUOTED[(model, field)]:
        assert quoted in description, f"{model.__name__}.{field}: {description!r}"


def test_no_description_quotes_an_unpinned_number() -> None:
    unpinned = []
    for model, field, description in described_fields():
        pinned = " ".join(QUOTED.get((model, field), []))
        for number in NUMBER.findall(description):
            if number not in NOT_LIMITS and number not in NUMBER.findall(pinned):
                unpinned.append(f"{model.__name__}.{field}: {number}")
    assert unpinned == []
