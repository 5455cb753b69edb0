"""Instruction files: which ones a session reads, within one budget, and how they reach the model.

Discovery runs as Codex's does, inside ax's trust boundary. The chain goes from
the project's root folder down to the folder the session works in, at most one
file per folder: the first that exists of ``AGENTS.override.md``,
``AGENTS.md``, ``AGENT.md``, then the user config's fallback names (default
``CLAUDE.md``). The folder the session works in is the current directory when
it is inside the workspace, else the workspace. The root is the top of the git
work tree holding that folder when the top is inside the workspace, else the
workspace: trust is given to the workspace (an exact realpath), so nothing
above it is read, and a file found there is listed as skipped with the cure
(start ax-agent with ``-C`` at the top). Codex binds trust to the repository's
top instead, which is why it can read from there.

A user-level file in the state root (next to the user's ``config.json``, the
one place ax keeps user configuration) comes first; the loader leaves it out
for a delegated task (``for_delegated_task``).

Other folders of the project load lazily: the first time one of the agent's
file tools resolves a path under a folder whose file was not looked at yet,
that folder's file (and those of the folders between it and the root) is read,
recorded as ``memory.loaded`` and added to the next request as a labelled
block anchored to the message it first rides on (``pin``), never to the system
prompt, so the cached prefix stays as it was.

Budget: the user file has its own ceiling; the project's files share one
ceiling for the whole session, filled from the most specific file up (the
deepest file whole first), each cut at whole lines, never inside a character,
with a visible ``[… N bytes of FILE not shown]``. Every document passes through
``libcommon.delimiters`` (its text and its path), and the words around it are
``libcommon.delimiters.CONTEXT_NOT_AUTHORITY``, the one sentence that labels
every document a session is given (project memory too, ``ax_agent.memory``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from libcommon import delimiters, safeopen
from libcommon.errors import AxError
from libcommon.paths import is_within

from .providers.base import TextBlock

if TYPE_CHECKING:
    from ax_policy import PolicyConfig

# The user-level file's ceiling, and the one ceiling every project file of a session shares.
USER_MAX_BYTES = 16 * 1024
PROJECT_MAX_BYTES = 24 * 1024
# A larger file is skipped unread: its row's sha256 is of the whole file, so the whole
# file is read, and this bounds that read.
FILE_MAX_BYTES = 1024 * 1024
INSTRUCTION_NAMES = ("AGENTS.override.md", "AGENTS.md", "AGENT.md")
DEFAULT_FALLBACKS = ("CLAUDE.md",)

# The markers the injected documents are wrapped in; a document holding one could
# close its region early, so runs of them and the markers' words are defused.
DELIMITER_OPEN = "<<<"
DELIMITER_CLOSE = ">>>"
MARKER_WORDS = "project-instructions"
_MARKERS = delimiters.phrase_pattern([MARKER_WORDS])
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

PRECEDENCE = (
    "Where two of them disagree, the more specific one wins: the project's files over the "
    "user-level file, and a folder's file over those of the folders above it."
)
CUT_NOTE = (
    "A file cut to fit the budget ends with a marker saying how many bytes are not shown; "
    "read_file reads a project file whole."
)

Scope = Literal["user", "project"]
Trigger = Literal["start", "lazy", "resume", "init"]


def neutralise(text: str) -> str:
    """``text`` made unable to pass for (or close with) the instruction region's markers."""
    return delimiters.neutralise(text, _MARKERS)


def shown_name(path: str) -> str:
    """A file or folder name as it may appear next to the markers: defused, on one line."""
    return _CONTROL.sub("?", neutralise(path))


def fit_whole_lines(data: bytes, allowed: int) -> tuple[str, int]:
    """The neutralised text of ``data``'s longest run of whole lines that fits ``allowed``
    bytes (neutralised and encoded), and how many bytes of ``data`` it leaves out.

    The cut falls only after a newline, so no character is ever split. Neutralising
    can lengthen a line (a run of brackets becomes guillemets), so the fit is
    measured on the neutralised text, by halving over the line ends.
    """
    whole = neutralise(data.decode("utf-8", "replace"))
    if len(whole.encode()) <= allowed:
        return whole, 0
    ends = [match.end() for match in re.finditer(b"\n", data)]

    def size(count: int) -> int:
        return len(neutralise(data[: ends[count - 1]].decode("utf-8", "replace")).encode())

    low, high = 0, len(ends)
    while low < high:
        middle = (low + high + 1) // 2
        if size(middle) <= allowed:
            low = middle
        else:
            high = middle - 1
    kept = ends[low - 1] if low else 0
    return neutralise(data[:kept].decode("utf-8", "replace")), len(data) - kept


