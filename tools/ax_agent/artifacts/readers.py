"""Identify a document by its bytes and read it into one summary shape.

Identification is by magic bytes and, for an OOXML archive, by the main part's
content type in ``[Content_Types].xml``: never by the file's name. ``read``
never raises: whatever goes wrong becomes an ``unsupported`` summary whose
reasons name the failure, not the content.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Literal

from . import xmlsafe
from .container import CONTENT_TYPES, ZIP_MAGIC, Archive
from .errors import (
    DOC_MAX_BYTES,
    DOCS_EXTRA_CURE,
    PDF_MAX_PAGES,
    PDF_READ_BUDGET_S,
    SUMMARY_TEXT_MAX_CHARS,
    ToolchainUnavailable,
    Unsupported,
)

Coverage = Literal["full", "partial", "structural", "unsupported"]
Kind = Literal["docx", "xlsx", "pptx", "pdf"]

PDF_MAGIC = b"%PDF-"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_OOXML = "application/vnd.openxmlformats-officedocument."
MAIN_TYPES: dict[str, Kind] = {
    _OOXML + "wordprocessingml.document.main+xml": "docx",
    "application/vnd.ms-word.document.macroEnabled.main+xml": "docx",
    _OOXML + "spreadsheetml.sheet.main+xml": "xlsx",
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml": "xlsx",
    _OOXML + "presentationml.presentation.main+xml": "pptx",
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml": "pptx",
}
HEADER_TYPE = _OOXML + "wordprocessingml.header+xml"
FOOTER_TYPE = _OOXML + "wordprocessingml.footer+xml"
STYLES_TYPE = _OOXML + "wordprocessingml.styles+xml"
SHEET_TYPE = _OOXML + "spreadsheetml.worksheet+xml"
SHARED_STRINGS_TYPE = _OOXML + "spreadsheetml.sharedStrings+xml"
SLIDE_TYPE = _OOXML + "presentationml.slide+xml"
# Word parts beside the body that the DOCX reader does not read: their presence makes it partial.
NOTE_TYPES = {
    _OOXML + "wordprocessingml.footnotes+xml": "footnotes",
    _OOXML + "wordprocessingml.endnotes+xml": "endnotes",
    _OOXML + "wordprocessingml.comments+xml": "comments",
}
_HEADING_NAME = re.compile(r"heading ([1-9])")
_FIELD_WORD = re.compile(r"[A-Z]+")


@dataclass(frozen=True)
class Heading:
    level: int  # 0: the title
    text: str


@dataclass
class Summary:
    """What a reader found; ``coverage`` first, so no depth is ever implied."""

    coverage: Coverage
    reasons: list[str] = field(default_factory=list)
    kind: Kind | None = None
    bytes: int = 0
    # Pages (PDF), slides (PPTX), sheets (XLSX); None for DOCX, which has no fixed pages.
    units: int | None = None
    outline: list[Heading] = field(default_factory=list)
    # Each table's (rows, columns), in document order.
    tables: list[tuple[int, int]] = field(default_factory=list)
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "reasons": self.reasons,
            "kind": self.kind,
            "bytes": self.bytes,
            "units": self.units,
            "outline": [{"level": h.level, "text": h.text} for h in self.outline],
            "tables": [{"rows": r, "columns": c} for r, c in self.tables],
            "text": self.text,
        }


@dataclass
class Part:
    """One header or footer part: the fields its runs hold (PAGE, NUMPAGES, DATE)."""

    name: str
    fields: set[str]
    text: str = ""


@dataclass
class DocxStructure:
    """A DOCX parsed back, for validation: what the document part and its parts hold."""

    outline: list[Heading]
    tables: list[tuple[int, int]]
    # Each table's cells per row: a row short of cells is a mismatch, not a narrower table.
    row_widths: list[list[int]]
    images: int
    # Relationship ids the document names that lead to no part of the package.
    dangling: list[str]
    headers: list[Part]
    footers: list[Part]
    # Each list paragraph's numbering instance (w:numId), in document order.
    list_instances: list[str]
    text: str


def identify(data: bytes) -> tuple[Kind, Archive | None]:
    """The document kind of ``data`` (and its archive, for OOXML), or Unsupported."""
    if len(data) > DOC_MAX_BYTES:
        raise Unsupported("too-large", f"the file is over {DOC_MAX_BYTES} bytes")
    if data.startswith(PDF_MAGIC):
        return "pdf", None
    if data.startswith(OLE_MAGIC):
        raise Unsupported(
            "not-a-document",
            "an OLE compound file (a legacy .doc/.xls/.ppt, or an encrypted Office file); "
            "save it as DOCX, XLSX, PPTX or PDF",
        )
    if not data.startswith(ZIP_MAGIC):
        raise Unsupported(
            "not-a-document", "its first bytes are not those of a DOCX, XLSX, PPTX or PDF"
        )
    archive = Archive(data)
    if not archive.has(CONTENT_TYPES):
        raise Unsupported("not-a-document", "a zip archive without OOXML content types")
    return _main_kind(archive), archive


def _main_kind(archive: Archive) -> Kind:
    kinds = {MAIN_TYPES[t] for t in _content_types(archive).values() if t in MAIN_TYPES}
    if len(kinds) != 1:
        raise Unsupported(
            "not-a-document", "an OOXML package without one Word, Excel or PowerPoint main part"
        )
    return kinds.pop()


def _content_types(archive: Archive) -> dict[str, str]:
    """Part name (without the leading slash) -> content type, from the overrides."""
    root = xmlsafe.parse(archive.read(CONTENT_TYPES, "content types part"), "content types part")
    found: dict[str, str] = {}
    for override in root.iter(f"{CT}Override"):
        name = override.get("PartName", "").lstrip("/")
        kind = override.get("ContentType", "")
        if name and archive.has(name):
            found[name] = kind
    return found


def read(data: bytes) -> Summary:
    """The summary of ``data``; never raises."""
    try:
        kind, archive = identify(data)
        if kind == "pdf":
            summary = _read_pdf(data)
        elif kind == "docx" and archive is not None:
            summary = _summary_of_docx(docx_structure(archive), _content_types(archive))
        elif archive is not None:
            summary = _read_sheets_or_slides(kind, archive)
        summary.kind = kind
    except Unsupported as failure:
        summary = Summary("unsupported", [f"{failure.code}: {failure.reason}"])
    except RecursionError:
        summary = Summary("unsupported", ["malformed: the document nests too deeply"])
    except Exception:
        # A reader's own slip on odd input still answers, and its message (which could
        # quote the input) is not kept.
        summary = Summary("unsupported", ["malformed: the document could not be read"])
    summary.bytes = len(data)
    return summary


def docx_structure(archive: Archive) -> DocxStructure:
    types = _content_types(archive)
    main = next(name for name, t in types.items() if MAIN_TYPES.get(t) == "docx")
    root = xmlsafe.parse(archive.read(main, "document part"), "document part")
    rels = _relationships(archive, main)
    styles = _style_names(archive, types)
    body = root.find(f"{W}body")
    outline: list[Heading] = []
    tables: list[tuple[int, int]] = []
    row_widths: list[list[int]] = []
    lines: list[str] = []
    instances: list[str] = []
    for block in _blocks(body):
        if block.tag == f"{W}p":
            text = _paragraph_text(block)
            level = _heading_level(block, styles)
            if level is not None:
                outline.append(Heading(level, text))
                lines.append("#" * max(level, 1) + " " + text)
            else:
                lines.append(text)
            num = block.find(f"{W}pPr/{W}numPr/{W}numId")
            if num is not None:
                instances.append(num.get(f"{W}val", ""))
        elif block.tag == f"{W}tbl":
            rows = block.findall(f"{W}tr")
            widths = [len(row.findall(f"{W}tc")) for row in rows]
            tables.append((len(rows), max(widths, default=0)))
            row_widths.append(widths)
            for row in rows:
                cells = (_paragraphs_text(cell) for cell in row.findall(f"{W}tc"))
                lines.append(" | ".join(cells))
    named = {
        value
        for element in root.iter()
        for key, value in element.attrib.items()
        if key in (f"{R}embed", f"{R}id", f"{R}link")
    }
    images = sum(1 for element in root.iter(f"{A}blip"))
    headers = _parts(archive, types, rels, root, "headerReference", HEADER_TYPE)
    footers = _parts(archive, types, rels, root, "footerReference", FOOTER_TYPE)
    return DocxStructure(
        outline=outline,
        tables=tables,
        row_widths=row_widths,
        images=images,
        dangling=sorted(rid for rid in named if rid not in rels),
        headers=headers,
        footers=footers,
        list_instances=instances,
        text="\n".join(
            [f"[header] {p.text}" for p in headers if p.text.strip()]
            + lines
            + [f"[footer] {p.text}" for p in footers if p.text.strip()]
        ),
    )


def _blocks(container: ET.Element | None) -> list[ET.Element]:
    """The body's paragraphs and tables in order, content controls and custom XML opened."""
    found: list[ET.Element] = []
    for child in list(container) if container is not None else []:
        if child.tag == f"{W}sdt":
            found += _blocks(child.find(f"{W}sdtContent"))
        elif child.tag == f"{W}customXml":
            found += _blocks(child)
        else:
            found.append(child)
    return found


