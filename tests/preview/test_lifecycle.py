"""Real servers end to end: ready, failed, TTL, log cap, stop, session events, logs.

Every test starts real fixture servers (Python or Node) through the real
detached supervisor, and the autouse guard in conftest.py fails any test
that leaves a process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ax_preview import proc
from libcommon.paths import state_layout


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


def test_python_server_on_ipv6_loopback_becomes_ready_and_stops_verified(pv: Any) -> None:
    code, result = pv.start("py-procfile")
    assert code == 0, result
    assert result["state"] == "ready"
    assert result["url"].startswith("http://[::1]:")
    assert result["ownership"]["status"] == "verified"
    assert result["note"].startswith("socket ownership verified: pid ")
    assert set(result) >= {"id", "pid", "url", "state", "reason", "logPath", "ttl", "startedAt"}
    assert fetch(result["url"]) == b"hello from the fixture\n"
    entry = pv.record(result["id"])
    assert entry["source"] == "Procfile"
    assert entry["supervisor"]["pid"] != entry["server"]["pid"]

    stopped = pv.stop(result["id"])
    assert stopped.exit_code == 0, stopped.stderr
    answer = json.loads(stopped.stdout)
    assert answer["killVerified"] is True
    assert answer["stopReason"] == "stopped"
    assert pv.tree_gone(pv.record(result["id"]))


def test_node_server_through_npm_dev_script(pv: Any) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the package.json fixture")
    code, result = pv.start("node-dev", "--script", "dev")
    assert code == 0, result
    assert result["url"].startswith("http://127.0.0.1:")
    assert fetch(result["url"]) == b"hello from node\n"
    entry = pv.record(result["id"])
    assert entry["command"][1:] == ["run", "dev"]
    # npm -> sh -> node: the whole tree must go, not just npm.
    tree = proc.server_tree(
        entry["server"]["pid"], entry["server"]["startTime"], entry["commandToken"]
    )
    assert len(tree) >= 2
    assert pv.stop(result["id"]).exit_code == 0
    assert not [info for info in tree if proc.is_alive(info.pid, info.start_time)]


def test_makefile_recipe_and_ansi_coloured_url(pv: Any) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is needed for the Makefile fixture")
    code, made = pv.start("py-make", "--script", "serve")
    assert code == 0, made
    code, coloured = pv.start("ansi")
    assert code == 0, coloured
    assert coloured["url"].startswith("http://127.0.0.1:")
    for preview in (made, coloured):
        assert pv.stop(preview["id"]).exit_code == 0


def test_a_server_that_never_announces_fails_within_the_ready_timeout(pv: Any) -> None:
    began = time.monotonic()
    result = pv.cli("start", "--project", "silent", "--ready-timeout", "1.5")
    elapsed = time.monotonic() - began
    assert result.exit_code == 1
    answer = json.loads(result.stdout)
    assert answer["state"] == "failed"
    assert answer["reason"] == "no-port-announced"
    assert answer["url"] is None
    assert "warming up" in answer["logTail"]
    assert "no-port-announced" in result.stderr
    assert 1.5 <= elapsed < 1.5 + 8
    entry = pv.record(answer["id"])
    assert entry["stopReason"] == "not-ready"
    assert entry["killVerified"] is True
    assert pv.tree_gone(entry)


def test_an_announced_port_that_nobody_serves_is_not_ready(pv: Any) -> None:
    result = pv.cli("start", "--project", "wrongport", "--ready-timeout", "1")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["reason"] == "no-answer"


def test_a_server_that_crashes_at_start_reports_why_with_the_log_tail(pv: Any) -> None:
    code, result = pv.start("crash")
    assert code == 1
    assert result["reason"] == "crashed"
    assert "boom: missing configuration file" in result["logTail"]
    entry = pv.record(result["id"])
    assert entry["exitCode"] == 3
    assert entry["stopReason"] == "crashed"


def test_ttl_stops_the_server_and_records_why(pv: Any) -> None:
    code, result = pv.start("child", "--ttl", "2s")
    assert code == 0, result
    assert result["ttl"] == 2.0
    pv.wait_until(lambda: pv.record(result["id"])["stoppedAt"] is not None)
    entry = pv.record(result["id"])
    assert entry["state"] == "stopped"
    assert entry["stopReason"] == "ttl"
    assert entry["killVerified"] is True
    assert pv.tree_gone(entry)


def test_log_cap_stops_a_flooding_server(pv: Any) -> None:
    cap = 64 * 1024
    code, result = pv.start("flood", "--log-cap", "64K")
    assert code == 0, result
    pv.wait_until(lambda: pv.record(result["id"])["stoppedAt"] is not None)
    entry = pv.record(result["id"])
    assert entry["stopReason"] == "log-cap"
    log = Path(entry["logPath"])
    assert log.stat().st_size <= cap + 200
    assert log.read_bytes().rstrip().endswith(b"server stopped")
    assert pv.tree_gone(entry)


def test_session_events_started_ready_stopped(pv: Any) -> None:
    from ax_log import read_events

    code, result = pv.start("py-procfile", "--session", "s-preview")
    assert code == 0, result
    assert pv.stop(result["id"]).exit_code == 0
    log = state_layout(pv.ws).session_log("s-preview")
    events = list(read_events(log, "s-preview"))
    types = [event["type"] for event in events]
    assert types == ["preview.started", "preview.ready", "preview.stopped"]
    assert events[1]["url"] == result["url"]
    assert events[1]["note"] == result["note"]
    assert events[1]["ownership"] == "verified"
    assert events[2]["reason"] == "stopped"
    assert events[2]["killVerified"] is True
    assert {event["previewId"] for event in events} == {result["id"]}


def test_session_end_stops_the_preview(pv: Any) -> None:
    from ax_log import append_events, read_events

    code, result = pv.start("py-procfile", "--session", "s-end")
    assert code == 0, result
    layout = state_layout(pv.ws)
    append_events(layout, "s-end", [{"type": "session.ended", "reason": "done"}])
    pv.wait_until(lambda: pv.record(result["id"])["stoppedAt"] is not None)
    assert pv.record(result["id"])["stopReason"] == "session-end"
    types = [e["type"] for e in read_events(layout.session_log("s-end"), "s-end")]
    assert types[-1] == "preview.stopped"


def test_failed_start_is_logged_to_the_session(pv: Any) -> None:
    from ax_log import read_events

    code, _ = pv.start("crash", "--session", "s-crash")
    assert code == 1
    log = state_layout(pv.ws).session_log("s-crash")
    events = list(read_events(log, "s-crash"))
    assert [event["type"] for event in events] == [
        "preview.started",
        "preview.failed",
        "preview.stopped",
    ]
    assert events[1]["reason"] == "crashed"
    assert events[1]["exitCode"] == 3
    assert "boom" in events[1]["logTail"]


def test_list_re_probes_and_logs_tail_and_follow(pv: Any) -> None:
    code, result = pv.start("py-procfile")
    assert code == 0, result
    listed = pv.cli("list", "--json")
    rows = json.loads(listed.stdout)["previews"]
    assert [(row["id"], row["state"], row["answering"]) for row in rows] == [
        (result["id"], "ready", True)
    ]
    text = pv.cli("list")
    assert result["id"] in text.stdout and "ready" in text.stdout

    fetch(result["url"])
    pv.wait_until(lambda: b"request:" in Path(result["logPath"]).read_bytes())
    tail = pv.cli("logs", result["id"], "--tail", "1")
    assert tail.exit_code == 0
    assert tail.stdout.count("\n") == 1
    assert "request:" in tail.stdout

    assert pv.stop(result["id"]).exit_code == 0
    # With the supervisor gone, --follow prints everything and ends by itself.
    pv.wait_until(
        lambda: (
            not proc.is_alive(
                pv.record(result["id"])["supervisor"]["pid"],
                pv.record(result["id"])["supervisor"]["startTime"],
            )
        )
    )
    followed = pv.cli("logs", result["id"], "--follow")
    assert followed.exit_code == 0
    assert "Serving HTTP on ::1" in followed.stdout
    rows = json.loads(pv.cli("list", "--json").stdout)["previews"]
    assert rows[0]["state"] == "stopped"
    assert rows[0]["answering"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["start", "--ttl", "soon"], "--ttl 'soon' is not a duration"),
        (["start", "--ttl", "48h"], "--ttl must be"),
        (["start", "--log-cap", "12"], "--log-cap must be"),
        (["start", "--log-cap", "lots"], "--log-cap 'lots' is not a size"),
        (["start", "--ready-timeout", "0"], "--ready-timeout must be"),
        (["start", "--session", "../x"], "invalid session id"),
        (["start", "--project", "../.."], "outside the workspace"),
        (["stop", "../etc"], "invalid preview id"),
        (["logs", "pv-x/../y"], "invalid preview id"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    pv: Any, state_dir: Path, argv: list[str], message: str
) -> None:
    result = pv.cli(*argv)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert not any(state_dir.rglob("pv-*"))


def test_unknown_preview_id_is_exit_1(pv: Any) -> None:
    result = pv.cli("stop", "pv-nope")
    assert result.exit_code == 1
    assert "no preview pv-nope" in result.stderr


def test_corrupt_record_is_a_hard_error(pv: Any) -> None:
    previews = state_layout(pv.ws).previews_dir
    previews.mkdir(parents=True)
    (previews / "pv-broken.json").write_text('{"id": "pv-broken"}')
    for verb in (["list"], ["sweep"]):
        result = pv.cli(*verb)
        assert result.exit_code == 1
        assert "corrupt store" in result.stderr
    assert (previews / "pv-broken.json").exists()
    assert os.path.getsize(previews / "pv-broken.json") > 0


def test_a_corrupt_record_names_the_field_and_the_refused_value(pv: Any) -> None:
    code, result = pv.start("crash")
    assert code == 1, result
    pv.edit_record(result["id"], stopReason="exploded")
    for verb in (["list"], ["logs", result["id"]]):
        listed = pv.cli(*verb)
        assert listed.exit_code == 1
        assert "record field 'stopReason': 'exploded' is not allowed; expected" in listed.stderr
        assert "'crashed'" in listed.stderr


def test_start_in_a_pipeline_returns_while_the_server_keeps_running(
    pv: Any, tool_path: Callable[[str], str]
) -> None:
    # `ax-preview start | jq -r .url` must finish: the detached supervisor and the
    # server may not hold the caller's stdout or stderr pipe open.
    command = [tool_path("preview"), "start", "-C", str(pv.ws), "--project", "py-procfile"]
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began < 20
    result = json.loads(done.stdout)
    assert fetch(result["url"]) == b"hello from the fixture\n"
    listed = subprocess.run(
        [tool_path("preview"), "list", "-C", str(pv.ws)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result["id"] in listed.stdout
    assert pv.stop(result["id"]).exit_code == 0


def test_a_command_that_cannot_start_is_a_spawn_error(
    pv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An npm whose interpreter does not exist: found on PATH, but exec fails.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("node", "npm"):
        (bin_dir / program).write_text("#!/nonexistent/interpreter\n")
        (bin_dir / program).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    code, result = pv.start("node-dev", "--session", "s-spawn")
    assert code == 1
    assert result["reason"] == "spawn-error"
    assert "could not start" in result["logTail"]
    assert pv.record(result["id"])["server"] is None
    from ax_log import read_events

    events = list(read_events(state_layout(pv.ws).session_log("s-spawn"), "s-spawn"))
    assert [event["type"] for event in events] == ["preview.failed"]
