"""The documents pack's readers: identified by bytes, opened in memory, capped, never
throwing, and never echoing a byte of what they refused."""

from __future__ import annotations

import io
import zipfile

import pytest
from agent.artifacts import docfixtures as make

from ax_agent.artifacts import container, readers, xmlsafe
from ax_agent.artifacts.errors import Unsupported

SECRET = "AKIA-hunter2-do-not-leak"
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
DOCX_MAIN = make.OOXML + "wordprocessingml.document.main+xml"


def docx_with_body(body: str, prolog: str = "") -> bytes:
    xml = f'{prolog}<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>'
    return make.ooxml({"word/document.xml": (DOCX_MAIN, xml)})


def test_the_summary_leads_with_the_coverage_verdict() -> None:
    summary = readers.read(make.docx([(1, "Intro")]))
    assert next(iter(summary.to_json())) == "coverage"
    assert summary.coverage == "full"


def test_a_docx_gives_its_outline_and_table_shapes() -> None:
    summary = readers.read(make.docx([(0, "Report"), (1, "Intro"), (2, "Detail")], (3, 2)))
    assert summary.kind == "docx"
    assert [(h.level, h.text) for h in summary.outline] == [
        (0, "Report"),
        (1, "Intro"),
        (2, "Detail"),
    ]
    assert summary.tables == [(3, 2)]
    assert "About Intro." in summary.text


def test_xlsx_and_pptx_give_their_text() -> None:
    sheet = readers.read(make.xlsx([["name", "total"], ["ada", "42"]]))
    assert (sheet.kind, sheet.units, sheet.coverage) == ("xlsx", 1, "full")
    assert "ada\t42" in sheet.text
    deck = readers.read(make.pptx([["Roadmap"], ["Q3 goals"]]))
    assert (deck.kind, deck.units) == ("pptx", 2)
    assert "Q3 goals" in deck.text
    # Slides carry pictures and notes this reader skips: it says so.
    assert deck.coverage == "partial" and deck.reasons


def test_a_pdf_gives_pages_and_text_and_a_blank_one_is_structural() -> None:
    summary = readers.read(make.pdf([["Hello page one"], ["Second page"]]))
    assert (summary.kind, summary.units, summary.coverage) == ("pdf", 2, "full")
    assert "Second page" in summary.text
    scanned = readers.read(make.pdf([[], []]))
    assert scanned.coverage == "structural" and scanned.units == 2
    half = readers.read(make.pdf([["text"], []]))
    assert half.coverage == "partial"


def test_an_encrypted_pdf_is_unsupported() -> None:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make.pdf([[SECRET]]))))
    writer.encrypt("pw")
    out = io.BytesIO()
    writer.write(out)
    summary = readers.read(out.getvalue())
    assert summary.coverage == "unsupported"
    assert summary.reasons[0].startswith("encrypted:")


@pytest.mark.parametrize(
    "data",
    [
        f"OPENAI_API_KEY={SECRET}\n".encode(),
        b"PK\x03\x04" + SECRET.encode(),
        b"%PDF-" + SECRET.encode(),
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + SECRET.encode(),
        docx_with_body(f"<w:p><w:r><w:t>{SECRET}</w:t></w:r>"),  # not well-formed
        make.ooxml({"notes.txt": (None, SECRET)}),  # a zip, but no main part
    ],
    ids=["dotenv", "zip-magic", "pdf-magic", "ole", "bad-xml", "no-main-part"],
)
def test_a_refusal_echoes_no_byte_of_the_file(data: bytes) -> None:
    summary = readers.read(data)
    assert summary.coverage == "unsupported"
    assert SECRET not in repr(summary.to_json())
    assert "hunter2" not in repr(summary.to_json())


def test_identification_ignores_the_content_types_default_and_the_name() -> None:
    # A Word main part is named only by an Override; a zip that merely holds document.xml
    # under a Default content type is not a DOCX.
    fake = make.ooxml({"word/document.xml": (None, f'<w:document xmlns:w="{W_NS}"/>')})
    assert readers.read(fake).reasons[0].startswith("not-a-document:")


@pytest.mark.parametrize(
    "name", ["../evil.xml", "/abs.xml", "a\\b.xml", "C:/x.xml", "a//b", "x/./y"]
)
def test_an_entry_name_that_could_leave_the_archive_is_refused(name: str) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(zipfile.ZipInfo(name), "x")
    summary = readers.read(buffer.getvalue())
    assert summary.reasons == [
        "bad-entry-name: an entry name is absolute, climbs out or is malformed"
    ]


def test_entries_are_capped_by_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container, "ZIP_MAX_ENTRIES", 3)
    parts = {f"p{i}.xml": (None, "<a/>") for i in range(3)}
    assert readers.read(make.ooxml(parts)).reasons[0].startswith("too-many-entries:")


def test_a_stored_entry_is_capped_by_its_compressed_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container, "ZIP_ENTRY_MAX_BYTES", 1000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", "x" * 1500)
    assert readers.read(buffer.getvalue()).reasons[0].startswith("too-large:")


def test_a_deflated_entry_is_capped_by_its_original_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container, "ZIP_ENTRY_MAX_BYTES", 1000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", " " * 100_000)  # deflates to ~100 bytes
    assert readers.read(buffer.getvalue()).reasons[0].startswith("too-large:")


