"""DOCX rendering is byte-deterministic and validated against its spec, model-free."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from agent.artifacts import docfixtures as make
from agent.tools.test_view_image import png

from ax_agent.artifacts import docspec, docx_render, pdf, validate
from ax_agent.artifacts.container import FIXED_ZIP_TIME, write_archive
from ax_agent.artifacts.docspec import load_spec

TESTS = Path(__file__).resolve().parents[2]

SPEC: dict[str, Any] = {
    "title": "Quarterly report",
    "properties": {"author": "ax", "created": "2026-12-01"},
    "header": {"text": "Quarterly report, {date}"},
    "footer": {"text": "Page {pageNumber} of {totalPages}"},
    "blocks": [
        {"kind": "heading", "text": "Summary", "level": 1},
        {"kind": "paragraph", "text": "Revenue grew."},
        {"kind": "list", "ordered": True, "items": ["one", "two"]},
        {"kind": "list", "ordered": True, "items": ["again"]},
        {"kind": "table", "header": ["Region", "Total"], "rows": [["EU", "10"], ["US", "12"]]},
        {"kind": "pageBreak"},
        {"kind": "heading", "text": "Details", "level": 2},
        {"kind": "image", "path": "chart.png", "widthCm": 5, "caption": "Figure 1"},
    ],
}
IMAGES = {"chart.png": png(4, 4)}


def spec(**changes: Any) -> docspec.DocSpec:
    return load_spec(json.dumps({**SPEC, **changes}).encode())


def test_the_same_spec_renders_the_same_bytes() -> None:
    first = docx_render.render_docx(spec(), IMAGES)
    second = docx_render.render_docx(spec(), IMAGES)
    assert hashlib.sha256(first).digest() == hashlib.sha256(second).digest()
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        infos = archive.infolist()
    assert infos[0].filename == "[Content_Types].xml"
    assert [i.filename for i in infos[1:]] == sorted(i.filename for i in infos[1:])
    assert {i.date_time for i in infos} == {FIXED_ZIP_TIME}


def test_the_same_spec_renders_the_same_bytes_in_another_process(tmp_path: Path) -> None:
    """Another process, with another hash seed: nothing may depend on set or dict order."""
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    program = (
        "import hashlib, json, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from agent.tools.test_view_image import png\n"
        "from ax_agent.artifacts.docspec import load_spec\n"
        "from ax_agent.artifacts.docx_render import render_docx\n"
        "spec = load_spec(open(sys.argv[1], 'rb').read())\n"
        "print(hashlib.sha256(render_docx(spec, {'chart.png': png(4, 4)})).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", program, str(tmp_path / "spec.json")],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("12345",)
    }
    here = hashlib.sha256(docx_render.render_docx(spec(), IMAGES)).hexdigest()
    assert digests == {here}


def test_core_properties_are_the_specs_not_the_clock() -> None:
    data = docx_render.render_docx(spec(), IMAGES)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        core = archive.read("docProps/core.xml").decode()
        names = archive.namelist()
    assert "2026-12-01T00:00:00Z" in core
    assert set(re.findall(r"\d{4}-\d\d-\d\dT[\d:]+Z", core)) == {"2026-12-01T00:00:00Z"}
    # The template's thumbnail shows a blank page, not this document: it is dropped.
    assert "docProps/thumbnail.jpeg" not in names
    other = docx_render.render_docx(spec(properties={"created": "2025-01-02"}), IMAGES)
    assert other != data


def test_a_rendered_docx_validates_against_its_spec() -> None:
    result = validate.validate_docx(spec(), docx_render.render_docx(spec(), IMAGES))
    assert result.failures == [] and result.notes == []


def test_each_list_block_gets_its_own_numbering_instance() -> None:
    from ax_agent.artifacts import readers
    from ax_agent.artifacts.container import Archive

    found = readers.docx_structure(Archive(docx_render.render_docx(spec(), IMAGES)))
    assert len(found.list_instances) == 3
    assert len(set(found.list_instances)) == 2
    assert {"PAGE", "NUMPAGES"} <= found.footers[0].fields
    assert found.headers[0].fields == {"DATE"}


def _edited(data: bytes, part: str, old: bytes, new: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    entries[part], count = re.subn(old, new, entries[part], count=1, flags=re.DOTALL)
    assert count == 1
    return write_archive(entries)


@pytest.mark.parametrize(
    ("part", "old", "new", "expected"),
    [
        ("word/document.xml", b">Details<", b">Detials<", "outline:"),
        ("word/document.xml", rb"<w:tc>.*?</w:tc>", b"", "tables:"),
        ("word/footer1.xml", b" NUMPAGES ", b" SECTIONPAGES ", "footer: no NUMPAGES field"),
        ("word/_rels/document.xml.rels", rb'Target="media/image1\.png"', b'Target="x.png"',
         "dangling references"),
    ],
)  # fmt: skip
def test_a_structural_mismatch_fails(part: str, old: bytes, new: bytes, expected: str) -> None:
    data = _edited(docx_render.render_docx(spec(), IMAGES), part, old, new)
    failures = validate.validate_docx(spec(), data).failures
    assert any(f.startswith(expected) for f in failures), failures


def test_layout_heuristics_are_notes_that_never_fail() -> None:
    wide = spec(
        blocks=[
            {"kind": "heading", "text": "Deep", "level": 3},
            {"kind": "table", "rows": [[str(n) for n in range(9)]]},
        ]
    )
    result = validate.validate_docx(wide, docx_render.render_docx(wide, {}))
    assert result.passed
    assert len(result.notes) == 2


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"blocks": [{"kind": "heading", "text": "A", "level": "1"}]}, "valid integer"),
        ({"blocks": [{"kind": "heading", "text": "A", "level": 1, "style": "x"}]}, "Extra"),
        ({"footer": {"text": "{page}"}}, "unknown field {page}"),
        ({"blocks": [{"kind": "table", "rows": [["a", "b"], ["c"]]}]}, "every row must have 2"),
        ({"properties": {"created": "yesterday"}}, "ISO date"),
        ({"blocks": [{"kind": "video", "path": "x"}]}, "kind"),
    ],
)
def test_the_spec_schema_is_strict(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        spec(**change)


def test_an_image_is_identified_by_its_bytes_not_its_name() -> None:
    from ax_agent.artifacts.errors import RenderFailed

    with pytest.raises(RenderFailed) as raised:
        docx_render.render_docx(spec(), {"chart.png": b"SECRET=hunter2\n"})
    assert raised.value.code == "image-unsupported"
    assert "hunter2" not in str(raised.value)


class _Loads(HTMLParser):
    """Every tag and attribute in a page that could load or run something."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        if tag in {"script", "link", "iframe", "object", "embed", "base", "meta"} and not (
            tag == "meta" and attrs == [("charset", "utf-8")]
        ):
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name in {"href", "srcset", "action"}:
                self.found.append(f"{tag} {name}")
            if name == "src" and not (value or "").startswith("data:image/"):
                self.found.append(f"{tag} src={value}")

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def test_the_pdf_page_loads_nothing_and_escapes_the_spec() -> None:
    hostile = spec(
        title="<script>alert(1)</script>",
        blocks=[
            {"kind": "paragraph", "text": '<img src="https://evil.example/x.png">'},
            {"kind": "image", "path": "chart.png", "caption": '" onerror="alert(1)'},
            {"kind": "table", "header": ["<link rel=stylesheet href=//x>"], "rows": [["a"]]},
        ],
    )
    page = pdf.build_html(hostile, IMAGES)
    parser = _Loads()
    parser.feed(page)
    assert parser.found == []
    assert "url(" not in parser.style and "@import" not in parser.style
    assert page.count("data:image/png;base64,") == 1


def test_pdf_validation_finds_headings_and_pages() -> None:
    printed = make.pdf([["Quarterly report", "Summary"], ["Details"]])
    result, pages = validate.validate_pdf(spec(), printed)
    assert (result.failures, pages) == ([], 2)
    short = make.pdf([["Quarterly report", "Summary Details"]])
    result, pages = validate.validate_pdf(spec(), short)
    assert result.failures == ["1 page breaks, but only 1 pages"]
    missing = make.pdf([["Quarterly report"], ["Details"]])
    result, _ = validate.validate_pdf(spec(), missing)
    assert result.failures == ["heading 'Summary' (level 1) is not in the PDF's text"]
    result, pages = validate.validate_pdf(spec(), b"%PDF-garbage")
    assert pages == 0 and result.failures[0].startswith("the PDF does not read back")


def test_a_heading_not_reached_within_the_budget_is_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(validate, "PDF_READ_BUDGET_S", -1.0)
    result, pages = validate.validate_pdf(spec(), make.pdf([["Quarterly report"], ["x"]]))
    assert pages == 2 and result.failures == []
    assert len(result.notes) == 3 and "not reached" in result.notes[0]
