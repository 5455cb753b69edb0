"""Appending: envelope, seq, batches, refusal of bad input, redaction and the tail index."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from ax_log import append_events, read_events, verify_session
from ax_log import writer as writer_module
from ax_log.cli import main
from ax_log.events import Custom, SessionStarted
from libcommon import clock
from libcommon.errors import CorruptStore, Unsupported, UsageError
from libcommon.paths import StateLayout

NOTE = '{"type":"custom","kind":"note","data":{}}'
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(raw) for raw in path.read_bytes().splitlines()]


def test_envelope_and_gapless_seq(layout: StateLayout) -> None:
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    with clock.use(clock=clock.StepClock(start)):
        first = append_events(layout, "s1", [SessionStarted(workspace=str(layout.workspace))])
        more = append_events(
            layout, "s1", [{"type": "custom", "kind": "k", "data": {"n": i}} for i in range(3)]
        )
    assert first[0] == {
        "v": 1,
        "seq": 1,
        "ts": "2026-11-30T10:00:00.000Z",
        "session": "s1",
        "type": "session.started",
        "workspace": str(layout.workspace),
        # Optional fields added later are stored with their defaults (docs/events.md).
        "provider": None,
        "model": None,
        "resumed": False,
        "keyVar": None,
        "keySet": None,
        "apiHost": None,
        "keyCheck": None,
        "parent": None,
        "task": None,
        "role": None,
    }
    assert [r["seq"] for r in more] == [2, 3, 4]
    stored = lines(layout.session_log("s1"))
    assert stored == first + more
    assert list(stored[1])[:5] == ["v", "seq", "ts", "session", "type"]
    assert all(TS.match(str(r["ts"])) for r in stored)


def test_session_ids_are_checked_before_any_path(layout: StateLayout, run_cli) -> None:
    for bad in ["../escape", "a/b", ".hidden", "", "x" * 129]:
        result = run_cli(
            main, ["append", "--session", bad, "-C", str(layout.workspace)], stdin=NOTE
        )
        assert result.exit_code == 2, bad
        assert "invalid session id" in result.stderr
    assert not layout.root.joinpath("projects").exists()
    with pytest.raises(UsageError):
        append_events(layout, "../escape", [Custom(kind="k", data={})])


def test_cli_append_prints_stored_events(layout: StateLayout, run_cli) -> None:
    ws = str(layout.workspace)
    one = run_cli(main, ["append", "--session", "demo", "-C", ws], stdin=NOTE)
    assert one.exit_code == 0, one.stderr
    assert orjson.loads(one.stdout)["seq"] == 1
    pretty = '{\n  "type": "custom",\n  "kind": "note",\n  "data": {"a": 1}\n}\n'
    assert (
        orjson.loads(run_cli(main, ["append", "--session", "demo", "-C", ws], stdin=pretty).stdout)[
            "seq"
        ]
        == 2
    )
    batch = "\n".join([NOTE, "", '{"type":"session.ended","reason":"done"}']) + "\n"
    result = run_cli(main, ["append", "--session", "demo", "-C", ws], stdin=batch)
    assert [orjson.loads(line)["seq"] for line in result.stdout.splitlines()] == [3, 4]


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no events on stdin"),
        ("[1, 2]", "JSON list, not an event object"),
        (NOTE + "\n{broken\n", "line 2: not valid JSON"),
        (NOTE + '\n{"type":"custom","kind":"k"}\n', "line 2: field 'data': Field required"),
        (NOTE + '\n{"type":"nope.nope"}\n', "line 2: unknown event type 'nope.nope'"),
        (NOTE + "\n[1]\n", "line 2: a JSON list"),
        ('{"type":"custom","kind":"k","data":{},"seq":9}', "'seq' is assigned by the log"),
        (
            '{"type":"log.recovered","partialFile":"x","offset":0,"bytes":1,"sha256":"'
            + "a" * 64
            + '"}',
            "log.recovered events are written by the log itself",
        ),
    ],
)
def test_bad_batch_appends_nothing(layout: StateLayout, run_cli, stdin: str, message: str) -> None:
    ws = str(layout.workspace)
    run_cli(main, ["append", "--session", "s", "-C", ws], stdin=NOTE)
    before = layout.session_log("s").read_bytes()
    result = run_cli(main, ["append", "--session", "s", "-C", ws], stdin=stdin)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""
    assert layout.session_log("s").read_bytes() == before


def test_bad_first_batch_creates_no_log(layout: StateLayout, run_cli) -> None:
    result = run_cli(
        main, ["append", "--session", "fresh", "-C", str(layout.workspace)], stdin='{"type":"x.y"}'
    )
    assert result.exit_code == 2
    assert not layout.session_log("fresh").exists()


def test_terminal_stdin_is_refused(layout: StateLayout, run_cli) -> None:
    result = run_cli(main, ["append", "--session", "s", "-C", str(layout.workspace)], isatty=True)
    assert result.exit_code == 2
    assert "stdin is a terminal" in result.stderr


def test_secrets_are_redacted_before_they_are_stored(layout: StateLayout) -> None:
    key = "sk-ant-" + "A1b2C3d4" * 4
    stored = append_events(
        layout,
        "s",
        [
            {
                "type": "tool.requested",
                "callId": "c",
                "tool": "bash",
                "input": {"cmd": f"curl -H 'x-api-key: {key}'"},
            }
        ],
    )
    assert key not in layout.session_log("s").read_text()
    assert "[REDACTED" in str(stored[0]["input"])


def test_appends_use_the_index_and_do_not_rescan(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_events(layout, "s", [Custom(kind="k", data={})])
    scans: list[Path] = []
    real_scan = writer_module._scan

    def counting_scan(log: Path, session_id: str) -> tuple[int, int]:
        scans.append(log)
        return real_scan(log, session_id)

    monkeypatch.setattr(writer_module, "_scan", counting_scan)
    for _ in range(5):
        append_events(layout, "s", [Custom(kind="k", data={})])
    assert scans == []
    # A stale index (here: deleted) falls back to one full, validating scan.
    writer_module.index_path(layout, "s").unlink()
    assert append_events(layout, "s", [Custom(kind="k", data={})])[0]["seq"] == 7
    assert len(scans) == 1


def test_mid_file_corruption_refuses_appends_naming_the_line(layout: StateLayout, run_cli) -> None:
    append_events(layout, "s", [Custom(kind="k", data={"i": i}) for i in range(4)])
    log = layout.session_log("s")
    raw = log.read_bytes().splitlines(keepends=True)
    raw[1] = b'{"v":1,"seq":2,"ts":"t","sess\n'
    log.write_bytes(b"".join(raw))
    before = log.read_bytes()
    with pytest.raises(CorruptStore) as caught:
        append_events(layout, "s", [Custom(kind="k", data={})])
    assert caught.value.line == 2
    result = run_cli(main, ["append", "--session", "s", "-C", str(layout.workspace)], stdin=NOTE)
    assert result.exit_code == 1
    assert f"{log}:2" in result.stderr
    assert log.read_bytes() == before
    # The lenient reader skips the line and says so; the strict one refuses.
    problems: list = []
    seqs = [r["seq"] for r in read_events(log, "s", lenient=True, problems=problems)]
    assert seqs == [1, 3, 4]
    assert [p.line for p in problems] == [2, 3]  # the bad line, then the gap it leaves
    with pytest.raises(CorruptStore, match=":2"):
        list(read_events(log, "s"))


def test_seq_gap_or_duplicate_is_corruption(layout: StateLayout) -> None:
    append_events(layout, "s", [Custom(kind="k", data={}) for _ in range(3)])
    log = layout.session_log("s")
    raw = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(raw[0] + raw[2] + raw[1])
    with pytest.raises(CorruptStore, match="seq 3 follows seq 1"):
        append_events(layout, "s", [Custom(kind="k", data={})])


def test_a_log_cut_behind_our_back_is_refused(layout: StateLayout) -> None:
    append_events(layout, "s", [Custom(kind="k", data={}) for _ in range(3)])
    log = layout.session_log("s")
    raw = log.read_bytes().splitlines(keepends=True)
    with log.open("r+b") as handle:
        handle.truncate(len(raw[0]))
    with pytest.raises(CorruptStore, match="no seq is reused"):
        append_events(layout, "s", [Custom(kind="k", data={})])
    assert log.read_bytes() == raw[0]


def test_newer_schema_version_is_refused(layout: StateLayout, run_cli) -> None:
    append_events(layout, "s", [Custom(kind="k", data={})])
    log = layout.session_log("s")
    with log.open("ab") as handle:
        handle.write(
            b'{"v":2,"seq":2,"ts":"t","session":"s","type":"custom","kind":"k","data":{}}\n'
        )
    before = log.read_bytes()
    with pytest.raises(Unsupported, match="newer than this build"):
        append_events(layout, "s", [Custom(kind="k", data={})])
    assert log.read_bytes() == before
    for extra in ([], ["--lenient"]):
        result = run_cli(main, ["events", "--session", "s", "-C", str(layout.workspace), *extra])
        assert result.exit_code == 5
        assert "schema v2" in result.stderr


def test_partial_trailing_line_is_moved_aside_and_recorded(layout: StateLayout, run_cli) -> None:
    append_events(layout, "s", [Custom(kind="k", data={}) for _ in range(2)])
    log = layout.session_log("s")
    clean = log.read_bytes()
    for fragment in (b'{"v":1,"seq":3,"ts":"2026-', b"\x00\x00garbage"):
        with log.open("ab") as handle:
            handle.write(fragment)
        # Readers ignore the fragment (it may be a write in progress); verify reports it.
        assert [r["seq"] for r in read_events(log, "s")][-1] >= 2
        report = verify_session(layout, "s")
        assert not report.ok
        assert report.problems[-1].problem == "incomplete trailing line (no newline)"
        result = run_cli(
            main, ["append", "--session", "s", "-C", str(layout.workspace)], stdin=NOTE
        )
        assert result.exit_code == 0, result.stderr
    partial = log.with_name("s.jsonl.partial")
    assert partial.read_bytes() == b'{"v":1,"seq":3,"ts":"2026-\n\x00\x00garbage\n'
    stored = lines(log)
    assert log.read_bytes().startswith(clean)
    assert [r["type"] for r in stored] == [
        "custom",
        "custom",
        "log.recovered",
        "custom",
        "log.recovered",
        "custom",
    ]
    assert [r["seq"] for r in stored] == [1, 2, 3, 4, 5, 6]
    first = stored[2]
    assert first["partialFile"] == "s.jsonl.partial"
    assert first["offset"] == len(clean)
    assert first["bytes"] == len(b'{"v":1,"seq":3,"ts":"2026-')
    verify = run_cli(main, ["verify", "--session", "s", "-C", str(layout.workspace)])
    assert verify.exit_code == 0, verify.stdout
    assert partial.stat().st_mode & 0o777 == 0o600


def test_a_failed_write_leaves_no_half_batch(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_events(layout, "s", [Custom(kind="k", data={})])
    before = layout.session_log("s").read_bytes()
    real_write = os.write

    def short_then_fail(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 40:
            return real_write(fd, bytes(data)[:40])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_module.os, "write", short_then_fail)
    with pytest.raises(Exception, match="No space left"):
        append_events(layout, "s", [Custom(kind="k", data={"pad": "x" * 100})])
    monkeypatch.undo()
    assert layout.session_log("s").read_bytes() == before
    assert append_events(layout, "s", [Custom(kind="k", data={})])[0]["seq"] == 2


def test_files_are_private(layout: StateLayout) -> None:
    append_events(layout, "s", [Custom(kind="k", data={})])
    assert layout.session_log("s").stat().st_mode & 0o777 == 0o600
    assert writer_module.index_path(layout, "s").name == ".s.index"


def test_batch_size_is_capped(layout: StateLayout) -> None:
    cap = writer_module.BATCH_MAX_EVENTS
    with pytest.raises(UsageError, match=f"at most {cap} events"):
        append_events(layout, "s", [Custom(kind="k", data={})] * (cap + 1))
    assert not layout.session_log("s").exists()


def test_continue_never_picks_a_delegated_tasks_session(layout: StateLayout) -> None:
    from ax_log import latest_session

    ws = str(layout.workspace)
    append_events(layout, "s-parent", [{"type": "session.started", "workspace": ws}])
    # The task's session started later, and names its parent: the person's session wins.
    append_events(
        layout,
        "s-task",
        [{"type": "session.started", "workspace": ws, "parent": "s-parent", "task": "look"}],
    )
    assert latest_session(layout) == "s-parent"
