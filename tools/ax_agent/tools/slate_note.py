"""slate_note: the model's own notes on the session's slate (set or delete by key).

Notes survive when old rounds leave the request: the slate frame that stands
in for them carries every note. ax-slate redacts and caps them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ax_policy import ToolFacts
from ax_slate import Note

from ..seam.models import NoteKeyRequest, NoteSetRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded

NOTE_KEY_MAX_CHARS = 64


class SlateNoteInput(ToolInput):
    action: Literal["set", "delete"] = Field(
        default="set", description="set: save or replace the note; delete: remove it."
    )
    key: str = Field(
        min_length=1,
        max_length=NOTE_KEY_MAX_CHARS,
        description="The note's name: letters, digits, '.', '_' or '-', e.g. 'plan'.",
    )
    text: str = Field(default="", description="The note's text (for set).")


@guarded
def run(request: SlateNoteInput, ctx: ToolContext) -> ToolResult:
    if request.action == "delete":
        deleted: bool = ctx.seam.call("slate.note_delete", NoteKeyRequest(key=request.key))
        message = (
            f"deleted note {request.key!r}" if deleted else f"there was no note {request.key!r}"
        )
        return ToolResult(content=message, summary=message)
    if not request.text.strip():
        raise Refused("a note needs text; to remove a note use action 'delete'")
    note: Note = ctx.seam.call("slate.note_set", NoteSetRequest(key=request.key, text=request.text))
    message = f"saved note {note.key!r} ({len(note.text)} characters)"
    return ToolResult(content=message, summary=message)


TOOL = ModelTool(
    name="slate_note",
    description=(
        "Keep a short note on the session's slate (your working memory): a plan, a finding, "
        "what is left to do. Notes stay visible when older messages leave the conversation. "
        "Setting a key again replaces its note; delete removes it."
    ),
    input_model=SlateNoteInput,
    facts=ToolFacts(name="slate_note", internal=True),
    run=run,
)
