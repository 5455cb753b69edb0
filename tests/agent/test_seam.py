"""The composition seam: one scripted session in-process and through real processes, same events."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agenttest import (
    call,
    events_of,
    first,
    open_session,
    real_tools,
    write_script,
)
from browserpage import needs_browser, served

from ax_agent.approvals import AnnouncingApprover
from ax_agent.loop import run_turn
from ax_agent.memory import describe
from ax_agent.narrative import finish
from ax_agent.seam.compose import make_seam
from ax_agent.seam.models import (
    AppendRequest,
    CheckBrowserRequest,
    NoteKeyRequest,
    PathsRequest,
    RecallRequest,
)
from ax_exec import ExecSpec
from ax_policy import DecisionRequest, DeclaredFacts, load_config
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import state_layout
from libcommon.procfs import read_proc

# Fields that differ between two runs of the same session by nature, not by composition.
VOLATILE = {"ts", "session", "durationMs", "timingsMs"}
_ID = re.compile(r"\b(run|s)-\d{8}T\d{6}-[0-9a-f]{8}\b")


def _project(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (workspace / "Makefile").write_text("test:\n\tpython3 -c 'import calc; assert calc.X == 2'\n")
    (workspace / "calc.py").write_text("X = 1\n")
    (workspace / ".git").mkdir()


SCRIPT = [
    {"toolCalls": [call("read_file", path="calc.py"), call("list_dir", path=".")]},
    {"toolCalls": [call("retrieve", query="calc")]},
    {"toolCalls": [call("run_check", kind="test")]},
    {"toolCalls": [call("edit_file", path="calc.py", old_string="X = 1", new_string="X = 2")]},
    {"toolCalls": [call("write_file", path=".git/x", content="no")]},
    {"toolCalls": [call("run_command", command="echo hello")]},
    {"toolCalls": [call("slate_note", key="plan", text="fix X")]},
    {"toolCalls": [call("run_check", kind="test"), call("recall_step", step=1)]},
    {"toolCalls": [call("propose_lesson", slug="tests-run-by-make", text="make test.\n## x")]},
    {"text": "Fixed."},
    # The narrative at the session's clean end (project memory, issue 19).
    {
        "text": "=== SUMMARY ===\nFixed X.\n=== DECISIONS ===\n=== OPEN ISSUES ===\n"
        "=== NEXT STEPS ===\nNone.\n=== END ===\n"
    },
]
_SLUG = re.compile(r"/projects/[^/]+-[0-9a-f]{12}/")


def _normalise(value: Any, workspace: Path, state: Path) -> Any:
    if isinstance(value, dict):
        # A memory document's bytes hold times and session ids: its size is compared, not
        # its hash.
        volatile = VOLATILE | ({"sha256"} if "doc" in value else set())
        return {k: _normalise(v, workspace, state) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_normalise(item, workspace, state) for item in value]
    if isinstance(value, str):
        text = value.replace(str(workspace), "<ws>").replace(str(state), "<state>")
        text = re.sub(r"took: \d+\.\d+s", "took: <t>", text)
        text = re.sub(r"after \d+\.\d+s", "after <t>", text)
        text = re.sub(r"\d+\.\d+s ·", "<t> ·", text)
        text = _SLUG.sub("/projects/<slug>/", text)
        return _ID.sub("<id>", text)
    return value


def _run(root: Path, compose: str, state_dir: Path) -> list[Any]:
    """The session's events; then a next session's start and what /memory reads."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    workspace = Path(os.path.realpath(workspace))
    _project(workspace)
    environ = {**os.environ, "AX_COMPOSE": compose}
    approver = AnnouncingApprover("test", lambda line: None, "test")
    script = write_script(root / "s.json", SCRIPT)
    session = open_session(
        workspace, script, tools=real_tools(), approver=approver, environ=environ
    )
    result = run_turn(session, "fix it")
    finish(session, "completed")
    assert result.stop_reason == "end_turn", result.detail
    events = events_of(session)
    # The next session is given the memory the first one wrote, read through the seam.
    later = open_session(workspace, write_script(root / "t.json", []), environ=environ)
    later.end("done")
    given = first(events_of(later), "memory.loaded")["documents"]
    now = [row.to_json() for row in describe(later.seam, later.layout)]
    return [_normalise(item, workspace, state_dir) for item in (*events, given, now)]


@pytest.mark.slow
def test_the_same_session_gives_the_same_events_both_ways(tmp_path: Path, state_dir: Path) -> None:
    inprocess = _run(tmp_path / "a", "inprocess", state_dir)
    process = _run(tmp_path / "b", "process", state_dir)
    assert len(inprocess) == len(process)
    for left, right in zip(inprocess, process, strict=True):
        assert left == right
    *events, given, now = inprocess
    kinds = {e["type"] for e in events}
    assert {"command.started", "check.completed", "file.mutated", "policy.decision"} <= kinds
    assert any(e["type"] == "policy.decision" and e["verdict"] == "deny" for e in events)
    # The repository map both ways: the same map given, the same hits retrieved.
    assert first(events, "map.built")["status"] == "built"
    assert any(
        e["type"] == "tool.completed" and (e.get("content") or "").startswith("1. calc.py")
        for e in events
    )
    # Project memory both ways: the lesson, the journal entry, what the next session is
    # given and what /memory reads.
    (narrative,) = [e for e in events if e["type"] == "memory.narrative"]
    assert narrative["narrative"] == "model-written"
    assert [doc["doc"] for doc in narrative["documents"]] == ["journal"]
    assert any(
        e["type"] == "tool.completed" and e["content"].startswith("added lesson") for e in events
    )
    memory = {row["doc"]: row["status"] for row in given if row.get("scope") == "memory"}
    assert memory == {
        "journal": "loaded",
        "codebase": "missing",
        "lessons": "loaded",
        "research": "missing",
    }
    assert [(row["doc"], row["status"], row["entries"]) for row in now] == [
        ("journal", "ok", 1),
        ("codebase", "missing", None),
        ("lessons", "ok", 1),
        ("research", "missing", None),
    ]


