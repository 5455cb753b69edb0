"""``work.*``: work items, records under ``work/`` that only these tools change.

No workflow is imposed; the rules are the reference's: every change is
revision-checked; the owner (or the creator while nobody owns it) changes status and
plan; anyone who can write the store adds notes and evidence; ``blocked`` needs a
blocker, ``done`` needs evidence, at most one plan step is in progress, and a finished
item reopens only as ``ready``.
"""

from __future__ import annotations

from typing import Any

from .context import Ctx, conflict, fingerprint, make_cursor, read_cursor
from .errors import ToolError, not_found
from .limits import WORK_LOG_MAX
from .models import (
    PERSONAL_PREFIX,
    WORK_PREFIX,
    WorkClaimArgs,
    WorkCreateArgs,
    WorkGetArgs,
    WorkListArgs,
    WorkPlanArgs,
    WorkReleaseArgs,
    WorkUpdateArgs,
    parse_work_id,
)
from .store import WORK, Change, Record

FINISHED = ("done", "cancelled")
# Work items a work.list reads from the store per batch while it filters.
LIST_BATCH = 500


def _path(number: int) -> str:
    return f"{WORK_PREFIX}W-{number}.md"


def render(item: dict[str, Any]) -> str:
    """The item as the text memory.read and memory.search see."""
    lines = [
        f"# {item['id']}: {item['objective']}",
        "",
        f"status: {item['status']}",
        f"owner: {item['owner'] or '-'}",
        f"creator: {item['creator']}",
    ]
    if item["blocker"]:
        lines.append(f"blocker: {item['blocker']}")
    for title, key in (
        ("Acceptance", "acceptance"),
        ("Depends on", "depends_on"),
        ("Links", "links"),
        ("Evidence", "evidence"),
    ):
        if item[key]:
            lines += ["", f"## {title}", *(f"- {value}" for value in item[key])]
    if item["plan"]:
        marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
        lines += ["", "## Plan", *(f"- {marks[s['status']]} {s['step']}" for s in item["plan"])]
    if item["log"]:
        lines += ["", "## Log"]
        lines += [
            f"- {e['ts']} {e['seat']} {e['action']}" + (f": {e['note']}" if e.get("note") else "")
            for e in item["log"]
        ]
    return "\n".join(lines) + "\n"


def _log(item: dict[str, Any], ctx: Ctx, action: str, note: str | None = None) -> None:
    entry: dict[str, Any] = {"ts": ctx.ts, "seat": ctx.caller.name, "action": action}
    if note:
        entry["note"] = note
    item["log"] = [*item["log"], entry][-WORK_LOG_MAX:]


def _view(record: Record) -> dict[str, Any]:
    assert record.data is not None
    return {
        **record.data,
        "record_id": f"R-{record.id}",
        "revision": record.revision,
        "updated_at": record.updated_at,
        "updated_by": record.author,
    }


def _summary(record: Record) -> dict[str, Any]:
    item = record.data or {}
    current = next((s["step"] for s in item.get("plan", []) if s["status"] == "in_progress"), None)
    return {
        "work_id": item.get("id"),
        "objective": item.get("objective"),
        "status": item.get("status"),
        "owner": item.get("owner"),
        "current_step": current,
        "revision": record.revision,
        "updated_at": record.updated_at,
    }


def _locate(ctx: Ctx, work_id: str, op: str) -> tuple[str, str]:
    store, number = parse_work_id(work_id)
    if not ctx.caller.can(store, "read"):
        raise not_found(f"work item {work_id}")
    if op != "read":
        ctx.require(store, op)  # type: ignore[arg-type]
    return store, _path(number)


def _checked(ctx: Ctx, work_id: str, current: Record | None, expected: int) -> dict[str, Any]:
    if current is None or current.kind != WORK or current.data is None:
        raise not_found(f"work item {work_id}")
    if current.revision != expected:
        raise conflict(
            f"{work_id} is at revision {current.revision}, not {expected}; nothing changed",
            current,
        )
    return dict(current.data)