@dataclass(frozen=True)
class Found:
    """One instruction file read whole."""

    scope: Scope
    # As recorded: workspace-relative for a project file, absolute for the user file.
    path: str
    # The workspace-relative folder of a project file; None for the user file.
    directory: str | None
    data: bytes


def region(found: Found, text: str, hidden: int) -> str:
    """The delimited block of a file: its shown text and, when cut, the marker."""
    name = shown_name(found.path)
    scope = " scope=user" if found.scope == "user" else ""
    cut = f"[… {hidden} bytes of {name} not shown]" if hidden else ""
    inner = "\n".join(part for part in (text.rstrip("\n"), cut) if part)
    return (
        f"{DELIMITER_OPEN}{MARKER_WORDS} file={name}{scope}{DELIMITER_CLOSE}\n"
        f"{inner}\n{DELIMITER_OPEN}end {MARKER_WORDS}{DELIMITER_CLOSE}"
    )


def region_overhead(found: Found) -> int:
    """The most a file's block adds to its text: markers, name, the cut marker, a newline."""
    return len(region(found, "", len(found.data)).encode()) + 1


@dataclass(frozen=True)
class Fitted:
    """A file as it is injected: its neutralised text within the budget, and what was left out.

    ``block`` is None for an empty file (nothing to show, nothing cut) and for one
    the budget had no room left to even announce.
    """

    found: Found
    text: str
    hidden: int
    block: str | None

    @property
    def shown_bytes(self) -> int:
        return len(self.text.encode())

    @property
    def charge(self) -> int:
        """What it costs the budget: the whole block, markers included."""
        return len(self.block.encode()) + 1 if self.block is not None else 0

    def row(self) -> dict[str, Any]:
        data = self.found.data
        row: dict[str, Any] = {"path": self.found.path, "scope": self.found.scope}
        if self.found.directory is not None:
            row["directory"] = self.found.directory
        row.update(
            status="loaded",
            bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            shownBytes=self.shown_bytes,
            hiddenBytes=self.hidden,
            truncated=self.hidden > 0,
        )
        if self.block is None and self.hidden:
            row["reason"] = "the instruction budget had no room left to show it"
        return row


def fit_from_most_specific(found: Sequence[Found], budget: int) -> list[Fitted]:
    """``found`` within ``budget`` bytes of blocks, the deepest file served first.

    Returned top folder first. Each block's markers are charged with its text, so
    what the files inject never passes ``budget``.
    """
    fitted: list[Fitted] = []
    left = budget
    for item in sorted(found, key=_depth, reverse=True):
        room = left - region_overhead(item)
        if room < 0:
            piece = Fitted(item, "", len(item.data), None)
        else:
            text, hidden = fit_whole_lines(item.data, room)
            shown = region(item, text, hidden) if text.strip() or hidden else None
            piece = Fitted(item, text, hidden, shown)
        left -= piece.charge
        fitted.append(piece)
    return sorted(fitted, key=lambda piece: _depth(piece.found))


def _depth(item: Found) -> int:
    if item.directory is None:
        return -1
    return 0 if item.directory == "." else item.directory.count("/") + 1


def _skipped(row: dict[str, Any], reason: str) -> dict[str, Any]:
    return {**row, "status": "skipped", "reason": reason}


def _read_project_file(
    workspace: Path, relative: str, row: dict[str, Any], config: PolicyConfig | None
) -> Found | dict[str, Any]:
    """The file at ``relative``, read as read_file reads, or the row saying why it was not.

    The text goes to the model unasked, so it is read only when ax-policy would let
    read_file read it without a question under ``config`` (a link to ``.env``, a file
    with another hard link, a device or a name with a control character is skipped),
    by walking its resolved path without following a link.
    """
    from ax_policy import validate_path

    real = Path(os.path.realpath(workspace / relative))
    if not is_within(real, workspace) or real == workspace:
        return _skipped(row, "not a file in the workspace")
    facts = validate_path(relative, workspace, config=config)
    refusal = facts.refusal()
    if refusal is not None:
        return _skipped(row, f"read_file would be refused it ({refusal[1]})")
    concerns = facts.concerns()
    if concerns:
        return _skipped(row, f"reading it would need a person's answer ({'; '.join(concerns)})")
    try:
        with safeopen.open_for_reading(workspace, real.relative_to(workspace).as_posix()) as fd:
            if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
                return _skipped(row, "not a file in the workspace")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(FILE_MAX_BYTES + 1)
    except (OSError, AxError) as exc:
        return _skipped(row, exc.message if isinstance(exc, AxError) else exc.strerror or str(exc))
    if len(data) > FILE_MAX_BYTES:
        return _skipped(row, f"larger than {FILE_MAX_BYTES} bytes, so not read")
    return Found("project", relative, row["directory"], data)


