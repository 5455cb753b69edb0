"""render_document: a ``*.docspec.json`` rendered as DOCX and its PDF twin, then validated.

The model writes the spec with the ordinary file tools; this tool reads it and
the images it names (each listed in ``images``, so the policy decides every
read), renders the DOCX (byte-deterministic) and prints the PDF through ax-exec's
Chromium, parses both back and compares them with the spec. A structural
mismatch writes nothing; layout notes never block. The outputs are declared
writes, so the loop snapshots them first and records them after: undo covers
them. ``artifact.rendered`` says what was made. A product, never a check: it
marks nothing CHECKED and satisfies no gate.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import Field, field_validator

from ax_policy import ToolFacts

from ..artifacts import docx_render, pdf, validate
from ..artifacts.docspec import DOCSPEC_MAX_BYTES, SPEC_SUFFIX, DocSpec, load_spec
from ..artifacts.errors import IMAGE_MAX_BYTES, RenderFailed
from ..seam.models import AppendRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded, read_regular, resolve, shown, write_atomically

RENDER_MAX_IMAGES = 100


class RenderDocumentInput(ToolInput):
    spec: str = Field(
        min_length=1,
        description=f"The spec, a workspace file ending in {SPEC_SUFFIX}; the outputs go "
        "beside it (NAME.docx, NAME.pdf).",
    )
    images: list[str] = Field(
        default_factory=list,
        max_length=RENDER_MAX_IMAGES,
        description="Every image path the spec names, exactly (so each read is decided).",
    )
    pdf: bool = Field(default=True, description="Also print the PDF twin.")

    @field_validator("spec")
    @classmethod
    def _suffix(cls, value: str) -> str:
        if not value.endswith(SPEC_SUFFIX) or len(value) == len(SPEC_SUFFIX):
            raise ValueError(f"the spec is a file named NAME{SPEC_SUFFIX}")
        return value


def outputs(request: RenderDocumentInput) -> list[str]:
    stem = request.spec[: -len(SPEC_SUFFIX)]
    return [stem + ".docx", *([stem + ".pdf"] if request.pdf else [])]


@guarded
def run(request: RenderDocumentInput, ctx: ToolContext) -> ToolResult:
    spec_path = resolve(request.spec, ctx)
    spec_name = shown(spec_path, ctx)
    raw = _read(spec_path, spec_name, DOCSPEC_MAX_BYTES, ctx)
    try:
        spec = load_spec(raw)
    except ValueError as exc:
        raise Refused(f"{spec_name}: {exc}") from None
    named = spec.images()
    if sorted(set(named)) != sorted(set(request.images)):
        missing = sorted(set(named) - set(request.images))
        extra = sorted(set(request.images) - set(named))
        raise Refused(
            "images must list exactly the image paths the spec names"
            + (f"; not listed: {', '.join(missing)}" if missing else "")
            + (f"; not in the spec: {', '.join(extra)}" if extra else "")
        )
    images = {
        name: _read(resolve(name, ctx), name, IMAGE_MAX_BYTES, ctx) for name in sorted(set(named))
    }
    event: dict[str, Any] = {
        "type": "artifact.rendered",
        "callId": ctx.call_id,
        "spec": spec_name,
        "specSha256": hashlib.sha256(raw).hexdigest(),
        "outputs": [],
        "pdf": "not-asked",
    }
    try:
        docx_bytes = docx_render.render_docx(spec, images)
    except RenderFailed as failure:
        raise Refused(f"{failure.code}: {failure.reason}") from None
    checked = validate.validate_docx(spec, docx_bytes)
    failures = [f"DOCX {item}" for item in checked.failures]
    notes = list(checked.notes)
    pdf_bytes, pages = None, None
    if request.pdf:
        pdf_bytes, pages, pdf_checked = _print(spec, images, ctx, event)
        failures += [f"PDF {item}" for item in pdf_checked.failures]
        notes += [f"PDF {item}" for item in pdf_checked.notes]
    event["notes"] = notes
    if failures:
        event.update(status="failed", failures=failures)
        _record(event, ctx)
        body = "\n".join(f"  - {item}" for item in failures)
        raise Refused(f"validation failed: nothing was written.\n{body}")
    targets = outputs(request)
    written = [_write(targets[0], docx_bytes, "docx", None, ctx)]
    if pdf_bytes is not None:
        written.append(_write(targets[1], pdf_bytes, "pdf", pages, ctx))
    event.update(status="rendered", outputs=written)
    _record(event, ctx)
    lines = [
        f"rendered {spec_name}: validation passed (outline, tables, images, references, "
        "header/footer and page fields match the spec)"
    ]
    lines += [
        f"  {item['path']}: {item['bytes']} bytes, sha256 {item['sha256']}"
        + (f", {item['pages']} pages" if item["pages"] else "")
        for item in written
    ]
    if event["pdf"] == "unavailable":
        lines.append(f"  no PDF: {event['pdfReason']}")
    lines += [f"  note: {note}" for note in notes]
    lines.append("A rendered document is a product, not a check: it verifies nothing.")
    return ToolResult(content="\n".join(lines), summary=lines[0])


def _print(
    spec: DocSpec, images: dict[str, bytes], ctx: ToolContext, event: dict[str, Any]
) -> tuple[bytes | None, int | None, validate.Validation]:
    """The PDF twin, its page count and its validation; unavailable is not a failure."""
    from ax_exec import launched_chromium
    from libcommon.errors import Unsupported

    page_html = pdf.build_html(spec, images)
    try:
        with launched_chromium(ctx.layout.root, ctx.environ) as browser:
            data = pdf.print_pdf(browser.cdp_url, spec, page_html)
    except RenderFailed as failure:
        if failure.code == "toolchain-unavailable":
            event.update(pdf="unavailable", pdfReason=f"{failure.code}: {failure.reason}")
            return None, None, validate.Validation()
        event.update(pdf="failed", pdfReason=failure.reason)
        return None, None, validate.Validation(failures=[failure.reason])
    except Unsupported as exc:
        why = f"{exc.reason}: {exc.message} ({exc.hint})"
        event.update(pdf="unavailable", pdfReason=why)
        return None, None, validate.Validation()
    checked, pages = validate.validate_pdf(spec, data)
    event["pdf"] = "printed" if checked.passed else "failed"
    return data, pages, checked


def _read(path: Any, name: str, limit: int, ctx: ToolContext) -> bytes:
    data = read_regular(path, ctx, limit)
    if len(data) > limit:
        raise Refused(f"{name} is over {limit} bytes")
    return data


def _write(raw: str, data: bytes, kind: str, pages: int | None, ctx: ToolContext) -> dict[str, Any]:
    path = resolve(raw, ctx, write=True)
    write_atomically(path, data, ctx)
    return {
        "format": kind,
        "path": shown(path, ctx),
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "pages": pages,
        "deterministic": kind == "docx",
    }


def _record(event: dict[str, Any], ctx: ToolContext) -> None:
    ctx.seam.call("log.append", AppendRequest(events=[event]))


TOOL = ModelTool(
    name="render_document",
    description=(
        f"Render a document spec (NAME{SPEC_SUFFIX}, written with write_file) as NAME.docx "
        "and, unless pdf is false, NAME.pdf beside it; then validate both against the spec "
        "(outline, tables, images, header/footer fields, page count, headings in the printed "
        "text). A structural mismatch writes nothing. Spec: {title, properties: {author, "
        "subject, keywords, created}, header/footer: {text with {pageNumber}, {totalPages}, "
        "{date}}, blocks: [{kind: heading, text, level 1-6} | {kind: paragraph, text} | "
        "{kind: list, ordered, items} | {kind: table, header, rows} | {kind: image, path, "
        "widthCm, caption} | {kind: pageBreak}]}. List every image path in images."
    ),
    input_model=RenderDocumentInput,
    facts=ToolFacts(
        name="render_document",
        reads=lambda request: [request.spec, *request.images],
        writes=outputs,
    ),
    run=run,
)
