"""``/init`` and ``/context``'s instruction lines, through a real session with fake streams.

The typed confirmation and the menu run against the real program in test_pty.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agenttest import events_of, of_type, open_session, write_script

from ax_agent.session import Session
from ax_agent.terminal import commands
from ax_agent.terminal.init import INIT_FILE, INIT_UNITS_SHOWN, starter
from ax_check import DetectReport
from libcommon import jsonio

from .test_units import make


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    web = workspace / "packages" / "web"
    web.mkdir(parents=True)
    (web / "package.json").write_text(
        jsonio.dumps({"name": "web", "scripts": {"test": "node --test"}}).decode()
    )
    return workspace


def _session(workspace: Path, tmp_path: Path) -> Session:
    return open_session(workspace, write_script(tmp_path / "s.json", []), tools=[])


def _run(session: Session, line: str, answer: bool | None) -> tuple[str, list[str]]:
    screen, _, err = make(tty=False)
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        assert answer is not None, "the command asked a question it should not have"
        return answer

    context = commands.Context(session, None, screen, None, confirm)  # type: ignore[arg-type]
    assert commands.run_line(context, line) is None
    return err.getvalue(), asked


def test_init_shows_the_starter_asks_and_writes_it_undoably(project: Path, tmp_path: Path) -> None:
    session = _session(project, tmp_path)
    shown, asked = _run(session, "/init", True)
    written = (project / INIT_FILE).read_text()
    # What was shown is what was written, line for line.
    for line in written.rstrip("\n").split("\n"):
        assert f"  {line}".rstrip() in shown
    assert asked == [f"Write this as {project / INIT_FILE}?"]
    assert "`.` (pyproject.toml)" in written and "`packages/web` (package.json)" in written
    assert "  - test: `" in written
    # No absolute path of this machine in the project's file.
    assert str(project) not in written and "/usr/" not in written
    assert f"Wrote {INIT_FILE}" in shown and "/undo removes it" in shown
    events = events_of(session)
    [said] = [e for e in of_type(events, "custom") if e["kind"] == "init"]
    assert said["data"] == {"path": INIT_FILE, "bytes": len(written.encode())}
    [mutated] = of_type(events, "file.mutated")
    assert (mutated["path"], mutated["pre"], mutated["callId"]) == (INIT_FILE, None, None)
    # The model is given the new file from its next request.
    assert of_type(events, "memory.loaded")[-1]["trigger"] == "init"
    assert session.instructions is not None and session.instructions.pending
    # The person's own change is undone like any other.
    _run(session, "/undo", None)
    assert not (project / INIT_FILE).exists()
    assert of_type(events_of(session), "undo.applied")[0]["reverted"] == [mutated["seq"]]
    session.end("done")


def test_init_writes_nothing_when_the_answer_is_no(project: Path, tmp_path: Path) -> None:
    session = _session(project, tmp_path)
    shown, asked = _run(session, "/init", False)
    session.end("done")
    assert len(asked) == 1 and "Nothing was written." in shown
    assert not (project / INIT_FILE).exists()
    assert not of_type(events_of(session), "file.mutated")


@pytest.mark.parametrize("existing", ["AGENTS.md", "AGENT.md", "AGENTS.override.md", "CLAUDE.md"])
def test_init_never_overwrites_or_hides_an_instruction_file(
    project: Path, tmp_path: Path, existing: str
) -> None:
    (project / existing).write_text("mine\n")
    session = _session(project, tmp_path)
    shown, asked = _run(session, "/init", None)
    session.end("done")
    assert asked == []
    assert f"/init: {existing} already gives this folder its instructions" in shown
    assert (project / existing).read_text() == "mine\n"
    assert sorted(p.name for p in project.iterdir() if p.suffix == ".md") == [existing]


def test_init_refuses_a_path_the_configuration_protects(
    project: Path, tmp_path: Path, state_dir: Path
) -> None:
    (state_dir / "config.json").write_text(jsonio.dumps({"protectedPaths": ["AGENTS.md"]}).decode())
    session = _session(project, tmp_path)
    shown, asked = _run(session, "/init", None)
    session.end("done")
    assert asked == [] and "AGENTS.md cannot be written here" in shown
    assert not (project / INIT_FILE).exists()


def test_init_refuses_a_file_that_appears_while_it_asks(project: Path, tmp_path: Path) -> None:
    session = _session(project, tmp_path)
    screen, _, err = make(tty=False)

    def confirm(question: str) -> bool:
        (project / INIT_FILE).write_text("written meanwhile\n")
        return True

    context = commands.Context(session, None, screen, None, confirm)  # type: ignore[arg-type]
    commands.run_line(context, "/init")
    session.end("done")
    assert (project / INIT_FILE).read_text() == "written meanwhile\n"
    assert "never replaces anything" in err.getvalue()
    assert not of_type(events_of(session), "file.mutated")


def _report(workspace: Path, units: list[dict[str, Any]]) -> DetectReport:
    return DetectReport.model_validate(
        {"workspace": str(workspace), "units": units, "toolchains": [], "notes": []}
    )


def _unit(workspace: Path, unit_id: str, command: str) -> dict[str, Any]:
    return {
        "id": unit_id,
        "path": str(workspace if unit_id == "." else workspace / unit_id),
        "manifests": ["pyproject.toml"],
        "ecosystems": ["python"],
        "kinds": [
            {"kind": "test", "status": "ready", "recipe": {"id": "r", "command": command}},
            {"kind": "lint", "status": "unsupported", "reason": "no-recipe", "message": "none"},
        ],
    }


def test_the_starter_shortens_programs_and_lists_what_cannot_run(workspace: Path) -> None:
    report = _report(
        workspace,
        [
            _unit(workspace, ".", f"{workspace}/.venv/bin/python -m pytest"),
            _unit(workspace, "libs/a", f"{workspace}/.venv/bin/python -m pytest"),
            _unit(workspace, "libs/b", "/usr/bin/python3 -m pytest"),
        ],
    )
    text = starter(report, [])
    assert "  - test: `.venv/bin/python -m pytest`" in text
    assert "  - test: `../../.venv/bin/python -m pytest`" in text
    assert "  - test: `python3 -m pytest`" in text
    assert "  - not available here: lint" in text
    assert "## Layout" not in text


def test_the_starter_takes_the_map_and_caps_the_units(workspace: Path) -> None:
    units = [_unit(workspace, f"u{n:03d}", "pytest") for n in range(INIT_UNITS_SHOWN + 5)]
    text = starter(_report(workspace, units), ["- `src/`: the code"])
    assert "## Layout\n\n- `src/`: the code\n" in text
    assert f"`u{INIT_UNITS_SHOWN - 1:03d}`" in text and f"`u{INIT_UNITS_SHOWN:03d}`" not in text
    assert "- and 5 more units (`ax-check detect` lists them all)" in text


def test_context_lists_the_instruction_files_and_what_was_cut(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "AGENTS.md").write_text(("rule " * 20 + "\n") * 400)
    (workspace / "sub").mkdir()
    os.symlink("/etc/hostname", workspace / "sub" / "AGENTS.md")
    session = _session(workspace, tmp_path)
    assert session.instructions is not None
    session.instructions.touch([workspace / "sub" / "x.py"])
    shown, _ = _run(session, "/context", None)
    session.end("done")
    assert "instruction files: user-level up to 16384 bytes; project up to 24576" in shown
    assert "project  AGENTS.md: 40400 bytes, CUT:" in shown and "bytes not shown" in shown
    assert "sub/AGENTS.md: skipped: not a file in the workspace" in shown
    assert "no request has been sent in this session yet" in shown
