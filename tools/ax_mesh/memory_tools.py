"""``memory.*``: records addressed by path in stores the mesh enforces."""

from __future__ import annotations

from typing import Any

from .context import (
    Ctx,
    conflict,
    encoded_size,
    fingerprint,
    make_cursor,
    offset_page,
    read_cursor,
    record_summary,
    redacted,
)
from .errors import ToolError, not_found
from .limits import READ_TEXT_MAX_BYTES, RESULT_MAX_BYTES, SEARCH_RANK_MAX
from .models import (
    WORK_PREFIX,
    AppendArgs,
    ArchiveArgs,
    HistoryArgs,
    ListArgs,
    NoArgs,
    PublishArgs,
    ReadArgs,
    SearchArgs,
    WriteArgs,
)
from .store import NOTE, Change, Record

# A matched line is clipped to this many characters (a minified file is one long line).
LINE_MAX_CHARS = 400
# How many candidate records a literal search reads from the store at a time.
LITERAL_BATCH = 200


def _not_work(path: str) -> None:
    if path == WORK_PREFIX.rstrip("/") or path.startswith(WORK_PREFIX):
        raise ToolError(
            "forbidden",
            f"{path!r} is under {WORK_PREFIX}, where work items live; only the work.* tools "
            "change them",
            hint="use work.create, work.update or work.update_plan",
        )


