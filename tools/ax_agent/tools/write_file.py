"""write_file: create a file or replace its whole content, atomically."""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, count, guarded, resolve, shown, write_atomically

WRITE_MAX_BYTES = 10 * 1024 * 1024


class WriteFileInput(ToolInput):
    path: str = Field(
        min_length=1, description="The file to write, relative to the workspace root."
    )
    content: str = Field(description="The file's whole new content.")


@guarded
def run(request: WriteFileInput, ctx: ToolContext) -> ToolResult:
    path = resolve(request.path, ctx, write=True)
    name = shown(path, ctx)
    if path.is_dir():
        raise Refused(f"{name} is a folder; write_file writes a file")
    data = request.content.encode("utf-8", "surrogateescape")
    if len(data) > WRITE_MAX_BYTES:
        raise Refused(
            f"the content is {len(data)} bytes; write_file writes at most {WRITE_MAX_BYTES}"
        )
    created = write_atomically(path, data, ctx)
    lines = request.content.count("\n") + (0 if request.content.endswith("\n") else 1)
    lines = lines if request.content else 0
    verb = "created" if created else "replaced"
    summary = f"{verb} {name} ({len(data)} bytes, {count(lines, 'line')})"
    return ToolResult(content=summary, summary=summary)


TOOL = ModelTool(
    name="write_file",
    description=(
        "Create a file, or replace the whole content of an existing one; missing folders are "
        "created. To change part of a file, prefer edit_file. At most "
        f"{WRITE_MAX_BYTES} bytes."
    ),
    input_model=WriteFileInput,
    facts=ToolFacts(name="write_file", writes=lambda request: [request.path]),
    run=run,
)
