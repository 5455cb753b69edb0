"""Approvals: who answers when the policy says "ask".

The loop hands an ``ApprovalRequest`` to an ``Approver`` and records what came
back; it never decides itself. Four approvers exist here: the terminal one
(a typed answer; Enter never means yes), the non-interactive one (every ask is
a deny), ``--dangerously-allow-all`` (every ask is a yes, said out loud) and
the demo's (yes once, said out loud, for a workspace it made itself). The
interactive terminal of a later issue plugs in behind the same protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal, Protocol

from libcommon.redact import redact

if TYPE_CHECKING:
    from ax_policy import Decision

Choice = Literal["no", "once", "session", "always", "stop"]
# Typed answers and the choice each stands for; "" (Enter) is always "no".
ANSWER_KEYS: dict[str, Choice] = {
    "": "no",
    "n": "no",
    "no": "no",
    "y": "once",
    "yes": "once",
    "s": "session",
    "session": "session",
    "a": "always",
    "always": "always",
}
# How many unreadable answers a question takes before it counts as "no".
MAX_REASKS = 3
SUMMARY_MAX_CHARS = 300


@dataclass(frozen=True)
class ApprovalRequest:
    call_id: str
    tool: str
    input: Any
    decision: Decision
    # Set when the call changes files and no snapshot could be taken.
    no_undo: str | None = None
    offers: tuple[Choice, ...] = ("no", "once")
    # The delegated task that asks (issue 21): its questions reach the parent's approver.
    task: str | None = None
    # What the tool adds to the question (a research call's query, bounds and allowance).
    details: tuple[str, ...] = ()
    # What that task is and where it works, as the question says it.
    task_kind: str = "a delegated task, in its own copy"

    @property
    def summary(self) -> str:
        """The request in one redacted line, the way a person recognises it."""
        value = self.input
        if isinstance(value, dict):
            for key in ("command", "path", "kind", "pattern", "url"):
                if isinstance(value.get(key), str):
                    value = f"{key}={value[key]}"
                    break
        text = redact(value if isinstance(value, str) else repr(value))
        return text if len(text) <= SUMMARY_MAX_CHARS else text[: SUMMARY_MAX_CHARS - 1] + "…"

    @property
    def boundary(self) -> str:
        decision = self.decision
        if decision.exec_boundary == "sandboxed":
            return f"runs inside the sandbox ({decision.sandbox_profile or 'profile not named'})"
        if decision.exec_boundary == "unsandboxed":
            return "runs UNSANDBOXED, with your own privileges"
        if decision.requires_snapshot:
            return "changes files in the workspace (a snapshot makes it undoable)"
        return "runs inside ax (no process is started)"


@dataclass(frozen=True)
class ApprovalAnswer:
    choice: Choice
    approver: str
    detail: str | None = None

    @property
    def allowed(self) -> bool:
        return self.choice in ("once", "session", "always")


class Approver(Protocol):
    name: str

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer: ...


class DenyingApprover:
    """Not on a terminal: nobody can answer, so every ask is a deny."""

    name = "non-interactive"

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer(
            "no", self.name, "no terminal to ask on; every ask is a deny off a terminal"
        )


@dataclass
class AnnouncingApprover:
    """Answers every ask "yes once" and says so on ``say`` (stderr)."""

    name: str
    say: Callable[[str], None]
    why: str

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.say(
            f"ax-agent: {self.why}: answered yes once to {request.tool} "
            f"({request.summary}); {request.boundary}"
        )
        return ApprovalAnswer("once", self.name, self.why)


@dataclass
class TerminalApprover:
    """A question on the terminal, answered with a typed word; Enter and EOF never mean yes."""

    stdin: IO[str]
    stderr: IO[str]
    name: str = "terminal"
    asked: int = field(default=0, init=False)

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked += 1
        write = self.stderr.write
        write(f"\nax-agent: {request.tool} needs your approval (call {request.call_id})\n")
        if request.task is not None:
            write(f"  task:     {redact(request.task)} ({request.task_kind})\n")
        write(f"  request:  {request.summary}\n")
        write(f"  reason:   {redact(request.decision.reason)}\n")
        write(f"  boundary: {request.boundary}\n")
        for line in request.details:
            write(f"  {_printable(redact(line))}\n")
        if request.no_undo:
            write(f"  WARNING:  undo will not be possible: {request.no_undo}\n")
        write("  " + "  ".join(_label(choice) for choice in request.offers) + "\n")
        keys = "/".join(_key(choice) for choice in request.offers)
        for _ in range(MAX_REASKS):
            write(f"answer [{keys}] (Enter = no): ")
            self.stderr.flush()
            line = self.stdin.readline()
            if not line:
                write("\n")
                return ApprovalAnswer("stop", self.name, "end of input at the question")
            choice = ANSWER_KEYS.get(line.strip().lower())
            if choice is not None and choice in request.offers:
                return ApprovalAnswer(choice, self.name)
            write(f"ax-agent: {line.strip()!r} is not one of the answers offered\n")
        return ApprovalAnswer("no", self.name, "no readable answer; taken as no")


def _printable(text: str) -> str:
    """``text`` for the terminal: control characters shown escaped, never acted on."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _key(choice: Choice) -> str:
    return {"no": "n", "once": "y", "session": "s", "always": "a", "stop": "q"}[choice]


def _label(choice: Choice) -> str:
    text = {
        "no": "no (default)",
        "once": "yes, once",
        "session": "yes, for this session",
        "always": "always (a durable grant, revocable with `ax-policy grants`)",
        "stop": "stop",
    }[choice]
    return f"[{_key(choice)}] {text}"