def _may_steer(ctx: Ctx, item: dict[str, Any]) -> bool:
    me = ctx.caller.name
    return item["owner"] == me or (item["owner"] is None and item["creator"] == me)


def _refuse_steer(item: dict[str, Any], what: str) -> ToolError:
    who = f"its owner {item['owner']!r}" if item["owner"] else f"its creator {item['creator']!r}"
    return ToolError(
        "forbidden",
        f"only {who} may change {what} of {item['id']}",
        hint="claim it first (work.claim) if nobody owns it, or send the owner a message",
        owner=item["owner"],
    )


def _mutate(ctx: Ctx, store: str, path: str, change: Any) -> dict[str, Any]:
    record = ctx.store.mutate_record(ctx.caller.actor, ctx.now, ctx.ts, store, path, change)
    assert record is not None
    return _view(record)


def create(ctx: Ctx, args: WorkCreateArgs) -> dict[str, Any]:
    if args.store.startswith(PERSONAL_PREFIX):
        raise ToolError(
            "invalid",
            f"{args.store!r} is a personal store; work items live in shared stores",
            hint="memory.stores lists the shared stores this seat can write",
        )
    ctx.require(args.store, "write")
    if args.owner is not None:
        seat = ctx.store.get_seat(args.owner)
        if seat is None or seat.retired:
            raise ToolError("invalid", f"owner {args.owner!r} is not a seat of this mesh")
    for other in [*args.depends_on, *([args.parent] if args.parent else [])]:
        store, path = _locate(ctx, other, "read")
        found = ctx.store.get_record(store, path=path)
        if found is None or found.kind != WORK:
            raise not_found(f"work item {other} (in depends_on or parent)")
    number = ctx.store.next_work_number(ctx.caller.actor, ctx.now, args.store)
    item: dict[str, Any] = {
        "id": f"{args.store}/W-{number}",
        "objective": args.objective,
        "acceptance": args.acceptance,
        "depends_on": args.depends_on,
        "links": args.links,
        "parent": args.parent,
        "owner": args.owner,
        "creator": ctx.caller.name,
        "status": "ready",
        "plan": [],
        "evidence": [],
        "blocker": None,
        "log": [],
    }
    _log(item, ctx, "created", f"assigned to {args.owner}" if args.owner else None)

    def change(current: Record | None) -> Change:
        if current is not None:
            raise ToolError(
                "conflict",
                f"{item['id']} already exists",
                current_revision=current.revision,
                author=current.author,
            )
        return Change(op="work.create", text=render(item), kind=WORK, data=item)

    return _mutate(ctx, args.store, _path(number), change)


def get(ctx: Ctx, args: WorkGetArgs) -> dict[str, Any]:
    store, path = _locate(ctx, args.work_id, "read")
    record = ctx.store.get_record(store, path=path)
    if record is None or record.kind != WORK:
        raise not_found(f"work item {args.work_id}")
    return _view(record)


def list_(ctx: Ctx, args: WorkListArgs) -> dict[str, Any]:
    if args.store is not None:
        ctx.require(args.store, "read")
    scope = [args.store] if args.store is not None else ctx.caller.stores("read")
    owner = ctx.caller.name if args.owner == "me" else args.owner
    stamp = fingerprint("work.list", args.model_dump())
    skip = read_cursor(args.cursor, stamp, ("o",))["o"]
    matched: list[dict[str, Any]] = []
    seen = 0
    offset = 0
    while len(matched) <= args.max_results:
        batch = ctx.store.list_records(
            scope, WORK_PREFIX, "created_at", False, LIST_BATCH, offset, kind=WORK
        )
        offset += len(batch)
        for record in batch:
            item = record.data or {}
            if owner is not None and item.get("owner") != owner:
                continue
            if args.status is not None and item.get("status") != args.status:
                continue
            seen += 1
            if seen > skip:
                matched.append(_summary(record))
        if len(batch) < LIST_BATCH:
            break
    page = matched[: args.max_results]
    more = len(matched) > len(page)
    return {
        "items": page,
        "next_cursor": make_cursor({"o": skip + len(page)}, stamp) if more else None,
    }


