"""The ax-slate command line: parse, call the core, print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from libcommon import cliapp
from libcommon.cliapp import Environment, JsonOption, WorkspaceOption, entry_point, make_app
from libcommon.errors import OperationFailed, UsageError

if TYPE_CHECKING:
    from libcommon.paths import StateLayout

    from .external import ExternalContext
    from .models import CodebaseDigests, MemoryDocInfo, SlateSeed

app = make_app(
    "ax-slate",
    "Working memory: trail, notes, frame, recall, external slates, the review gate and "
    "project memory.",
)
note_app = typer.Typer(
    help="Set or delete one of a session's notes.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(note_app, name="note")
proposals_app = typer.Typer(rich_markup_mode=None)
app.add_typer(proposals_app, name="proposals")
memory_app = typer.Typer(
    help="Project memory: JOURNAL.md, CODEBASE.md, LESSONS.md and RESEARCH.md (list, show, "
    "path and render only read; edit the files with your editor).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(memory_app, name="memory")
DocArgument = Annotated[
    str,
    typer.Argument(
        metavar="DOC", help="journal, codebase, lessons or research.", show_default=False
    ),
]

SessionOption = Annotated[str, typer.Option("--session", help="The session id.")]
StaleOption = Annotated[
    float | None,
    typer.Option(
        "--stale-after",
        help="Seconds after which an untouched external slate is closed (default: 1800).",
    ),
]


def _layout(workspace: Any) -> StateLayout:
    from libcommon.paths import state_layout

    return state_layout(workspace, cliapp.env().environ)


def _context(workspace: Any, stale_after: float | None) -> ExternalContext:
    from datetime import timedelta

    from .external import STALE_AFTER_S, ExternalContext

    seconds = STALE_AFTER_S if stale_after is None else stale_after
    if seconds <= 0:
        raise UsageError("--stale-after must be a positive number of seconds")
    return ExternalContext.for_layout(_layout(workspace), timedelta(seconds=seconds))


def _serve(name: str, workspace: Any, stale_after: float | None) -> None:
    from .external import HANDLERS

    handler = HANDLERS[name]
    request = cliapp.read_request(handler.request)
    ctx = _context(workspace, stale_after)
    cliapp.emit_json(handler.call(request, ctx).to_json())


# ---- external slates --------------------------------------------------------


@app.command("open")
def open_(workspace: WorkspaceOption = None, stale_after: StaleOption = None) -> None:
    """Open an external slate: {externalSessionId, anchors, workspaceId?} on stdin."""
    _serve("open", workspace, stale_after)


@app.command("write-seed")
def write_seed(workspace: WorkspaceOption = None, stale_after: StaleOption = None) -> None:
    """Add a Seed to an external slate: {externalSessionId, text, kind} on stdin."""
    _serve("writeSeed", workspace, stale_after)


@app.command("close")
def close(workspace: WorkspaceOption = None, stale_after: StaleOption = None) -> None:
    """Close an external slate into review: {externalSessionId} on stdin."""
    _serve("close", workspace, stale_after)


# ---- a session's slate ------------------------------------------------------


@app.command("start")
def start(
    session: SessionOption,
    continues: Annotated[
        str | None,
        typer.Option("--continues", help="Carry the Trail and Notes of this earlier session."),
    ] = None,
    focus: Annotated[
        list[str] | None, typer.Option("--focus", help="A focus path (repeatable).")
    ] = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Create a session's slate (or show the existing one) and print slate.json."""
    from .session import open_session

    slate = open_session(_layout(workspace), session, focus=focus or (), continues=continues)
    cliapp.emit_json(slate.to_json())


