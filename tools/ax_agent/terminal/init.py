"""``/init``: a starter ``AGENTS.md`` for the project, shown and asked about, never overwriting.

The starter is built from what ax knows without asking the model: the project
units ax-check detects (through the composition seam, as ``run_check`` reads
them) with the checks each can run, and the repository map's Layout: the
top-level folders with their file counts and the most central files
(``map_summary``). It is written at the workspace root only
when no instruction file is there under any name the session reads (a new
``AGENTS.md`` would otherwise hide the person's ``AGENT.md`` or ``CLAUDE.md``).

This is the person's own command, typed at the terminal, so no policy
decision stands between them and their file: the question is the consent.
It still writes as the model's writes do: by walking from the workspace root
without following a link and never into ``.git`` or ``.ax``
(``libcommon.safeopen``), refused where the configuration protects the path,
created atomically and never over anything that appeared meanwhile, and
recorded (``snapshot.stored`` and ``file.mutated``, after a ``custom`` event of
kind ``init``) so ``/undo`` removes it and the report lists it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from libcommon import safeopen
from libcommon.errors import AxError, OperationFailed
from libcommon.paths import is_within

from ..instructions import instruction_names
from ..seam.models import CheckDetectRequest, PathsRequest

if TYPE_CHECKING:
    from ax_check import DetectReport, UnitReport

    from ..session import Session

INIT_FILE = "AGENTS.md"
# Units listed in the starter; the rest are counted and left to `ax-check detect`.
INIT_UNITS_SHOWN = 40
# The starter's Layout: top-level folders listed (the rest counted) and key files named.
INIT_FOLDERS_SHOWN = 30
INIT_KEY_FILES_SHOWN = 10
NEW_FILE_MODE = 0o644

Say = Callable[[str], None]


def map_summary(session: Session) -> list[str]:
    """The repository map's summary, as lines of the starter's Layout section.

    Read from ax-map's index (the session's start refreshed it): the top-level
    folders with the files under each, then the files the map ranks highest
    without a query. Empty when there is no index to read (the start could not
    build one), and the starter then has no Layout section.
    """
    from ax_map import IndexUnavailable, current_snapshot, quote_path, rank_files

    try:
        snapshot = current_snapshot(session.layout)
    except IndexUnavailable:
        return []
    folders: dict[str, int] = {}
    top = 0
    for entry in snapshot.files:
        head, slash, _ = entry.path.partition("/")
        if slash:
            folders[head] = folders.get(head, 0) + 1
        else:
            top += 1
    lines = ["Top-level folders, with the files under each (from the repository map):", ""]
    ordered = sorted(folders.items(), key=lambda item: (-item[1], item[0]))
    for name, files in ordered[:INIT_FOLDERS_SHOWN]:
        lines.append(f"- `{quote_path(name)}/`: {_files(files)}")
    if len(ordered) > INIT_FOLDERS_SHOWN:
        rest = sum(files for _, files in ordered[INIT_FOLDERS_SHOWN:])
        lines.append(f"- and {len(ordered) - INIT_FOLDERS_SHOWN} more folders ({_files(rest)})")
    if top:
        lines.append(f"- {_files(top)} at the top level")
    key = rank_files(snapshot, limit=INIT_KEY_FILES_SHOWN)
    if key:
        lines += ["", "Key files, the most referenced and central first:", ""]
        lines += [f"- `{quote_path(ranked.path)}`" for ranked in key]
    return lines


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def starter(report: DetectReport | None, layout: list[str]) -> str:
    """The starter document: a header, the map's layout, the units and their checks."""
    lines = [
        "# AGENTS.md",
        "",
        "Instructions for coding agents working in this project. ax-agent reads this file",
        "at the start of every session (Codex and other agents read AGENTS.md too).",
        "`/init` wrote this starter from what ax detected; edit it to say what a new",
        "colleague would need to know that the checks below cannot tell.",
    ]
    if layout:
        lines += ["", "## Layout", "", *layout]
    units = report.units if report is not None else []
    if units:
        workspace = Path(report.workspace) if report is not None else Path("/")
        lines += ["", "## Project units and their checks", ""]
        for unit in units[:INIT_UNITS_SHOWN]:
            lines += _unit_lines(unit, workspace)
        if len(units) > INIT_UNITS_SHOWN:
            lines.append(
                f"- and {len(units) - INIT_UNITS_SHOWN} more units (`ax-check detect` lists "
                "them all)"
            )
    return "\n".join(lines) + "\n"