def _summary_of_docx(found: DocxStructure, types: dict[str, str]) -> Summary:
    summary = Summary("full", outline=found.outline, tables=found.tables)
    _set_text(summary, found.text)
    if found.images:
        summary.reasons.append(f"{found.images} images are counted, not described")
    unread = sorted({role for t in types.values() if (role := NOTE_TYPES.get(t))})
    if unread:
        summary.coverage = "partial" if summary.coverage == "full" else summary.coverage
        summary.reasons.append(f"body, headers and footers read; {', '.join(unread)} not read")
    return summary


def _relationships(archive: Archive, part: str) -> dict[str, str]:
    """Relationship id -> target part name (None-free: external targets are kept as-is)."""
    folder, _, base = part.rpartition("/")
    rels_name = f"{folder}/_rels/{base}.rels" if folder else f"_rels/{base}.rels"
    if not archive.has(rels_name):
        return {}
    root = xmlsafe.parse(archive.read(rels_name, "relationships part"), "relationships part")
    found: dict[str, str] = {}
    for rel in root.iter(f"{PKG_REL}Relationship"):
        target = rel.get("Target", "")
        if rel.get("TargetMode") == "External":
            found[rel.get("Id", "")] = target
            continue
        resolved = _join(folder, target)
        if resolved is not None and archive.has(resolved):
            found[rel.get("Id", "")] = resolved
    return found


