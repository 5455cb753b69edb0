"""``messages.*``: messages between seats over routes a person declared.

The sender of every message is the seat the mesh authenticated, never anything taken
from the body. A reply goes back over the route the message came in on, so a seat
answers whoever wrote to it without a route of its own to them.
"""

from __future__ import annotations

from typing import Any

from .context import Ctx, offset_page, redacted
from .errors import ToolError, not_found
from .limits import INBOX_MAX_WAITING
from .models import InboxArgs, MessageHistoryArgs, NoArgs, ReplyArgs, SendArgs
from .store import Message


def view(message: Message) -> dict[str, Any]:
    return {
        "message_id": f"M-{message.id}",
        "conversation_id": message.conversation_id,
        "from": message.sender,
        "to": message.recipient,
        "body": message.body,
        "correlation_id": message.correlation_id,
        "reply_to": None if message.reply_to is None else f"M-{message.reply_to}",
        "wake": message.wake,
        "state": message.state,
        "attempts": message.attempts,
        "created_at": message.created_at,
    }


def recipients(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    out = []
    for name in sorted(ctx.caller.manifest.message):
        seat = ctx.store.get_seat(name)
        if seat is None:
            continue
        back = ctx.caller.name in (seat.manifest.get("message") or [])
        out.append(
            {
                "seat": name,
                "role": seat.role,
                "can_reply": True,
                "can_message": back,
                "retired": seat.retired,
            }
        )
    return {"recipients": out}


def _enqueue(
    ctx: Ctx,
    to: str,
    body: str,
    conversation_id: str | None,
    correlation_id: str | None,
    reply_to: int | None,
    wake: bool,
) -> dict[str, Any]:
    seat = ctx.store.get_seat(to)
    if seat is None or seat.retired:
        raise ToolError("invalid", f"seat {to!r} is retired; nothing was sent")
    message = ctx.store.enqueue_message(
        ctx.caller.actor,
        ctx.now,
        ctx.ts,
        to,
        redacted(body),
        conversation_id,
        correlation_id,
        reply_to,
        wake,
        INBOX_MAX_WAITING,
    )
    return view(message)


def send(ctx: Ctx, args: SendArgs) -> dict[str, Any]:
    if not ctx.caller.may_message(args.to):
        # The same words whether or not such a seat exists: routes are not a directory.
        raise ToolError(
            "forbidden",
            f"this seat has no route to {args.to!r}",
            hint="messages.recipients lists the declared routes; a person adds one with "
            "ax-mesh seat grant --message",
        )
    return _enqueue(
        ctx, args.to, args.body, args.conversation_id, args.correlation_id, None, args.wake
    )


def reply(ctx: Ctx, args: ReplyArgs) -> dict[str, Any]:
    message = ctx.store.get_message(int(args.message_id[2:]))
    if message is None or message.recipient != ctx.caller.name:
        raise not_found(f"message {args.message_id}")
    return _enqueue(
        ctx,
        message.sender,
        args.body,
        message.conversation_id,
        message.correlation_id,
        message.id,
        args.wake,
    )


def inbox(ctx: Ctx, args: InboxArgs) -> dict[str, Any]:
    taken = ctx.store.take_passive(ctx.caller.name, ctx.now, args.max_results)
    return {"messages": [view(m) for m in taken], "more": len(taken) == args.max_results}


def history(ctx: Ctx, args: MessageHistoryArgs) -> dict[str, Any]:
    me = ctx.caller.name
    if args.conversation_id is None:
        items, cursor = offset_page(
            "messages.history",
            args.model_dump(),
            args.cursor,
            args.limit,
            lambda limit, offset: ctx.store.conversations(me, limit, offset),
        )
        return {"conversations": items, "next_cursor": cursor}
    conversation = args.conversation_id
    items, cursor = offset_page(
        "messages.history",
        args.model_dump(),
        args.cursor,
        args.limit,
        lambda limit, offset: [
            view(m) for m in ctx.store.conversation(me, conversation, limit, offset)
        ],
    )
    if not items and args.cursor is None:
        raise not_found(f"conversation {conversation}")
    return {"conversation_id": conversation, "messages": items, "next_cursor": cursor}