def _unit_lines(unit: UnitReport, workspace: Path) -> list[str]:
    manifests = ", ".join(unit.manifests) or "no manifest"
    lines = [f"- `{unit.id}` ({manifests})"]
    missing: list[str] = []
    for kind in unit.kinds:
        if kind.status == "ready" and kind.recipe is not None:
            command = _shown_command(kind.recipe.command, Path(unit.path), workspace)
            lines.append(f"  - {kind.kind}: `{command}`")
        else:
            missing.append(kind.kind)
    if missing:
        lines.append(f"  - not available here: {', '.join(missing)}")
    return lines


def _shown_command(command: str, folder: Path, workspace: Path) -> str:
    """``command`` without this machine's absolute path of its program.

    A program inside the workspace is shown relative to the unit's folder (where
    the command runs); one elsewhere by its name, since its path is this
    machine's and the file is the project's.
    """
    head, space, rest = command.partition(" ")
    if not head.startswith("/"):
        return command
    program = Path(head)
    head = os.path.relpath(program, folder) if is_within(program, workspace) else program.name
    return head + space + rest


def run_init(session: Session, say: Say, confirm: Callable[[str], bool] | None) -> None:
    """Show the starter, ask, and write it (see the module docstring)."""
    from ax_policy import validate_path

    workspace = session.workspace
    names = (
        session.instructions.names
        if session.instructions is not None
        else instruction_names(session.config)
    )
    existing = next((name for name in names if os.path.lexists(workspace / name)), None)
    if existing is not None:
        raise OperationFailed(
            f"{existing} already gives this folder its instructions; /init never overwrites "
            "or hides an instruction file",
            hint=f"edit {existing} with your editor",
        )
    refusal = validate_path(INIT_FILE, workspace, write=True, config=session.config).refusal()
    if refusal is not None:
        raise OperationFailed(f"{INIT_FILE} cannot be written here: {refusal[1]}")
    report = None
    try:
        report = session.seam.call("check.detect", CheckDetectRequest())
    except AxError as exc:
        say(f"(ax-check could not detect the project's units: {exc.message})")
    text = starter(report, map_summary(session))
    say(f"A starter {INIT_FILE} for {workspace}:")
    say("")
    for line in text.rstrip("\n").split("\n"):
        say("  " + line)
    say("")
    if confirm is None or not confirm(f"Write this as {workspace / INIT_FILE}?"):
        say("Nothing was written.")
        return
    _write(session, text.encode())
    say(f"Wrote {INIT_FILE} ({len(text.encode())} bytes); /undo removes it.")


def _write(session: Session, data: bytes) -> None:
    workspace = session.workspace
    path = str(workspace / INIT_FILE)
    said = {"type": "custom", "kind": "init", "data": {"path": INIT_FILE, "bytes": len(data)}}
    session.show_new(session.seam.call("log.snapshot", PathsRequest(paths=[path], before=[said])))
    safeopen.create_bytes(workspace, INIT_FILE, data, NEW_FILE_MODE)
    session.show_new(session.seam.call("log.mutated", PathsRequest(paths=[path])))
    if session.instructions is not None:
        # The model works under the new file from its next request.
        loaded = session.instructions.reconsider(workspace, "init")
        if loaded is not None:
            session.record(loaded)