def _read_user_file(folder: Path) -> Found | dict[str, Any] | None:
    """The user-level file: the first of the instruction names in ``folder`` (the state root).

    It is the user's own folder, so a link there is followed; a FIFO or a device is
    not read.
    """
    for name in INSTRUCTION_NAMES:
        path = folder / name
        if not os.path.lexists(path):
            continue
        row: dict[str, Any] = {"path": str(path), "scope": "user"}
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            return _skipped(row, exc.strerror or str(exc))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return _skipped(row, "not a regular file")
            data = handle.read(FILE_MAX_BYTES + 1)
        if len(data) > FILE_MAX_BYTES:
            return _skipped(row, f"larger than {FILE_MAX_BYTES} bytes, so not read")
        return Found("user", str(path), None, data)
    return None


def working_folder(workspace: Path, cwd: str | os.PathLike[str] | None = None) -> Path:
    """The folder the session works in: ``cwd`` (default: this process's current
    directory) when it is inside the workspace, else the workspace."""
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:  # the current directory was removed: the workspace is all there is
            return workspace
    real = Path(os.path.realpath(cwd))
    return real if is_within(real, workspace) and real.is_dir() else workspace


def instruction_names(config: PolicyConfig | None) -> tuple[str, ...]:
    fallbacks = (
        config.instruction_fallbacks
        if config is not None and config.instruction_fallbacks is not None
        else DEFAULT_FALLBACKS
    )
    return tuple(dict.fromkeys([*INSTRUCTION_NAMES, *fallbacks]))


@dataclass(frozen=True)
class Pinned:
    """An instruction block and the message (by its index in the history) it rides on."""

    anchor: int
    block: TextBlock


