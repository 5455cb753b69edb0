"""Elision: the view of the conversation a request sends, recomputed for every request.

``elide(history, budget, state)`` is a pure function. The session's messages
and the log are never changed: the view replaces some content, and the
decision says what it replaced so the caller can log it and carry the new
state to the next request. The rules, in the order they bind:

- Pairing is never broken. Content is replaced in place (a tool result keeps
  its block and id), and rounds leave only whole, at an assistant message, so
  every tool_use still has its tool_result right after it.
- Monotonic. What was elided stays elided, rounds that left stay gone: a later
  view never grows back, so the rewritten prefix stays cacheable.
- Big results. A tool result over ``BIG_RESULT_BYTES`` is sent verbatim for
  ``BIG_RESULT_VERBATIM_REQUESTS`` requests, then as a fixed pack (size, head,
  tail, the call that reads it back).
- Budget. When the view would cross the trigger, the oldest tool results
  outside the last ``KEEP_RECENT_ROUNDS`` rounds become markers (size, sha256,
  the exact recall call), oldest first, until the target is met; when that is
  not enough, the oldest rounds leave in one batch and the slate frame stands
  in for them. The user's messages are never elided; only the newest
  ``OPERATOR_MESSAGES_KEPT`` of them stay once a batch leaves, the others
  become a one-line stub naming the call that finds them.
- Cache. A rewrite re-sends everything after the first changed message without
  the provider's cache, so it happens only when the saving over the coming
  requests beats that cost, or when the request would not fit otherwise.
- Notice. While rounds are due to leave, every view ends with a notice naming
  them, until the model writes a Note (slate_note) after them.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from libcommon import jsonio

from ..providers.base import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from .budget import Budget
from .tokens import BLOCK_OVERHEAD_TOKENS, TokenMemo, message_tokens, text_tokens

KEEP_RECENT_ROUNDS = 3
BIG_RESULT_BYTES = 10 * 1024
BIG_RESULT_VERBATIM_REQUESTS = 2
PACK_HEAD_CHARS = 1_500
PACK_TAIL_CHARS = 1_500
OPERATOR_MESSAGES_KEPT = 2
STUB_OPENING_CHARS = 60
FIND_QUERY_CHARS = 40
NOTICE_MAX_TOOLS_NAMED = 8
NOTICE_MAX_STUBS_NAMED = 5
# The tool whose call counts as the model's Note covering the rounds before it.
NOTE_TOOL = "slate_note"
RECALL_TOOL = "history_search"
# Marker and pack texts are rebuilt for every request; these many are kept ready.
TEXT_CACHE_ENTRIES = 65_536

Form = Literal["marker", "pack"]


@dataclass(frozen=True)
class CachePricing:
    """Prices relative to uncached input, and how many requests a saving is counted over.

    A rewrite is worth it when ``saved * read * horizon`` (what the removed tokens
    would cost as cached reads over the coming requests) beats
    ``invalidated * (write - read)`` (re-caching what follows the first change).
    """

    read: float = 0.1
    write: float = 1.25
    horizon: int = 20


# Anthropic's prompt cache: reads at a tenth, writes at a quarter more.
ANTHROPIC_CACHE = CachePricing()
# A provider without a prompt cache re-sends everything anyway: every saving counts.
NO_CACHE = CachePricing(read=1.0, write=1.0)


@dataclass(frozen=True)
class Elided:
    """One tool result the view no longer sends verbatim."""

    call_id: str
    form: Form
    bytes: int
    sha256: str
    # The archive row that holds the output, when known: the recall call names it so
    # the output is read back without a search.
    row: int | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "callId": self.call_id,
            "form": self.form,
            "bytes": self.bytes,
            "sha256": self.sha256,
        }
        if self.row is not None:
            found["row"] = self.row
        return found


@dataclass(frozen=True)
class ContextState:
    """What earlier requests already rewrote; only ever grows (see the module docstring)."""

    elided: Mapping[str, Elided] = field(default_factory=dict)
    # history[:cut] left the request; cut is 0 or the index of an assistant message.
    cut: int = 0
    # The frame text sent in place of history[:cut], pinned when the cut last moved.
    frame: str | None = None
    # Indices of operator messages sent as a one-line stub.
    stubbed: frozenset[int] = frozenset()
    # A notice has announced what is due to leave since the last rewrite.
    announced: bool = False
    rewrites: int = 0


@dataclass(frozen=True)
class Decision:
    """What this request's view did, with the figures the log keeps.

    ``action`` is ``none`` (nothing due), ``rewrite`` (the view changed the sent
    history; ``reason`` says why: ``forced``, ``saving`` or ``packs``) or
    ``held`` (a change was due and the cache gate kept it back).
    """

    action: Literal["none", "rewrite", "held"]
    reason: str
    tokens_before: int
    tokens_after: int
    saving: int
    invalidated: int
    elided: tuple[Elided, ...]
    cut_from: int
    cut_to: int
    stubbed: tuple[int, ...]
    notice: str | None
    over_budget: bool
    state: ContextState

    def event(self) -> dict[str, Any]:
        """The ``context.compacted`` (rewrite) or ``context.held`` event body."""
        if self.action == "rewrite":
            return {
                "type": "context.compacted",
                "rewrite": self.state.rewrites,
                "reason": self.reason,
                "tokensBefore": self.tokens_before,
                "tokensAfter": self.tokens_after,
                "saving": self.saving,
                "invalidated": self.invalidated,
                "elided": [item.to_json() for item in self.elided],
                "cutFrom": self.cut_from,
                "cutTo": self.cut_to,
                "stubbed": list(self.stubbed),
                "overBudget": self.over_budget,
            }
        return {
            "type": "context.held",
            "reason": self.reason,
            "tokensBefore": self.tokens_before,
            "saving": self.saving,
            "invalidated": self.invalidated,
            "pending": len(self.elided),
            "cutTo": self.cut_to,
            "notice": self.notice is not None,
        }


# --- rendering ---------------------------------------------------------------------


def recall_call(call_id: str, row: int | None = None) -> str:
    arguments: dict[str, Any] = {"call": call_id}
    if row is not None:
        arguments["row"] = row
    return f"{RECALL_TOOL} {jsonio.dumps(arguments).decode()}"


def content_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@functools.lru_cache(maxsize=TEXT_CACHE_ENTRIES)
def marker_text(item: Elided) -> str:
    return (
        f"[ax: this tool result was elided from the request to keep it within the context "
        f"budget: {item.bytes} bytes, sha256 {item.sha256}. Nothing is lost: "
        f"{recall_call(item.call_id, item.row)} reads it back whole.]"
    )


def pack_text(item: Elided, content: str) -> str:
    return _pack_text(item, content[:PACK_HEAD_CHARS], content[-PACK_TAIL_CHARS:])


@functools.lru_cache(maxsize=TEXT_CACHE_ENTRIES)
def _pack_text(item: Elided, head: str, tail: str) -> str:
    return (
        f"[ax: large tool result, {item.bytes} bytes, sha256 {item.sha256}: shown as its first "
        f"{len(head)} and last {len(tail)} characters. Read it whole, a page at a time, with "
        f"{recall_call(item.call_id, item.row)}.]\n--- head ---\n{head}\n--- tail ---\n{tail}"
    )


def _opening(message: Message) -> str:
    text = " ".join(" ".join(b.text.split()) for b in message.content if isinstance(b, TextBlock))
    return text[:STUB_OPENING_CHARS]


def _find_call(opening: str) -> str:
    # The recall tool's query is matched as text; quotes keep it one argument.
    words = opening.replace('"', " ").replace("\\", " ")
    if len(words) > FIND_QUERY_CHARS:
        words = words[:FIND_QUERY_CHARS].rsplit(" ", 1)[0]
    words = words.strip() or "?"
    return f"{RECALL_TOOL} {jsonio.dumps({'query': words}).decode()}"


def stub_text(index: int, message: Message) -> str:
    opening = _opening(message)
    return (
        f"[ax: an earlier message from the user (message {index + 1}) is no longer sent in "
        f'full; it began "{opening}…". {_find_call(opening)} finds it.]'
    )


def _render_block(block: ContentBlock, state: ContextState) -> ContentBlock:
    if isinstance(block, ToolResultBlock):
        item = state.elided.get(block.tool_use_id)
        if item is not None:
            text = marker_text(item) if item.form == "marker" else pack_text(item, block.content)
            return ToolResultBlock(block.tool_use_id, text, block.is_error)
    return block


def _render(index: int, message: Message, state: ContextState) -> Message:
    if index in state.stubbed:
        return Message(message.role, [TextBlock(stub_text(index, message))])
    if message.role == "user" and any(
        isinstance(b, ToolResultBlock) and b.tool_use_id in state.elided for b in message.content
    ):
        return Message(message.role, [_render_block(b, state) for b in message.content])
    return message


def is_operator_message(message: Message) -> bool:
    return message.role == "user" and not any(
        isinstance(b, ToolResultBlock) for b in message.content
    )


def frame_message(history: Sequence[Message], state: ContextState) -> Message:
    """The message that stands in for ``history[:state.cut]``."""
    gone = history[: state.cut]
    calls = sum(1 for m in gone for b in m.content if isinstance(b, ToolUseBlock))
    operators = sum(1 for m in gone if is_operator_message(m))
    lines = [
        f"[ax: the first {state.cut} messages of this conversation ({calls} tool calls, "
        f"{operators} of them messages from the user) have left the request; the slate frame "
        "below stands in for them. Nothing is lost: slate_trail lists every step, "
        f'{RECALL_TOOL} {{"query": "TEXT"}} finds earlier text (the user\'s messages too), '
        f'{RECALL_TOOL} {{"row": N}} reads one archived message whole and '
        f'{RECALL_TOOL} {{"call": "ID"}} reads a tool output.]'
    ]
    if state.frame is not None:
        lines.append(state.frame)
    else:
        lines.append(
            "[ax: there is no readable slate for this session, so no frame stands in; the "
            "older rounds were pruned and stay recallable as above.]"
        )
    return Message("user", [TextBlock("\n".join(lines))])


# --- planning --------------------------------------------------------------------


def _frame_tokens(frame: str | None) -> int:
    # The frame message's header is about a hundred tokens; count it generously.
    return 150 + text_tokens(frame or "")


def _marker_tokens(call_id: str, size: int) -> int:
    probe = Elided(call_id, "marker", size, "0" * 64)
    return BLOCK_OVERHEAD_TOKENS + text_tokens(call_id + marker_text(probe))


def _pack_tokens(call_id: str, content: str) -> int:
    probe = Elided(call_id, "pack", len(content), "0" * 64)
    return BLOCK_OVERHEAD_TOKENS + text_tokens(call_id + pack_text(probe, content))


class ElisionMemo:
    """What earlier requests worked out, reused while nothing is rewritten.

    Between rewrites a request's view is the previous one plus the new
    messages, so prices, round boundaries, the user's messages, big results
    waiting to be packed and the rendered view are carried forward instead of
    recomputed: the cost of a request does not grow with the session. Any new
    state (a rewrite) or a history that is not the same one grown starts over.
    The memo only ever caches; ``elide`` gives the same answer without it.
    """

    def __init__(self) -> None:
        # Message prices outlive a rewrite: a message's own size never changes.
        self.tokens = TokenMemo()
        self._start(None)

    def _start(self, state: ContextState | None) -> None:
        self._state = state
        self._last: Message | None = None
        self.count = 0
        self.assistants: list[int] = []
        self.operators: list[int] = []
        # Indices at or after the cut of messages holding a big verbatim result.
        self.big: list[int] = []
        # The rendered history[cut:count] and its tokens.
        self.rendered: list[Message] = []
        self.kept = 0
        self.frame: Message | None = None

    def catch_up(self, history: Sequence[Message], state: ContextState) -> None:
        same = (
            self._state is state
            and self.count <= len(history)
            and (self.count == 0 or history[self.count - 1] is self._last)
        )
        if not same:
            self._start(state)
        for index in range(self.count, len(history)):
            message = history[index]
            if message.role == "assistant":
                self.assistants.append(index)
            elif is_operator_message(message):
                self.operators.append(index)
            if index >= state.cut:
                self.rendered.append(_render(index, message, state))
                self.kept += _rendered_tokens(index, message, state, self.tokens)
                if _big_verbatim(message, state):
                    self.big.append(index)
        self.count = len(history)
        self._last = history[-1] if history else None

    def view(self, history: Sequence[Message], state: ContextState) -> list[Message]:
        self.catch_up(history, state)
        if not state.cut:
            return list(self.rendered)
        if self.frame is None:
            self.frame = frame_message(history, state)
        return [self.frame, *self.rendered]


def _big_verbatim(message: Message, state: ContextState) -> bool:
    return message.role == "user" and any(
        isinstance(block, ToolResultBlock)
        and block.tool_use_id not in state.elided
        and len(block.content) * 4 > BIG_RESULT_BYTES
        and content_bytes(block.content) > BIG_RESULT_BYTES
        for block in message.content
    )


class _Planner:
    """The changes due now, and the token figures they would give, kept incrementally."""

    def __init__(
        self,
        history: Sequence[Message],
        state: ContextState,
        overhead: int,
        frame: str | None,
        memo: ElisionMemo,
        rows: Mapping[str, int],
    ) -> None:
        memo.catch_up(history, state)
        self.history = history
        self.rows = rows
        self.state = state
        self.overhead = overhead
        self.frame = frame
        self.memo = memo
        self.assistants = memo.assistants
        self.sizes: dict[int, int] = {}
        self.saved: dict[int, int] = {}
        self.elide: dict[str, tuple[int, Form, int]] = {}
        self.stubs: set[int] = set()
        self.cut = state.cut
        self.kept = memo.kept
        self.before = self.total(state.cut, state.frame, self.kept)

    def size(self, index: int) -> int:
        """What ``history[index]`` costs as sent now (priced on first need)."""
        found = self.sizes.get(index)
        if found is None:
            found = _rendered_tokens(index, self.history[index], self.state, self.memo.tokens)
            self.sizes[index] = found
        return found

    def total(self, cut: int, frame: str | None, kept: int) -> int:
        return self.overhead + (_frame_tokens(frame) if cut else 0) + kept

    def projected(self) -> int:
        return self.total(
            self.cut, self.frame if self.cut > self.state.cut else self.state.frame, self.kept
        )

    def results(self, limit: int) -> list[tuple[int, ToolResultBlock]]:
        return [
            (index, block)
            for index in range(self.cut, min(limit, len(self.history)))
            if self.history[index].role == "user"
            for block in self.history[index].content
            if isinstance(block, ToolResultBlock)
        ]

    def plan(self, index: int, block: ToolResultBlock, form: Form) -> None:
        """Send ``block`` as ``form`` (when that is smaller than what is sent now)."""
        current = self.state.elided.get(block.tool_use_id)
        if current is not None and (current.form == "marker" or form == "pack"):
            return
        now = (
            _result_tokens(block)
            if current is None
            else _pack_tokens(block.tool_use_id, block.content)
        )
        after = (
            _marker_tokens(block.tool_use_id, len(block.content))
            if form == "marker"
            else _pack_tokens(block.tool_use_id, block.content)
        )
        previous = self.elide.get(block.tool_use_id)
        if previous is not None:
            self._save(index, -previous[2])
        if after < now:
            self.elide[block.tool_use_id] = (index, form, now - after)
            self._save(index, now - after)

    def _save(self, index: int, tokens: int) -> None:
        self.saved[index] = self.saved.get(index, 0) + tokens
        if index >= self.cut:
            self.kept -= tokens

    def move_cut(self, to: int) -> None:
        for index in range(self.cut, to):
            self.kept -= self.size(index) - self.saved.get(index, 0)
        self.cut = to

    def down_to(self, target: int, limit: int) -> None:
        """Markers for results before ``limit``, oldest first, then the cut, until ``target``."""
        for index, block in self.results(limit):
            if self.projected() <= target:
                return
            self.plan(index, block, "marker")
        for index in self.assistants:
            if self.projected() <= target or index > limit:
                return
            if index > self.cut:
                self.move_cut(index)

    def stub_operators(self) -> None:
        operators = self.memo.operators
        for index in operators[: max(0, len(operators) - OPERATOR_MESSAGES_KEPT)]:
            if index < self.cut or index in self.state.stubbed:
                continue
            stub = Message("user", [TextBlock(stub_text(index, self.history[index]))])
            saving = self.size(index) - self.saved.get(index, 0) - message_tokens(stub)
            if saving > 0:
                self.stubs.add(index)
                self._save(index, saving)

    def changed(self) -> bool:
        return bool(self.elide or self.stubs) or self.cut > self.state.cut

    def invalidated(self) -> int:
        """Tokens the rewrite re-sends uncached: the view from its first changed message."""
        if self.cut > self.state.cut:
            return self.projected() - self.overhead
        first = min([index for index, _, _ in self.elide.values()] + list(self.stubs))
        return sum(self.size(i) - self.saved.get(i, 0) for i in range(first, len(self.history)))

    def worth(self, pricing: CachePricing) -> bool:
        saving = self.before - self.projected()
        return saving * pricing.read * pricing.horizon > self.invalidated() * (
            pricing.write - pricing.read
        )

    def applied(self) -> tuple[ContextState, tuple[Elided, ...]]:
        """The state once this plan is sent, and the results it elided (with their hashes)."""
        elided = dict(self.state.elided)
        new: list[Elided] = []
        for call_id, block in self.results_by_id().items():
            _, form, _ = self.elide[call_id]
            item = Elided(
                block.tool_use_id,
                form,
                content_bytes(block.content),
                hashlib.sha256(block.content.encode("utf-8", "surrogatepass")).hexdigest(),
                self.rows.get(block.tool_use_id),
            )
            elided[block.tool_use_id] = item
            new.append(item)
        moved = self.cut > self.state.cut
        state = ContextState(
            elided=elided,
            cut=self.cut,
            frame=self.frame if moved else self.state.frame,
            stubbed=self.state.stubbed | frozenset(self.stubs),
            rewrites=self.state.rewrites + 1,
        )
        return state, tuple(new)

    def results_by_id(self) -> dict[str, ToolResultBlock]:
        found: dict[str, ToolResultBlock] = {}
        for call_id, (index, _, _) in self.elide.items():
            for block in self.history[index].content:
                if isinstance(block, ToolResultBlock) and block.tool_use_id == call_id:
                    found[call_id] = block
        return found


def _result_tokens(block: ToolResultBlock) -> int:
    return BLOCK_OVERHEAD_TOKENS + text_tokens(block.tool_use_id + block.content)


def _rendered_tokens(index: int, message: Message, state: ContextState, memo: TokenMemo) -> int:
    """What ``message`` costs as the view sends it, without building the view."""
    if index in state.stubbed:
        return message_tokens(_render(index, message, state))
    tokens = memo.message(message)
    if message.role == "user" and state.elided:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                item = state.elided.get(block.tool_use_id)
                if item is not None:
                    tokens -= _result_tokens(block)
                    tokens += BLOCK_OVERHEAD_TOKENS + text_tokens(
                        block.tool_use_id
                        + (
                            marker_text(item)
                            if item.form == "marker"
                            else pack_text(item, block.content)
                        )
                    )
    return tokens


def _build(history: Sequence[Message], state: ContextState, memo: ElisionMemo) -> list[Message]:
    return memo.view(history, state)


def _with_notice(view: list[Message], notice: str) -> list[Message]:
    if view and view[-1].role == "user":
        last = view[-1]
        return [*view[:-1], Message("user", [*last.content, TextBlock(notice)])]
    return [*view, Message("user", [TextBlock(notice)])]


def _covered(history: Sequence[Message], start: int) -> bool:
    """True when the model called slate_note at or after ``start`` (a Note written since)."""
    return any(
        isinstance(block, ToolUseBlock) and block.name == NOTE_TOOL
        for message in history[start:]
        for block in message.content
    )


def _notice(history: Sequence[Message], state: ContextState, planner: _Planner) -> str | None:
    """The warning for rounds and user messages due to leave, unless a Note covers them."""
    leaving = range(state.cut, planner.cut)
    stubs = sorted(planner.stubs)
    if not leaving and not stubs:
        return None
    if _covered(history, max([planner.cut, *(i + 1 for i in stubs)])):
        return None
    lines = ["[ax notice: the request is close to its context budget.]"]
    if leaving:
        calls = [
            block
            for message in history[leaving.start : leaving.stop]
            for block in message.content
            if isinstance(block, ToolUseBlock)
        ]
        counts = Counter(block.name for block in calls)
        named = ", ".join(
            f"{name} x{count}" for name, count in counts.most_common(NOTICE_MAX_TOOLS_NAMED)
        )
        span = f" (calls {calls[0].id} to {calls[-1].id}: {named})" if calls else ""
        lines.append(
            f"Messages {leaving.start + 1}-{leaving.stop} of this conversation, with "
            f"{len(calls)} tool calls{span}, are about to leave the request. The slate frame "
            "(Anchors, the newest Trail lines, every Note) will stand in for them and their "
            "outputs stay recallable. Before they go, save what you still need from them with "
            "slate_note; this notice repeats until a Note written after them covers them."
        )
    if stubs:
        lines.append(f"{len(stubs)} earlier message(s) from the user will stop being sent in full:")
        for index in stubs[:NOTICE_MAX_STUBS_NAMED]:
            opening = _opening(history[index])
            lines.append(f'- message {index + 1}: "{opening}…" ({_find_call(opening)} finds it)')
        if len(stubs) > NOTICE_MAX_STUBS_NAMED:
            lines.append(f"- and {len(stubs) - NOTICE_MAX_STUBS_NAMED} more, found the same way")
    return "\n".join(lines)


def elide(
    history: Sequence[Message],
    budget: Budget,
    state: ContextState,
    *,
    frame: str | None = None,
    overhead: int = 0,
    pricing: CachePricing = ANTHROPIC_CACHE,
    rows: Mapping[str, int] | None = None,
    memo: ElisionMemo | None = None,
) -> tuple[list[Message], Decision]:
    """The view to send for ``history`` and the decision that made it (see the module docstring).

    ``frame`` is the slate frame's text now (None when there is no readable
    slate); it is pinned into the state when rounds leave. ``overhead`` is the
    tokens of the system prompt and tool schemas, which every request carries.
    ``rows`` maps call ids to their archive rows (named in markers when known);
    ``memo`` carries what one request worked out to the next (see ElisionMemo).
    """
    memo = memo or ElisionMemo()
    planner = _Planner(history, state, overhead, frame, memo, rows or {})
    assistants = planner.assistants
    protect_from = assistants[-KEEP_RECENT_ROUNDS] if len(assistants) >= KEEP_RECENT_ROUNDS else 0

    # Big results that have been sent verbatim for long enough become packs.
    for index in memo.big:
        sent = len(assistants) - bisect.bisect_right(assistants, index)
        if sent < BIG_RESULT_VERBATIM_REQUESTS:
            break
        for block in history[index].content:
            if isinstance(block, ToolResultBlock) and _big_verbatim(
                Message("user", [block]), state
            ):
                planner.plan(index, block, "pack")
    packs = {call_id: item for call_id, item in planner.elide.items()}
    packs_worth = bool(packs) and planner.worth(pricing)

    if planner.projected() > budget.trigger:
        planner.down_to(budget.target, protect_from)
        if planner.projected() > budget.request and assistants:
            # Over the hard cap even so: the recent rounds give way too, all but the newest.
            planner.down_to(budget.target, assistants[-1])
        if planner.cut > state.cut or len(planner.elide) > len(packs):
            planner.stub_operators()

    before = planner.before
    if not planner.changed():
        return _build(history, state, memo), _decision("none", "", planner, state, (), None, budget)

    notice = _notice(history, state, planner)
    # The notice rides on the request, so it counts toward the cap too.
    forced = (
        before + (text_tokens(notice) + BLOCK_OVERHEAD_TOKENS if notice else 0) > budget.request
    )
    # Rounds leave unannounced only when they must; otherwise a notice goes first,
    # unless a Note written after them already covers them.
    warned = notice is None or state.announced
    if forced or (warned and planner.worth(pricing)):
        new_state, new = planner.applied()
        return _build(history, new_state, memo), _decision(
            "rewrite", "forced" if forced else "saving", planner, new_state, new, None, budget
        )

    announced = state.announced or notice is not None
    if packs_worth and (planner.elide != packs or planner.stubs or planner.cut > state.cut):
        only = _Planner(history, state, overhead, frame, memo, rows or {})
        for call_id, (index, form, _) in packs.items():
            block = next(
                b
                for b in history[index].content
                if isinstance(b, ToolResultBlock) and b.tool_use_id == call_id
            )
            only.plan(index, block, form)
        new_state, new = only.applied()
        new_state = replace(new_state, announced=announced)
        view = _build(history, new_state, memo)
        if notice is not None:
            view = _with_notice(view, notice)
        return view, _decision("rewrite", "packs", only, new_state, new, notice, budget)

    held = state if state.announced == announced else replace(state, announced=announced)
    view = _build(history, held, memo)
    if notice is not None:
        view = _with_notice(view, notice)
    pending = tuple(
        Elided(call_id, form, len(history[index].content), "")
        for call_id, (index, form, _) in planner.elide.items()
    )
    return view, _decision(
        "held", "cache" if warned else "notice", planner, held, pending, notice, budget
    )


def _decision(
    action: Literal["none", "rewrite", "held"],
    reason: str,
    planner: _Planner,
    state: ContextState,
    elided: tuple[Elided, ...],
    notice: str | None,
    budget: Budget,
) -> Decision:
    changed = planner.changed()
    after = planner.projected() if action == "rewrite" else planner.before
    return Decision(
        action=action,
        reason=reason,
        tokens_before=planner.before,
        tokens_after=after,
        saving=planner.before - planner.projected() if changed else 0,
        invalidated=planner.invalidated() if changed else 0,
        elided=elided,
        cut_from=planner.state.cut,
        cut_to=planner.cut,
        stubbed=tuple(sorted(planner.stubs)),
        notice=notice,
        over_budget=after > budget.request,
        state=state,
    )


# --- validity and resume -------------------------------------------------------------


def pairing_problems(messages: Sequence[Message]) -> list[str]:
    """Every way ``messages`` breaks the tool_use/tool_result pairing a provider requires.

    The first message is the user's; each assistant tool_use is answered by
    exactly one tool_result in the next message (unless it is the last one), and
    each tool_result answers a tool_use of the message right before it.
    """
    problems: list[str] = []
    if messages and messages[0].role != "user":
        problems.append("the first message is not the user's")
    for index, message in enumerate(messages):
        if not message.content:
            problems.append(f"message {index} is empty")
        uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]
        if message.role == "assistant" and results:
            problems.append(f"message {index}: an assistant message holds tool results")
        if message.role == "user" and uses:
            problems.append(f"message {index}: a user message holds tool calls")
        previous = messages[index - 1] if index else None
        asked = (
            {b.id for b in previous.content if isinstance(b, ToolUseBlock)}
            if previous is not None and previous.role == "assistant"
            else set()
        )
        for call_id in results:
            if call_id not in asked:
                problems.append(f"message {index}: result {call_id} answers no call just before it")
        if len(results) != len(set(results)):
            problems.append(f"message {index}: a call is answered twice")
        if uses and index + 1 < len(messages):
            following = messages[index + 1]
            answered = {b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)}
            for call_id in uses:
                if call_id not in answered:
                    problems.append(f"message {index}: call {call_id} has no result after it")
    return problems


def state_from_events(events: Sequence[Mapping[str, Any]]) -> ContextState:
    """The state the logged ``context.compacted`` events add up to (for resume)."""
    elided: dict[str, Elided] = {}
    cut = 0
    stubbed: set[int] = set()
    rewrites = 0
    for event in events:
        if event.get("type") != "context.compacted":
            continue
        rewrites += 1
        for raw in event.get("elided", []):
            elided[raw["callId"]] = Elided(
                raw["callId"], raw["form"], raw["bytes"], raw["sha256"], raw.get("row")
            )
        cut = max(cut, int(event.get("cutTo", 0)))
        stubbed.update(int(i) for i in event.get("stubbed", []))
    return ContextState(elided=elided, cut=cut, stubbed=frozenset(stubbed), rewrites=rewrites)