def _join(folder: str, target: str) -> str | None:
    parts = [] if target.startswith("/") else [p for p in folder.split("/") if p]
    for piece in target.lstrip("/").split("/"):
        if piece == "..":
            if not parts:
                return None
            parts.pop()
        elif piece not in ("", "."):
            parts.append(piece)
    return "/".join(parts)


def _style_names(archive: Archive, types: dict[str, str]) -> dict[str, str]:
    name = next((n for n, t in types.items() if t == STYLES_TYPE), None)
    if name is None:
        return {}
    root = xmlsafe.parse(archive.read(name, "styles part"), "styles part")
    found: dict[str, str] = {}
    for style in root.iter(f"{W}style"):
        label = style.find(f"{W}name")
        if label is not None:
            found[style.get(f"{W}styleId", "")] = label.get(f"{W}val", "").lower()
    return found


def _heading_level(paragraph: ET.Element, styles: dict[str, str]) -> int | None:
    style = paragraph.find(f"{W}pPr/{W}pStyle")
    if style is None:
        return None
    name = styles.get(style.get(f"{W}val", ""), "")
    if name == "title":
        return 0
    matched = _HEADING_NAME.fullmatch(name)
    return int(matched.group(1)) if matched else None


def _paragraph_text(paragraph: ET.Element) -> str:
    pieces: list[str] = []
    for element in paragraph.iter():
        if element.tag == f"{W}t":
            pieces.append(element.text or "")
        elif element.tag == f"{W}tab":
            pieces.append("\t")
        elif element.tag in (f"{W}br", f"{W}cr"):
            pieces.append("\n")
    return "".join(pieces)


