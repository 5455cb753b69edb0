"""A DocSpec rendered as DOCX by python-docx, byte for byte the same every time.

python-docx stamps each zip entry with the current time and the core properties
with whatever the template held; both are fixed here: the core properties come
from the spec (``created``, else ``DEFAULT_CREATED``), and the package is
re-zipped by ``container.write_archive`` (fixed order, stamps and level).
Relationship ids and part names are assigned in document order, so they follow
from the spec alone. Page fields are real field runs (PAGE, NUMPAGES, DATE), the
styles are Word's named ones (Title, Heading N, List Bullet/Number, Caption,
Table Grid), and every list block gets its own numbering instance so a numbered
list restarts at 1.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Mapping
from typing import Any

from .container import write_archive
from .docspec import Band, DocSpec, HeadingBlock, ImageBlock, ListBlock, ParagraphBlock, TableBlock
from .errors import DOCS_EXTRA_CURE, IMAGE_MAX_BYTES, RenderFailed

# How each header/footer field is written as a Word field instruction.
FIELD_INSTRUCTIONS = {
    "pageNumber": "PAGE",
    "totalPages": "NUMPAGES",
    "date": 'DATE \\@ "yyyy-MM-dd"',
}
IMAGE_TYPES = {
    b"\x89PNG\r\n\x1a\n": "png",
    b"\xff\xd8\xff": "jpeg",
    b"GIF87a": "gif",
    b"GIF89a": "gif",
}
DEFAULT_IMAGE_WIDTH_CM = 15.0
TEMPLATE_THUMBNAIL = "docProps/thumbnail.jpeg"


def image_type(data: bytes) -> str | None:
    return next((kind for magic, kind in IMAGE_TYPES.items() if data.startswith(magic)), None)


def check_image(path: str, data: bytes) -> str:
    """The image's type, or RenderFailed naming the path (never its bytes)."""
    if len(data) > IMAGE_MAX_BYTES:
        raise RenderFailed("image-too-large", f"{path} is over {IMAGE_MAX_BYTES} bytes")
    kind = image_type(data)
    if kind is None:
        raise RenderFailed(
            "image-unsupported", f"{path} is not a PNG, JPEG or GIF (its first bytes say otherwise)"
        )
    return kind


def render_docx(spec: DocSpec, images: Mapping[str, bytes]) -> bytes:
    """The DOCX of ``spec``; ``images`` maps each image block's path to its bytes."""
    try:
        import docx
        from docx.shared import Cm
    except ImportError:
        raise RenderFailed(
            "toolchain-unavailable", f"writing DOCX needs python-docx: {DOCS_EXTRA_CURE}"
        ) from None
    # python-docx is only partly typed; its objects are handled as Any here.
    document: Any = docx.Document()
    _core_properties(document, spec)
    document.add_heading(spec.title, 0)
    lists = _Numbering(document)
    for block in spec.blocks:
        if isinstance(block, HeadingBlock):
            document.add_heading(block.text, block.level)
        elif isinstance(block, ParagraphBlock):
            document.add_paragraph(block.text)
        elif isinstance(block, ListBlock):
            style = "List Number" if block.ordered else "List Bullet"
            instance = lists.new_instance(style)
            for item in block.items:
                lists.number(document.add_paragraph(item, style=style), instance)
        elif isinstance(block, TableBlock):
            _table(document, block)
        elif isinstance(block, ImageBlock):
            data = images[block.path]
            check_image(block.path, data)
            width = Cm(block.width_cm or DEFAULT_IMAGE_WIDTH_CM)
            try:
                document.add_picture(io.BytesIO(data), width=width)
            except Exception:
                raise RenderFailed(
                    "image-unsupported", f"{block.path} could not be read as an image"
                ) from None
            if block.caption:
                document.add_paragraph(block.caption, style="Caption")
        else:
            document.add_page_break()
    section = document.sections[0]
    if spec.header is not None:
        _band(section.header.paragraphs[0], spec.header, spec)
    if spec.footer is not None:
        _band(section.footer.paragraphs[0], spec.footer, spec)
    buffer = io.BytesIO()
    document.save(buffer)
    return _deterministic(buffer.getvalue())


