"""The documents tools: read_document (and, below, render_document and inspect_pages)."""

from __future__ import annotations

from pathlib import Path

from agent.artifacts import docfixtures as make
from agent.tools.toolkit import Harness

from ax_agent.tools import read_document

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
