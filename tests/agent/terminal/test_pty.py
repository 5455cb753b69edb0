"""The interactive terminal, end to end: the real ``ax-agent`` in a pseudo-terminal."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from axtest import tool_path

from .conftest import CTRL_C, CTRL_D, DOWN, ENTER, UP, AgentPty, session_events, write_script

Start = Callable[..., AgentPty]


def _of(events: list[dict], kind: str) -> list[dict]:
    return [event for event in events if event["type"] == kind]


def test_streamed_text_shows_before_the_turn_ends_and_ctrl_c_aborts_it(
    agent: Start, state_dir: Path
) -> None:
    term = agent([{"text": ["Streaming ", "while the ", "model works"], "hang": True}])
    term.prompt()
    term.line("say something")
    # The model has not finished (it hangs), yet its text is on the screen.
    term.expect("Streaming while the model works")
    term.send(CTRL_C)
    term.expect("Interrupted (model)")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0
    assert "ended (end of input)" in term.text
    events = session_events(state_dir)
    assert [event["phase"] for event in _of(events, "turn.aborted")] == ["model"]


def test_approval_through_the_menu_and_by_typing(
    agent: Start, workspace: Path, state_dir: Path
) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo a > menu.txt"}}]},
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo b > typed.txt"}}]},
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo c > enter.txt"}}]},
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo d > word.txt"}}]},
            {"text": "Four questions asked."},
        ]
    )
    term.prompt()
    term.line("make the files")
    term.expect("needs your approval")
    term.expect("answer:")
    term.send(DOWN)  # from "No" to "Yes, once"
    term.send(ENTER)
    term.expect("approved (once, by terminal)")
    term.expect("needs your approval")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("approved (once, by terminal)")
    term.expect("needs your approval")
    term.expect("answer:")
    term.send(ENTER)  # the highlight starts on "no": Enter never means yes
    term.expect("not approved (deny, by terminal)")
    term.expect("needs your approval")
    term.expect("answer:")
    term.send(b"nope" + ENTER)  # not an answer: the question stays
    term.expect("'nope' is not one of the answers offered")
    term.send(DOWN + UP + b"no" + ENTER)
    term.expect("not approved (deny, by terminal)")
    term.expect("Four questions asked.")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    # Output post-processing stays on through the menu: every newline returns the carriage.
    assert re.search(rb"[^\r]\n", term.data) is None
    assert (workspace / "menu.txt").read_text() == "a\n"
    assert (workspace / "typed.txt").read_text() == "b\n"
    assert not (workspace / "enter.txt").exists()
    assert not (workspace / "word.txt").exists()
    answers = [
        (e["answer"], e["approver"]) for e in _of(session_events(state_dir), "approval.resolved")
    ]
    assert answers == [
        ("yes", "terminal"),
        ("yes", "terminal"),
        ("no", "terminal"),
        ("no", "terminal"),
    ]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_ctrl_c_mid_command_kills_its_tree_and_returns_to_the_prompt(
    agent: Start, workspace: Path, state_dir: Path
) -> None:
    command = "sleep 60 & echo $! > child.pid; wait"
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": command}}]},
            {"expect": "after the interrupt", "text": "Still here."},
        ]
    )
    term.prompt()
    term.line("run the long thing")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("running: sleep 60")
    # The shell creates the file before it writes the pid: wait for the whole line.
    pid_file = workspace / "child.pid"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
        pid_file.exists() and pid_file.read_text().endswith("\n")
    ):
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert _alive(child)
    term.send(CTRL_C)
    term.expect("Interrupted (tool)")
    term.prompt()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the command's child survived the interrupt"
    # The session goes on: the next line is a new turn.
    term.line("after the interrupt")
    term.expect("Still here.")
    term.prompt()
    term.send(CTRL_C)
    term.expect("Ctrl+C again to exit")
    term.send(CTRL_C)
    assert term.wait() == 0
    assert "ended (interrupted at the prompt)" in term.text
    events = session_events(state_dir)
    assert [e["termination"] for e in _of(events, "command.ended")] == ["aborted"]
    assert _of(events, "turn.aborted")[0]["phase"] == "tool"


def test_lines_typed_during_a_turn_wait_for_the_next_prompt(agent: Start, state_dir: Path) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "sleep 1.5; echo slept"}}]},
            {"text": "First answer."},
            {"expect": "typed ahead", "text": "Second answer."},
            {"expect": "and a half", "text": "Third answer."},
        ]
    )
    term.prompt()
    term.line("first")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("running: sleep")
    term.send(b"typed ahead" + ENTER + b"and a half")
    term.expect("First answer.")
    term.expect("Second answer.")
    # The unfinished line is waiting in the editor; Enter sends it.
    term.expect("and a half")
    term.send(ENTER)
    term.expect("Third answer.")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0
    users = [e["content"] for e in _of(session_events(state_dir), "user.message")]
    assert users == ["first", "typed ahead", "and a half"]


def test_keys_typed_before_a_question_never_answer_it(agent: Start, workspace: Path) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "sleep 1; echo x"}}]},
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo x > no.txt"}}]},
            {"text": "Done."},
            {"expect": "y", "text": "The early y was a message."},
        ]
    )
    term.prompt()
    term.line("go")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("running: sleep")
    term.send(b"y" + ENTER)  # typed while the first command runs, before the second question
    term.expect("needs your approval")
    term.expect("answer:")
    time.sleep(0.3)
    assert not (workspace / "no.txt").exists()
    term.send(ENTER)
    term.expect("Done.")
    # The early "y" comes back at the prompt as a message of its own.
    term.expect("The early y was a message.")
    term.prompt()
    term.send(CTRL_D)
    term.wait()
    assert not (workspace / "no.txt").exists()


def test_multi_line_input_history_and_completion(
    agent: Start, state_dir: Path, tmp_path: Path
) -> None:
    term = agent(
        [
            {"expect": "one \ntwo", "text": "Got two lines."},
            {"expect": "pasted\nblock", "text": "Got the paste."},
        ]
    )
    term.prompt()
    term.line("one \\")
    term.line("two")
    term.expect("Got two lines.")
    term.prompt()
    term.send(b"\x1b[200~pasted\nblock\x1b[201~" + ENTER)
    term.expect("Got the paste.")
    term.prompt()
    term.send(b"/hel\t" + ENTER)
    term.expect("/undo [all]")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    users = [e["content"] for e in _of(session_events(state_dir), "user.message")]
    assert users == ["one \ntwo", "pasted\nblock"]
    # History survives the session: Up in a new one recalls the last message.
    again = agent([{"expect": "pasted\nblock", "text": "Recalled."}])
    again.prompt()
    again.send(UP * 3 + ENTER)  # /quit, /help, then the paste
    again.expect("Recalled.")
    again.prompt()
    again.send(CTRL_D)
    assert again.wait() == 0


def test_every_slash_command(agent: Start, workspace: Path, state_dir: Path) -> None:
    # awk is not on the read-only allowlist, so the command asks ("answer:") before it runs.
    command = "awk 'BEGIN { for (n = 1; n <= 40; n++) print \"line \" n }'"
    term = agent(
        [
            {
                "toolCalls": [
                    {"name": "write_file", "input": {"path": "notes.txt", "content": "hello\n"}},
                    {"name": "run_command", "input": {"command": command}},
                ]
            },
            {"text": "Wrote it.", "usage": {"inputTokens": 1200, "outputTokens": 40}},
        ]
    )
    term.prompt()
    term.line("write a file")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("more lines (/expand 2)")
    term.expect("Wrote it.")
    term.prompt()
    for line, shows in [
        ("/help", "/trail [count] [tool=NAME] [file=TEXT]"),
        ("/status", "tokens    1200 in, 40 out, 0 cache read, 0 cache write; 1 turns"),
        ("/diff", "+hello"),
        ("/trail", "write_file"),
        ("/trail 1 tool=run_command", "run_command"),
        ("/expand 2", "line 20"),
        ("/notes", "no notes"),
        ("/context", "  tool schemas   "),
        ("/memory", "project memory given at the start"),
        ("/report", "notes.txt"),
        ("/frobnicate now", "/frobnicate: unknown command; it was not sent to the model"),
        ("/model other-model", "now script, model other-model"),
        ("/provider", "provider script, model other-model"),
        ("/provider script", "now script, model"),
        ("/accept", "Accepted, with these blockers still open:"),
        ("/undo", "notes.txt"),
    ]:
        term.line(line)
        term.expect(shows)
        term.prompt()
    assert not (workspace / "notes.txt").exists()
    first_id = _of(session_events(state_dir), "session.started")[0]["session"]
    term.line("/clear")
    # A clean end of a session that did work: its journal entry (the script, replayed from
    # its start by /provider, answers with a tool call, not the account: the skeleton).
    term.expect("journal entry written (narrative unavailable: the answer did not follow")
    term.expect(f"session {first_id} ended (cleared) · 1 turns · 1.2k tokens")
    term.expect("· session ")
    term.prompt()
    term.line("/status")
    term.expect("session   s-")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    events = session_events(state_dir)
    assert len(_of(events, "session.started")) == 2
    changed = _of(events, "provider.changed")
    assert [(e["previousModel"], e["model"]) for e in changed] == [
        ("scripted", "other-model"),
        ("other-model", "scripted"),
    ]
    accepted = _of(events, "session.accepted")
    assert (
        accepted
        and "files changed with no passing check started after the change: notes.txt"
        in accepted[0]["unfinished"]
    )
    # Nothing typed after a slash reached the model: the only user messages are the two turns.
    assert [e["content"] for e in _of(events, "user.message")] == ["write a file"]
    ids = {e["session"] for e in _of(events, "session.started")}
    (second,) = ids - {first_id}
    assert f"session   {second}" in term.text


def test_stdout_to_a_file_carries_only_the_model_text(agent: Start, tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.txt"
    term = agent(
        [{"toolCalls": [{"name": "list_dir", "input": {"path": "."}}]}, {"text": "The answer."}],
        stdout_file=transcript,
    )
    term.prompt()
    term.line("list")
    term.expect("list_dir(.)")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0
    data = transcript.read_bytes()
    assert data == b"The answer.\n"


def test_a_piped_run_writes_no_escape_bytes(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Reading.", "toolCalls": [{"name": "read_file", "input": {"path": "a.txt"}}]},
            {"text": "It says hi."},
        ],
    )
    (workspace / "a.txt").write_text("hi\n")
    done = subprocess.run(
        [
            tool_path("agent"),
            "-C",
            str(workspace),
            "--trust-this-workspace",
            "--provider",
            "script",
            "--script",
            str(script),
        ],
        input=b"what is in a.txt?",
        capture_output=True,
        timeout=60,
        env=dict(os.environ, TERM="xterm"),
    )
    assert done.returncode == 0, done.stderr
    assert b"It says hi." in done.stdout
    assert b"\x1b" not in done.stdout and b"\x1b" not in done.stderr


def test_a_dumb_terminal_gets_a_typed_question_and_no_escape_bytes(
    agent: Start, workspace: Path
) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo a > dumb.txt"}}]},
            {"text": "Typed."},
        ],
        term="dumb",
    )
    term.prompt()
    term.line("go")
    term.expect("answer [n/y] (Enter = no): ")
    term.line("yes")
    term.expect("approved (once, by terminal)")
    term.expect("Typed.")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0
    assert (workspace / "dumb.txt").read_text() == "a\n"
    assert b"\x1b" not in term.data
    for glyph in ("●", "⎿", "✓", "❯", "⠋"):
        assert glyph not in term.text


def test_expand_prints_a_cut_output_whole_from_the_record(agent: Start) -> None:
    # 6000 lines is more than ax-exec keeps for the model, so the full output is saved.
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "seq 1 6000"}}]},
            {"text": "Counted."},
        ]
    )
    term.prompt()
    term.line("count")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("more lines (/expand 1)")
    term.expect("Counted.")
    term.prompt()
    assert "\n3000\n" not in term.text  # the middle was folded away
    term.line("/expand 1")
    term.expect("\n3000\n")
    term.expect("\n6000\n")
    term.prompt()
    term.line("/expand 9")
    term.expect("/expand: session")
    term.expect("has no step 9")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0


def test_continue_on_a_terminal_resumes_the_session(agent: Start, state_dir: Path) -> None:
    first = agent([{"text": "First life."}])
    first.prompt()
    first.line("hello")
    first.expect("First life.")
    first.prompt()
    first.send(CTRL_D)
    assert first.wait() == 0
    session = _of(session_events(state_dir), "session.started")[0]["session"]
    again = agent([{"expect": "again", "text": "Second life."}], "--continue")
    again.expect(f"session {session} (resumed)")
    again.prompt()
    again.line("again")
    again.expect("Second life.")
    again.prompt()
    again.line("/quit")
    assert again.wait() == 0
    users = [e["content"] for e in _of(session_events(state_dir), "user.message")]
    assert users == ["hello", "again"]


def test_ctrl_c_at_the_menu_interrupts_the_turn(
    agent: Start, workspace: Path, state_dir: Path
) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "echo x > never.txt"}}]},
            {"expect": "still", "text": "Still alive."},
        ]
    )
    term.prompt()
    term.line("ask me")
    term.expect("answer:")
    term.send(DOWN + CTRL_C)
    term.expect("Interrupted (approval)")
    term.prompt()
    term.line("still there?")
    term.expect("Still alive.")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    assert not (workspace / "never.txt").exists()
    resolved = _of(session_events(state_dir), "approval.resolved")
    assert [(e["answer"], e["scope"]) for e in resolved] == [("no", "stop")]


def test_ctrl_d_typed_during_a_turn_ends_the_session_after_it(agent: Start) -> None:
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": "sleep 1"}}]},
            {"text": "Slept."},
        ]
    )
    term.prompt()
    term.line("nap")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("running: sleep 1")
    term.send(CTRL_D)
    term.expect("Slept.")
    assert term.wait() == 0
    assert "ended (end of input)" in term.text


def test_a_running_command_shows_its_first_lines_before_it_ends(
    agent: Start, workspace: Path
) -> None:
    # The marker is computed by the shell, so the command's own text never matches it.
    command = "echo early-$((40+2)); while [ ! -e release ]; do sleep 0.05; done; echo after"
    term = agent(
        [
            {"toolCalls": [{"name": "run_command", "input": {"command": command}}]},
            {"text": "Done."},
        ]
    )
    term.prompt()
    term.line("run it")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    # The command is still waiting for the release file: its first line is already shown.
    term.expect("early-42")
    assert not (workspace / "release").exists()
    (workspace / "release").write_text("")
    term.expect("Done.")
    term.prompt()
    term.send(CTRL_D)
    assert term.wait() == 0
    assert term.text.count("early-42") == 1, "a line shown live is not shown again at the end"


def test_init_shows_asks_writes_and_never_overwrites(
    agent: Start, workspace: Path, state_dir: Path
) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    (workspace / "lib").mkdir()
    (workspace / "lib" / "AGENTS.md").write_text("Lib rule: no globals.\n")
    (workspace / "lib" / "m.py").write_text("x = 1\n")
    term = agent(
        [
            {
                "expect": "Instructions for coding agents working in this project",
                "toolCalls": [{"name": "read_file", "input": {"path": "lib/m.py"}}],
            },
            {"expect": "Lib rule: no globals.", "text": "Read both."},
        ],
        # The person's own command is asked about even when the model's calls are not.
        "--dangerously-allow-all",
    )
    term.prompt()
    term.line("/init")
    term.expect("A starter AGENTS.md for")
    term.expect("- `.` (pyproject.toml)")
    term.expect("Write this as")
    term.expect("answer:")
    term.send(ENTER)  # the highlight starts on "No"
    term.expect("Nothing was written.")
    term.prompt()
    assert not (workspace / "AGENTS.md").exists()
    term.line("/init")
    term.expect("answer:")
    term.send(b"y" + ENTER)
    term.expect("Wrote AGENTS.md")
    term.prompt()
    written = (workspace / "AGENTS.md").read_text()
    assert written.startswith("# AGENTS.md\n")
    term.line("/init")
    term.expect("/init: AGENTS.md already gives this folder its instructions")
    term.prompt()
    assert (workspace / "AGENTS.md").read_text() == written
    # The model gets the new file with its next request, and a folder's file when it
    # first works there.
    term.line("read the module")
    term.expect("read instructions lib/AGENTS.md")
    term.expect("Read both.")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    events = session_events(state_dir)
    assert [e["trigger"] for e in _of(events, "memory.loaded")] == ["start", "init", "lazy"]
    assert [e["path"] for e in _of(events, "file.mutated")] == ["AGENTS.md"]