@dataclass
class Instructions:
    """What a session was given at start, and the loader of the folders it works in later."""

    workspace: Path
    # The top of the project chain, and the folder the session works in.
    root: Path
    working: Path
    names: tuple[str, ...]
    config: PolicyConfig | None = None
    # The section the system prompt carries ("" when no file was loaded).
    text: str = ""
    # The rows recorded at start (memory.loaded), and every row since, for /context.
    documents: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    # What is left of the project ceiling.
    remaining: int = PROJECT_MAX_BYTES
    # Folders whose file was looked for already.
    considered: set[Path] = field(default_factory=set)
    # Blocks loaded since the last request, then anchored to the message they first rode on.
    pending: list[TextBlock] = field(default_factory=list)
    pinned: list[Pinned] = field(default_factory=list)
    # The model was told that the budget is spent and later files go unannounced.
    spent_said: bool = False

    def event(self) -> dict[str, Any]:
        return {"type": "memory.loaded", "trigger": "start", "documents": self.documents}

    def touch(self, paths: Iterable[Path], trigger: Trigger = "lazy") -> dict[str, Any] | None:
        """Load the files of the folders ``paths`` lead into that were not looked at yet.

        ``paths`` are real paths a file tool resolved (a file, or a folder it
        lists or searches). Returns the ``memory.loaded`` event to record, or
        None when no folder of the project held a file not yet looked at. The
        new blocks wait in ``pending`` for the next request.
        """
        folders: list[Path] = []
        for path in paths:
            deepest = path if os.path.isdir(path) else path.parent
            if not is_within(deepest, self.root):
                continue
            chain = [deepest, *deepest.parents]
            for folder in reversed(chain[: chain.index(self.root) + 1]):
                if folder not in self.considered:
                    self.considered.add(folder)
                    folders.append(folder)
        if not folders:
            return None
        found, rows = self.look_in(folders)
        head = f"[ax: {_WHY[trigger]}. {delimiters.CONTEXT_NOT_AUTHORITY} {PRECEDENCE} {CUT_NOTE}]"
        # The head is charged once, and only when a block comes with it.
        fitted = fit_from_most_specific(found, self.remaining - len(head.encode()) - 1)
        blocks = [piece.block for piece in fitted if piece.block is not None]
        if blocks:
            self.remaining -= len(head.encode()) + 1 + sum(piece.charge for piece in fitted)
            self.pending.append(TextBlock("\n".join([head, *blocks])))
        elif any(piece.hidden for piece in fitted) and not self.spent_said:
            # Said once, at a fixed size: the budget is what bounds these blocks.
            self.spent_said = True
            first = shown_name(next(piece.found.path for piece in fitted if piece.hidden))
            self.pending.append(TextBlock(_SPENT.format(first=first)))
        rows += [piece.row() for piece in fitted]
        if not rows:
            return None
        self.rows += rows
        return {"type": "memory.loaded", "trigger": trigger, "documents": rows}

    def reconsider(self, folder: Path, trigger: Trigger) -> dict[str, Any] | None:
        """Look in ``folder`` again (a file was just written there): ``touch`` for it alone."""
        self.considered.discard(folder)
        return self.touch([folder], trigger)

    def pin(self, index: int) -> list[Pinned]:
        """Anchor what is pending to history message ``index``; every block pinned so far."""
        self.pinned += [Pinned(index, block) for block in self.pending]
        self.pending = []
        return list(self.pinned)

    def lines(self) -> list[str]:
        """What was loaded and how much of it the model sees (``/context``)."""
        used = PROJECT_MAX_BYTES - self.remaining
        lines = [
            f"instruction files: user-level up to {USER_MAX_BYTES} bytes; project up to "
            f"{PROJECT_MAX_BYTES} bytes in all ({used} used, {self.remaining} left)"
        ]
        if not self.rows:
            lines.append("  none found")
        for row in self.rows:
            where = f"{row['scope']:<8} {row['path']}"
            if row["status"] != "loaded":
                lines.append(f"  {where}: skipped: {row['reason']}")
            elif row["truncated"]:
                lines.append(
                    f"  {where}: {row['bytes']} bytes, CUT: {row['hiddenBytes']} bytes not shown"
                )
            else:
                lines.append(f"  {where}: {row['bytes']} bytes")
        return lines

    def look_in(self, folders: Sequence[Path]) -> tuple[list[Found], list[dict[str, Any]]]:
        found: list[Found] = []
        rows: list[dict[str, Any]] = []
        for folder in folders:
            item = project_file(self.workspace, folder, self.names, self.config)
            if isinstance(item, Found):
                found.append(item)
            elif item is not None:
                rows.append(item)
        return found, rows


_SPENT = (
    "[ax: an instruction file was found where you just worked ({first}), but the project's "
    f"instruction budget ({PROJECT_MAX_BYTES} bytes) is spent, so it is not shown; read_file "
    "reads it. Later files that do not fit are not announced.]"
)
_WHY: Mapping[Trigger, str] = {
    "start": "instruction files",
    "lazy": "instruction files of a folder you just worked in, loaded the first time",
    "resume": "instruction files of folders this session worked in before it was resumed",
    "init": "an instruction file the user just created with /init",
}


def project_file(
    workspace: Path, folder: Path, names: Sequence[str], config: PolicyConfig | None
) -> Found | dict[str, Any] | None:
    """The file of ``folder``: the first of ``names`` that exists there (read, or the row
    saying why it was skipped), or None when it holds none."""
    directory = folder.relative_to(workspace).as_posix()
    for name in names:
        relative = name if directory == "." else f"{directory}/{name}"
        if os.path.lexists(workspace / relative):
            row = {"path": relative, "scope": "project", "directory": directory}
            return _read_project_file(workspace, relative, row, config)
    return None


def _above_workspace(toplevel: Path, workspace: Path, names: Sequence[str]) -> list[dict[str, Any]]:
    """Rows for the files in the folders from ``toplevel`` down to above the workspace."""
    rows: list[dict[str, Any]] = []
    parts = workspace.relative_to(toplevel).parts
    for depth in range(len(parts)):
        folder = toplevel.joinpath(*parts[:depth])
        name = next((n for n in names if os.path.lexists(folder / n)), None)
        if name is not None:
            rows.append(
                {
                    "path": str(folder / name),
                    "scope": "project",
                    "status": "skipped",
                    "reason": f"above the workspace {workspace}, the folder trust was given "
                    f"to, so not read; to load it, start ax-agent with -C {toplevel}",
                }
            )
    return rows


