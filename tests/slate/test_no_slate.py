"""One rule for a session with no slate: only ``start`` makes one; every other verb refuses.

Each verb that takes ``--session`` is run on a session that was never started: it
exits 1, writes nothing, and its hint names the command that starts the slate. The
list of verbs is read from the CLI itself, so a new verb cannot slip past the rule.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from axtest import CliRunner

from ax_slate.cli import app, main
from libcommon.paths import StateLayout

# verb -> (arguments after the verb, stdin)
CALLS: dict[str, tuple[list[str], str]] = {
    "record": ([], '{"tool": "t", "args": {}, "outcome": "ok"}'),
    "save-output": ([], "the full output\n"),
    "archive": ([], '{"role": "user", "content": "hello"}'),
    "trail": ([], ""),
    "notes": ([], ""),
    "note set": (["plan"], "a note\n"),
    "note delete": (["plan"], ""),
    "frame": ([], ""),
    "recall": (["--step", "1"], ""),
    "search": (["--query", "hello"], ""),
    "memory propose-lesson": ([], '{"slug": "run-the-linter", "text": "Run ruff first."}'),
}


def session_verbs() -> set[str]:
    found: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{prefix} {name}".strip())
        if any(param.name == "session" for param in command.params):
            found.add(prefix)

    walk(typer.main.get_command(app), "")
    return found


def test_every_session_verb_is_covered() -> None:
    assert session_verbs() == {*CALLS, "start"}


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if not path.is_dir()}


@pytest.mark.parametrize("verb", sorted(CALLS))
def test_a_verb_on_a_session_with_no_slate_refuses_and_names_the_cure(
    run_cli: CliRunner, layout: StateLayout, workspace: Path, state_dir: Path, verb: str
) -> None:
    args, stdin = CALLS[verb]
    before = files_under(state_dir)
    argv = [*verb.split(), *args, "--session", "nosuch", "-C", str(workspace)]
    result = run_cli(main, argv, stdin)
    assert result.exit_code == 1, result.stderr
    assert result.stdout == ""
    assert "ax-slate: error: session nosuch has no slate" in result.stderr
    start = f"ax-slate start --session nosuch -C {shlex.quote(str(workspace))}"
    assert f"ax-slate: hint: a slate is made when its session starts: `{start}`" in result.stderr
    assert files_under(state_dir) == before
    assert not layout.session_dir("nosuch").exists()


@pytest.mark.parametrize("verb", sorted(CALLS))
def test_the_hinted_command_cures_it(
    run_cli: CliRunner, workspace: Path, tmp_path: Path, verb: str
) -> None:
    args, stdin = CALLS[verb]
    argv = [*verb.split(), *args, "--session", "nosuch", "-C", str(workspace)]
    refused = run_cli(main, argv, stdin)
    hint = refused.stderr.split("`")[1]
    started = run_cli(main, shlex.split(hint)[1:])
    assert started.exit_code == 0, started.stderr
    again = run_cli(main, argv, stdin)
    assert "has no slate" not in again.stderr
    # What is left is the verb's own answer on an empty slate (no note, no step 1).
    assert again.exit_code == (1 if verb in ("note delete", "recall") else 0), again.stderr


def test_a_workspace_path_with_spaces_is_quoted_in_the_hint(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    spaced = tmp_path / "my project"
    spaced.mkdir()
    result = run_cli(main, ["trail", "--session", "s1", "-C", str(spaced)])
    assert f"-C '{spaced}'" in result.stderr


def test_continuing_a_session_with_no_slate_writes_nothing(
    run_cli: CliRunner, layout: StateLayout, workspace: Path, state_dir: Path
) -> None:
    before = files_under(state_dir)
    argv = ["start", "--session", "s2", "--continues", "nosuch", "-C", str(workspace)]
    result = run_cli(main, argv)
    assert result.exit_code == 1
    assert "session nosuch has no slate to continue from" in result.stderr
    assert files_under(state_dir) == before
    assert not layout.session_dir("s2").exists()