@pytest.fixture(params=["inprocess", "process"])
def seam(request: pytest.FixtureRequest, workspace: Path) -> Any:
    layout = state_layout(workspace)
    environ = {**os.environ, "AX_COMPOSE": request.param}
    return make_seam(layout, "s-seam", environ, load_config(layout))


def test_both_seams_raise_the_same_error_types(seam: Any) -> None:
    with pytest.raises(UsageError, match="unknown event type"):
        seam.call("log.append", AppendRequest(events=[{"type": "no.such"}]))
    with pytest.raises(UsageError, match="not a file inside the workspace"):
        seam.call("log.snapshot", PathsRequest(paths=["/etc/passwd"]))
    with pytest.raises(UsageError, match="no verb"):
        seam.call("nope.verb", AppendRequest(events=[]))
    with pytest.raises(OperationFailed):
        seam.call("slate.recall", RecallRequest(step=9))


def test_both_seams_answer_with_the_same_models(seam: Any, workspace: Path) -> None:
    from ax_slate import SlateUnavailable

    decision = seam.call(
        "policy.decide", DecisionRequest(tool="t", facts=DeclaredFacts(reads=["a.txt"]))
    )
    assert (decision.verdict, decision.rule) == ("allow", "read-inside-workspace")
    outcome = seam.call("exec.run", ExecSpec(argv=["echo", "hi"], cwd=str(workspace)))
    assert (outcome.termination, outcome.exit_code, outcome.stdout.head) == ("exited", 0, "hi\n")
    with pytest.raises((OperationFailed, SlateUnavailable)):
        seam.call("slate.note_delete", NoteKeyRequest(key="k"))


@needs_browser
def test_both_seams_run_a_browser_flow_and_record_it_as_browser_evidence(seam: Any) -> None:
    from ax_check import FlowResult
    from ax_log import read_events

    flow = {
        "steps": [
            {"action": "goto", "url": "/", "ready": {"text": "Welcome"}},
            {"action": "expect_count", "selector": "li", "count": 2},
        ]
    }
    with served() as url:
        result = seam.call("check.browser", CheckBrowserRequest(flow=flow, preview_url=url))
    assert isinstance(result, FlowResult) and result.verdict == "passed", result
    events = read_events(seam.layout.session_log("s-seam"), "s-seam")
    assert [(e["type"], e["kind"]) for e in events if e["type"].startswith("check.")] == [
        ("check.started", "browser"),
        ("check.completed", "browser"),
    ]


def _descendant_running(words: bytes) -> bool:
    """Is a process below this one running a command line that holds ``words``?"""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if words not in cmdline:
            continue
        pid = int(entry)
        while pid > 1:
            info = read_proc(pid)
            if info is None:
                break
            if info.ppid == os.getpid():
                return True
            pid = info.ppid
    return False


def _abort_once_running(abort: threading.Event, words: bytes) -> None:
    deadline = time.monotonic() + 30
    while not _descendant_running(words) and time.monotonic() < deadline:
        time.sleep(0.02)
    abort.set()


def test_an_abort_reaches_a_command_through_either_seam(seam: Any, workspace: Path) -> None:
    # The abort is sent once the command runs: a fixed delay raced a loaded machine, where
    # ax-exec could still be starting (a SIGINT before its handler is installed ends it
    # before it runs anything, with no outcome to answer).
    abort = threading.Event()
    threading.Thread(target=_abort_once_running, args=(abort, b"sleep 30"), daemon=True).start()
    outcome = seam.call(
        "exec.run", ExecSpec(shell="sleep 30", cwd=str(workspace), timeout_s=60), abort=abort
    )
    assert (outcome.termination, outcome.exit_code) == ("aborted", None)
    assert outcome.kill.verified


def test_an_abort_before_ax_exec_is_listening_says_nothing_ran(workspace: Path) -> None:
    # Set before the call: the SIGINT goes out as ax-exec starts, before its handler.
    layout = state_layout(workspace)
    environ = {**os.environ, "AX_COMPOSE": "process"}
    seam = make_seam(layout, "s-early", environ, load_config(layout))
    abort = threading.Event()
    abort.set()
    marker = workspace / "ran"
    with pytest.raises(OperationFailed, match="aborted before ax-exec started the command"):
        seam.call("exec.run", ExecSpec(shell=f"touch {marker}", cwd=str(workspace)), abort=abort)
    assert not marker.exists()


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_children_never_write_python_bytecode(workspace: Path, mode: str) -> None:
    seam = make_seam(state_layout(workspace), "s-env", {**os.environ, "AX_COMPOSE": mode}, None)
    outcome = seam.call("exec.run", ExecSpec(argv=["sh", "-c", "echo $PYTHONDONTWRITEBYTECODE"]))
    assert outcome.stdout.head.strip() == "1"