def _paragraphs_text(container: ET.Element) -> str:
    return " ".join(_paragraph_text(p) for p in container.iter(f"{W}p"))


def _parts(
    archive: Archive,
    types: dict[str, str],
    rels: dict[str, str],
    root: ET.Element,
    reference: str,
    content_type: str,
) -> list[Part]:
    found: list[Part] = []
    for ref in root.iter(f"{W}{reference}"):
        target = rels.get(ref.get(f"{R}id", ""))
        if target is None or types.get(target) != content_type or target in (p.name for p in found):
            continue
        part = xmlsafe.parse(archive.read(target, "header or footer part"), "header or footer")
        instructions = [e.text or "" for e in part.iter(f"{W}instrText")]
        instructions += [e.get(f"{W}instr", "") for e in part.iter(f"{W}fldSimple")]
        words = {m.group(0) for text in instructions for m in [_FIELD_WORD.search(text)] if m}
        found.append(Part(target, words, _paragraphs_text(part)))
    return found


def _read_sheets_or_slides(kind: Kind, archive: Archive) -> Summary:
    types = _content_types(archive)
    wanted = SHEET_TYPE if kind == "xlsx" else SLIDE_TYPE
    shared = _shared_strings(archive, types) if kind == "xlsx" else []
    label = "Sheet" if kind == "xlsx" else "Slide"
    lines: list[str] = []
    parts = _in_order(archive, types, kind, wanted)
    for number, (name, title) in enumerate(parts, 1):
        root = xmlsafe.parse(archive.read(name, f"{label.lower()} part"), f"{label.lower()} part")
        lines.append(f"## {label} {number}" + (f": {title}" if title else ""))
        lines += _sheet_rows(root, shared) if kind == "xlsx" else _slide_lines(root)
    summary = Summary("full", units=len(parts))
    _set_text(summary, "\n".join(lines))
    if kind == "xlsx":
        summary.reasons.append("formulas are shown by their last saved values")
    else:
        summary.reasons.append("slide text only: pictures, charts and notes are not read")
        summary.coverage = "partial" if summary.coverage == "full" else summary.coverage
    return summary


def _in_order(
    archive: Archive, types: dict[str, str], kind: Kind, wanted: str
) -> list[tuple[str, str]]:
    """(part, sheet name) of each sheet or slide, in the order the workbook or deck lists
    them; parts it does not list follow in the order of their names."""
    main = next(name for name, t in types.items() if MAIN_TYPES.get(t) == kind)
    rels = _relationships(archive, main)
    root = xmlsafe.parse(archive.read(main, "main part"), "main part")
    listed = root.iter(f"{S}sheet") if kind == "xlsx" else root.iter(f"{P}sldId")
    ordered: list[tuple[str, str]] = []
    for entry in listed:
        target = rels.get(entry.get(f"{R}id", ""))
        if target is not None and types.get(target) == wanted and target not in dict(ordered):
            ordered.append((target, entry.get("name", "")))
    seen = dict(ordered)
    rest = sorted((n for n, t in types.items() if t == wanted and n not in seen), key=_natural)
    return ordered + [(name, "") for name in rest]


def _natural(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name.rpartition("/")[2])
    return (int(digits[-1]) if digits else 0, name)


def _shared_strings(archive: Archive, types: dict[str, str]) -> list[str]:
    name = next((n for n, t in types.items() if t == SHARED_STRINGS_TYPE), None)
    if name is None:
        return []
    root = xmlsafe.parse(archive.read(name, "shared strings part"), "shared strings part")
    return ["".join(t.text or "" for t in item.iter(f"{S}t")) for item in root.iter(f"{S}si")]


