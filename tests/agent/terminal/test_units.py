"""The terminal's parts with fake streams: screen, renderer, status line, approval table and menu.

The streams are StringIO (a terminal is claimed or not through the flags the
real program derives from isatty); the clock of the status line is a counter.
The end-to-end behaviour is in test_pty.py against the real program.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ax_agent.acceptance import session_acceptance
from ax_agent.approvals import ApprovalRequest
from ax_agent.providers import Usage
from ax_agent.terminal import commands, render, status
from ax_agent.terminal.approve import MenuApprover, TypeAhead
from ax_agent.terminal.choices import ANSWERS, Menu, grammar, menu_line, offered, parse_typed
from ax_agent.terminal.cost import cost_text
from ax_agent.terminal.prompt import HISTORY_MAX_ENTRIES, History
from ax_agent.terminal.render import FOLD_HEAD_LINES, FOLD_MIN_HIDDEN, FOLD_TAIL_LINES, Renderer
from ax_agent.terminal.screen import Screen
from ax_agent.terminal.status import StatusLine
from libcommon.errors import UsageError


class Stream(io.StringIO):
    """A StringIO that says it is UTF-8, like a real terminal's stream."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


def make(*, tty: bool, environ: dict[str, str] | None = None) -> tuple[Screen, Stream, Stream]:
    out, err = Stream(), Stream()
    screen = Screen(
        out,
        err,
        out_tty=tty,
        err_tty=tty,
        environ={"TERM": "xterm"} if environ is None else environ,
    )
    return screen, out, err


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


RUN = "run_command"


def command_events(lines: int, call: str = "c1") -> list[dict[str, Any]]:
    body = "\n".join(f"out {n}" for n in range(1, lines + 1))
    return [
        {"type": "tool.requested", "callId": call, "tool": RUN, "input": {"command": "seq"}},
        {"type": "command.started", "callId": call, "command": "seq", "cwd": "/w"},
        {
            "type": "tool.completed",
            "callId": call,
            "ok": True,
            "summary": "exit code 0: seq",
            "content": f"exit code 0 · 0.01s\n[stdout: 9 bytes]\n{body}\n[stderr: empty]",
            "outcome": "ran",
        },
    ]


# --- off a terminal ------------------------------------------------------------------


def test_off_a_terminal_no_escape_byte_is_written_and_glyphs_are_ascii() -> None:
    screen, out, err = make(tty=False)
    line = StatusLine(screen, Clock())
    view = Renderer(screen, line)
    line.begin()
    view.on_text("Hi \x1b[31mthere")
    for event in command_events(40):
        view.on_event(event)
    view.on_event({"type": "turn.aborted", "phase": "tool", "steps": 1})
    line.end()
    assert "\x1b" not in out.getvalue() and "\x1b" not in err.getvalue()
    assert out.getvalue() == "Hi ?[31mthere\n"  # the model cannot drive the terminal either
    assert "* run_command(seq)" in err.getvalue()
    assert "... 29 more lines (/expand 1)" in err.getvalue()
    assert all(ord(char) < 128 for char in err.getvalue())


def test_a_dumb_terminal_gets_no_escapes_and_no_color_keeps_the_status_line() -> None:
    dumb, _, _ = make(tty=True, environ={"TERM": "dumb"})
    assert not dumb.escapes and not dumb.color
    plain, _, err = make(tty=True, environ={"TERM": "xterm", "NO_COLOR": "1"})
    assert plain.escapes and not plain.color
    assert plain.style("x", "red") == "x"
    line = StatusLine(plain, Clock())
    line.begin()
    line.end()
    assert "\x1b[2K" in err.getvalue()  # the live area still works, uncoloured
    assert "\x1b[2m" not in err.getvalue()


# --- the renderer --------------------------------------------------------------------


def test_fold_keeps_head_and_tail_and_names_the_hidden_count() -> None:
    whole = [str(n) for n in range(FOLD_HEAD_LINES + FOLD_TAIL_LINES + FOLD_MIN_HIDDEN - 1)]
    assert render.fold(whole, "{hidden} hidden") == whole
    long = [str(n) for n in range(FOLD_HEAD_LINES + FOLD_TAIL_LINES + FOLD_MIN_HIDDEN)]
    folded = render.fold(long, "{hidden} hidden")
    assert folded == [
        *long[:FOLD_HEAD_LINES],
        f"{FOLD_MIN_HIDDEN} hidden",
        *long[-FOLD_TAIL_LINES:],
    ]


