"""view_image: show the model an image of the workspace, or one this session recorded.

The bytes must be a PNG, JPEG, GIF or WebP by their magic bytes (a name ending
in .png proves nothing) and at most ``VIEW_IMAGE_MAX_BYTES``. An artifact is a
content-addressed object (``objects/<sha256>``) that this session's own
artifacts recorded (``recorded_artifacts``): a snapshot or the pre- or
post-image of a file it changed, or a browser flow's screenshot. A hash merely
written somewhere in the log (the model's own call input, a tool's output that
quoted a file) names nothing, so another session's objects, and the spilled
output that shares the store, are not reachable by naming a hash. The image reaches only a model the
catalog says takes images; for any other model the call is refused with the
reason, and no bytes are attached (providers/images.py holds the same choke
for an image already in the conversation when the model changes).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field, model_validator

from ax_check import BROWSER_KIND, SCREENSHOT_SIGNAL
from ax_policy import ToolFacts

from ..providers.base import ImagePart
from ..providers.images import takes_images
from ..window.catalog import model_limits
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded, read_regular, resolve, shown

# Anthropic refuses an image over 5 MB; a bigger one would fail every request after it.
VIEW_IMAGE_MAX_BYTES = 5 * 1024 * 1024
# Enough of the head to tell every supported format apart.
MAGIC_BYTES = 12
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ViewImageInput(ToolInput):
    path: str = Field(default="", description="An image file, relative to the workspace root.")
    artifact: str = Field(
        default="",
        description="Instead of a path: the sha256 of an object this session recorded.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ViewImageInput:
        if bool(self.path) == bool(self.artifact):
            raise ValueError("give exactly one of path and artifact")
        return self


def media_type(head: bytes) -> str | None:
    """The image type ``head`` (the file's first bytes) announces, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def why_no_images(model: str) -> str | None:
    """Why ``model`` is shown no image (the catalog's word), or None when it takes them."""
    if takes_images(model):
        return None
    if model_limits(model).known:
        return f"the catalog says {model} takes no images"
    return f"{model} is not in ax's catalog, so it is not assumed to take images"


@guarded
def run(request: ViewImageInput, ctx: ToolContext) -> ToolResult:
    why = why_no_images(ctx.model)
    if why is not None:
        raise Refused(
            f"cannot show an image to this model: {why}. The file is untouched; describe "
            "what you need from it, or ask the user to switch to a model that takes images"
        )
    if request.path:
        data, source = _workspace_image(request.path, ctx)
    else:
        data, source = _artifact(request.artifact, ctx)
    kind = media_type(data[:MAGIC_BYTES])
    if kind is None:
        raise Refused(
            f"{source} is not a PNG, JPEG, GIF or WebP image (its first bytes say otherwise)"
        )
    digest = hashlib.sha256(data).hexdigest()
    image = ImagePart(kind, data, digest, source)
    text = f"Image {source}: {kind}, {len(data)} bytes, sha256 {digest}."
    return ToolResult(content=text, summary=f"viewed {source}", images=(image,))


def _workspace_image(raw: str, ctx: ToolContext) -> tuple[bytes, str]:
    path = resolve(raw, ctx)
    name = shown(path, ctx)
    data = read_regular(path, ctx, VIEW_IMAGE_MAX_BYTES)
    _check_size(len(data), name)
    return data, name


def _artifact(digest: str, ctx: ToolContext) -> tuple[bytes, str]:
    from ax_log import read_events

    digest = digest.strip().lower()
    if not _SHA256.fullmatch(digest):
        raise Refused("an artifact is named by its sha256: 64 hexadecimal characters")
    log = ctx.layout.session_log(ctx.session_id)
    named = log.exists() and digest in recorded_artifacts(
        read_events(log, ctx.session_id, lenient=True)
    )
    if not named:
        raise Refused(f"this session recorded no artifact with sha256 {digest}")
    source = f"artifact {digest}"
    path = ctx.layout.objects_dir / digest
    try:
        with path.open("rb") as handle:
            _check_size(os.fstat(handle.fileno()).st_size, source)
            data = handle.read(VIEW_IMAGE_MAX_BYTES + 1)
    except FileNotFoundError:
        raise Refused(f"the {source} is named in the log but no longer stored") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise Refused(f"the stored {source} does not match its hash; it was not shown")
    return data, source


def recorded_artifacts(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """The object hashes the harness recorded as this session's artifacts, and only those."""
    found: set[str] = set()
    for event in events:
        kind = event.get("type")
        if kind == "snapshot.stored":
            found.add(str(event.get("sha256")))
        elif kind == "file.mutated":
            found.update(str(event.get(side)) for side in ("pre", "post"))
        elif kind == "check.completed" and event.get("kind") == BROWSER_KIND:
            for signal in event.get("signals") or []:
                if isinstance(signal, Mapping) and signal.get("name") == SCREENSHOT_SIGNAL:
                    found.add(str(signal.get("detail")))
        elif kind == "artifact.inspected":
            for page in event.get("pages") or []:
                if isinstance(page, Mapping):
                    found.add(str(page.get("sha256")))
    found.discard("None")
    return found


def _check_size(size: int, name: str) -> None:
    if size > VIEW_IMAGE_MAX_BYTES:
        raise Refused(
            f"{name} is larger than {VIEW_IMAGE_MAX_BYTES} bytes; make a smaller copy to view"
        )


TOOL = ModelTool(
    name="view_image",
    description=(
        "Look at an image: a PNG, JPEG, GIF or WebP file of the workspace (path), or an "
        "object this session recorded (artifact: its sha256). At most "
        f"{VIEW_IMAGE_MAX_BYTES // (1024 * 1024)} MiB. Refused when the current model "
        "takes no images."
    ),
    input_model=ViewImageInput,
    facts=ToolFacts(name="view_image", reads=lambda request: [request.path or "."]),
    run=run,
)
