"""The documents tools: read_document (and, below, render_document and inspect_pages)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from agent.artifacts import docfixtures as make
from agent.tools.test_view_image import png
from agent.tools.toolkit import SESSION, Harness
from pydantic import ValidationError

from ax_agent.artifacts import raster, readers
from ax_agent.tools import inspect_pages, read_document, render_document, view_image
from ax_agent.tools.base import ToolContext, ToolResult
from ax_log import read_events

SECRET = "sk-live-hunter2-never-shown"


def test_read_document_leads_with_the_coverage_verdict(harness: Harness) -> None:
    (harness.workspace / "notes.bin").write_bytes(make.docx([(1, "Intro")], (2, 3)))
    result = harness.call(read_document.TOOL, {"path": "notes.bin"})
    assert not result.is_error
    assert result.content.startswith("coverage: full\n")
    assert "tables (rows x columns): 2x3" in result.content
    assert "Intro" in result.content


def test_a_dotenv_renamed_report_docx_fails_the_sniff_without_a_byte(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "report.docx").write_text(f"STRIPE_KEY={SECRET}\nDB_PASSWORD=hunter2\n")
    result = harness.call(read_document.TOOL, {"path": "report.docx"})
    assert result.is_error
    assert result.content.startswith("coverage: unsupported\n")
    assert "not-a-document" in result.content
    shown = "\n".join([result.content, result.summary, result.full_output or ""])
    assert SECRET not in shown and "hunter2" not in shown and "STRIPE" not in shown


# --- render_document ------------------------------------------------------------

SPEC: dict[str, Any] = {
    "title": "Field notes",
    "footer": {"text": "Page {pageNumber} of {totalPages}"},
    "blocks": [
        {"kind": "heading", "text": "Findings", "level": 1},
        {"kind": "paragraph", "text": "All good."},
        {"kind": "table", "header": ["k", "v"], "rows": [["a", "1"]]},
        {"kind": "image", "path": "img/chart.png", "caption": "Chart"},
    ],
}


def _spec(workspace: Path, spec: dict[str, Any] | None = None) -> None:
    (workspace / "img").mkdir(exist_ok=True)
    (workspace / "img" / "chart.png").write_bytes(png(3, 3))
    (workspace / "notes.docspec.json").write_text(json.dumps(spec or SPEC))


def _rendered(harness: Harness) -> list[dict[str, Any]]:
    log = harness.layout.session_log(SESSION)
    events = read_events(log, SESSION) if log.exists() else []
    return [e for e in events if e["type"] == "artifact.rendered"]


def test_render_document_writes_a_valid_docx_and_records_it(
    harness: Harness, workspace: Path
) -> None:
    _spec(workspace)
    result = harness.call(
        render_document.TOOL,
        {"spec": "notes.docspec.json", "images": ["img/chart.png"], "pdf": False},
    )
    assert not result.is_error, result.content
    data = (workspace / "notes.docx").read_bytes()
    assert not (workspace / "notes.pdf").exists()
    summary = readers.read(data)
    assert [h.text for h in summary.outline] == ["Field notes", "Findings"]
    (event,) = _rendered(harness)
    assert event["status"] == "rendered" and event["pdf"] == "not-asked"
    assert event["outputs"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    assert event["outputs"][0]["deterministic"] is True
    assert "not a check" in result.content
    again = harness.call(
        render_document.TOOL,
        {"spec": "notes.docspec.json", "images": ["img/chart.png"], "pdf": False},
    )
    assert not again.is_error
    assert (workspace / "notes.docx").read_bytes() == data


def test_every_image_the_spec_names_must_be_listed_for_the_policy(
    harness: Harness, workspace: Path
) -> None:
    _spec(workspace)
    result = harness.call(render_document.TOOL, {"spec": "notes.docspec.json", "pdf": False})
    assert result.is_error and "not listed: img/chart.png" in result.content
    assert not (workspace / "notes.docx").exists()
    facts = render_document.TOOL.facts
    request = render_document.TOOL.input_model.model_validate(
        {"spec": "a/notes.docspec.json", "images": ["img/x.png"]}
    )
    assert facts.reads is not None and facts.writes is not None
    assert facts.reads(request) == ["a/notes.docspec.json", "img/x.png"]
    assert facts.writes(request) == ["a/notes.docx", "a/notes.pdf"]


def test_a_bad_spec_is_refused_naming_the_field_and_nothing_is_written(
    harness: Harness, workspace: Path
) -> None:
    _spec(workspace, {**SPEC, "blocks": [{"kind": "heading", "text": "x", "level": 9}]})
    result = harness.call(render_document.TOOL, {"spec": "notes.docspec.json", "pdf": False})
    assert result.is_error and "blocks.0.heading.level" in result.content
    assert not (workspace / "notes.docx").exists()
    assert _rendered(harness) == []


def test_a_spec_image_that_is_a_secret_is_refused_without_a_byte(
    harness: Harness, workspace: Path
) -> None:
    _spec(workspace, {**SPEC, "blocks": [{"kind": "image", "path": "chart.png"}]})
    (workspace / "chart.png").write_text(f"TOKEN={SECRET}\n")
    result = harness.call(
        render_document.TOOL, {"spec": "notes.docspec.json", "images": ["chart.png"], "pdf": False}
    )
    assert result.is_error and "image-unsupported" in result.content
    assert SECRET not in result.content + result.summary
    assert not (workspace / "notes.docx").exists()


def test_the_spec_must_be_a_docspec_file() -> None:
    with pytest.raises(ValidationError, match=r"docspec\.json"):
        render_document.TOOL.input_model.model_validate({"spec": "notes.json"})


def test_without_chromium_the_pdf_half_is_toolchain_unavailable(
    harness: Harness, workspace: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "no-chromium-bin"
    empty.mkdir()
    harness.environ = {"PATH": str(empty)}
    _spec(workspace)
    result = harness.call(
        render_document.TOOL, {"spec": "notes.docspec.json", "images": ["img/chart.png"]}
    )
    assert not result.is_error, result.content
    assert (workspace / "notes.docx").exists() and not (workspace / "notes.pdf").exists()
    assert "toolchain-unavailable" in result.content and "'chromium'" in result.content
    (event,) = _rendered(harness)
    assert event["pdf"] == "unavailable" and "chromium" in event["pdfReason"]


def _chromium_or_skip() -> None:
    import os

    from ax_exec import find_chromium

    if find_chromium(os.environ) is None:
        pytest.skip("no chromium on PATH (Debian's 'chromium' package): the PDF twin is untested")
    pytest.importorskip("playwright", reason="playwright (the browser extra) is not installed")


def test_the_pdf_twin_is_printed_and_validated(harness: Harness, workspace: Path) -> None:
    _chromium_or_skip()
    import os

    harness.environ = {"PATH": os.environ.get("PATH", os.defpath)}
    spec = {**SPEC, "blocks": [*SPEC["blocks"], {"kind": "pageBreak"},
                               {"kind": "heading", "text": "Appendix", "level": 1}]}  # fmt: skip
    _spec(workspace, spec)
    result = harness.call(
        render_document.TOOL, {"spec": "notes.docspec.json", "images": ["img/chart.png"]}
    )
    assert not result.is_error, result.content
    (event,) = _rendered(harness)
    assert event["pdf"] == "printed"
    pdf_out = next(o for o in event["outputs"] if o["format"] == "pdf")
    assert pdf_out["pages"] == 2 and pdf_out["deterministic"] is False
    summary = readers.read((workspace / "notes.pdf").read_bytes())
    assert summary.kind == "pdf" and summary.units == 2
    assert "Appendix" in summary.text and "Page 2 of 2" in summary.text


# --- inspect_pages --------------------------------------------------------------


def _inspect(harness: Harness, raw: dict[str, Any], model: str) -> ToolResult:
    return harness.call(inspect_pages.TOOL, raw, model=model)


def test_pages_reach_a_model_that_takes_images_as_stored_objects(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "out.pdf").write_bytes(make.pdf([["one"], ["two"], ["three"]]))
    result = _inspect(harness, {"path": "out.pdf", "first": 2, "count": 5}, "gpt-5")
    assert not result.is_error, result.content
    assert [image.source for image in result.images] == ["out.pdf page 2", "out.pdf page 3"]
    for image in result.images:
        assert image.data.startswith(b"\x89PNG\r\n\x1a\n")
        assert len(image.data) <= raster.PAGE_IMAGE_MAX_BYTES
        stored = harness.layout.objects_dir / image.sha256
        assert stored.read_bytes() == image.data
    (event,) = [
        e
        for e in read_events(harness.layout.session_log(SESSION), SESSION)
        if e["type"] == "artifact.inspected"
    ]
    assert event["shown"] is True and event["pageCount"] == 3
    assert [p["page"] for p in event["pages"]] == [2, 3]
    # The stored page is this session's artifact: view_image can show it again.
    artifact = view_image.TOOL.input_model.model_validate({"artifact": event["pages"][0]["sha256"]})
    shown = view_image.run(
        artifact,
        ToolContext(
            layout=harness.layout,
            session_id=SESSION,
            call_id="call-v",
            step=2,
            seam=harness.seam,
            decision=harness.decide(view_image.TOOL, artifact),
            model="gpt-5",
        ),
    )
    assert shown.images and shown.images[0].data == result.images[0].data


def test_a_model_without_images_gets_the_list_and_why_but_no_bytes(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "out.pdf").write_bytes(make.pdf([["one"]]))
    result = _inspect(harness, {"path": "out.pdf"}, "qwen2.5-coder")
    assert not result.is_error
    assert result.images == ()
    assert "takes no images" in result.content and "sha256" in result.content


def test_inspect_pages_refuses_what_is_not_a_pdf_without_a_byte(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "out.pdf").write_text(f"KEY={SECRET}\n")
    result = _inspect(harness, {"path": "out.pdf"}, "gpt-5")
    assert result.is_error and "not-a-document" in result.content
    assert SECRET not in result.content + result.summary
    (workspace / "doc.pdf").write_bytes(make.docx([(1, "x")]))
    result = _inspect(harness, {"path": "doc.pdf"}, "gpt-5")
    assert result.is_error and "not a PDF" in result.content


def test_a_page_over_the_ceiling_is_re_rendered_smaller(monkeypatch: pytest.MonkeyPatch) -> None:
    data = make.pdf([["A page with some text on it"]])
    (full,) = raster.rasterise(data, [1])
    assert full.png is not None and full.scale == raster.RASTER_START_SCALE
    monkeypatch.setattr(raster, "PAGE_IMAGE_MAX_BYTES", len(full.png) - 1)
    (smaller,) = raster.rasterise(data, [1])
    assert smaller.png is not None and len(smaller.png) < len(full.png)
    assert smaller.scale < full.scale and smaller.width < full.width
    monkeypatch.setattr(raster, "PAGE_IMAGE_MAX_BYTES", 10)
    (none,) = raster.rasterise(data, [1])
    assert none.png is None


def test_a_structural_mismatch_in_the_print_writes_nothing(
    harness: Harness, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _chromium_or_skip()
    import os

    from ax_agent.artifacts import pdf

    harness.environ = {"PATH": os.environ.get("PATH", os.defpath)}
    # The browser prints, but a page that lost a heading comes back.
    monkeypatch.setattr(pdf, "print_pdf", lambda *_args: make.pdf([["Field notes"]]))
    _spec(workspace)
    result = harness.call(
        render_document.TOOL, {"spec": "notes.docspec.json", "images": ["img/chart.png"]}
    )
    assert result.is_error and "nothing was written" in result.content
    assert "PDF heading 'Findings' (level 1) is not in the PDF's text" in result.content
    assert not (workspace / "notes.docx").exists() and not (workspace / "notes.pdf").exists()
    (event,) = _rendered(harness)
    assert (event["status"], event["pdf"], event["outputs"]) == ("failed", "failed", [])
