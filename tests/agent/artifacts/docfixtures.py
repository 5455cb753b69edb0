"""Real documents built in memory for the pack's tests: OOXML zips and a minimal PDF."""

from __future__ import annotations

import io
import zipfile

CT_NS = "http://schemas.openxmlformats.org/package/2006/content-types"
OOXML = "application/vnd.openxmlformats-officedocument."


def ooxml(parts: dict[str, tuple[str | None, str]]) -> bytes:
    """A zip of ``parts`` (name -> (content type or None, xml)) with its content types."""
    overrides = "".join(
        f'<Override PartName="/{name}" ContentType="{kind}"/>'
        for name, (kind, _) in parts.items()
        if kind
    )
    types = (
        f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{CT_NS}">'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f"{overrides}</Types>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", types)
        for name, (_, xml) in parts.items():
            archive.writestr(name, xml)
    return buffer.getvalue()


def xlsx(rows: list[list[str]]) -> bytes:
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    strings = [cell for row in rows for cell in row]
    shared = "".join(f"<si><t>{s}</t></si>" for s in strings)
    index = iter(range(len(strings)))
    body = "".join(
        "<row>" + "".join(f'<c t="s"><v>{next(index)}</v></c>' for _ in row) + "</row>"
        for row in rows
    )
    return ooxml(
        {
            "xl/workbook.xml": (
                OOXML + "spreadsheetml.sheet.main+xml",
                f'<workbook xmlns="{ns}"/>',
            ),
            "xl/sharedStrings.xml": (
                OOXML + "spreadsheetml.sharedStrings+xml",
                f'<sst xmlns="{ns}">{shared}</sst>',
            ),
            "xl/worksheets/sheet1.xml": (
                OOXML + "spreadsheetml.worksheet+xml",
                f'<worksheet xmlns="{ns}"><sheetData>{body}</sheetData></worksheet>',
            ),
        }
    )


def pptx(slides: list[list[str]]) -> bytes:
    p = "http://schemas.openxmlformats.org/presentationml/2006/main"
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    parts: dict[str, tuple[str | None, str]] = {
        "ppt/presentation.xml": (
            OOXML + "presentationml.presentation.main+xml",
            f'<p:presentation xmlns:p="{p}"/>',
        )
    }
    for number, lines in enumerate(slides, 1):
        paras = "".join(f"<a:p><a:r><a:t>{line}</a:t></a:r></a:p>" for line in lines)
        parts[f"ppt/slides/slide{number}.xml"] = (
            OOXML + "presentationml.slide+xml",
            f'<p:sld xmlns:p="{p}" xmlns:a="{a}"><p:txBody>{paras}</p:txBody></p:sld>',
        )
    return ooxml(parts)


def pdf(pages: list[list[str]]) -> bytes:
    """A minimal, valid PDF whose pages show ``pages``' lines in Helvetica."""
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: pages (filled in below)
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for lines in pages:
        ops = (
            "BT /F1 14 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -20 Td" for line in lines) + " ET"
        )
        stream = ops.encode()
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content, font)
        )
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[1] = b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % len(kids)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def docx(headings: list[tuple[int, str]], table: tuple[int, int] | None = None) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for level, text in headings:
        document.add_heading(text, level)
        document.add_paragraph(f"About {text}.")
    if table:
        document.add_table(rows=table[0], cols=table[1])
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
