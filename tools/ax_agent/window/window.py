"""The session's context window: the one stateful piece of bounded context.

The turn loop hands it each request before it goes to the provider
(``bound``); it prices the request, asks ``elide`` for the view, logs each
rewrite (``context.compacted``) and each rewrite held back (``context.held``),
and keeps the figures ``/context`` shows. Instruction files loaded after the
start (``place_pinned``) are placed into the view after elision, like the
system prompt outside its accounting: they count as fixed overhead, are never
elided, and stay on the message they first rode on (or, once it has left the
request, on the stand-in for the rounds that left), so the cached prefix holds.
As a session listener (``archive``) it keeps every message whole in the
slate's archive, which is what the recall tools read back. A resumed session
adds up its ``context.compacted`` events, so what was elided stays elided
after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from libcommon.errors import AxError

from ..providers.base import Message, ProviderRequest, TextBlock, ToolResultBlock
from ..seam import Seam
from ..seam.models import ArchiveRequest, FrameRequest
from .budget import Budget, budget_for
from .elide import (
    ANTHROPIC_CACHE,
    CachePricing,
    ContextState,
    Decision,
    ElisionMemo,
    elide,
    state_from_events,
)
from .tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TokenCounter,
    block_tokens,
    count_request,
    estimate_request,
    fixed_tokens,
)

if TYPE_CHECKING:
    from ..instructions import Pinned

# The frame is read from the slate only once a request comes within this share of
# the trigger: it is needed only when rounds leave.
FRAME_BUILD_RATIO = 0.8

SYSTEM_NOTE = (
    "Context: this conversation is kept within the model's context budget. An old tool "
    "output may be replaced by a marker naming the history_search call that reads it back; "
    "a big output is shortened to its head and tail after two requests; older rounds leave "
    "the conversation in batches, and a slate frame (Anchors, the newest Trail lines, every "
    "Note) stands in for them. Before rounds leave you get a notice: save what you still need "
    "with slate_note. slate_trail, recall_step and history_search read back what left."
)

Recorder = Callable[..., Any]


@dataclass(frozen=True)
class ContextFigures:
    """What one request is made of, in tokens (``/context``)."""

    model: str
    context_window: int
    max_output: int
    budget: int
    trigger: int
    target: int
    system: int
    tools: int
    # Instruction files loaded after the start (those of the start are in the system prompt).
    instructions: int
    frame: int
    history: int
    tool_results: int
    elided: int
    elided_results: int
    packed_results: int
    left_messages: int
    rewrites: int
    total: int
    counted_by: Literal["provider", "estimate"]

    def lines(self) -> list[str]:
        share = 100 * self.total / self.budget if self.budget else 0.0
        return [
            f"model {self.model}: window {self.context_window}, output {self.max_output}, "
            f"request budget {self.budget} (rewrite at {self.trigger}, down to {self.target})",
            f"request: {self.total} tokens ({share:.0f}% of the budget, {self.counted_by})",
            f"  system prompt  {self.system}",
            f"  tool schemas   {self.tools}",
            f"  instructions   {self.instructions} (files loaded since the start)",
            f"  slate frame    {self.frame}",
            f"  history        {self.history}",
            f"  tool results   {self.tool_results}",
            f"  elided         {self.elided} ({self.elided_results} markers, "
            f"{self.packed_results} packs)",
            f"{self.left_messages} messages have left the request; {self.rewrites} rewrites",
        ]

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def context_figures(
    request: ProviderRequest,
    budget: Budget,
    state: ContextState,
    counter: TokenCounter | None = None,
    pinned: Sequence[Pinned] = (),
) -> ContextFigures:
    """Break ``request`` (a bounded one, with ``pinned`` placed in it) down by what each part is."""
    from ax_slate import estimate_tokens

    messages = request.messages
    ids = {id(item.block) for item in pinned}
    frame_message = messages[0] if state.cut and messages else None
    frame = history = tool_results = elided = instructions = 0
    for message in messages:
        if message is frame_message:
            frame += MESSAGE_OVERHEAD_TOKENS
        else:
            history += MESSAGE_OVERHEAD_TOKENS
        for block in message.content:
            cost = block_tokens(block)
            if id(block) in ids:
                instructions += cost
            elif message is frame_message:
                frame += cost
            elif isinstance(block, ToolResultBlock):
                if block.tool_use_id in state.elided:
                    elided += cost
                else:
                    tool_results += cost
            else:
                history += cost
    system = estimate_tokens(request.system)
    estimate = fixed_tokens(request) + instructions + frame + history + tool_results + elided
    counted_by: Literal["provider", "estimate"] = "estimate"
    total = estimate
    if counter is not None:
        total = count_request(request, counter)
        counted_by = "provider" if total != estimate_request(request) else "estimate"
    forms = [item.form for item in state.elided.values()]
    return ContextFigures(
        model=request.model,
        context_window=budget.context_window,
        max_output=budget.max_output,
        budget=budget.request,
        trigger=budget.trigger,
        target=budget.target,
        system=system,
        tools=fixed_tokens(request) - system,
        instructions=instructions,
        frame=frame,
        history=history,
        tool_results=tool_results,
        elided=elided,
        elided_results=forms.count("marker"),
        packed_results=forms.count("pack"),
        left_messages=state.cut,
        rewrites=state.rewrites,
        total=total,
        counted_by=counted_by,
    )


def place_pinned(
    view: list[Message],
    pinned: Sequence[Pinned],
    history: Sequence[Message] | None = None,
    state: ContextState | None = None,
) -> list[Message]:
    """``view`` with each pinned block on the message it is anchored to.

    ``history`` and ``state`` say how ``view`` was made from the history (None:
    the view is the history itself). A block anchored to a message that has left
    the request goes on the stand-in for the rounds that left (the view's first
    message). It goes right after the message's own content, before a notice
    elision may have added, so the message reads the same in every later request
    (a message sent as a one-line stub is never the last, so never has a notice).
    """
    if not pinned:
        return view
    history = view if history is None else history
    cut = state.cut if state is not None else 0
    offset = 1 if cut else 0
    additions: dict[int, list[TextBlock]] = {}
    for item in pinned:
        at = 0 if item.anchor < cut else item.anchor - cut + offset
        additions.setdefault(at, []).append(item.block)
    placed = list(view)
    for at, blocks in additions.items():
        content = list(placed[at].content)
        own = len(content) if at < offset else len(history[at - offset + cut].content)
        placed[at] = Message(placed[at].role, [*content[:own], *blocks, *content[own:]])
    return placed


def archived_message(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The archive row for a logged event: what the model saw, one message per row.

    A tool's output is its own row (``role`` tool, the call id, then the text),
    so a call's output reads back exactly as it was sent.
    """
    kind = record.get("type")
    ts = record.get("ts")
    if kind in ("user.message", "assistant.message"):
        role = "user" if kind == "user.message" else "assistant"
        content = record.get("content")
        if isinstance(content, list):
            # Reasoning is the provider's ciphertext: nothing in it can be searched or read.
            content = [
                b for b in content if not (isinstance(b, dict) and b.get("type") == "reasoning")
            ]
        return {"role": role, "ts": ts, "content": content}
    if kind == "tool.completed" and isinstance(record.get("content"), str):
        return {"role": "tool", "ts": ts, "callId": record["callId"], "content": record["content"]}
    return None


