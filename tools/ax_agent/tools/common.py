"""What the model-facing tools share: input models, workspace paths, refusals, caps.

A tool resolves every path it touches against the workspace and refuses one
that leads outside it, unless it only reads and the policy decision for this
very call already named that resolved path (a person approved a read outside
the workspace). Writes and a command's folder never leave the workspace.
The policy validated the path it was shown; the tool must not follow a path
the policy never saw, such as a symlink swapped in after the decision: a read
or a write goes only to the resolved path the decision named, and it is made
by walking that path from the workspace root (from ``/`` for an approved read
outside it) without following a link (libcommon.safeopen), so a folder
swapped for a link after the check is refused rather than read or written
through, and nothing is written in ``.git`` or ``.ax``.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pydantic import ConfigDict

from libcommon import safeopen
from libcommon.contracts import Contract
from libcommon.errors import AxError
from libcommon.paths import is_within

from .base import ToolContext, ToolResult

# What a cut output keeps for recall (the loop saves ``full_output``).
FULL_OUTPUT_MAX_CHARS = 2_000_000
SUMMARY_MAX_CHARS = 200
NEW_FILE_MODE = 0o644

InputT = TypeVar("InputT", bound=Contract)


class ToolInput(Contract):
    """A model-facing input: snake_case names (the ones models know), no aliases.

    The JSON Schema the model sees is derived from the subclass, so every field
    carries a description and a plain default instead of ``null`` where it can.
    """

    model_config = ConfigDict(alias_generator=None, populate_by_name=False)


class Refused(Exception):
    """The call cannot be done as asked; ``message`` tells the model what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def error(message: str, summary: str | None = None) -> ToolResult:
    return ToolResult(content=message, is_error=True, summary=one_line(summary or message))


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_MAX_CHARS else line[: SUMMARY_MAX_CHARS - 1] + "…"


def guarded(
    run: Callable[[InputT, ToolContext], ToolResult],
) -> Callable[[InputT, ToolContext], ToolResult]:
    """Turn a refusal, a filesystem error or a composed tool's error into an error result.

    Anything else is a bug in ax and propagates to the loop, which reports it.
    """

    @functools.wraps(run)
    def wrapper(tool_input: InputT, ctx: ToolContext) -> ToolResult:
        try:
            return run(tool_input, ctx)
        except Refused as refusal:
            return error(refusal.message)
        except AxError as exc:
            hint = f"\nhint: {exc.hint}" if exc.hint else ""
            return error(f"{exc.message}{hint}", exc.message)
        except UnicodeEncodeError as exc:
            return error(f"the text cannot be written as UTF-8: {exc.reason}")
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            return error(f"{exc.strerror or exc}{where}")

    return wrapper


def workspace_root(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.workspace))


def resolve(raw: str, ctx: ToolContext, *, write: bool = False) -> Path:
    """The real path ``raw`` names (relative to the workspace), or Refused.

    A path outside the workspace is followed only by a read, and only when the
    decision for this call validated that very path and did not deny it. Inside
    the workspace too, a read or a write must still lead where the decision
    said it did.
    """
    if not raw:
        raise Refused("the path is empty; give a path relative to the workspace root")
    if "\x00" in raw:
        raise Refused("the path contains a NUL character")
    ws = workspace_root(ctx)
    target = Path(os.path.realpath(ws / raw))
    if is_within(target, ws):
        decided = (
            target == ws or _write_decided(target, ctx)
            if write
            else _read_seen_by_policy(target, ctx)
        )
        if not decided:
            raise Refused(
                f"{raw!r} now leads to {shown(target, ctx)}, not to the path the policy "
                "decided on: a folder on the way changed since the decision (a symbolic "
                f"link?), so nothing was {'written' if write else 'read'}"
            )
        ctx.touched.append(target)
        return target
    if not write and _read_seen_by_policy(target, ctx):
        return target
    via_link = is_within(Path(os.path.normpath(ws / raw)), ws)
    how = "through a symlink " if via_link else ""
    raise Refused(
        f"{raw!r} leads {how}to {target}, outside the workspace {ws}; "
        "ax's file tools work inside the workspace (paths are relative to its root)"
    )


def _write_decided(target: Path, ctx: ToolContext) -> bool:
    return any(facts.write and facts.resolved == str(target) for facts in ctx.decision.paths)


def _read_seen_by_policy(target: Path, ctx: ToolContext) -> bool:
    if ctx.decision.verdict == "deny":
        return False
    return any(
        facts.valid and not facts.write and facts.resolved == str(target)
        for facts in ctx.decision.paths
    )


@contextmanager
def opened(path: Path, ctx: ToolContext) -> Iterator[int | None]:
    """``path`` (resolved by ``resolve``) opened read-only, or None when it does not exist.

    It is walked from the workspace root (from ``/`` for a read outside the
    workspace that the decision named; ``resolve`` left no link in it) without
    following a link, so a folder swapped for one since is refused, not read
    through. The caller checks what it got (a file, a folder) with ``fstat``.
    """
    ws = workspace_root(ctx)
    base = ws if is_within(path, ws) else Path("/")
    with safeopen.open_for_reading(base, path.relative_to(base).as_posix()) as fd:
        yield fd


def read_regular(path: Path, ctx: ToolContext, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of the regular file at ``path`` (opened as ``opened``
    opens it), so a caller tells a file over ``limit`` by the length; Refused when it does
    not exist or is no regular file."""
    name = shown(path, ctx)
    with opened(path, ctx) as fd:
        if fd is None:
            raise Refused(f"{name} does not exist")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(f"{name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)


def shown(path: Path, ctx: ToolContext) -> str:
    """``path`` as the model should write it back: workspace-relative where possible."""
    ws = workspace_root(ctx)
    if path == ws:
        return "."
    if is_within(path, ws):
        return path.relative_to(ws).as_posix()
    return str(path)


def read_capped(path: str | os.PathLike[str], limit: int = FULL_OUTPUT_MAX_CHARS) -> str | None:
    """At most ``limit`` characters of a harness-written text file, or None if it is gone."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(limit + 1)
    except OSError:
        return None
    if len(text) > limit:
        return text[:limit] + f"\n… [cut at {limit} characters]\n"
    return text


def count(number: int, noun: str, plural: str | None = None) -> str:
    if number == 1:
        return f"{number} {noun}"
    return f"{number} {plural or noun + 's'}"


def clip_line(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [line cut: {len(text)} characters]"


def write_atomically(path: Path, data: bytes, ctx: ToolContext) -> bool:
    """Write ``data`` to ``path`` (resolved by ``resolve``) atomically, creating its folders.

    An existing file keeps its permission bits. Returns whether the file was new.
    """
    relative = path.relative_to(workspace_root(ctx)).as_posix()
    return safeopen.write_bytes(workspace_root(ctx), relative, data, NEW_FILE_MODE)


def read_for_edit(path: Path, limit: int, ctx: ToolContext) -> bytes | None:
    """At most ``limit`` + 1 bytes of the file ``path`` (resolved by ``resolve``), walked
    the way ``write_atomically`` will walk it; None when it does not exist."""
    relative = path.relative_to(workspace_root(ctx)).as_posix()
    return safeopen.read_bytes(workspace_root(ctx), relative, limit)
