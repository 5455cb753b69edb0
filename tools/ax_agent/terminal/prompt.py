"""Reading a line: editing, history across sessions, continuation lines, typed-ahead text.

With GNU readline (stdin and stdout both terminals) a line can be edited,
history is searchable, Tab completes slash commands and a multi-line paste
arrives as one message (bracketed paste). Without it (stdout redirected to a
file, say) the prompt goes to stderr and the terminal's own line editing is
used. Either way a trailing backslash continues the message on the next line.

History is one file in the state root, shared by every workspace, written
under a lock and atomically: the entries of this run are appended to what is
there, the oldest dropped beyond ``HISTORY_MAX_ENTRIES``; secrets are redacted first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from libcommon import jsonio
from libcommon.atomic import atomic_write_bytes
from libcommon.locks import file_lock
from libcommon.redact import redact

from .approve import TypeAhead
from .screen import Screen

HISTORY_FILE_NAME = "agent-history.jsonl"
HISTORY_MAX_ENTRIES = 1000
# One history entry larger than this is not kept (a huge paste).
HISTORY_ENTRY_MAX_CHARS = 16_384
CONTINUATION = "\\"


class History:
    def __init__(self, root: Path) -> None:
        self.path = root / HISTORY_FILE_NAME
        self.added: list[str] = []

    def load(self) -> list[str]:
        entries: list[str] = []
        if not self.path.exists():
            return entries
        for _, value in jsonio.iter_jsonl(self.path):
            if isinstance(value, str):
                entries.append(value)
        return entries[-HISTORY_MAX_ENTRIES:]

    def add(self, entry: str) -> None:
        # Kept on disk, so a pasted key is redacted like everything else ax persists.
        if entry.strip() and len(entry) <= HISTORY_ENTRY_MAX_CHARS:
            self.added.append(redact(entry))

    def save(self) -> None:
        """Append this run's entries to the file (other sessions may have written since)."""
        if not self.added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            entries = (self.load() + self.added)[-HISTORY_MAX_ENTRIES:]
            atomic_write_bytes(self.path, b"".join(jsonio.dumps_line(entry) for entry in entries))
        self.added = []


class LineReader:
    """``read()`` returns the next message, or raises EOFError / KeyboardInterrupt."""

    def __init__(
        self,
        screen: Screen,
        stdin: IO[str],
        history: History,
        typeahead: TypeAhead,
        *,
        use_readline: bool,
        complete: Callable[[str], list[str]],
    ) -> None:
        self.screen = screen
        self.stdin = stdin
        self.history = history
        self.typeahead = typeahead
        self.readline: Any = None
        if use_readline:
            self.readline = _setup_readline(history.load(), complete)

    def read(self) -> str:
        glyph = self.screen.glyphs.pointer
        parts = [self._line(f"{glyph} ")]
        while parts[-1].endswith(CONTINUATION):
            parts[-1] = parts[-1][: -len(CONTINUATION)]
            parts.append(self._line(f"{self.screen.glyphs.more} "))
        text = "\n".join(parts)
        if self.readline is not None and len(parts) > 1:
            # readline kept each piece; one entry for the whole message is what Up should recall.
            for _ in parts:
                _remove_last(self.readline)
            self.readline.add_history(text)
        self.history.add(text)
        return text

    def _line(self, prompt: str) -> str:
        waiting = self.typeahead.take_line()
        if waiting is not None:
            # Typed during the last turn: shown as if typed now.
            self.screen.raw_err(prompt + waiting + "\n")
            self.screen.at_new_line()
            if self.readline is not None:
                self.readline.add_history(waiting)
            return waiting
        rest = self.typeahead.take_rest()
        if self.readline is not None:
            if rest:
                self.readline.set_startup_hook(lambda: self.readline.insert_text(rest))
            try:
                line = input(prompt)
            finally:
                self.readline.set_startup_hook(None)
            self.screen.at_new_line()
            return line
        self.screen.raw_err(prompt + rest)
        line = self.stdin.readline()
        self.screen.at_new_line()
        if not line:
            raise EOFError
        return rest + line.rstrip("\n")


def _setup_readline(entries: list[str], complete: Callable[[str], list[str]]) -> Any:
    import readline

    readline.clear_history()
    for entry in entries:
        readline.add_history(entry)

    def completer(text: str, state: int) -> str | None:
        # Only the first word of a line is a command name.
        if readline.get_line_buffer()[: readline.get_begidx()].strip():
            return None
        matches = complete(text)
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" \t\n")
    readline.set_completer(completer)
    readline.parse_and_bind("tab: complete")
    return readline


def _remove_last(readline: Any) -> None:
    length = readline.get_current_history_length()
    if length:
        with contextlib.suppress(ValueError):
            readline.remove_history_item(length - 1)