def test_renderer_numbers_steps_from_the_trail_and_only_executed_calls_count() -> None:
    screen, _, err = make(tty=False)
    view = Renderer(screen, StatusLine(screen, Clock()), last_step=4)
    view.on_event({"type": "tool.requested", "callId": "d", "tool": RUN, "input": {"command": "x"}})
    view.on_event(
        {
            "type": "tool.completed",
            "callId": "d",
            "ok": False,
            "summary": "denied",
            "outcome": "denied",
        }
    )
    for event in command_events(3, call="e"):
        view.on_event(event)
    assert view.steps == {5: "e"}
    text = err.getvalue()
    assert "  | x denied\n" in text
    assert "    out 1\n    out 2\n    out 3\n" in text
    assert "[stderr: empty]" not in text  # empty streams are left out
    assert "/expand" not in text  # three lines are shown whole


def test_live_output_shows_the_head_at_once_and_folds_the_rest_at_the_end() -> None:
    screen, _, err = make(tty=False)
    view = Renderer(screen, StatusLine(screen, Clock()))
    view.on_event(
        {"type": "tool.requested", "callId": "c1", "tool": RUN, "input": {"command": "x"}}
    )
    data = "".join(f"line {n}\n" for n in range(1, 41)).encode()
    view.on_output("c1", "stdout", data[:13])  # cut mid-line
    view.on_output("c1", "stderr", data[13:100])
    shown = err.getvalue()
    assert "    line 8\n" in shown and "line 9" not in shown  # the head, before the end
    view.on_output("c1", "stdout", data[100:] + b"caf" + "é".encode()[:1])  # cut mid-character
    view.on_output("c1", "stdout", "é".encode()[1:] + b"\n50%\r100%")  # a progress bar
    view.on_event(
        {
            "type": "tool.completed",
            "callId": "c1",
            "ok": True,
            "summary": "exit code 0",
            "content": "what the model got",
            "outcome": "ran",
        }
    )
    assert err.getvalue().splitlines()[-6:] == [
        "    ... 30 more lines (/expand 1)",
        "    line 39",
        "    line 40",
        "    café",
        "    100%",
        "  | ok exit code 0",
    ]
    assert "what the model got" not in err.getvalue()
    assert view.live == {}


def test_short_live_output_is_shown_whole() -> None:
    screen, _, err = make(tty=False)
    view = Renderer(screen, StatusLine(screen, Clock()))
    view.on_event({"type": "tool.requested", "callId": "c", "tool": RUN, "input": {"command": "x"}})
    view.on_output("c", "stdout", "".join(f"{n}\n" for n in range(1, 15)).encode())
    view.on_event(
        {"type": "tool.completed", "callId": "c", "ok": True, "summary": "done", "outcome": "ran"}
    )
    body = [line.strip() for line in err.getvalue().splitlines()[1:-1]]
    assert body == [str(n) for n in range(1, 15)]


def test_renderer_shows_approvals_mutations_and_a_stopped_turn() -> None:
    screen, _, err = make(tty=False)
    view = Renderer(screen, StatusLine(screen, Clock()))
    view.on_event(
        {
            "type": "approval.resolved",
            "callId": "c",
            "answer": "yes",
            "scope": "session",
            "approver": "terminal",
        }
    )
    view.on_event(
        {"type": "file.mutated", "callId": "c", "path": "a.py", "pre": None, "post": None}
    )
    view.on_event(
        {
            "type": "turn.completed",
            "stopReason": "max-steps",
            "steps": 50,
            "detail": "the turn reached its limit",
        }
    )
    assert err.getvalue().splitlines() == [
        "  | approved (session, by terminal)",
        "  | changed a.py",
        "The turn stopped (max-steps): the turn reached its limit",
    ]


