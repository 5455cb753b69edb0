"""read_document: the text and outline of a DOCX, XLSX, PPTX or PDF of the workspace.

The pack (ax_agent.artifacts) identifies the file by its bytes, never its name,
and opens an archive in memory only. Its summary leads with the coverage
verdict: full, partial or structural, or unsupported with a reason that
quotes nothing of the file.
"""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts

from ..artifacts import readers
from ..artifacts.errors import DOC_MAX_BYTES
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, guarded, read_regular, resolve, shown


class ReadDocumentInput(ToolInput):
    path: str = Field(
        min_length=1, description="The document to read, relative to the workspace root."
    )


@guarded
def run(request: ReadDocumentInput, ctx: ToolContext) -> ToolResult:
    path = resolve(request.path, ctx)
    name = shown(path, ctx)
    data = read_regular(path, ctx, DOC_MAX_BYTES)
    summary = readers.read(data)
    return ToolResult(
        content=render(name, summary),
        summary=f"read {name}: {summary.coverage}" + (f" {summary.kind}" if summary.kind else ""),
        is_error=summary.coverage == "unsupported",
    )


def render(name: str, summary: readers.Summary) -> str:
    """The summary as the model reads it: the coverage verdict first, then the rest."""
    lines = [f"coverage: {summary.coverage}"]
    lines += [f"  - {reason}" for reason in summary.reasons]
    if summary.kind is None:
        lines.append(f"{name} was not read ({summary.bytes} bytes).")
        return "\n".join(lines)
    units = "" if summary.units is None else f", {summary.units} {_unit(summary.kind)}"
    lines.append(f"{name}: {summary.kind}, {summary.bytes} bytes{units}")
    if summary.outline:
        lines.append("outline:")
        lines += [f"  {'  ' * max(h.level - 1, 0)}{h.text}" for h in summary.outline]
    if summary.tables:
        shapes = ", ".join(f"{rows}x{columns}" for rows, columns in summary.tables)
        lines.append(f"tables (rows x columns): {shapes}")
    lines += ["", summary.text]
    return "\n".join(lines)


def _unit(kind: readers.Kind) -> str:
    return {"pdf": "pages", "pptx": "slides", "xlsx": "sheets", "docx": "parts"}[kind]


TOOL = ModelTool(
    name="read_document",
    description=(
        "Read a DOCX, XLSX, PPTX or PDF file of the workspace: its outline, table shapes and "
        "text. The result starts with a coverage verdict: full, partial (cut, or parts not "
        "read), structural (no text layer: only structure) or unsupported (with the reason). "
        "The format is told by the file's bytes, not its name."
    ),
    input_model=ReadDocumentInput,
    facts=ToolFacts(name="read_document", reads=lambda request: [request.path]),
    run=run,
)