def _sheet_rows(root: ET.Element, shared: list[str]) -> list[str]:
    rows: list[str] = []
    for row in root.iter(f"{S}row"):
        cells: list[str] = []
        for cell in row.iter(f"{S}c"):
            value = cell.find(f"{S}v")
            if cell.get("t") == "s" and value is not None and (value.text or "").isdigit():
                index = int(value.text or "0")
                cells.append(shared[index] if index < len(shared) else "")
            elif cell.get("t") == "inlineStr":
                cells.append("".join(t.text or "" for t in cell.iter(f"{S}t")))
            else:
                cells.append(value.text or "" if value is not None else "")
        rows.append("\t".join(cells))
    return rows


def _slide_lines(root: ET.Element) -> list[str]:
    return [
        "".join(t.text or "" for t in paragraph.iter(f"{A}t")) for paragraph in root.iter(f"{A}p")
    ]


def _set_text(summary: Summary, text: str) -> None:
    if len(text) > SUMMARY_TEXT_MAX_CHARS:
        summary.text = text[:SUMMARY_TEXT_MAX_CHARS]
        summary.coverage = "partial"
        summary.reasons.append(
            f"the text was cut at {SUMMARY_TEXT_MAX_CHARS} of {len(text)} characters"
        )
    else:
        summary.text = text


def pdf_reader(data: bytes) -> Any:
    """pypdf's reader of ``data``, decrypted with the empty password if it must be."""
    import logging

    try:
        import pypdf
    except ImportError:
        raise ToolchainUnavailable(f"reading PDF needs pypdf: {DOCS_EXTRA_CURE}") from None
    # pypdf logs what it repairs, sometimes quoting the file; nothing of it may leak out.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unsupported("encrypted", "the PDF is encrypted with a password")
        len(reader.pages)
    except Unsupported:
        raise
    except Exception:
        # pypdf's messages can quote the file, so only the fact of failure is kept.
        raise Unsupported("malformed", "the PDF's structure does not parse") from None
    return reader


def _read_pdf(data: bytes) -> Summary:
    reader = pdf_reader(data)
    total = len(reader.pages)
    deadline = time.monotonic() + PDF_READ_BUDGET_S
    texts: list[str] = []
    chars = failed = blank = looked = 0
    stopped = ""
    for index in range(min(total, PDF_MAX_PAGES)):
        if chars > SUMMARY_TEXT_MAX_CHARS:
            stopped = f"the text cap of {SUMMARY_TEXT_MAX_CHARS} characters"
            break
        if time.monotonic() > deadline:
            stopped = f"the {PDF_READ_BUDGET_S:g} s budget for extracting text"
            break
        text, ok = page_text(reader, index)
        looked += 1
        failed += not ok
        blank += not text.strip()
        texts.append(f"## Page {index + 1}\n{text}")
        chars += len(texts[-1]) + 1
    summary = Summary("full", units=total, outline=_pdf_outline(reader))
    _set_text(summary, "\n".join(texts))
    if looked < total:
        why = stopped or f"the cap of {PDF_MAX_PAGES} pages"
        summary.coverage = "partial"
        summary.reasons.append(f"only the first {looked} of {total} pages were read ({why})")
    if failed:
        summary.coverage = "partial"
        summary.reasons.append(f"the text of {failed} pages could not be extracted")
    if looked and blank == looked:
        summary.coverage = "structural"
        summary.reasons.append(
            "no page read has a text layer (scanned?): only the page count and outline were read"
        )
    elif blank > failed:
        summary.coverage = "partial"
        summary.reasons.append(f"{blank - failed} pages have no text layer")
    return summary


def page_text(reader: Any, index: int) -> tuple[str, bool]:
    """The text of page ``index`` and whether it could be extracted."""
    try:
        return reader.pages[index].extract_text() or "", True
    except Exception:
        return "", False


def _pdf_outline(reader: Any) -> list[Heading]:
    found: list[Heading] = []

    def walk(items: Any, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
            elif len(found) < PDF_MAX_PAGES:
                found.append(Heading(level, str(getattr(item, "title", ""))))

    # pypdf raises on a malformed outline: what was read before it stands, and the pages
    # are read apart from it.
    with contextlib.suppress(Exception):
        walk(reader.outline, 1)
    return found