def test_call_label_is_one_clean_line() -> None:
    assert render.call_label("read_file", {"path": "a.py", "offset": 3}) == "read_file(a.py)"
    label = render.call_label(RUN, {"command": "echo \x1b[2J  x\n" + "y" * 300})
    assert "\x1b" not in label and "\n" not in label
    assert len(label) <= len("run_command()") + render.CALL_ARG_MAX_CHARS
    assert render.call_label("odd", {"a": 1}) == "odd(a=1)"


def test_model_text_then_chrome_on_one_terminal_starts_a_new_line() -> None:
    screen, out, err = make(tty=True)
    screen.text("partial")
    screen.line("chrome")
    assert out.getvalue() == "partial\n"
    assert err.getvalue().endswith("chrome\n")


# --- the status line -----------------------------------------------------------------


def test_status_line_shows_elapsed_tokens_and_activity_and_is_cleared_at_the_end() -> None:
    screen, _, err = make(tty=True)
    clock = Clock()
    line = StatusLine(screen, clock)
    line.begin()
    clock.now += 75
    line.add_tokens(1500)
    line.set("running: pytest -q")
    drawn = err.getvalue()
    assert "running: pytest -q (1m15s · 1.5k tokens · Ctrl+C to interrupt)" in drawn
    line.end()
    assert err.getvalue().endswith("\r\x1b[2K\r")
    assert line._thread is None and screen.live is None


def test_status_line_waits_while_model_text_is_mid_line() -> None:
    screen, out, err = make(tty=True)
    line = StatusLine(screen, Clock())
    screen.text("half a sentence")
    line.begin()
    line.set("writing")
    assert "writing" not in err.getvalue()
    screen.text(" and the rest\n")
    line.set("thinking")
    assert "thinking" in err.getvalue()
    line.end()
    assert "\x1b" not in out.getvalue()


def test_live_area_erases_every_line_it_drew() -> None:
    err = Stream()
    area = status.LiveArea(err)
    area.draw(["one", "two", "three"])
    assert area.height == 3
    area.erase()
    assert err.getvalue().endswith("\r\x1b[2K" + "\x1b[1A\x1b[2K" * 2 + "\r")
    assert area.height == 0


# --- the approval table, menu and typed grammar --------------------------------------


def test_one_table_gives_the_menu_and_the_grammar() -> None:
    rows = offered(("always", "once", "no", "session"))
    assert [row.choice for row in rows] == [row.choice for row in ANSWERS]  # table order
    assert rows[0].choice == "no"
    assert grammar(rows) == "/".join(row.key for row in ANSWERS)
    for number, row in enumerate(rows, start=1):
        assert row.label in menu_line(row, number) and f"({row.key})" in menu_line(row, number)
        assert parse_typed(row.key, rows) is row
        assert parse_typed(str(number), rows) is row
        for word in row.words:
            assert parse_typed(word.upper(), rows) is row


def test_typed_grammar_refuses_what_is_not_offered() -> None:
    rows = offered(("no", "once"))
    assert parse_typed("a", rows) is None
    assert parse_typed("always", rows) is None
    assert parse_typed("3", rows) is None
    assert parse_typed("", rows) is None


def test_menu_enter_takes_the_highlight_which_starts_on_no() -> None:
    menu = Menu(offered(("no", "once", "session")))
    assert menu.submit().choice == "no"  # type: ignore[union-attr]
    menu.move(-1)
    assert menu.submit().choice == "session"  # type: ignore[union-attr]
    menu.typed = "what"
    assert menu.submit() is None and menu.typed == ""


def request(offers: tuple[str, ...] = ("no", "once")) -> ApprovalRequest:
    decision = SimpleNamespace(
        reason="not proven read-only",
        exec_boundary="unsandboxed",
        sandbox_profile=None,
        requires_snapshot=False,
    )
    return ApprovalRequest("c1", RUN, {"command": "make"}, decision, offers=offers)  # type: ignore[arg-type]


def menu_approver(keys: list[str] | None, lines: list[str] = ()) -> tuple[MenuApprover, Stream]:
    from contextlib import contextmanager

    screen, _, err = make(tty=True)
    feed = iter(lines)

    @contextmanager
    def open_keys():  # type: ignore[no-untyped-def]
        yield iter(keys or [])

    approver = MenuApprover(
        screen,
        StatusLine(screen, Clock()),
        open_keys if keys is not None else None,
        lambda: next(feed, ""),
    )
    return approver, err


