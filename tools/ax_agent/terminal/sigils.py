"""``@plan`` and ``@review``: a request a person routes to a delegated helper.

A line that starts with ``@word`` is a sigil. ``@plan REQUEST`` hands the
request to one planner task, ``@review REQUEST`` to one inspector (advice
that blocks nothing). The turn's text says so to the model, which makes the
``delegate_task`` call: the call is decided, recorded and supervised like any
other, and the model reports what the helper found. Any other ``@word`` is
refused by name, before a turn starts, so a typo never reaches the model as a
request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The sigils and the role each routes to.
SIGILS = {"plan": "planner", "review": "inspector"}
_SIGIL = re.compile(r"^@(\S*)(?:\s+(.*))?$", re.DOTALL)
# How much of an unknown sigil a refusal repeats.
SIGIL_SHOWN_CHARS = 40


@dataclass(frozen=True)
class Routed:
    word: str
    role: str
    request: str

    def turn_text(self) -> str:
        return (
            f"{self.request}\n\n[ax: the person routed this request with @{self.word}: hand it "
            f"to one {self.role} task (delegate_task with tasks=[{{role: {self.role}, label: "
            f"{self.word}, prompt: the request and what the task needs to know}}]), then "
            "answer with what it found.]"
        )


def route(line: str) -> Routed | str | None:
    """None: not a sigil; a ``Routed`` request; or why the line is refused."""
    found = _SIGIL.match(line.strip())
    if found is None:
        return None
    word, request = found.group(1), (found.group(2) or "").strip()
    role = SIGILS.get(word)
    known = ", ".join(f"@{name}" for name in SIGILS)
    if role is None:
        shown = word[:SIGIL_SHOWN_CHARS] + ("…" if len(word) > SIGIL_SHOWN_CHARS else "")
        return f"@{shown} is not a sigil (known: {known}); nothing was sent"
    if not request:
        return f"@{word} needs a request after it, e.g. @{word} the parser's error handling"
    return Routed(word, role, request)
