"""``ax-agent demo``: the whole loop, offline, in a workspace it makes itself.

A small Python project with a failing test is written to a fresh temporary
folder (with its own state root, so the demo leaves nothing in yours). The
script provider plays the model: it reads the code, runs the test check (it
fails), edits the fix, runs the check again (it passes) and answers. Then the
session report is printed, and the demo succeeds only when the report shows
the fixed file CHECKED. The demo owns its workspace, so it trusts it for this
run and answers its own approval questions "yes once", saying so on stderr;
that is what lets it run on a machine without an enforced sandbox.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import IO, Any

from libcommon import jsonio
from libcommon.errors import ExitStatus, OperationFailed

DEMO_DATA = "demo_data"
FIXED_FILE = "calc.py"
DEMO_MAX_STEPS = 10
DEMO_PROMPT = "The tests of this project fail. Find out why and fix it."


def write_project(root: Path) -> None:
    data = resources.files("ax_agent").joinpath(DEMO_DATA, "project.json").read_bytes()
    for name, text in jsonio.loads(data)["files"].items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def run_demo(
    environ: Mapping[str, str],
    stdout: IO[str],
    chrome: Callable[[str], None],
    *,
    keep: bool = False,
) -> int:
    from ax_log import read_events
    from ax_report import build_report

    from .approvals import AnnouncingApprover
    from .headless import abort_on_signals
    from .loop import run_turn
    from .session import StartOptions, start_session

    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="ax-demo-"))
    workspace = base / "calc"
    workspace.mkdir()
    write_project(workspace)
    demo_env = {**environ, "AX_STATE_DIR": str(base / "state")}
    why = "the demo owns its temporary workspace"
    chrome(f"ax-agent demo: a scripted model fixes a failing test in {workspace}")
    chrome(f"ax-agent demo: {why}, so it trusts it for this run and answers its own questions")
    try:
        with resources.as_file(
            resources.files("ax_agent").joinpath(DEMO_DATA, "script.json")
        ) as script:
            session = start_session(
                StartOptions(
                    workspace=workspace,
                    environ=demo_env,
                    provider="script",
                    script=script,
                    max_steps=DEMO_MAX_STEPS,
                    trust_once=True,
                    approver=AnnouncingApprover("demo", chrome, why),
                    approval_note=f"ax-agent demo: {why}; every question is answered yes once",
                    listeners=[_progress(chrome)],
                )
            )
            try:
                with abort_on_signals(session.asking.is_set) as abort:
                    result = run_turn(session, DEMO_PROMPT, abort)
            finally:
                session.end("demo finished")
        events = list(read_events(session.layout.session_log(session.id), session.id))
        report, markdown = build_report(events)
        stdout.write(markdown + ("" if markdown.endswith("\n") else "\n"))
        stdout.flush()
        chrome(f"ax-agent demo: the model said: {result.text}")
        verdict = _verdict(report, FIXED_FILE)
        elapsed = time.monotonic() - started
        if result.is_error or verdict != "CHECKED":
            raise OperationFailed(
                f"the demo did not finish as it should: turn {result.stop_reason}, "
                f"{FIXED_FILE} {verdict or 'not changed'}",
                hint=result.detail,
            )
        chrome(f"ax-agent demo: {FIXED_FILE} is CHECKED in the report; done in {elapsed:.1f}s")
    finally:
        if keep:
            chrome(f"ax-agent demo: kept {workspace} (state root {base / 'state'})")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return ExitStatus.OK


def _verdict(report: dict[str, Any], path: str) -> str | None:
    for row in report.get("files") or []:
        if row.get("path") == path:
            verdict = row.get("verdict")
            return verdict if isinstance(verdict, str) else None
    return None


def _progress(chrome: Callable[[str], None]) -> Callable[[dict[str, Any]], None]:
    def show(record: dict[str, Any]) -> None:
        if record.get("type") == "tool.completed":
            chrome(f"ax-agent demo: [{'ok' if record.get('ok') else 'failed'}] {record['summary']}")

    return show
