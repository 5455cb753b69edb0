"""list_dir: a folder's entries as an indented tree, a few levels deep."""

from __future__ import annotations

import os
import stat

from pydantic import Field

from ax_policy import ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import (
    FULL_OUTPUT_MAX_CHARS,
    Refused,
    ToolInput,
    count,
    guarded,
    opened,
    resolve,
    shown,
)
from .walk import SKIPPED_FOLDERS, Entry, WalkState, walk

LIST_MAX_DEPTH = 5
LIST_MAX_ENTRIES = 500
# How many entries the saved full listing holds when the shown one is cut.
LIST_COLLECT_MAX = 20_000


class ListDirInput(ToolInput):
    path: str = Field(
        default=".", min_length=1, description="The folder to list, relative to the workspace."
    )
    depth: int = Field(
        default=1,
        ge=1,
        le=LIST_MAX_DEPTH,
        description=f"How many levels to show (1: the folder's own entries; at most "
        f"{LIST_MAX_DEPTH}).",
    )


@guarded
def run(request: ListDirInput, ctx: ToolContext) -> ToolResult:
    root = resolve(request.path, ctx)
    name = shown(root, ctx)
    state = WalkState()
    lines: list[str] = []
    with opened(root, ctx) as fd:
        if fd is None:
            raise Refused(f"{name} does not exist")
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise Refused(f"{name} is a file, not a folder; use read_file to read it")
        for entry in walk(root, fd, state, hidden=True, max_depth=request.depth, descend=_expand):
            if len(lines) >= LIST_COLLECT_MAX:
                state.exhausted = True
                break
            lines.append("  " * (entry.depth - 1) + _label(entry, request.depth))
    header = f"{name}/ ({count(len(lines), 'entry', 'entries')}" + (
        ", more not listed)" if state.exhausted else ")"
    )
    if not lines:
        return ToolResult(content=f"{name}/ is empty", summary=f"listed {name}: empty")
    summary = f"listed {name}: {count(len(lines), 'entry', 'entries')}"
    if len(lines) <= LIST_MAX_ENTRIES and not state.exhausted:
        return ToolResult(content="\n".join([header, *lines]), summary=summary)
    full = "\n".join([header, *lines])
    note = (
        f"\n[showing the first {LIST_MAX_ENTRIES} entries; all of them: "
        f"recall_step(step={ctx.step}); or list a subfolder, lower the depth, or use glob]"
    )
    return ToolResult(
        content="\n".join([header, *lines[:LIST_MAX_ENTRIES]]) + note,
        summary=summary + " (cut)",
        full_output=full[:FULL_OUTPUT_MAX_CHARS],
    )


def _expand_name(name: str) -> bool:
    return not name.startswith(".") and name not in SKIPPED_FOLDERS


def _expand(entry: Entry) -> bool:
    return _expand_name(entry.path.name)


def _label(entry: Entry, depth: int) -> str:
    label = entry.path.name
    if entry.is_link:
        return label + " -> " + _link_target(entry)
    if entry.is_dir:
        label += "/"
        if entry.depth < depth and not _expand_name(entry.path.name):
            label += "  (not expanded)"
        return label
    return label + f"  ({_size(entry)})"


def _link_target(entry: Entry) -> str:
    try:
        return os.readlink(entry.path.name, dir_fd=entry.folder)
    except OSError:
        return "?"


def _size(entry: Entry) -> str:
    try:
        size = float(os.stat(entry.path.name, dir_fd=entry.folder, follow_symlinks=False).st_size)
    except OSError:
        return "?"
    if size < 1024:
        return f"{int(size)} B"
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


TOOL = ModelTool(
    name="list_dir",
    description=(
        "List a folder of the workspace as an indented tree: folders end in '/', files show "
        "their size, symlinks their target (never followed). Hidden folders and "
        f"{', '.join(sorted(SKIPPED_FOLDERS))} are listed but not expanded. At most "
        f"{LIST_MAX_ENTRIES} entries are shown."
    ),
    input_model=ListDirInput,
    facts=ToolFacts(name="list_dir", reads=lambda request: [request.path]),
    run=run,
)