@pytest.mark.parametrize(
    ("keys", "choice"),
    [
        (["enter"], "no"),
        (["down", "enter"], "once"),
        (["down", "down", "enter"], "no"),  # wraps around
        (["y", "enter"], "once"),
        (["y", "e", "s", "enter"], "once"),
        (["2", "enter"], "once"),
        (["down", "esc"], "no"),
        (["x", "enter", "backspace", "n", "enter"], "no"),
        ([], "stop"),
        (["ctrl-d"], "stop"),
    ],
)
def test_menu_answers(keys: list[str], choice: str) -> None:
    approver, err = menu_approver(keys)
    answer = approver.ask(request())
    assert answer.choice == choice and answer.approver == "terminal"
    assert "run_command needs your approval" in err.getvalue()
    assert "boundary: runs UNSANDBOXED" in err.getvalue()


def test_menu_shows_a_research_calls_details() -> None:
    from dataclasses import replace

    approver, err = menu_approver(["enter"])
    asked = replace(request(), details=("query (verbatim): libfoo\x1b[2J", "allowance left: 1"))
    assert approver.ask(asked).choice == "no"
    shown = err.getvalue()
    assert "allowance left: 1" in shown and "query (verbatim): libfoo" in shown
    assert "\x1b[2J" not in shown


def test_menu_shows_a_refused_word_and_ctrl_c_interrupts() -> None:
    approver, err = menu_approver(["w", "enter", "n", "enter"])
    assert approver.ask(request()).choice == "no"
    assert "'w' is not one of the answers offered" in err.getvalue()
    interrupted, _ = menu_approver(["ctrl-c"])
    with pytest.raises(KeyboardInterrupt):
        interrupted.ask(request())
    assert interrupted.screen.live is None  # the menu is gone from the screen


@pytest.mark.parametrize(
    ("lines", "choice"),
    [
        (["\n"], "no"),
        (["yes\n"], "once"),
        (["s\n"], "session"),
        ([], "stop"),
        (["what\n", "huh\n", "eh\n"], "no"),
    ],
)
def test_typed_answers_without_a_menu(lines: list[str], choice: str) -> None:
    approver, err = menu_approver(None, lines)
    assert approver.ask(request(("no", "once", "session"))).choice == choice
    assert "answer [n/y/s] (Enter = no): " in err.getvalue()


def test_typeahead_keeps_lines_and_the_unfinished_rest() -> None:
    ahead = TypeAhead()
    ahead.add(b"first\rsecond\r\nthi")
    assert ahead.take_line() == "first"
    assert ahead.take_line() == "second"
    assert ahead.take_line() is None
    assert ahead.take_rest() == "thi" and ahead.text == ""


# --- history, commands, /accept, cost ------------------------------------------------


def test_history_appends_to_what_other_sessions_wrote_and_keeps_the_newest(tmp_path: Path) -> None:
    one, two = History(tmp_path), History(tmp_path)
    one.add("multi\nline")
    one.add("   ")
    one.save()
    two.add("from two")
    two.save()
    assert History(tmp_path).load() == ["multi\nline", "from two"]
    many = History(tmp_path)
    for n in range(HISTORY_MAX_ENTRIES + 5):
        many.add(f"entry {n}")
    many.save()
    loaded = History(tmp_path).load()
    assert len(loaded) == HISTORY_MAX_ENTRIES and loaded[-1] == f"entry {HISTORY_MAX_ENTRIES + 4}"


def test_history_never_stores_a_pasted_key(tmp_path: Path) -> None:
    history = History(tmp_path)
    history.add("use sk-ant-" + "a" * 30 + " please")
    history.save()
    stored = (tmp_path / "agent-history.jsonl").read_text()
    assert "sk-ant-" not in stored and "[REDACTED:anthropic-key]" in stored


