"""``/checkpoints`` and ``/restore N`` through a real session, a real repository and real git."""

from __future__ import annotations

from pathlib import Path

from agenttest import events_of, of_type, open_session, write_script
from checkpointgit import make_repo, needs_git

from ax_agent.terminal import commands
from ax_log import create_checkpoint

from .test_units import make

pytestmark = needs_git


def _run(session, line: str, answer: bool | None) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    screen, _, err = make(tty=False)
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        assert answer is not None, "the command asked a question it should not have"
        return answer

    context = commands.Context(session, None, screen, None, confirm)  # type: ignore[arg-type]
    assert commands.run_line(context, line) is None
    return err.getvalue(), asked


def test_checkpoints_are_listed_and_a_restore_asks_then_is_one_undo(
    workspace: Path, tmp_path: Path
) -> None:
    repo = make_repo(workspace)
    session = open_session(workspace, write_script(tmp_path / "s.json", []), tools=[])
    shown, _ = _run(session, "/checkpoints", None)
    assert "no checkpoints in this session" in shown
    create_checkpoint(session.layout, session.id, label="before the formatter")
    shown, _ = _run(session, "/checkpoints", None)
    assert "agent" in shown and "before the formatter" in shown
    (repo / "a.txt").write_text("formatted\n")
    shown, asked = _run(session, "/restore 1", False)
    assert "not restored" in shown and len(asked) == 1
    assert (repo / "a.txt").read_text() == "formatted\n"
    shown, _ = _run(session, "/restore 1", True)
    assert "restored  a.txt" in shown and (repo / "a.txt").read_text() == "a\n"
    assert of_type(events_of(session), "checkpoint.restored")
    _run(session, "/undo", None)
    assert (repo / "a.txt").read_text() == "formatted\n"
    shown, _ = _run(session, "/restore x", None)
    assert "one checkpoint number" in shown
    session.end("done")


def test_outside_a_repository_the_commands_say_so(workspace: Path, tmp_path: Path) -> None:
    session = open_session(workspace, write_script(tmp_path / "s.json", []), tools=[])
    shown, _ = _run(session, "/checkpoints", None)
    assert "not inside a git working tree" in shown
    session.end("done")