@dataclass(repr=False)
class ContextWindow:
    seam: Seam
    record: Recorder
    pricing: CachePricing = ANTHROPIC_CACHE
    counter: TokenCounter | None = None
    state: ContextState = field(default_factory=ContextState)
    decision: Decision | None = None
    # The last bounded request and its budget, which /context breaks down on demand.
    last: tuple[ProviderRequest, Budget] | None = None
    last_pinned: tuple[Pinned, ...] = ()
    # Archive rows of tool outputs kept by this process, named in markers.
    rows: dict[str, int] = field(default_factory=dict)
    memo: ElisionMemo = field(default_factory=ElisionMemo)
    # Said once: why there is no frame, or why a message could not be archived.
    problems: list[str] = field(default_factory=list)
    _held_logged: bool = False
    _frame_failed: bool = False

    @classmethod
    def resumed(
        cls, seam: Seam, record: Recorder, events: Sequence[Mapping[str, Any]], **options: Any
    ) -> ContextWindow:
        return cls(seam, record, state=state_from_events(events), **options)

    def bound(self, request: ProviderRequest, pinned: Sequence[Pinned] = ()) -> ProviderRequest:
        """``request`` with its history replaced by the bounded view, ``pinned`` placed in it."""
        budget = budget_for(request.model, request.max_tokens)
        # Pinned instruction blocks are never elided: they count like the system prompt.
        overhead = fixed_tokens(request) + sum(block_tokens(item.block) for item in pinned)
        if self.state.cut and self.state.frame is None:
            # Resumed after rounds had left: the frame standing in for them is rebuilt.
            self.state = replace(self.state, frame=self._frame())
        near = (
            self.decision is None
            or self.decision.tokens_after >= budget.trigger * FRAME_BUILD_RATIO
        )
        frame = self._frame() if near else None
        view, decision = self._elide(request.messages, budget, frame, overhead)
        if decision.cut_to > self.state.cut and not near:
            # A single round jumped over the trigger: do it again with the frame.
            view, decision = self._elide(request.messages, budget, self._frame(), overhead)
        self.state = decision.state
        self.decision = decision
        self._log(decision)
        view = place_pinned(view, pinned, request.messages, self.state)
        bounded = replace(request, messages=view)
        self.last = (bounded, budget)
        self.last_pinned = tuple(pinned)
        return bounded

    def figures(self) -> ContextFigures | None:
        """What the last request was made of (None before the first request)."""
        if self.last is None:
            return None
        request, budget = self.last
        return context_figures(request, budget, self.state, self.counter, self.last_pinned)

    def _elide(
        self, history: list[Message], budget: Budget, frame: str | None, overhead: int
    ) -> tuple[list[Message], Decision]:
        return elide(
            history,
            budget,
            self.state,
            frame=frame,
            overhead=overhead,
            pricing=self.pricing,
            rows=self.rows,
            memo=self.memo,
        )

    def _frame(self) -> str | None:
        try:
            built = self.seam.call("slate.frame", FrameRequest())
        except AxError as exc:
            if not self._frame_failed:
                self._frame_failed = True
                self.problems.append(f"no slate frame: {exc.message}")
            return None
        text: str = built.text
        return text

    def _log(self, decision: Decision) -> None:
        if decision.action == "rewrite":
            self._held_logged = False
            self.record(decision.event())
        elif decision.action == "held" and not self._held_logged:
            # One record per held stretch: the figures when the rewrite first came due.
            self._held_logged = True
            self.record(decision.event())

    def archive(self, record: dict[str, Any]) -> None:
        """Session listener: keep each message whole in the archive, for recall."""
        message = archived_message(record)
        if message is None:
            return
        try:
            row = self.seam.call("slate.archive", ArchiveRequest(message=message))
            if message["role"] == "tool":
                self.rows[message["callId"]] = int(row)
        except AxError as exc:
            problem = f"the archive could not keep a message: {exc.message}"
            if problem not in self.problems:
                self.problems.append(problem)
