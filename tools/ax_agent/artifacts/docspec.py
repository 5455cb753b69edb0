"""The ``*.docspec.json`` schema: what a document says, for the renderers to lay out.

The model writes a spec with the ordinary file tools (so it is snapshot-backed,
undoable and diffable) and ``render_document`` turns it into a DOCX and its PDF
twin. The schema is strict: unknown keys, wrong types and unknown fields in a
header or footer are refused with the path of the offending value.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

SPEC_SUFFIX = ".docspec.json"
DOCSPEC_MAX_BYTES = 2 * 1024 * 1024
DOCSPEC_MAX_BLOCKS = 5_000
DOCSPEC_TEXT_MAX_CHARS = 20_000
TABLE_MAX_CELLS = 10_000
# The fields a header or footer may hold, as the renderers spell them.
PAGE_FIELDS = ("pageNumber", "totalPages", "date")
# Core properties' timestamp when the spec gives none: fixed, so the bytes are too.
DEFAULT_CREATED = datetime(2000, 1, 1)
_BRACED = re.compile(r"\{([^{}]*)\}")

Text = Annotated[str, Field(max_length=DOCSPEC_TEXT_MAX_CHARS)]


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=False
    )


class HeadingBlock(SpecModel):
    kind: Literal["heading"]
    text: Text = Field(min_length=1)
    level: int = Field(ge=1, le=6)


class ParagraphBlock(SpecModel):
    kind: Literal["paragraph"]
    text: Text


class ListBlock(SpecModel):
    kind: Literal["list"]
    ordered: bool = False
    items: list[Text] = Field(min_length=1, max_length=1_000)


class TableBlock(SpecModel):
    kind: Literal["table"]
    header: list[Text] = Field(default_factory=list)
    rows: list[list[Text]] = Field(min_length=1)

    @model_validator(mode="after")
    def _rectangular(self) -> TableBlock:
        width = len(self.header) if self.header else len(self.rows[0])
        if width == 0:
            raise ValueError("a table needs at least one column")
        if any(len(row) != width for row in self.rows):
            raise ValueError(f"every row must have {width} cells, as the header or first row")
        if width * (len(self.rows) + 1) > TABLE_MAX_CELLS:
            raise ValueError(f"a table holds at most {TABLE_MAX_CELLS} cells")
        return self

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows) + (1 if self.header else 0), len(self.rows[0])


class ImageBlock(SpecModel):
    kind: Literal["image"]
    path: str = Field(min_length=1, description="A PNG, JPEG or GIF of the workspace.")
    width_cm: float | None = Field(default=None, gt=0, le=50)
    caption: Text = ""


class PageBreakBlock(SpecModel):
    kind: Literal["pageBreak"]


Block = Annotated[
    HeadingBlock | ParagraphBlock | ListBlock | TableBlock | ImageBlock | PageBreakBlock,
    Field(discriminator="kind"),
]


class Band(SpecModel):
    """A header or footer: text whose ``{pageNumber}``, ``{totalPages}`` and ``{date}``
    become real fields."""

    text: Text = Field(min_length=1)

    @field_validator("text")
    @classmethod
    def _known_fields(cls, text: str) -> str:
        unknown = [name for name in _BRACED.findall(text) if name not in PAGE_FIELDS]
        if unknown:
            raise ValueError(
                f"unknown field {{{unknown[0]}}}; a header or footer may hold "
                + ", ".join(f"{{{name}}}" for name in PAGE_FIELDS)
            )
        return text

    def pieces(self) -> list[tuple[str, str]]:
        """The text as ("text", words) and ("field", name) pieces, in order."""
        found: list[tuple[str, str]] = []
        at = 0
        for match in _BRACED.finditer(self.text):
            if match.start() > at:
                found.append(("text", self.text[at : match.start()]))
            found.append(("field", match.group(1)))
            at = match.end()
        if at < len(self.text):
            found.append(("text", self.text[at:]))
        return found

    def fields(self) -> set[str]:
        return {value for kind, value in self.pieces() if kind == "field"}


class CoreProperties(SpecModel):
    author: Text = ""
    subject: Text = ""
    keywords: Text = ""
    # An ISO date or date-time (no zone); the document's created and modified stamps.
    created: str = ""

    @field_validator("created")
    @classmethod
    def _iso(cls, value: str) -> str:
        if value:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError("created is an ISO date such as 2026-12-01") from None
        return value

    def stamp(self) -> datetime:
        if not self.created:
            return DEFAULT_CREATED
        return datetime.fromisoformat(self.created).replace(tzinfo=None)


class DocSpec(SpecModel):
    version: Literal[1] = 1
    title: Text = Field(min_length=1)
    properties: CoreProperties = Field(default_factory=CoreProperties)
    header: Band | None = None
    footer: Band | None = None
    blocks: list[Block] = Field(max_length=DOCSPEC_MAX_BLOCKS)

    def outline(self) -> list[tuple[int, str]]:
        """(level, text) of the title (level 0) and every heading, in order."""
        return [(0, self.title)] + [
            (b.level, b.text) for b in self.blocks if isinstance(b, HeadingBlock)
        ]

    def images(self) -> list[str]:
        return [b.path for b in self.blocks if isinstance(b, ImageBlock)]

    def tables(self) -> list[tuple[int, int]]:
        return [b.shape for b in self.blocks if isinstance(b, TableBlock)]


def load_spec(data: bytes) -> DocSpec:
    """The spec ``data`` holds; ``ValueError`` naming what is wrong and where."""
    from pydantic import ValidationError

    if len(data) > DOCSPEC_MAX_BYTES:
        raise ValueError(f"the spec is over {DOCSPEC_MAX_BYTES} bytes")
    try:
        return DocSpec.model_validate_json(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in error['loc']) or '(top)'}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)[:10]
        ]
        raise ValueError(
            "the spec does not fit the docspec schema:\n" + "\n".join(problems)
        ) from None
