"""The approval answers: one table for the menu, the typed grammar and the help.

Each row is one answer the loop understands (``approvals.Choice``): the key a
person types, the words that mean the same, and the label the menu shows. The
menu lists the offered rows in table order with the highlight on the first
("no"); a typed answer is a row's key, one of its words, or its number in the
menu. Enter on an empty typed answer takes the highlighted row, which starts on
"no", so Enter never means yes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..approvals import Choice


@dataclass(frozen=True)
class Answer:
    choice: Choice
    key: str
    words: tuple[str, ...]
    label: str


ANSWERS: tuple[Answer, ...] = (
    Answer("no", "n", ("no",), "No"),
    Answer("once", "y", ("yes", "once"), "Yes, once"),
    Answer("session", "s", ("session",), "Yes, and don't ask again this session"),
    Answer("always", "a", ("always",), "Always (a durable grant; revoke with ax-policy grants)"),
)


def offered(offers: Sequence[Choice]) -> list[Answer]:
    """The rows a question offers, in table order ("no" first)."""
    return [answer for answer in ANSWERS if answer.choice in offers]


def parse_typed(text: str, rows: Sequence[Answer]) -> Answer | None:
    """The row a typed answer names (key, word or menu number), or None."""
    word = text.strip().lower()
    if not word:
        return None
    for number, row in enumerate(rows, start=1):
        if word == row.key or word in row.words or word == str(number):
            return row
    return None


def grammar(rows: Sequence[Answer]) -> str:
    """The typed forms, e.g. ``n/y/s``, for the prompt and the refusal message."""
    return "/".join(row.key for row in rows)


def menu_line(row: Answer, number: int) -> str:
    return f"{number}. {row.label} ({row.key})"


@dataclass
class Menu:
    """The menu's state: which row is highlighted and what has been typed."""

    rows: list[Answer]
    index: int = 0
    typed: str = ""

    def move(self, delta: int) -> None:
        self.index = (self.index + delta) % len(self.rows)

    def submit(self) -> Answer | None:
        """Enter: the typed answer if there is one, else the highlighted row.

        A typed answer that names no row returns None (and is cleared), so the
        question stays up instead of guessing.
        """
        if not self.typed.strip():
            return self.rows[self.index]
        row = parse_typed(self.typed, self.rows)
        self.typed = ""
        return row