def test_an_entry_inflating_past_its_declared_size_is_cut_off() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", " " * 100_000)
    data = bytearray(buffer.getvalue())
    # Lie in the central directory: the entry claims 10 bytes.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    summary = readers.read(bytes(data))
    assert summary.coverage == "unsupported"
    assert summary.reasons[0].split(":")[0] in {"too-large", "malformed"}


def test_nothing_is_ever_extracted(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a reader extracted an entry to disk")

    monkeypatch.setattr(zipfile.ZipFile, "extract", refuse)
    monkeypatch.setattr(zipfile.ZipFile, "extractall", refuse)
    assert readers.read(make.docx([(1, "Intro")], (2, 2))).coverage == "full"
    assert readers.read(make.xlsx([["a"]])).coverage == "full"


def test_a_dtd_or_entity_declaration_is_refused_before_any_expansion() -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE w:document ['
        '<!ENTITY a "' + SECRET + '"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    )
    summary = readers.read(docx_with_body("<w:p><w:r><w:t>&b;</w:t></w:r></w:p>", laughs))
    assert summary.reasons[0].startswith("unsafe-xml:")
    assert SECRET not in repr(summary.to_json())


def test_xml_nesting_is_bounded() -> None:
    deep = "<a>" * 300 + "</a>" * 300
    with pytest.raises(Unsupported) as raised:
        xmlsafe.parse(deep.encode(), "part")
    assert raised.value.code == "unsafe-xml"
    xmlsafe.parse(("<a>" * 100 + "</a>" * 100).encode(), "part")


def test_a_document_part_too_deep_for_the_walk_is_unsupported_not_a_crash() -> None:
    body = "<w:p>" + "<w:r>" * 250 + "</w:r>" * 250 + "</w:p>"
    assert readers.read(docx_with_body(body)).coverage in {"full", "unsupported"}


def test_a_readers_own_slip_is_an_unsupported_verdict_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slip(*_args: object) -> None:
        raise ValueError(f"cannot parse {SECRET}")

    monkeypatch.setattr(readers, "_read_sheets_or_slides", slip)
    summary = readers.read(make.xlsx([["a"]]))
    assert summary.reasons == ["malformed: the document could not be read"]
    assert SECRET not in repr(summary.to_json())


def test_content_controls_are_read_and_unread_note_parts_make_it_partial() -> None:
    body = (
        "<w:sdt><w:sdtContent><w:p><w:r><w:t>inside a control</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt><w:p><w:r><w:t>after</w:t></w:r></w:p>"
    )
    summary = readers.read(docx_with_body(body))
    assert summary.coverage == "full"
    assert summary.text == "inside a control\nafter"
    xml = f'<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>'
    with_notes = make.ooxml(
        {
            "word/document.xml": (DOCX_MAIN, xml),
            "word/footnotes.xml": (
                make.OOXML + "wordprocessingml.footnotes+xml",
                f'<w:footnotes xmlns:w="{W_NS}"/>',
            ),
        }
    )
    summary = readers.read(with_notes)
    assert summary.coverage == "partial"
    assert "footnotes not read" in summary.reasons[-1]


def test_pdf_text_extraction_stops_at_its_time_budget_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readers, "PDF_READ_BUDGET_S", -1.0)
    summary = readers.read(make.pdf([["one"], ["two"]]))
    assert (summary.coverage, summary.units) == ("partial", 2)
    assert summary.reasons == [
        "only the first 0 of 2 pages were read (the -1 s budget for extracting text)"
    ]


def test_pdf_text_extraction_stops_at_the_text_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers, "SUMMARY_TEXT_MAX_CHARS", 10)
    summary = readers.read(make.pdf([["a long first page"], ["two"], ["three"]]))
    assert summary.coverage == "partial"
    assert any("only the first 1 of 3 pages" in reason for reason in summary.reasons)


def test_sheets_come_in_the_workbooks_order_with_their_names() -> None:
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    r_ns = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    rel_ns = "http://schemas.openxmlformats.org/package/2006/relationships"
    sheet = make.OOXML + "spreadsheetml.worksheet+xml"

    def cells(text: str) -> str:
        row = f'<row><c t="inlineStr"><is><t>{text}</t></is></c></row>'
        return f'<worksheet xmlns="{ns}"><sheetData>{row}</sheetData></worksheet>'

    workbook = (
        f'<workbook xmlns="{ns}" xmlns:r="{r_ns}"><sheets>'
        '<sheet name="Totals" r:id="rId2"/><sheet name="Raw" r:id="rId1"/></sheets></workbook>'
    )
    rels = (
        f'<Relationships xmlns="{rel_ns}">'
        '<Relationship Id="rId1" Target="worksheets/sheet1.xml" Type="x"/>'
        '<Relationship Id="rId2" Target="worksheets/sheet2.xml" Type="x"/></Relationships>'
    )
    data = make.ooxml(
        {
            "xl/workbook.xml": (make.OOXML + "spreadsheetml.sheet.main+xml", workbook),
            "xl/_rels/workbook.xml.rels": (None, rels),
            "xl/worksheets/sheet1.xml": (sheet, cells("raw data")),
            "xl/worksheets/sheet2.xml": (sheet, cells("the total")),
        }
    )
    summary = readers.read(data)
    assert summary.text == "## Sheet 1: Totals\nthe total\n## Sheet 2: Raw\nraw data"
