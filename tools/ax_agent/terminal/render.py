"""The screen as a live view of the log: each appended event becomes chrome.

The renderer is a session listener (called for every event as it is
appended) plus the provider's text callback. Tool calls print a line when
requested and an outcome line when completed; the output of a command or a
check shows its first lines (live, when the runtime passes output through
``on_output``), a fold marker naming the ``/expand`` step, and its last lines.
Model text streams to stdout as it arrives.
"""

from __future__ import annotations

import codecs
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from libcommon.redact import redact

from ..plans.views import dropped_line
from .screen import Screen, clean
from .status import StatusLine

# Output lines shown before and after the fold marker.
FOLD_HEAD_LINES = 8
FOLD_TAIL_LINES = 4
# Fewer hidden lines than this are shown rather than folded.
FOLD_MIN_HIDDEN = 3
# The argument shown in a tool call line.
CALL_ARG_MAX_CHARS = 100
# Tools whose result body is output a person wants to see.
OUTPUT_TOOLS = frozenset({"run_command", "run_check"})
_ARG_KEYS = ("command", "path", "pattern", "kind", "key", "query", "step")
_EMPTY_STREAMS = frozenset({"[stdout: empty]", "[stderr: empty]"})


def call_label(tool: str, value: Any, more: str = "...") -> str:
    """``run_command(pytest -q)``: the tool and the argument a person recognises."""
    arg = ""
    if isinstance(value, dict):
        for key in _ARG_KEYS:
            if key in value and isinstance(value[key], str | int):
                arg = str(value[key])
                break
        else:
            arg = ", ".join(f"{key}={value[key]!r}" for key in list(value)[:3])
    elif value is not None:
        arg = str(value)
    arg = " ".join(clean(redact(arg)).split())
    if len(arg) > CALL_ARG_MAX_CHARS:
        arg = arg[: CALL_ARG_MAX_CHARS - len(more)] + more
    return f"{tool}({arg})"


def fold(lines: list[str], marker: str) -> list[str]:
    """Head, a marker naming how many lines are hidden, tail; short output whole."""
    hidden = len(lines) - FOLD_HEAD_LINES - FOLD_TAIL_LINES
    if hidden < FOLD_MIN_HIDDEN:
        return lines
    return [
        *lines[:FOLD_HEAD_LINES],
        marker.format(hidden=hidden),
        *lines[len(lines) - FOLD_TAIL_LINES :],
    ]


def output_lines(content: str) -> list[str]:
    """A command's result body: the lines after the status line, empty streams left out."""
    lines = clean(content.replace("\r\n", "\n")).split("\n")[1:]
    return [line for line in lines if line.strip() not in _EMPTY_STREAMS]


class LiveOutput:
    """One command's output as it streams: the head is shown, the tail is kept back."""

    def __init__(self) -> None:
        self.shown = 0
        self.total = 0
        self.partial = ""
        # Enough to show everything when fewer than FOLD_MIN_HIDDEN lines would be hidden.
        self.tail: deque[str] = deque(maxlen=FOLD_TAIL_LINES + FOLD_MIN_HIDDEN - 1)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes) -> list[str]:
        """The lines to show now (until the head is full)."""
        *lines, self.partial = (self.partial + self.decoder.decode(chunk)).split("\n")
        return [line for line in map(_screen_line, lines) if self._keep(line)]

    def finish(self, marker: str) -> list[str]:
        """The rest: the kept-back tail, after a fold marker when lines were hidden."""
        last = self.partial + self.decoder.decode(b"", final=True)
        if last:
            self._keep(_screen_line(last))
        rest = self.total - self.shown
        if rest <= len(self.tail):
            return list(self.tail)
        tail = list(self.tail)[-FOLD_TAIL_LINES:]
        return [marker.format(hidden=rest - len(tail)), *tail]

    def _keep(self, line: str) -> bool:
        """Count ``line``; True when it belongs to the head (shown at once)."""
        self.total += 1
        if self.shown < FOLD_HEAD_LINES:
            self.shown += 1
            return True
        self.tail.append(line)
        return False


def _screen_line(line: str) -> str:
    # A progress bar redraws its line with carriage returns: the last state is the line.
    return clean(line.rstrip("\r").rsplit("\r", 1)[-1])


@dataclass
class _Call:
    tool: str
    label: str