@app.command("record")
def record(session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """For harnesses: append a step ({tool, args, outcome, output} on stdin) to the trail."""
    from .models import RecordRequest
    from .trail import record as record_step

    request = cliapp.read_request(RecordRequest)
    entry = record_step(_layout(workspace), session, request)
    cliapp.emit_json(entry.to_json())


@app.command("save-output")
def save_output(session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """For harnesses: keep a step's full output (text on stdin, redacted); print its path."""
    from libcommon.cliapp import REQUEST_MAX_BYTES

    from .trail import save_output as save

    if cliapp.env().stdin_isatty:
        raise UsageError("the output is read from stdin, and stdin is a terminal")
    text = cliapp.env().stdin.read(REQUEST_MAX_BYTES + 1)
    if len(text) > REQUEST_MAX_BYTES:
        raise UsageError(f"the output is larger than {REQUEST_MAX_BYTES} bytes")
    cliapp.emit_json({"path": str(save(_layout(workspace), session, text))})


@app.command("archive")
def archive(session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """For harnesses: keep one message (JSON on stdin) whole in the archive; print its row."""
    from libcommon import jsonio
    from libcommon.cliapp import REQUEST_MAX_BYTES

    from .recall import archive_message

    if cliapp.env().stdin_isatty:
        raise UsageError("the message is read from stdin, and stdin is a terminal")
    text = cliapp.env().stdin.read(REQUEST_MAX_BYTES + 1)
    if len(text) > REQUEST_MAX_BYTES:
        raise UsageError(f"the message is larger than {REQUEST_MAX_BYTES} bytes")
    try:
        message = jsonio.loads(text)
    except jsonio.JSONDecodeError as exc:
        raise UsageError(f"the message is not valid JSON: {exc}") from None
    if not isinstance(message, dict):
        raise UsageError(f"the message must be a JSON object, not {type(message).__name__}")
    cliapp.emit_json({"row": archive_message(_layout(workspace), session, message)})


@app.command("trail")
def trail(
    session: SessionOption,
    count: Annotated[
        int | None, typer.Option("--count", help="How many of the newest entries (default 20).")
    ] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Only this tool.")] = None,
    file: Annotated[
        str | None, typer.Option("--file", help="Only steps whose arguments mention this text.")
    ] = None,
    from_step: Annotated[int | None, typer.Option("--from", help="First step.")] = None,
    to_step: Annotated[int | None, typer.Option("--to", help="Last step.")] = None,
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Print a session's Trail (read-only)."""
    from .trail import TRAIL_DEFAULT_COUNT, read_trail

    entries = read_trail(
        _layout(workspace),
        session,
        count=TRAIL_DEFAULT_COUNT if count is None else count,
        tool=tool,
        file=file,
        from_step=from_step,
        to_step=to_step,
    )
    for entry in entries:
        if json:
            cliapp.emit_line(entry.to_json())
        else:
            output = f"  [output: {entry.output}]" if entry.output else ""
            line = f"#{entry.step} {entry.ts} {entry.tool} {entry.args_digest}"
            cliapp.env().stdout.write(f"{line} -> {entry.outcome}{output}\n")


@app.command("notes")
def notes(
    session: SessionOption,
    key: Annotated[str | None, typer.Argument(help="Show only this note.")] = None,
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Print a session's Notes (read-only)."""
    from .session import list_notes

    found = list_notes(_layout(workspace), session, key)
    if json:
        cliapp.emit_json([note.to_json() for note in found])
        return
    out = cliapp.env().stdout
    for note in found:
        out.write(f"[{note.key}] (updated {note.updated_at})\n")
        out.write("  " + note.text.replace("\n", "\n  ") + "\n")
    if not found:
        cliapp.chrome(f"session {session} has no notes")


@note_app.command("set")
def note_set(key: str, session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """Set or replace a note; its text is read from stdin."""
    from libcommon.cliapp import REQUEST_MAX_BYTES

    from .session import set_note

    if cliapp.env().stdin_isatty:
        raise UsageError("the note text is read from stdin, and stdin is a terminal")
    text = cliapp.env().stdin.read(REQUEST_MAX_BYTES + 1)
    note = set_note(_layout(workspace), session, key, text.rstrip("\n"))
    cliapp.emit_json(note.to_json())


@note_app.command("delete")
def note_delete(key: str, session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """Delete a note by key."""
    from .session import delete_note

    if not delete_note(_layout(workspace), session, key):
        raise OperationFailed(f"session {session} has no note {key!r}")
    cliapp.emit_json({"key": key, "deleted": True})


@app.command("frame")
def frame(
    session: SessionOption,
    budget: Annotated[
        int | None,
        typer.Option("--budget", help="Token budget for the Trail lines (default 2500)."),
    ] = None,
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Print the slate frame that stands in for rounds that left the request."""
    from .frame import FRAME_TRAIL_TOKENS, build_frame

    if budget is not None and budget < 0:
        raise UsageError("--budget must not be negative")
    built = build_frame(
        _layout(workspace), session, FRAME_TRAIL_TOKENS if budget is None else budget
    )
    if json:
        cliapp.emit_json(built.to_json())
    else:
        cliapp.env().stdout.write(built.text + "\n")


@app.command("recall")
def recall(
    session: SessionOption,
    step: Annotated[int, typer.Option("--step", help="The step whose output to read.")],
    page: Annotated[int, typer.Option("--page", help="Which page (from 1).")] = 1,
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Print one page (6,000 characters) of a step's full output."""
    from .recall import recall_step

    result = recall_step(_layout(workspace), session, step, page)
    if json:
        cliapp.emit_json(result.to_json())
        return
    cliapp.env().stdout.write(result.text + ("" if result.text.endswith("\n") else "\n"))
    cliapp.chrome(f"page {result.page} of {result.pages}" + _next(result.next))


def _next(call: str | None) -> str:
    return f"; next: {call}" if call else ""


@app.command("search")
def search(
    session: SessionOption,
    query: Annotated[str | None, typer.Option("--query", help="Text to find.")] = None,
    row: Annotated[int | None, typer.Option("--row", help="Read this archive row.")] = None,
    page: Annotated[int, typer.Option("--page", help="Which page (from 1).")] = 1,
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Search the session's archive by text, or read one row whole, a page at a time."""
    from .recall import search as search_archive

    if (query is None) == (row is None):
        raise UsageError("give exactly one of --query or --row")
    result = search_archive(_layout(workspace), session, query=query, row=row, page=page)
    if json:
        cliapp.emit_json(result.to_json())
        return
    out = cliapp.env().stdout
    if result.text is not None:
        out.write(result.text + ("" if result.text.endswith("\n") else "\n"))
    for hit in result.hits:
        who = ", ".join(part for part in (hit.role, hit.ts) if part)
        out.write(f"row {hit.row}" + (f" ({who})" if who else "") + ": ")
        out.write(hit.snippet.replace("\n", "\n  ") + "\n")
    if query is not None and not result.hits:
        cliapp.chrome("no matches")
    cliapp.chrome(f"page {result.page} of {result.pages}" + _next(result.next))


# ---- the review gate --------------------------------------------------------


@proposals_app.callback(invoke_without_command=True)
def proposals(
    ctx: typer.Context, workspace: WorkspaceOption = None, json: JsonOption = False
) -> None:
    """List pending proposals and unbound candidates; `proposals show ID` prints one whole."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"workspace": workspace, "json": json}
        return
    from .gate import list_proposals

    rows = list_proposals(_layout(workspace))
    if json:
        cliapp.emit_json([row.to_json() for row in rows])
        return
    out = cliapp.env().stdout
    for row in rows:
        out.write(
            f"{row.id}  {row.kind}  seeds={row.seeds}  origin={row.origin.harness}"
            f"/{row.origin.external_session_id}  trust={row.trust}"
            f"  workspace={row.workspace_id or '-'}  created={row.created_at}\n"
        )
    if not rows:
        cliapp.chrome("nothing awaits review")


@proposals_app.command("show")
def proposals_show(
    ctx: typer.Context,
    proposal_id: Annotated[str, typer.Argument(metavar="ID", help="A proposal or candidate id.")],
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> None:
    """Print one proposal or candidate with every Seed, without reviewing it (read-only)."""
    from libcommon import jsonio

    from .gate import show_proposal

    # `proposals -C DIR show ID` means the same as `proposals show ID -C DIR`.
    given = ctx.obj or {}
    if workspace is not None and given.get("workspace") is not None:
        raise UsageError("give -C/--workspace once, before or after `show`")
    layout = _layout(workspace if workspace is not None else given.get("workspace"))
    proposal = show_proposal(layout, proposal_id)
    if json or given.get("json"):
        cliapp.emit_json(proposal.to_json())
        return
    out = cliapp.env().stdout
    out.write(
        f"{proposal.kind} {proposal.id} ({proposal.status}) from {proposal.origin.harness} "
        f"session {proposal.external_session_id}, trust {proposal.trust}\n"
        f"workspace: {proposal.workspace_id or '-'}  created: {proposal.created_at}"
        + (f"  reviewed: {proposal.reviewed_at}" if proposal.reviewed_at else "")
        + "\n"
        + f"anchors: {_printable(jsonio.dumps(proposal.anchors).decode())}\n"
    )
    total = len(proposal.seeds)
    for number, seed in enumerate(proposal.seeds, start=1):
        decided = proposal.decisions.get(seed.id)
        out.write(
            f"\nSeed {number} of {total} [{_kind_label(seed)}] {seed.id} {seed.ts}"
            + (f" {decided}" if decided else "")
            + "\n  "
            + _printable(seed.text).replace("\n", "\n  ")
            + "\n"
        )
    if proposal.status == "pending":
        cliapp.chrome(f"to decide each seed: ax-slate review {proposal.id}")


@app.command("review")
def review(
    proposal_id: Annotated[str, typer.Argument(metavar="ID", help="A proposal or candidate id.")],
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
) -> int:
    """Accept or reject each Seed of a proposal, as a person at a terminal."""
    from .gate import pending_proposal
    from .gate import review as run_review

    environment = cliapp.env()
    if not environment.stdin_isatty:
        raise OperationFailed(
            "review needs a person at a terminal, and stdin is not one; nothing was changed",
            hint="run `ax-slate review ID` in an interactive shell",
        )
    layout = _layout(workspace)
    proposal = pending_proposal(layout, proposal_id)
    cliapp.chrome(
        f"Reviewing {proposal.kind} {proposal.id} from {proposal.origin.harness} session "
        f"{proposal.external_session_id} (trust: {proposal.trust}); "
        f"{len(proposal.seeds)} seed(s)."
    )
    result = run_review(layout, proposal_id, _ask_at_terminal)
    if json:
        cliapp.emit_json(result.to_json())
    else:
        cliapp.env().stdout.write(
            f"{proposal_id}: accepted {len(result.accepted)}, rejected {len(result.rejected)}; "
            f"knowledge: {result.knowledge_file}\n"
        )
    return 0


# ---- project memory ------------------------------------------------------------


FileSetDigestOption = Annotated[
    str | None,
    typer.Option(
        "--file-set-digest",
        help="The repository map's current file-set digest (with --content-digest): the "
        "codebase summary's staleness is computed against it.",
    ),
]
ContentDigestOption = Annotated[
    str | None,
    typer.Option("--content-digest", help="The repository map's current content digest."),
]


def _digests(file_set: str | None, content: str | None) -> CodebaseDigests | None:
    from .codebase import check_digests
    from .models import CodebaseDigests

    if file_set is None and content is None:
        return None
    if file_set is None or content is None:
        raise UsageError(
            "give both --file-set-digest and --content-digest, or neither",
            hint="the map prints both; without them the staleness is unknown",
        )
    return check_digests(CodebaseDigests(file_set=file_set, content=content))


@memory_app.command("list")
def memory_list(
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
    file_set_digest: FileSetDigestOption = None,
    content_digest: ContentDigestOption = None,
) -> int:
    """List the memory documents: size and cap, entries, staleness, or why one is corrupt."""
    from .memory import describe_memory

    rows = describe_memory(_layout(workspace), _digests(file_set_digest, content_digest))
    if json:
        cliapp.emit_json([row.to_json() for row in rows])
    else:
        out = cliapp.env().stdout
        for row in rows:
            out.write(f"{row.doc:<9} {row.file:<12} {_memory_state(row)}\n")
    corrupt = [row for row in rows if row.status == "corrupt"]
    if corrupt:
        raise OperationFailed(
            "cannot parse " + ", ".join(f"{row.path} ({row.problem})" for row in corrupt),
            hint="fix or move the file aside by hand; ax will not write it until then "
            "(`ax-slate memory show DOC` prints it)",
        )
    return 0


def _memory_state(row: MemoryDocInfo) -> str:
    if row.status == "missing":
        return f"missing (cap {row.cap:,} bytes)  {row.path}"
    if row.status == "corrupt":
        return f"CORRUPT: {row.problem}  {row.path}"
    parts = [f"{row.bytes:,} of {row.cap:,} bytes" + (" (OVER CAP)" if row.over_cap else "")]
    if row.entries is not None:
        stubs = f", {row.stubs} compressed" if row.stubs else ""
        parts.append(f"{row.entries} entries{stubs}")
    if row.stamp is not None and row.staleness is not None:
        parts.append(
            f"stamped by session {row.stamp.session_id} at {row.stamp.written_at}, "
            f"staleness {row.staleness.state} ({'; '.join(row.staleness.reasons)})"
        )
    return ", ".join(parts) + f"  {row.path}"


@memory_app.command("show")
def memory_show(
    doc: DocArgument, workspace: WorkspaceOption = None, json: JsonOption = False
) -> None:
    """Print a memory document's text (control characters shown as \\xNN; --json: exact)."""
    from .memory import read_memory_text

    path, data = read_memory_text(_layout(workspace), doc)
    text = data.decode("utf-8", "replace")
    if json:
        cliapp.emit_json({"doc": doc, "path": str(path), "bytes": len(data), "text": text})
        return
    # A person's file may hold escape sequences: they are shown, never sent to the terminal.
    shown = _printable(text.replace("\r\n", "\n"), keep="\n\t")
    cliapp.env().stdout.write(shown + ("" if shown.endswith("\n") or not shown else "\n"))


@memory_app.command("path")
def memory_path(
    doc: DocArgument, workspace: WorkspaceOption = None, json: JsonOption = False
) -> None:
    """Print a memory document's absolute path (it need not exist yet), for your editor."""
    from .memory import memory_path as path_of

    path = path_of(_layout(workspace), doc)
    if json:
        cliapp.emit_json({"doc": doc, "path": str(path), "exists": path.exists()})
    else:
        cliapp.env().stdout.write(f"{path}\n")


@memory_app.command("render")
def memory_render(
    workspace: WorkspaceOption = None,
    json: JsonOption = False,
    file_set_digest: FileSetDigestOption = None,
    content_digest: ContentDigestOption = None,
) -> None:
    """Print the memory section a new session is given (--json: with a row per document)."""
    from .memory import render_memory

    injection = render_memory(_layout(workspace), _digests(file_set_digest, content_digest))
    if json:
        cliapp.emit_json(injection.to_json())
        return
    shown = _printable(injection.text, keep="\n\t")
    cliapp.env().stdout.write(shown + ("\n" if shown else ""))


@memory_app.command("write-journal")
def memory_write_journal(workspace: WorkspaceOption = None) -> None:
    """For harnesses: insert or replace a session's journal entry (JournalEntryRequest on stdin)."""
    from .journal import write_journal_entry
    from .models import JournalEntryRequest

    request = cliapp.read_request(JournalEntryRequest)
    cliapp.emit_json(write_journal_entry(_layout(workspace), request).to_json())


@memory_app.command("write-codebase")
def memory_write_codebase(workspace: WorkspaceOption = None) -> None:
    """For harnesses: replace the codebase summary (CodebaseRequest on stdin)."""
    from .codebase import write_codebase
    from .models import CodebaseRequest

    request = cliapp.read_request(CodebaseRequest)
    cliapp.emit_json(write_codebase(_layout(workspace), request).to_json())


@memory_app.command("propose-lesson")
def memory_propose_lesson(session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """For harnesses: merge a session's lesson ({slug, text} on stdin) into LESSONS.md."""
    from .lessons import propose_lesson
    from .models import LessonInput
    from .session import started_files

    layout = _layout(workspace)
    # The per-session count of proposals is keyed by the id: a mistyped one must not
    # open a fresh allowance, so the session has to be one that started.
    started_files(layout, session)
    request = cliapp.read_request(LessonInput)
    cliapp.emit_json(propose_lesson(layout, session, request).to_json())


def _printable(text: str, keep: str = "\n") -> str:
    """Text shown on a terminal, with control characters (but those in ``keep``) made visible."""
    return "".join(ch if ch in keep or ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def _kind_label(seed: SlateSeed) -> str:
    from .models import DEFAULT_SEED_KIND

    return seed.kind or f"{DEFAULT_SEED_KIND} (untagged)"


def _ask_at_terminal(seed: SlateSeed, number: int, total: int) -> bool:
    environment = cliapp.env()
    cliapp.chrome(
        f"\nSeed {number} of {total} [{_kind_label(seed)}] from {seed.origin.harness} "
        f"session {seed.origin.external_session_id}, trust: {seed.trust}\n"
        + "  "
        + _printable(seed.text).replace("\n", "\n  ")
    )
    while True:
        environment.stderr.write("Accept into project knowledge? [a]ccept / [r]eject: ")
        environment.stderr.flush()
        answer = environment.stdin.readline()
        if not answer:
            raise OperationFailed("review ended before every seed was decided; nothing changed")
        choice = answer.strip().lower()
        if choice in ("a", "accept", "y", "yes"):
            return True
        if choice in ("r", "reject", "n", "no"):
            return False
        cliapp.chrome("please answer a (accept) or r (reject)")


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return cliapp.run_main(app, argv, env)


def run() -> None:
    entry_point(main)