def claim(ctx: Ctx, args: WorkClaimArgs) -> dict[str, Any]:
    store, path = _locate(ctx, args.work_id, "write")

    def change(current: Record | None) -> Change | None:
        item = _checked(ctx, args.work_id, current, args.expected_revision)
        if item["owner"] not in (None, ctx.caller.name):
            raise ToolError(
                "conflict",
                f"{args.work_id} is owned by {item['owner']!r}; nothing changed",
                hint="ask the owner to release it, or pick another item",
                owner=item["owner"],
                current_revision=current.revision if current else 0,
                author=current.author if current else None,
            )
        item["owner"] = ctx.caller.name
        _log(item, ctx, "claimed", args.note)
        return Change(op="work.claim", text=render(item), kind=WORK, data=item)

    return _mutate(ctx, store, path, change)


def update_plan(ctx: Ctx, args: WorkPlanArgs) -> dict[str, Any]:
    store, path = _locate(ctx, args.work_id, "write")

    def change(current: Record | None) -> Change:
        item = _checked(ctx, args.work_id, current, args.expected_revision)
        if not _may_steer(ctx, item):
            raise _refuse_steer(item, "the plan")
        item["plan"] = [step.model_dump() for step in args.plan]
        _log(item, ctx, "planned", args.explanation)
        return Change(op="work.update_plan", text=render(item), kind=WORK, data=item)

    return _mutate(ctx, store, path, change)


def update(ctx: Ctx, args: WorkUpdateArgs) -> dict[str, Any]:
    store, path = _locate(ctx, args.work_id, "write")

    def change(current: Record | None) -> Change:
        item = _checked(ctx, args.work_id, current, args.expected_revision)
        item["evidence"] = [*item["evidence"], *args.evidence]
        if args.status is not None and args.status != item["status"]:
            if not _may_steer(ctx, item):
                raise _refuse_steer(item, "the status")
            if item["status"] in FINISHED and args.status != "ready":
                raise ToolError(
                    "invalid",
                    f"{args.work_id} is {item['status']}; a finished item reopens as ready",
                    hint='set status "ready" first',
                )
            if args.status == "done" and not item["evidence"]:
                raise ToolError(
                    "invalid",
                    f"{args.work_id} cannot be done without evidence; nothing changed",
                    hint="pass evidence[] (a record id, a commit, a check's output) with it",
                )
            item["status"] = args.status
            item["blocker"] = args.blocker if args.status == "blocked" else None
            action = f"status {args.status}"
        elif args.blocker is not None:
            if not _may_steer(ctx, item):
                raise _refuse_steer(item, "the blocker")
            item["blocker"] = args.blocker
            action = "blocker"
        else:
            action = "evidence" if args.evidence and not args.note else "note"
        _log(item, ctx, action, args.note or args.blocker)
        return Change(op="work.update", text=render(item), kind=WORK, data=item)

    return _mutate(ctx, store, path, change)


def release(ctx: Ctx, args: WorkReleaseArgs) -> dict[str, Any]:
    store, path = _locate(ctx, args.work_id, "write")

    def change(current: Record | None) -> Change:
        item = _checked(ctx, args.work_id, current, args.expected_revision)
        if item["owner"] != ctx.caller.name:
            raise ToolError(
                "forbidden",
                f"only the owner of {args.work_id} releases it (owner: {item['owner'] or 'none'})",
                owner=item["owner"],
            )
        item["owner"] = None
        if item["status"] not in FINISHED:
            item["status"] = "ready"
            item["blocker"] = None
        _log(item, ctx, "released", args.note)
        return Change(op="work.release", text=render(item), kind=WORK, data=item)

    return _mutate(ctx, store, path, change)