def stores(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    out = []
    for name in ctx.caller.stores("read"):
        info = ctx.store.get_store(name)
        if info is None:
            continue
        out.append(
            {
                "name": name,
                "kind": info.kind,
                "read": True,
                "write": ctx.caller.can(name, "write"),
                "revise": ctx.caller.can(name, "revise"),
            }
        )
    return {"stores": out}


def list_(ctx: Ctx, args: ListArgs) -> dict[str, Any]:
    if args.store is not None:
        ctx.require(args.store, "read")
    scope = [args.store] if args.store is not None else ctx.caller.stores("read")
    records, cursor = offset_page(
        "memory.list",
        args.model_dump(),
        args.cursor,
        args.max_results,
        lambda limit, offset: [
            record_summary(r)
            for r in ctx.store.list_records(
                scope, args.prefix, args.order_by, args.order == "desc", limit, offset
            )
        ],
    )
    return {"records": records, "next_cursor": cursor}


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _line_number(value: int, count: int) -> int:
    return count + 1 + value if value < 0 else value


def read(ctx: Ctx, args: ReadArgs) -> dict[str, Any]:
    if args.record_id is not None:
        record = ctx.record_by_locator(args.record_id, include_archived=True)
    else:
        assert args.store is not None and args.path is not None
        record = ctx.record_by_locator(f"{args.store}/{args.path}")
    text, revision, author, generation, ts = (
        record.text,
        record.revision,
        record.author,
        record.lease_generation,
        record.updated_at,
    )
    if args.revision is not None and args.revision != record.revision:
        past = ctx.store.get_revision(record.id, args.revision)
        if past is None:
            raise not_found(f"revision {args.revision} of record R-{record.id}")
        text, revision, author, generation, ts = (
            past.text,
            past.revision,
            past.author,
            past.lease_generation,
            past.ts,
        )
    lines = _lines(text)
    count = len(lines)
    start = 1 if args.start_line is None else _line_number(args.start_line, count)
    stop = count if args.stop_line is None else _line_number(args.stop_line, count)
    if count and not 1 <= start <= count:
        raise ToolError("invalid", f"start_line {args.start_line} is outside lines 1-{count}")
    if count and not start <= stop <= count:
        raise ToolError("invalid", f"stop_line {args.stop_line} is outside lines {start}-{count}")
    chosen: list[str] = []
    used = 0
    next_start: int | None = None
    for number in range(start, stop + 1 if count else start):
        line = lines[number - 1]
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if chosen and used + size > READ_TEXT_MAX_BYTES:
            next_start = number
            break
        if not chosen and size > READ_TEXT_MAX_BYTES:
            # One line longer than a page: cut it, and say where the next page starts.
            line = line.encode()[: READ_TEXT_MAX_BYTES // 2].decode("utf-8", "ignore")
            chosen.append(line)
            next_start = number + 1 if number < stop else None
            break
        chosen.append(line)
        used += size
    result = {
        "record_id": f"R-{record.id}",
        "store": record.store,
        "path": record.path,
        "kind": record.kind,
        "revision": revision,
        "current_revision": record.revision,
        "author": author,
        "lease_generation": generation,
        "updated_at": ts,
        "archived": record.archived,
        "tags": record.tags,
        "source_refs": record.source_refs,
        "provenance": record.provenance,
        "line_count": count,
        "start_line": start if count else 0,
        "stop_line": (start + len(chosen) - 1) if count else 0,
        "text": "\n".join(chosen),
        "next_start_line": next_start,
    }
    return result


def _scope(ctx: Ctx, wanted: list[str] | None) -> list[str]:
    if wanted is None:
        return ctx.caller.stores("read")
    for name in wanted:
        ctx.require(name, "read")
    return sorted(set(wanted))


def search(ctx: Ctx, args: SearchArgs) -> dict[str, Any]:
    scope = _scope(ctx, args.stores)
    if args.query is not None:
        query = args.query
        bounded = False

        def fetch(limit: int, offset: int) -> list[dict[str, Any]]:
            nonlocal bounded
            found = ctx.store.search(
                scope, query, args.path_prefix, args.tags, limit, offset, SEARCH_RANK_MAX
            )
            bounded = found.bounded
            # Best first, and no score: SQLite's bm25 weighs a word over every record,
            # readable or not, so a number would hint at stores this seat cannot read.
            return [{**record_summary(hit.record), "snippet": hit.snippet} for hit in found.hits]

        hits, cursor = offset_page(
            "memory.search", args.model_dump(), args.cursor, args.max_results, fetch
        )
        result: dict[str, Any] = {
            "mode": "full_text",
            "results": hits,
            "next_cursor": cursor,
            "bounded": bounded,
        }
        if bounded:
            result["hint"] = (
                f"more than {SEARCH_RANK_MAX} records match: only the {SEARCH_RANK_MAX} newest "
                "were ranked; add words, or narrow with path_prefix, stores or tags"
            )
        return result
    return _literal(ctx, args, scope)


def _clip(line: str) -> str:
    return line if len(line) <= LINE_MAX_CHARS else line[: LINE_MAX_CHARS - 1] + "…"


def _matches(args: SearchArgs, lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based line spans that match, in order."""
    needles = args.queries or []
    if not args.case_sensitive:
        needles = [n.casefold() for n in needles]
        lines = [line.casefold() for line in lines]
    found = [{n for n in needles if n in line} for line in lines]
    spans: list[tuple[int, int]] = []
    if args.match_mode == "any":
        return [(i, i) for i, hit in enumerate(found) if hit]
    if args.match_mode == "all_on_same_line":
        return [(i, i) for i, hit in enumerate(found) if len(hit) == len(set(needles))]
    window = args.line_count or 1
    i = 0
    while i < len(lines):
        if found[i]:
            seen: set[str] = set()
            for j in range(i, min(i + window, len(lines))):
                seen |= found[j]
                if len(seen) == len(set(needles)):
                    spans.append((i, j))
                    i = j
                    break
        i += 1
    return spans


def _literal(ctx: Ctx, args: SearchArgs, scope: list[str]) -> dict[str, Any]:
    stamp = fingerprint("memory.search", args.model_dump())
    position = read_cursor(args.cursor, stamp, ("r", "m"))
    after_id, skip = position["r"], position["m"]
    budget = RESULT_MAX_BYTES - 1024
    used = 0
    results: list[dict[str, Any]] = []
    next_cursor: str | None = None
    require_all = args.match_mode != "any"
    cursor_id = max(after_id - 1, 0)
    while next_cursor is None:
        batch = ctx.store.literal_candidates(
            scope,
            args.queries or [],
            require_all,
            args.case_sensitive,
            args.path_prefix,
            args.tags,
            cursor_id,
            LITERAL_BATCH,
        )
        if not batch:
            break
        for record in batch:
            cursor_id = record.id
            lines = _lines(record.text)
            spans = _matches(args, lines)
            start = skip if record.id == after_id else 0
            for index in range(start, len(spans)):
                first, last = spans[index]
                item = {
                    "record_id": f"R-{record.id}",
                    "store": record.store,
                    "path": record.path,
                    "line": first + 1,
                    "end_line": last + 1,
                    "lines": [_clip(line) for line in lines[first : last + 1]],
                    "before": [
                        _clip(line) for line in lines[max(0, first - args.context_lines) : first]
                    ],
                    "after": [
                        _clip(line) for line in lines[last + 1 : last + 1 + args.context_lines]
                    ],
                }
                size = encoded_size(item) + 1
                if len(results) >= args.max_results or (results and used + size > budget):
                    next_cursor = make_cursor({"r": record.id, "m": index}, stamp)
                    break
                results.append(item)
                used += size
            if next_cursor is not None:
                break
        if len(batch) < LITERAL_BATCH:
            break
    return {"mode": "literal", "results": results, "next_cursor": next_cursor}


def write(ctx: Ctx, args: WriteArgs) -> dict[str, Any]:
    ctx.require(args.store, "write")
    _not_work(args.path)
    text = redacted(args.text)
    may_revise = ctx.caller.can(args.store, "revise")
    created: list[bool] = []

    def change(current: Record | None) -> Change:
        expected = args.expected_revision
        if current is None:
            if expected is not None and expected != 0:
                raise conflict(
                    f"{args.store}/{args.path} does not exist (expected revision {expected})",
                    None,
                )
            created.append(True)
            return Change(
                op="write", text=text, tags=args.tags or [], source_refs=args.source_refs or []
            )
        if expected is not None and expected != current.revision:
            raise conflict(
                f"{args.store}/{args.path} is at revision {current.revision}, "
                f"not {expected}; nothing was written",
                current,
            )
        if not may_revise:
            raise ToolError(
                "forbidden",
                f"{args.store}/{args.path} exists, and replacing it needs the revise "
                f"permission on {args.store!r}",
                hint="append to it, or write a new path",
            )
        return Change(
            op="write",
            text=text,
            tags=current.tags if args.tags is None else args.tags,
            source_refs=current.source_refs if args.source_refs is None else args.source_refs,
            provenance=current.provenance,
        )

    record = ctx.store.mutate_record(
        ctx.caller.actor, ctx.now, ctx.ts, args.store, args.path, change
    )
    assert record is not None
    return {**record_summary(record), "created": bool(created)}


def append(ctx: Ctx, args: AppendArgs) -> dict[str, Any]:
    ctx.require(args.store, "write")
    _not_work(args.path)
    text = redacted(args.text)

    def change(current: Record | None) -> Change:
        if current is None:
            return Change(op="append", text=text)
        joiner = "" if not current.text or current.text.endswith("\n") else "\n"
        combined = current.text + joiner + text
        from .limits import RECORD_TEXT_MAX_BYTES

        if len(combined.encode("utf-8", "surrogatepass")) > RECORD_TEXT_MAX_BYTES:
            raise ToolError(
                "invalid",
                f"{args.store}/{args.path} would grow past {RECORD_TEXT_MAX_BYTES} bytes; "
                "nothing was appended",
                hint="start a new record (for example a dated path) and append there",
            )
        return Change(
            op="append",
            text=combined,
            tags=current.tags,
            source_refs=current.source_refs,
            provenance=current.provenance,
        )

    record = ctx.store.mutate_record(
        ctx.caller.actor, ctx.now, ctx.ts, args.store, args.path, change
    )
    assert record is not None
    return record_summary(record)


def archive(ctx: Ctx, args: ArchiveArgs) -> dict[str, Any]:
    record = ctx.record_by_locator(args.locator)
    ctx.require(record.store, "revise")
    _not_work(record.path)

    def change(current: Record | None) -> Change:
        if current is None or current.id != record.id:
            raise not_found(f"record {args.locator}")
        if current.revision != args.expected_revision:
            raise conflict(
                f"R-{current.id} is at revision {current.revision}, not "
                f"{args.expected_revision}; nothing was archived",
                current,
            )
        return Change(
            op="archive",
            text=current.text,
            kind=current.kind,
            tags=current.tags,
            source_refs=current.source_refs,
            provenance=current.provenance,
            data=current.data,
            archived=True,
        )

    done = ctx.store.mutate_record(
        ctx.caller.actor, ctx.now, ctx.ts, record.store, record.path, change
    )
    assert done is not None
    return {**record_summary(done), "archived": True}


def publish(ctx: Ctx, args: PublishArgs) -> dict[str, Any]:
    source = ctx.record_by_locator(args.locator)
    ctx.require(args.destination, "write")
    path = args.destination_path or source.path
    _not_work(path)
    provenance = {
        "source_record_id": f"R-{source.id}",
        "source_store": source.store,
        "source_path": source.path,
        "source_revision": source.revision,
        "source_author": source.author,
        "published_by": ctx.caller.name,
        "published_at": ctx.ts,
        "summary": args.text is not None,
    }
    text = redacted(args.text) if args.text is not None else source.text
    may_revise = ctx.caller.can(args.destination, "revise")

    def change(current: Record | None) -> Change:
        if current is not None and not may_revise:
            raise ToolError(
                "forbidden",
                f"{args.destination}/{path} exists, and replacing it needs the revise "
                f"permission on {args.destination!r}",
                hint="publish to another destination_path",
            )
        return Change(
            op="publish",
            text=text,
            kind=NOTE,
            tags=source.tags,
            source_refs=[f"R-{source.id}@{source.revision}"],
            provenance=provenance,
        )

    record = ctx.store.mutate_record(
        ctx.caller.actor, ctx.now, ctx.ts, args.destination, path, change
    )
    assert record is not None
    return {**record_summary(record), "provenance": provenance}


def history(ctx: Ctx, args: HistoryArgs) -> dict[str, Any]:
    record = ctx.record_by_locator(args.locator, include_archived=True)
    revisions, cursor = offset_page(
        "memory.history",
        args.model_dump(),
        args.cursor,
        args.max_results,
        lambda limit, offset: [
            {
                "revision": r.revision,
                "op": r.op,
                "author": r.author,
                "lease_generation": r.lease_generation,
                "ts": r.ts,
                "size": len(r.text.encode("utf-8", "surrogatepass")),
            }
            for r in ctx.store.history(record.id, limit, offset)
        ],
    )
    return {
        "record_id": f"R-{record.id}",
        "store": record.store,
        "path": record.path,
        "archived": record.archived,
        "revisions": revisions,
        "next_cursor": cursor,
    }