def test_slash_parsing_completion_and_unknown_names() -> None:
    assert commands.parse("/trail 5 tool=grep") == ("trail", ["5", "tool=grep"])
    assert commands.parse("  /HELP ") == ("help", [])
    assert commands.parse("/usr/bin/env is broken") is None
    assert commands.parse("fix /this") is None
    assert commands.complete("/u") == ["/undo"]
    assert set(commands.complete("/")) == {f"/{c.name}" for c in commands.COMMANDS}
    with pytest.raises(UsageError, match="unknown command; it was not sent to the model"):
        commands.find("frobnicate")
    names = [command.name for command in commands.COMMANDS]
    assert len(names) == len(set(names))


def test_help_lists_every_command_from_the_table() -> None:
    screen, _, err = make(tty=False)
    context = commands.Context(None, None, screen, None)  # type: ignore[arg-type]
    assert commands.run_line(context, "/help") is None
    for command in commands.COMMANDS:
        assert command.usage in err.getvalue()
    assert "@plan REQUEST" in err.getvalue() and "a planner task" in err.getvalue()
    assert "@review REQUEST" in err.getvalue() and "an inspector task" in err.getvalue()
    commands.run_line(context, "/help me")
    assert "/help: /help takes no arguments" in err.getvalue()
    assert commands.run_line(context, "/quit") == "quit"
    assert commands.run_line(context, "/clear") == "clear"


def test_acceptance_is_read_from_the_stored_log(workspace: Path) -> None:
    from ax_log import append_events
    from libcommon.paths import state_layout

    layout = state_layout(workspace)
    sid = "s-unfinished"
    check = {"kind": "test", "project": ".", "scope": ".", "recipeId": "pytest"}
    ended = {"exitCode": 1, "termination": "exited", "reason": None}
    append_events(layout, sid, [{"type": "session.started", "workspace": str(workspace)}])
    assert session_acceptance(layout, sid).complete
    append_events(
        layout,
        sid,
        [
            {"type": "file.mutated", "callId": "c", "path": "a.py", "pre": None, "post": "a" * 64},
            {"type": "turn.aborted", "phase": "tool", "steps": 1},
        ],
    )
    assert session_acceptance(layout, sid).blockers == (
        "the last turn was interrupted (tool)",
        "files changed with no passing check started after the change: a.py",
    )
    append_events(
        layout,
        sid,
        [
            {"type": "check.started", **check},
            {"type": "check.completed", **check, **ended, "verdict": "failed"},
            {"type": "turn.completed", "stopReason": "end_turn", "steps": 2},
        ],
    )
    blockers = session_acceptance(layout, sid).blockers
    assert blockers[0].startswith("repair 1. ") and "test in unit . passing again" in blockers[0]
    assert blockers[1].endswith("after the change: a.py")
    # A lone pass (no start) proves nothing: still unchecked, and said as a caveat.
    forged = {"type": "check.completed", **check, **ended, "verdict": "passed", "exitCode": 0}
    append_events(layout, sid, [forged])
    state = session_acceptance(layout, sid)
    assert not state.complete and "no check.started before it" in state.caveats[0]
    append_events(layout, sid, [{"type": "check.started", **check}, forged])
    assert session_acceptance(layout, sid).complete


def test_cost_is_stated_only_where_the_price_is_known() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000)
    assert (
        cost_text("anthropic", "claude-sonnet-4-20250514", usage) == "about $4.5000 at list prices"
    )
    assert "not known for model" in cost_text("anthropic", "claude-unknown", usage)
    assert "no cost" in cost_text("script", "scripted", usage)
    assert "not known" in cost_text("openai-compatible", "llama", usage)


def test_the_status_ticker_stops_with_the_turn() -> None:
    screen, _, _ = make(tty=True)
    line = StatusLine(screen, Clock())
    before = threading.active_count()
    line.begin()
    assert threading.active_count() == before + 1
    line.end()
    assert threading.active_count() == before


def test_a_live_line_wider_than_the_terminal_is_cut_not_wrapped() -> None:
    err = Stream()
    area = status.LiveArea(err, "...")
    area.draw(["\x1b[2m" + "x" * 500 + "\x1b[0m"])
    drawn = err.getvalue()
    assert len(drawn) < status.FALLBACK_COLUMNS and drawn.endswith("...")
