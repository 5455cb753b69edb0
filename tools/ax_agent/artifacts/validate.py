"""Deterministic, model-free validation of rendered artifacts against their spec.

Each artifact is parsed back by the pack's own readers and compared with what
the spec asked for. Two severities, deliberately apart: a structural mismatch
(a heading missing, a table of the wrong shape, a dangling reference, a page
field not there) is a failure; a layout heuristic (a wide table, a skipped
heading level) is a note, and a note never blocks: the first false positive
would turn a guess into a gate.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from . import readers
from .docspec import DocSpec, HeadingBlock, ImageBlock, ListBlock, TableBlock
from .docx_render import FIELD_INSTRUCTIONS
from .errors import PDF_READ_BUDGET_S, Unsupported

# Layout heuristics (notes only): wider than a portrait page's text comfortably holds.
WIDE_TABLE_COLUMNS = 6
WIDE_IMAGE_CM = 16.0


@dataclass
class Validation:
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def validate_docx(spec: DocSpec, data: bytes) -> Validation:
    result = Validation()
    try:
        kind, archive = readers.identify(data)
        if kind != "docx" or archive is None:
            result.failures.append(f"the artifact reads as {kind}, not DOCX")
            return result
        found = readers.docx_structure(archive)
    except Unsupported as failure:
        result.failures.append(f"the DOCX does not read back: {failure.code}: {failure.reason}")
        return result
    outline = [(h.level, h.text) for h in found.outline]
    if outline != spec.outline():
        result.failures.append(
            f"outline: the spec has {_outline(spec.outline())}, the DOCX {_outline(outline)}"
        )
    if found.tables != spec.tables():
        result.failures.append(f"tables: the spec has {spec.tables()}, the DOCX {found.tables}")
    for number, (widths, (_, columns)) in enumerate(
        zip(found.row_widths, spec.tables(), strict=False), 1
    ):
        if any(width != columns for width in widths):
            result.failures.append(
                f"tables: table {number} has rows of {widths} cells, not {columns}"
            )
    if found.images != len(spec.images()):
        result.failures.append(
            f"images: the spec has {len(spec.images())}, the DOCX {found.images}"
        )
    if found.dangling:
        result.failures.append(f"dangling references to no part: {', '.join(found.dangling)}")
    lists = sum(1 for b in spec.blocks if isinstance(b, ListBlock))
    if len(dict.fromkeys(found.list_instances)) != lists:
        result.failures.append(
            f"lists: {lists} list blocks, {len(set(found.list_instances))} numbering instances"
        )
    for name, band, parts in (
        ("header", spec.header, found.headers),
        ("footer", spec.footer, found.footers),
    ):
        if band is None:
            continue
        if not parts:
            result.failures.append(f"{name}: the spec has one, the DOCX none")
            continue
        present = set().union(*(part.fields for part in parts))
        for wanted in sorted(band.fields()):
            word = FIELD_INSTRUCTIONS[wanted].split()[0]
            if word not in present:
                result.failures.append(f"{name}: no {word} field for {{{wanted}}}")
    result.notes += layout_notes(spec)
    return result


def layout_notes(spec: DocSpec) -> list[str]:
    notes: list[str] = []
    previous = 0
    for block in spec.blocks:
        if isinstance(block, HeadingBlock):
            if block.level > previous + 1:
                notes.append(
                    f"heading {block.text!r} is level {block.level} after level {previous}"
                )
            previous = block.level
        elif isinstance(block, TableBlock) and block.shape[1] > WIDE_TABLE_COLUMNS:
            notes.append(f"a table of {block.shape[1]} columns may be cramped on a portrait page")
        elif isinstance(block, ImageBlock) and (block.width_cm or 0) > WIDE_IMAGE_CM:
            notes.append(f"{block.path} at {block.width_cm} cm is wider than the text column")
    return notes


def validate_pdf(spec: DocSpec, data: bytes) -> tuple[Validation, int]:
    """The PDF twin's validation and its page count (0 when it does not read).

    Pages are searched in order until every heading is found, within
    ``PDF_READ_BUDGET_S``: a heading not reached in time is a note, not a failure
    (the DOCX's outline is the structural check; this one confirms the print).
    """
    result = Validation()
    try:
        reader = readers.pdf_reader(data)
        pages = len(reader.pages)
    except Unsupported as failure:
        result.failures.append(f"the PDF does not read back: {failure.code}: {failure.reason}")
        return result, 0
    if pages < 1:
        result.failures.append("the PDF has no pages")
    breaks = sum(1 for b in spec.blocks if b.kind == "pageBreak")
    if pages < breaks + 1:
        result.failures.append(f"{breaks} page breaks, but only {pages} pages")
    wanted = list(spec.outline())
    deadline = time.monotonic() + PDF_READ_BUDGET_S
    printed = ""
    searched = 0
    while wanted and searched < pages and time.monotonic() <= deadline:
        text, _ = readers.page_text(reader, searched)
        searched += 1
        # A heading can break across a page end, so the text so far is searched whole.
        printed += " " + _squash(text)
        wanted = [(level, h) for level, h in wanted if _squash(h) not in printed]
    for level, heading in wanted:
        if searched < pages:
            result.notes.append(
                f"heading {heading!r} was not reached: pages after {searched} were not "
                f"searched within {PDF_READ_BUDGET_S:g} s"
            )
        else:
            result.failures.append(f"heading {heading!r} (level {level}) is not in the PDF's text")
    return result, pages


def _squash(text: str) -> str:
    # Printed text can be re-flowed and hyphen-split across lines; compare words only.
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def _outline(items: list[tuple[int, str]]) -> str:
    return "[" + ", ".join(f"{level}:{text!r}" for level, text in items) + "]"