@dataclass
class Renderer:
    screen: Screen
    status: StatusLine
    # The trail's last step when the view started; each executed call is the next step.
    last_step: int = 0
    calls: dict[str, _Call] = field(default_factory=dict)
    # Trail step → call id, for /expand.
    steps: dict[int, str] = field(default_factory=dict)
    # The output of commands still running, by call id.
    live: dict[str, LiveOutput] = field(default_factory=dict)

    def on_text(self, chunk: str) -> None:
        self.status.set("writing")
        self.screen.text(chunk)

    def on_event(self, record: dict[str, Any]) -> None:
        handler = getattr(self, "_" + str(record.get("type", "")).replace(".", "_"), None)
        if handler is not None:
            handler(record)

    def _assistant_message(self, record: dict[str, Any]) -> None:
        self.screen.end_text()
        usage = record.get("usage") or {}
        self.status.add_tokens(sum(int(value) for value in usage.values()))
        self.status.set("thinking")

    def _model_uncatalogued(self, record: dict[str, Any]) -> None:
        self._result(
            f"model {clean(str(record.get('model')))}: {clean(str(record.get('note')))}", "yellow"
        )

    def _config_loaded(self, record: dict[str, Any]) -> None:
        for warning in record.get("warnings") or []:
            self._result(f"warning: {clean(str(warning))}", "yellow")

    # Issue 26: a worker thread's start and end are news; its reminders (reminder.sent,
    # in the worker's own log) have no handler, so they never reach the screen.
    def _thread_started(self, record: dict[str, Any]) -> None:
        verb = "resumed" if record.get("resumed") else "started"
        label = clean(str(record.get("label")))
        self._result(f"thread {record.get('threadId')} ({label}) {verb}", "dim")

    def _thread_ended(self, record: dict[str, Any]) -> None:
        self._result(f"thread {record.get('threadId')} stopped", "dim")

    def _tool_requested(self, record: dict[str, Any]) -> None:
        tool = str(record.get("tool"))
        label = call_label(tool, record.get("input"), self.screen.glyphs.more)
        self.calls[str(record.get("callId"))] = _Call(tool, label)
        self.screen.line(self.screen.style(f"{self.screen.glyphs.call} ", "cyan") + label)
        self.status.set(label)

    def _approval_resolved(self, record: dict[str, Any]) -> None:
        if record.get("answer") == "yes":
            text = f"approved ({record.get('scope')}, by {record.get('approver')})"
        else:
            text = f"not approved ({record.get('scope')}, by {record.get('approver')})"
        self._result(text, "green" if record.get("answer") == "yes" else "yellow")

    def _command_started(self, record: dict[str, Any]) -> None:
        command = record.get("command")
        shown = command if isinstance(command, str) else " ".join(map(str, command or []))
        self.status.set("running: " + " ".join(clean(shown).split()))

    def _memory_loaded(self, record: dict[str, Any]) -> None:
        # The start's files are for /context; one loaded as the agent works is news.
        if record.get("trigger") in (None, "start"):
            return
        for row in record.get("documents", []):
            if row.get("status") == "loaded":
                self._result(f"read instructions {clean(str(row.get('path')))}", "dim")
            else:
                why = clean(str(row.get("reason")))
                self._result(f"skipped instructions {clean(str(row.get('path')))}: {why}", "dim")

    def _file_mutated(self, record: dict[str, Any]) -> None:
        self._result(f"changed {clean(str(record.get('path')))}", "dim")

    def _plan_written(self, record: dict[str, Any]) -> None:
        # Only a person can approve again, so the line is not dimmed.
        if record.get("approvalDropped"):
            line = dropped_line(record, "/plan", "/plan approve")
            self.screen.line(self.screen.style(clean(line), "yellow"))

    def on_output(self, call_id: str, stream: str, chunk: bytes) -> None:
        """A running command's output as it arrives: its first lines are shown at once."""
        del stream  # stdout and stderr share one view, in arrival order
        with self.screen.lock:
            live = self.live.setdefault(call_id, LiveOutput())
            for line in live.feed(chunk):
                self._output_line(line)

    def _tool_completed(self, record: dict[str, Any]) -> None:
        call_id = str(record.get("callId"))
        call = self.calls.pop(call_id, None)
        live = self.live.pop(call_id, None)
        if record.get("outcome") == "ran":
            self.last_step += 1
            self.steps[self.last_step] = call_id
            if call is not None and call.tool in OUTPUT_TOOLS:
                marker = (
                    f"{self.screen.glyphs.more} {{hidden}} more lines (/expand {self.last_step})"
                )
                if live is not None:
                    rest = live.finish(marker)
                else:
                    rest = fold(output_lines(str(record.get("content") or "")), marker)
                for line in rest:
                    self._output_line(line)
        ok = bool(record.get("ok"))
        glyphs = self.screen.glyphs
        mark = (
            self.screen.style(glyphs.ok, "green") if ok else self.screen.style(glyphs.failed, "red")
        )
        self._result(f"{mark} {clean(str(record.get('summary', '')))}", None)
        self.status.set("thinking")

    def _turn_aborted(self, record: dict[str, Any]) -> None:
        self.screen.end_text()
        self.status.end()
        self.screen.line(
            self.screen.style(f"Interrupted ({record.get('phase')}); back to the prompt.", "yellow")
        )

    def _turn_completed(self, record: dict[str, Any]) -> None:
        self.screen.end_text()
        self.status.end()
        detail = record.get("detail")
        reason = record.get("stopReason")
        if reason not in ("end_turn", "stop_sequence"):
            why = f": {clean(str(detail))}" if detail else ""
            self.screen.line(self.screen.style(f"The turn stopped ({reason}){why}", "yellow"))

    def _output_line(self, line: str) -> None:
        self.screen.line(self.screen.style("    " + line, "dim"))

    def _result(self, text: str, style: str | None) -> None:
        body = self.screen.style(text, style) if style else text
        self.screen.line(f"  {self.screen.glyphs.result} {body}")
