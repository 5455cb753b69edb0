"""The tool catalogue: one table of tools, one ``call_tool`` for every transport.

The CLI (``ax-mesh call NAME JSON``), the HTTP server (``POST /v1/tools/{name}``) and
ax-mcp (``memory_search`` for ``memory.search``) all call ``call_tool``; none of them
decides anything itself. A tool is a name, an argument model, a handler and a
``visible`` predicate: a seat sees, and may call, only the tools it can use.

To add a tool: write ``handler(ctx, args) -> dict`` beside its kin (memory_tools,
work_tools, message_tools), its argument model in models.py, and one ``Tool`` row
below; the transports pick it up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from libcommon import clock
from libcommon.cliapp import describe_validation_error
from libcommon.errors import UsageError

from . import automation_tools, connection_tools, memory_tools, message_tools, work_tools
from . import schedule as S
from .context import Caller, Ctx, encoded_size
from .errors import ToolError
from .limits import RESULT_MAX_BYTES, STATUS_SEATS_MAX
from .mesh import Mesh, epoch, seat_view
from .models import (
    AppendArgs,
    ArchiveArgs,
    AutomationDeleteArgs,
    AutomationListArgs,
    ClockArgs,
    ConnectionInvokeArgs,
    HandoffArgs,
    HistoryArgs,
    InboxArgs,
    ListArgs,
    MessageHistoryArgs,
    NoArgs,
    OperationGetArgs,
    PublishArgs,
    ReadArgs,
    ReplyArgs,
    SearchArgs,
    SendArgs,
    StatusArgs,
    WorkClaimArgs,
    WorkCreateArgs,
    WorkGetArgs,
    WorkListArgs,
    WorkPlanArgs,
    WorkReleaseArgs,
    WorkUpdateArgs,
    WriteArgs,
    schema_of,
)


@dataclass(frozen=True)
class Tool:
    name: str
    args: type[BaseModel]
    handler: Callable[[Ctx, Any], dict[str, Any]]
    description: str
    visible: Callable[[Caller], bool] = lambda caller: True


def _self(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    caller = ctx.caller
    return {
        "seat": caller.name,
        "role": caller.seat.role,
        "lease_generation": caller.actor.generation,
        "timezone": caller.manifest.timezone,
        "instruction_sources": [f"{caller.personal_store}/instructions.md"],
        "stores": memory_tools.stores(ctx, args)["stores"],
        "recipients": sorted(caller.manifest.message),
        "connections": {k: sorted(v) for k, v in sorted(caller.manifest.connections.items())},
        "handoff": caller.seat.handoff,
    }


def _status(ctx: Ctx, args: StatusArgs) -> dict[str, Any]:
    # Itself and the seats it talks to, and nobody else: status is not a directory.
    known = {ctx.caller.name, *ctx.caller.manifest.message}
    wanted = args.seats if args.seats is not None else sorted(known)[:STATUS_SEATS_MAX]
    out = []
    for name in wanted:
        seat = ctx.store.get_seat(name) if name in known else None
        if seat is None:
            out.append({"seat": name, "state": "unknown"})
            continue
        view = seat_view(seat, ctx.now)
        state = "retired" if seat.retired else "running" if view["lease"]["live"] else "stopped"
        entry: dict[str, Any] = {"seat": name, "state": state}
        entry.update(ctx.store.queue_counts(name, ctx.now))
        out.append(entry)
    return {"seats": out}


def _handoff(ctx: Ctx, args: HandoffArgs) -> dict[str, Any]:
    handoff = {**args.model_dump(), "updated_at": ctx.ts}
    ctx.store.set_handoff(ctx.caller.actor, ctx.now, handoff)
    return {"handoff": handoff}


def _routes(caller: Caller) -> bool:
    return bool(caller.manifest.message)


def _connections(caller: Caller) -> bool:
    return bool(caller.manifest.connections)


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in [
        Tool("self", NoArgs, _self, "This seat's identity, stores, recipients and connections."),
        Tool(
            "status",
            StatusArgs,
            _status,
            "Running, stopped and queued work of this seat and the seats it talks to (up to 20).",
        ),
        Tool("handoff.update", HandoffArgs, _handoff, "Replace this seat's portable handoff."),
        Tool(
            "memory.stores",
            NoArgs,
            memory_tools.stores,
            "Stores available to this seat and the operations allowed on each.",
        ),
        Tool(
            "memory.list",
            ListArgs,
            memory_tools.list_,
            "Records under a path prefix, without contents.",
        ),
        Tool(
            "memory.read",
            ReadArgs,
            memory_tools.read,
            "A record or a past revision, by store + path or record_id; lines 1-based.",
        ),
        Tool(
            "memory.search",
            SearchArgs,
            memory_tools.search,
            "Full-text search with snippets (query), or literal line matches (queries).",
        ),
        Tool(
            "memory.write",
            WriteArgs,
            memory_tools.write,
            "Create or replace a note; expected_revision makes it a compare-and-swap "
            "(0: it must not exist).",
        ),
        Tool(
            "memory.append",
            AppendArgs,
            memory_tools.append,
            "Append to a note, creating it if needed; appends never overwrite each other.",
        ),
        Tool(
            "memory.archive",
            ArchiveArgs,
            memory_tools.archive,
            "Hide a note from listing and search, keeping its history.",
        ),
        Tool(
            "memory.publish",
            PublishArgs,
            memory_tools.publish,
            "An attributed copy (or summary) into another store this seat can write.",
        ),
        Tool(
            "memory.history",
            HistoryArgs,
            memory_tools.history,
            "A record's revisions with authors and lease generations, newest first.",
        ),
        Tool(
            "work.create",
            WorkCreateArgs,
            work_tools.create,
            "Create a work item (ready, optionally assigned) in a shared store.",
        ),
        Tool(
            "work.get",
            WorkGetArgs,
            work_tools.get,
            "A work item with its log and current revision.",
        ),
        Tool(
            "work.list",
            WorkListArgs,
            work_tools.list_,
            "Work item summaries with their current step.",
        ),
        Tool("work.claim", WorkClaimArgs, work_tools.claim, "Take an unowned work item."),
        Tool(
            "work.update_plan",
            WorkPlanArgs,
            work_tools.update_plan,
            "Replace a work item's plan (at most one step in progress).",
        ),
        Tool(
            "work.update",
            WorkUpdateArgs,
            work_tools.update,
            "Add notes and evidence; the owner changes status (blocked needs a blocker, "
            "done needs evidence).",
        ),
        Tool(
            "work.release",
            WorkReleaseArgs,
            work_tools.release,
            "Give an owned work item up for someone else to claim.",
        ),
        Tool(
            "messages.recipients",
            NoArgs,
            message_tools.recipients,
            "Seats this seat may message, and whether they can message back.",
        ),
        Tool(
            "messages.send",
            SendArgs,
            message_tools.send,
            "Send over a declared route; wake: false queues it for the next turn.",
            _routes,
        ),
        Tool(
            "messages.reply",
            ReplyArgs,
            message_tools.reply,
            "Reply to a message this seat received.",
        ),
        Tool(
            "messages.inbox",
            InboxArgs,
            message_tools.inbox,
            "Take the messages queued with wake: false that were not handed over yet.",
        ),
        Tool(
            "messages.history",
            MessageHistoryArgs,
            message_tools.history,
            "List this seat's conversations, or read one.",
        ),
        Tool(
            "automations.create",
            S.AutomationCreate,
            automation_tools.create,
            "Save a named instruction this seat carries out on a schedule: one of in (20m), "
            "at (local or RFC 3339), every (at least 1m) or time (HH:MM) with days; "
            "timezone, until, max_runs. Returns its next three runs.",
        ),
        Tool(
            "automations.list",
            AutomationListArgs,
            automation_tools.list_,
            "This seat's automations: schedule, status, next runs, last run and counts.",
        ),
        Tool(
            "automations.update",
            S.AutomationUpdate,
            automation_tools.update,
            "Change an automation: name, instruction, status (active/paused), schedule "
            "fields, until, max_runs (null removes a limit).",
        ),
        Tool(
            "automations.delete",
            AutomationDeleteArgs,
            automation_tools.delete,
            "Stop an automation for good (a run already queued still arrives).",
        ),
        Tool(
            "clock.now",
            ClockArgs,
            automation_tools.clock_now,
            "The current time in this seat's time zone, or another.",
        ),
        Tool(
            "connections.list",
            NoArgs,
            connection_tools.list_,
            "Connections this seat may use, with the granted operations.",
            _connections,
        ),
        Tool(
            "connections.invoke",
            ConnectionInvokeArgs,
            connection_tools.invoke_,
            "Run a granted operation on a connection (recorded in the operation ledger); "
            "reusing an idempotency_key returns the recorded operation instead of repeating it.",
            _connections,
        ),
        Tool(
            "operations.get",
            OperationGetArgs,
            connection_tools.get_,
            "One of this seat's recorded operations: status (succeeded, failed, unknown), "
            "receipt and result.",
            _connections,
        ),
    ]
}


def visible_tools(caller: Caller) -> list[Tool]:
    return [tool for tool in TOOLS.values() if tool.visible(caller)]


def describe_tools(caller: Caller) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "arguments": schema_of(tool.args)}
        for tool in visible_tools(caller)
    ]


def call_tool(mesh: Mesh, caller: Caller, name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool for an authenticated caller: the one path every transport takes.

    Bad arguments are ``UsageError`` (exit 2) naming the field; a refusal is a
    ``ToolError`` (exit 1); a fenced lease is ``Fenced`` (exit 4). The result is JSON of at
    most RESULT_MAX_BYTES.
    """
    tool = TOOLS.get(name)
    if tool is None or not tool.visible(caller):
        raise UsageError(
            f"no tool named {name!r} for seat {caller.name!r}",
            hint="ax-mesh list shows the tools this seat may call",
        )
    if not isinstance(arguments, dict):
        raise UsageError(f"the arguments must be a JSON object, not {type(arguments).__name__}")
    try:
        args = tool.args.model_validate(arguments)
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "argument")) from None
    ctx = Ctx(mesh.store, caller, epoch(), clock.timestamp())
    result = tool.handler(ctx, args)
    if encoded_size(result) > RESULT_MAX_BYTES:
        raise ToolError(
            "result_too_large",
            f"{name}'s result is larger than {RESULT_MAX_BYTES} bytes",
            hint="ask for fewer results or fewer lines",
        )
    return result
