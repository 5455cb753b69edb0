"""The read-side verbs (events, sessions, verify) and the public face."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from datetime import UTC, datetime

import orjson

import ax_log
from ax_log import append_events
from ax_log.cli import main
from ax_log.events import Custom, SessionEnded, SessionStarted
from libcommon import clock
from libcommon.paths import StateLayout


def seed(layout: StateLayout) -> None:
    """Two sessions: 'old' started first and ended; 'new' started later and is open."""
    ws = str(layout.workspace)
    with clock.use(clock=clock.StepClock(datetime(2026, 1, 1, tzinfo=UTC))):
        append_events(layout, "old", [SessionStarted(workspace=ws), Custom(kind="a", data={})])
        append_events(layout, "new", [SessionStarted(workspace=ws)])
        append_events(layout, "old", [SessionEnded(reason="done")])
        append_events(
            layout,
            "new",
            [
                {"type": "tool.requested", "callId": "c", "tool": "t", "input": {}},
                {"type": "tool.completed", "callId": "c", "ok": True, "summary": "s"},
                Custom(kind="b", data={}),
            ],
        )


def events_of(output: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in output.splitlines()]


def test_events_latest_type_and_since(layout: StateLayout, run_cli) -> None:
    seed(layout)
    ws = ["-C", str(layout.workspace)]
    latest = run_cli(main, ["events", "--latest", *ws])
    assert latest.exit_code == 0, latest.stderr
    assert {e["session"] for e in events_of(latest.stdout)} == {"new"}
    assert run_cli(main, ["events", *ws]).stdout == latest.stdout
    tools = events_of(run_cli(main, ["events", "--session", "new", "--type", "tool", *ws]).stdout)
    assert [e["type"] for e in tools] == ["tool.requested", "tool.completed"]
    exact = run_cli(main, ["events", "--session", "new", "--type", "tool.completed", *ws]).stdout
    assert [e["seq"] for e in events_of(exact)] == [3]
    assert run_cli(main, ["events", "--session", "new", "--type", "too", *ws]).stdout == ""
    since = events_of(run_cli(main, ["events", "--session", "old", "--since", "1", *ws]).stdout)
    assert [e["seq"] for e in since] == [2, 3]


def test_events_usage_errors(layout: StateLayout, run_cli) -> None:
    ws = ["-C", str(layout.workspace)]
    none = run_cli(main, ["events", *ws])
    assert none.exit_code == 1 and "no sessions yet" in none.stderr
    seed(layout)
    both = run_cli(main, ["events", "--session", "old", "--latest", *ws])
    assert both.exit_code == 2 and "not both" in both.stderr
    missing = run_cli(main, ["events", "--session", "ghost", *ws])
    assert missing.exit_code == 1 and "no event log for session ghost" in missing.stderr
    negative = run_cli(main, ["events", "--session", "old", "--since", "-1", *ws])
    assert negative.exit_code == 2


def test_lenient_events_skip_and_report(layout: StateLayout, run_cli) -> None:
    seed(layout)
    log = layout.session_log("old")
    raw = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(raw[0] + b"not json\n" + b"".join(raw[1:]) + b'{"v":1,"seq":9')
    ws = ["-C", str(layout.workspace)]
    strict = run_cli(main, ["events", "--session", "old", *ws])
    assert strict.exit_code == 1 and f"{log}:2" in strict.stderr
    lenient = run_cli(main, ["events", "--session", "old", "--lenient", *ws])
    assert lenient.exit_code == 0
    assert [e["seq"] for e in events_of(lenient.stdout)] == [1, 2, 3]
    assert "skipped line 2: not valid JSON" in lenient.stderr
    assert "incomplete trailing line" in lenient.stderr


def test_sessions_rows(layout: StateLayout, run_cli) -> None:
    seed(layout)
    result = run_cli(main, ["sessions", "--json", "-C", str(layout.workspace)])
    rows = orjson.loads(result.stdout)
    assert [(r["id"], r["events"], r["lastType"]) for r in rows] == [
        ("old", 3, "session.ended"),
        ("new", 4, "custom"),
    ]
    assert rows[0]["ended"] is not None and rows[1]["ended"] is None
    assert rows[0]["started"] < rows[1]["started"]
    newer = b'{"v":2,"seq":5,"ts":"t","session":"new","type":"x.y"}\n'
    with layout.session_log("new").open("ab") as handle:
        handle.write(newer)
    rows = orjson.loads(run_cli(main, ["sessions", "--json", "-C", str(layout.workspace)]).stdout)
    assert [(r["id"], r["events"], r["problems"]) for r in rows] == [("old", 3, 0), ("new", 4, 1)]
    text = run_cli(main, ["sessions", "-C", str(layout.workspace)]).stdout.splitlines()
    assert text[0].split()[:3] == ["ID", "STARTED", "ENDED"]
    assert text[1].split()[0] == "old" and text[2].split()[0] == "new"
    assert text[2].endswith("(problems: 1)")


def test_verify_reports_every_problem(layout: StateLayout, run_cli) -> None:
    seed(layout)
    ws = ["-C", str(layout.workspace)]
    good = run_cli(main, ["verify", "--session", "new", *ws])
    assert good.exit_code == 0
    assert orjson.loads(good.stdout) == {"ok": True, "events": 4, "problems": []}
    log = layout.session_log("new")
    raw = log.read_bytes().splitlines(keepends=True)
    bad_field = b'{"v":1,"seq":3,"ts":"t","session":"new","type":"tool.completed","callId":"c"}\n'
    log.write_bytes(raw[0] + b"{oops\n" + raw[1] + bad_field + raw[3] + raw[3])
    result = run_cli(main, ["verify", "--session", "new", *ws])
    assert result.exit_code == 1
    report = orjson.loads(result.stdout)
    assert report["ok"] is False and report["events"] == 5
    assert any(p["line"] == 2 and "not valid JSON" in p["problem"] for p in report["problems"])
    assert any(p["line"] == 4 and "field 'ok'" in p["problem"] for p in report["problems"])
    assert any(p["line"] == 6 and "seq 4 follows seq 4" in p["problem"] for p in report["problems"])


def test_public_face_resolves_every_name() -> None:
    for module in [
        "events",
        "reader",
        "writer",
        "snapshots",
        "revert",
        "verify",
        "locate",
        "sessions",
    ]:
        importlib.import_module(f"ax_log.{module}")
    for name in ax_log.__all__:
        assert not isinstance(getattr(ax_log, name), types.ModuleType), name


def test_help_stays_lean() -> None:
    code = (
        "import sys; from ax_log.cli import main; "
        "main(['--help']); "
        "print(sorted(m for m in ('anthropic', 'httpx', 'rich', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