def load_instructions(
    workspace: Path,
    config: PolicyConfig | None = None,
    *,
    working: Path | None = None,
    toplevel: Path | None = None,
    user_folder: Path | None = None,
    for_delegated_task: bool = False,
) -> Instructions:
    """The instruction files a session starts with (see the module docstring).

    ``working`` is the folder the session works in (``working_folder``; default
    the workspace), ``toplevel`` the top of the git work tree holding it (None
    outside one), ``user_folder`` where the user-level file lives (the state
    root; None reads none). ``for_delegated_task`` leaves the user-level file
    out whatever ``user_folder`` says: it is the person's, not the project's,
    and a delegated task gets the project's files only.
    """
    working = working if working is not None and is_within(working, workspace) else workspace
    root = (
        toplevel
        if toplevel is not None and is_within(toplevel, workspace) and is_within(working, toplevel)
        else workspace
    )
    names = instruction_names(config)
    instructions = Instructions(workspace, root, working, names, config)
    rows: list[dict[str, Any]] = []
    if toplevel is not None and toplevel != workspace and is_within(workspace, toplevel):
        rows += _above_workspace(toplevel, workspace, names)
    user: list[Fitted] = []
    if user_folder is not None and not for_delegated_task:
        item = _read_user_file(user_folder)
        if isinstance(item, Found):
            user = fit_from_most_specific([item], USER_MAX_BYTES)
        elif item is not None:
            rows.append(item)
    chain = [working, *working.parents]
    folders = list(reversed(chain[: chain.index(root) + 1]))
    instructions.considered.update(folders)
    found, skipped = instructions.look_in(folders)
    project = fit_from_most_specific(found, PROJECT_MAX_BYTES)
    instructions.remaining -= sum(piece.charge for piece in project)
    rows += skipped + [piece.row() for piece in [*user, *project]]
    instructions.documents = rows
    instructions.rows = list(rows)
    regions = [piece.block for piece in [*user, *project] if piece.block is not None]
    if regions:
        first = "the user-level file first, then the project's" if user else "the project's"
        instructions.text = "\n\n".join(
            [
                f"Instruction files follow: {first}, from the project's root folder down to "
                f"the folder the user works in. {delimiters.CONTEXT_NOT_AUTHORITY} {PRECEDENCE} "
                f"{CUT_NOTE} The files of other folders of the project are added to the "
                "conversation, labelled, the first time you work in their folder.",
                *regions,
            ]
        )
    return instructions


def folders_loaded_before(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The folders whose files a session's earlier lives loaded after its start (for resume)."""
    folders: dict[str, None] = {}
    for event in events:
        if event.get("type") != "memory.loaded" or event.get("trigger") in (None, "start"):
            continue
        for row in event.get("documents", []):
            directory = row.get("directory")
            if row.get("status") == "loaded" and isinstance(directory, str):
                folders[directory] = None
    return list(folders)


class TruncationNotice:
    """Says once per session, in one line each, which instruction files their budget cut
    and which project memory documents their caps cut."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said: set[tuple[str, bool]] = set()

    def __call__(self, record: Mapping[str, Any]) -> None:
        if record.get("type") != "memory.loaded":
            return
        session = str(record.get("session"))
        for memory in (False, True):
            cut = [
                row
                for row in record.get("documents", [])
                if row.get("truncated") and (row.get("scope") == "memory") == memory
            ]
            if not cut or (session, memory) in self.said:
                continue
            self.said.add((session, memory))
            self.say(_memory_cut(cut) if memory else _files_cut(cut))


def _files_cut(rows: Sequence[Mapping[str, Any]]) -> str:
    files = ", ".join(
        f"{shown_name(str(row['path']))} ({row['hiddenBytes']} of {row['bytes']} bytes not shown)"
        for row in rows
    )
    return (
        f"ax-agent: instruction files were cut to fit their budget: {files}; "
        "memory.loaded in the session log (and /context in the terminal) lists them"
    )


def _memory_cut(rows: Sequence[Mapping[str, Any]]) -> str:
    files = ", ".join(
        f"{shown_name(str(row['path']))} ({row['omittedBytes']} bytes not shown)" for row in rows
    )
    return (
        f"ax-agent: project memory was cut to fit its caps: {files}; "
        "memory.loaded in the session log (and /memory in the terminal) lists them"
    )
