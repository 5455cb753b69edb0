"""inspect_pages: pages of a workspace PDF as images, for a model that takes images.

The pack (ax_agent.artifacts.raster) rasterises each page within a per-image
byte ceiling; each PNG goes into the object store (content-addressed) and
``artifact.inspected`` names them, so ``view_image(artifact=…)`` can show a page
again later. The images ride view_image's channel: attached only when the
catalog says the model takes images (``view_image.why_no_images``); any other
model gets the page list and why it sees none, and the stored pages stay for a
model that can. Looking at pages is a product, never a check: it verifies
nothing and marks nothing CHECKED.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import Field

from ax_policy import ToolFacts

from ..artifacts import raster, readers
from ..artifacts.errors import DOC_MAX_BYTES, Unsupported
from ..providers.base import ImagePart
from ..seam.models import AppendRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded, read_regular, resolve, shown
from .view_image import why_no_images

INSPECT_MAX_PAGES = 6


class InspectPagesInput(ToolInput):
    path: str = Field(
        min_length=1, description="A PDF of the workspace (e.g. one render_document wrote)."
    )
    first: int = Field(default=1, ge=1, description="The first page to show (1-based).")
    count: int = Field(
        default=2,
        ge=1,
        le=INSPECT_MAX_PAGES,
        description=f"How many pages (up to {INSPECT_MAX_PAGES}).",
    )


@guarded
def run(request: InspectPagesInput, ctx: ToolContext) -> ToolResult:
    from ax_log import store_bytes

    path = resolve(request.path, ctx)
    name = shown(path, ctx)
    data = read_regular(path, ctx, DOC_MAX_BYTES)
    try:
        kind, _ = readers.identify(data)
        if kind != "pdf":
            raise Unsupported("not-a-document", f"a {kind.upper()}, not a PDF: render it first")
        total = raster.page_count(data)
        if request.first > total:
            raise Refused(f"{name} has {total} pages; first={request.first} is past the end")
        numbers = list(range(request.first, min(request.first + request.count, total + 1)))
        pages = raster.rasterise(data, numbers)
    except Unsupported as failure:
        raise Refused(f"{name} cannot be inspected: {failure.code}: {failure.reason}") from None
    why = why_no_images(ctx.model)
    stored: list[dict[str, Any]] = []
    images: list[ImagePart] = []
    lines: list[str] = []
    for page in pages:
        if page.png is None:
            lines.append(
                f"page {page.page}: over {raster.PAGE_IMAGE_MAX_BYTES} bytes even at scale "
                f"{page.scale}; not shown"
            )
            continue
        digest = store_bytes(ctx.layout, page.png)
        stored.append(
            {
                "page": page.page,
                "sha256": digest,
                "bytes": len(page.png),
                "width": page.width,
                "height": page.height,
                "scale": page.scale,
            }
        )
        source = f"{name} page {page.page}"
        if why is None:
            images.append(ImagePart("image/png", page.png, digest, source))
        lines.append(
            f"page {page.page}: {page.width}x{page.height} PNG, {len(page.png)} bytes, "
            f"sha256 {digest}"
        )
    event = {
        "type": "artifact.inspected",
        "callId": ctx.call_id,
        "path": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "pages": stored,
        "pageCount": total,
        "shown": bool(images),
    }
    ctx.seam.call("log.append", AppendRequest(events=[event]))
    head = f"{name}: pages {numbers[0]}-{numbers[-1]} of {total}"
    if why is not None:
        lines.append(
            f"These pages are not shown: {why}. They are stored; view_image(artifact=<sha256>) "
            "shows one to a model that takes images. render_document's validation is the "
            "check a model without images gets in full."
        )
    lines.append("Looking at pages is a product, not a check: it verifies nothing.")
    return ToolResult(
        content="\n".join([head, *lines]),
        summary=f"inspected {head}" + ("" if images else " (not shown)"),
        images=tuple(images),
    )


TOOL = ModelTool(
    name="inspect_pages",
    description=(
        "See pages of a PDF of the workspace as images (rasterised, each at most "
        f"{raster.PAGE_IMAGE_MAX_BYTES // 1024} KiB), e.g. to check the layout of a document "
        f"render_document printed. At most {INSPECT_MAX_PAGES} pages per call. The images reach "
        "only a model that takes images; others get the page list and why."
    ),
    input_model=InspectPagesInput,
    facts=ToolFacts(name="inspect_pages", reads=lambda request: [request.path]),
    run=run,
)
