"""The terminal's approver: a small menu, or a typed answer, from one table.

On a terminal the question shows the request, the reason and the boundary,
then a menu of the offered answers with the highlight on "no" (arrows move it,
Enter takes it, a typed key, word or number followed by Enter picks that row,
Esc is no). Keys typed before the question appeared never answer it: they are
set aside for the next prompt. Ctrl+C at the question interrupts the turn;
end of input is deny-and-stop. Without raw keys the same table drives a typed
question ("answer [n/y/s] (Enter = no)").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from libcommon.redact import redact

from ..approvals import ApprovalAnswer, ApprovalRequest
from .choices import Answer, Menu, grammar, menu_line, offered, parse_typed
from .screen import Screen, clean
from .status import StatusLine

# Unreadable typed answers a question takes before it counts as "no".
MAX_REASKS = 3

KeySource = Callable[[], AbstractContextManager[Iterator[str]]]


@dataclass
class TypeAhead:
    """Text typed while a turn ran, kept for the next prompt."""

    text: str = ""

    def add(self, data: bytes | str) -> None:
        chunk = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        self.text += chunk.replace("\r\n", "\n").replace("\r", "\n")

    def take_line(self) -> str | None:
        """The first complete line, or None when no full line is waiting."""
        if "\n" not in self.text:
            return None
        line, self.text = self.text.split("\n", 1)
        return line

    def take_rest(self) -> str:
        rest, self.text = self.text, ""
        return rest


@dataclass
class MenuApprover:
    screen: Screen
    status: StatusLine
    # Opens the keyboard for one question (raw mode), or None for typed lines.
    keys: KeySource | None
    read_line: Callable[[], str]
    name: str = "terminal"
    asked: int = field(default=0, init=False)

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked += 1
        self.status.pause()
        try:
            self._show(request)
            rows = offered(request.offers)
            if self.keys is not None:
                return self._menu(rows)
            return self._typed(rows)
        finally:
            self.status.resume()

    def confirm(self, question: str) -> bool:
        """A yes/no question about the person's own command (``/init``): the same menu,
        with the highlight on "No", so Enter, Esc and end of input never mean yes."""
        self.screen.line(self.screen.style(question, "bold", "yellow"))
        rows = offered(("no", "once"))
        answer = self._menu(rows) if self.keys is not None else self._typed(rows)
        return answer.choice == "once"

    def _show(self, request: ApprovalRequest) -> None:
        screen = self.screen
        glyphs = screen.glyphs
        title = f"{glyphs.call} {request.tool} needs your approval"
        screen.line(screen.style(title, "bold", "yellow"))
        if request.task is not None:
            # A delegated task's question (issue 21): whose it is comes first.
            screen.line(f"  task:     {clean(request.task)} ({request.task_kind})")
        screen.line(f"  request:  {clean(request.summary)}")
        screen.line(f"  reason:   {clean(redact(request.decision.reason))}")
        screen.line(f"  boundary: {request.boundary}")
        for line in request.details:
            screen.line(f"  {clean(redact(line))}")
        if request.no_undo:
            screen.line(screen.style(f"  undo will not be possible: {request.no_undo}", "red"))

    def _menu(self, rows: list[Answer]) -> ApprovalAnswer:
        assert self.keys is not None
        screen = self.screen
        menu = Menu(rows)
        note = ""

        def lines() -> list[str]:
            shown = []
            for number, row in enumerate(menu.rows, start=1):
                text = menu_line(row, number)
                if number - 1 == menu.index:
                    shown.append(screen.style(f"{screen.glyphs.pointer} {text}", "cyan", "bold"))
                else:
                    shown.append(f"  {text}")
            hint = f"↑/↓ and Enter, or type {grammar(rows)} and Enter; Esc = no"
            shown.append(screen.style(note or hint, "dim"))
            shown.append(f"answer: {menu.typed}")
            return shown

        screen.live = lines
        screen.redraw()
        try:
            with self.keys() as keys:
                for key in keys:
                    if key == "ctrl-c":
                        raise KeyboardInterrupt
                    if key == "ctrl-d" and not menu.typed:
                        return self._chose("stop", "end of input at the question")
                    if key == "esc":
                        return self._chose("no", None)
                    if key in ("up", "down"):
                        menu.move(-1 if key == "up" else 1)
                    elif key == "backspace":
                        menu.typed = menu.typed[:-1]
                    elif key == "enter":
                        typed = menu.typed
                        row = menu.submit()
                        if row is not None:
                            return self._chose(row.choice, None)
                        note = f"{typed.strip()!r} is not one of the answers offered"
                    elif len(key) == 1 and key.isprintable():
                        menu.typed += key
                    screen.redraw()
            return self._chose("stop", "end of input at the question")
        finally:
            screen.live = None
            screen.clear_live()

    def _typed(self, rows: list[Answer]) -> ApprovalAnswer:
        screen = self.screen
        for _ in range(MAX_REASKS):
            screen.raw_err(f"answer [{grammar(rows)}] (Enter = no): ")
            line = self.read_line()
            if not line:
                screen.line()
                return self._chose("stop", "end of input at the question")
            if not line.strip():
                return self._chose("no", None)
            row = parse_typed(line, rows)
            if row is not None:
                return self._chose(row.choice, None)
            screen.line(f"{line.strip()!r} is not one of the answers offered")
        return self._chose("no", "no readable answer; taken as no")

    def _chose(self, choice: str, detail: str | None) -> ApprovalAnswer:
        return ApprovalAnswer(choice, self.name, detail)  # type: ignore[arg-type]
