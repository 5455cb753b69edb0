"""glob: the paths under a folder that match a glob pattern."""

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
from .walk import WALK_MAX_ENTRIES, WalkState, glob_regex, names_hidden, pattern_depth, walk

GLOB_MAX_RESULTS = 200
# How many matches the saved full list holds when the shown one is cut.
GLOB_COLLECT_MAX = 10_000
GLOB_PATTERN_MAX_CHARS = 1_000


class GlobInput(ToolInput):
    pattern: str = Field(
        min_length=1,
        max_length=GLOB_PATTERN_MAX_CHARS,
        description="A glob relative to `path`: '**' spans folders, '*' and '?' stay within "
        "one name, '{a,b}' and '[abc]' work. E.g. '**/*.py', 'src/**/test_*.{js,ts}'. "
        "'*.py' matches only at the top of `path`.",
    )
    path: str = Field(
        default=".", min_length=1, description="The folder to search in, relative to the workspace."
    )


@guarded
def run(request: GlobInput, ctx: ToolContext) -> ToolResult:
    root = resolve(request.path, ctx)
    where = shown(root, ctx)
    matcher = glob_regex(request.pattern)
    state = WalkState()
    found: list[str] = []
    cut = False
    with opened(root, ctx) as fd:
        if fd is None or not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise Refused(f"{where} is not a folder; glob searches a folder")
        for entry in walk(
            root,
            fd,
            state,
            hidden=names_hidden(request.pattern),
            max_depth=pattern_depth(request.pattern),
        ):
            if not matcher.match(entry.rel):
                continue
            if len(found) >= GLOB_COLLECT_MAX:
                cut = True
                break
            found.append(shown(entry.path, ctx) + ("/" if entry.is_dir else ""))
    label = f"glob {request.pattern!r} in {where}"
    if not found:
        note = _walk_note(state)
        return ToolResult(
            content=f"no path matches {request.pattern!r} in {where}{note}",
            summary=f"{label}: no match",
        )
    summary = f"{label}: {count(len(found), 'match', 'matches')}"
    if len(found) <= GLOB_MAX_RESULTS and not (cut or state.exhausted):
        return ToolResult(content="\n".join(found), summary=summary)
    total = f"{len(found)}+" if cut or state.exhausted else str(len(found))
    note = (
        f"\n[showing {min(len(found), GLOB_MAX_RESULTS)} of {total} matches"
        f"{_walk_note(state)}; all of them: recall_step(step={ctx.step}); or narrow the "
        "pattern or the path]"
    )
    return ToolResult(
        content="\n".join(found[:GLOB_MAX_RESULTS]) + note,
        summary=summary + " (cut)",
        full_output="\n".join(found)[:FULL_OUTPUT_MAX_CHARS],
    )


def _walk_note(state: WalkState) -> str:
    if not state.exhausted:
        return ""
    return f" (the search stopped after {WALK_MAX_ENTRIES} entries)"


TOOL = ModelTool(
    name="glob",
    description=(
        "Find files and folders by a glob pattern (e.g. '**/*.py'), sorted by path. Paths "
        "come back relative to the workspace, ready for read_file. Symlinks are not "
        "followed; hidden names match only when the pattern spells the dot. At most "
        f"{GLOB_MAX_RESULTS} paths are shown."
    ),
    input_model=GlobInput,
    facts=ToolFacts(name="glob", reads=lambda request: [request.path]),
    run=run,
)