def _core_properties(document: Any, spec: DocSpec) -> None:
    stamp = spec.properties.stamp()
    props = document.core_properties
    props.title = spec.title
    props.author = spec.properties.author
    props.last_modified_by = spec.properties.author
    props.subject = spec.properties.subject
    props.keywords = spec.properties.keywords
    props.comments = ""
    props.category = ""
    props.created = stamp
    props.modified = stamp
    props.last_printed = stamp
    props.revision = 1


def _table(document: Any, block: TableBlock) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    rows = ([block.header] if block.header else []) + block.rows
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Table Grid"
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    if block.header:
        # The header row repeats on every page the table spans, and reads as a header.
        properties = table.rows[0]._tr.get_or_add_trPr()
        marker = OxmlElement("w:tblHeader")
        marker.set(qn("w:val"), "true")
        properties.append(marker)
        for cell in table.rows[0].cells:
            for run in cell.paragraphs[0].runs:
                run.bold = True


class _Numbering:
    """One ``w:num`` per list block, over the abstract numbering its style names."""

    def __init__(self, document: Any) -> None:
        self._document = document
        self._part = document.part.numbering_part.element

    def new_instance(self, style_name: str) -> int:
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        style = self._document.styles[style_name].element
        num_id = style.find(qn("w:pPr") + "/" + qn("w:numPr") + "/" + qn("w:numId"))
        base = num_id.get(qn("w:val"))
        abstract = next(
            n.find(qn("w:abstractNumId")).get(qn("w:val"))
            for n in self._part.findall(qn("w:num"))
            if n.get(qn("w:numId")) == base
        )
        used = [int(n.get(qn("w:numId"))) for n in self._part.findall(qn("w:num"))]
        number = max(used, default=0) + 1
        num = OxmlElement("w:num")
        num.set(qn("w:numId"), str(number))
        link = OxmlElement("w:abstractNumId")
        link.set(qn("w:val"), abstract)
        num.append(link)
        override = OxmlElement("w:lvlOverride")
        override.set(qn("w:ilvl"), "0")
        start = OxmlElement("w:startOverride")
        start.set(qn("w:val"), "1")
        override.append(start)
        num.append(override)
        self._part.append(num)
        return number

    def number(self, paragraph: Any, instance: int) -> None:
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        properties = paragraph._p.get_or_add_pPr()
        numbering = OxmlElement("w:numPr")
        level = OxmlElement("w:ilvl")
        level.set(qn("w:val"), "0")
        number = OxmlElement("w:numId")
        number.set(qn("w:val"), str(instance))
        numbering.append(level)
        numbering.append(number)
        # numPr follows pStyle in CT_PPr's sequence.
        style = properties.find(qn("w:pStyle"))
        if style is not None:
            style.addnext(numbering)
        else:
            properties.insert(0, numbering)


def _band(paragraph: Any, band: Band, spec: DocSpec) -> None:
    for kind, value in band.pieces():
        if kind == "text":
            paragraph.add_run(value)
        else:
            shown = spec.properties.stamp().date().isoformat() if value == "date" else "1"
            _field(paragraph, FIELD_INSTRUCTIONS[value], shown)


def _field(paragraph: Any, instruction: str, shown: str) -> None:
    """A complex field: begin, instruction, separate, its last shown result, end."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    def char(kind: str) -> None:
        mark = OxmlElement("w:fldChar")
        mark.set(qn("w:fldCharType"), kind)
        paragraph.add_run()._r.append(mark)

    char("begin")
    text = OxmlElement("w:instrText")
    text.set(qn("xml:space"), "preserve")
    text.text = f" {instruction} "
    paragraph.add_run()._r.append(text)
    char("separate")
    paragraph.add_run(shown)
    char("end")


def _deterministic(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    # The template's thumbnail shows python-docx's blank page, not this document.
    if entries.pop(TEMPLATE_THUMBNAIL, None) is not None:
        entries["_rels/.rels"] = re.sub(
            rb'<Relationship [^>]*Target="/?'
            + re.escape(TEMPLATE_THUMBNAIL.encode())
            + rb'"[^>]*/>',
            b"",
            entries["_rels/.rels"],
        )
    return write_archive(entries)
