"""A log line is capped (reader.LINE_MAX_BYTES): never written, never held whole when read.

The memory figures come from the installed ``ax-log`` run under a small
Python parent that reports its children's peak RSS (``RUSAGE_CHILDREN``), so
nothing else this test process ran is counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from axtest import tool_path

from ax_log import append_events, read_events, writer
from ax_log.cli import main
from ax_log.reader import LINE_MAX_BYTES, first_record
from libcommon.errors import CorruptStore, UsageError
from libcommon.paths import StateLayout

HUGE_LINE_BYTES = 200 * 1024 * 1024
PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(done.returncode, peak, done.stderr.decode().replace(chr(10), ' | '))\n"
)


def peak_rss(*argv: str) -> tuple[int, int, str]:
    """Exit code, peak RSS in bytes and stderr of one run of ``argv``."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *argv], capture_output=True, text=True, timeout=120
    ).stdout
    code, peak, stderr = out.split(" ", 2)
    return int(code), int(peak) * 1024, stderr


def envelope(seq: int, kind: str) -> bytes:
    record = {"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00.000Z", "session": "s"}
    return orjson.dumps({**record, "type": "custom", "kind": kind, "data": {}}) + b"\n"


def write_log(path: Path, middle_bytes: int, *, newline: bool = True) -> None:
    """Event 1, one line of ``middle_bytes`` (newline included), event 2 (unless cut)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = b"x" * (1024 * 1024)
    with path.open("wb") as handle:
        handle.write(envelope(1, "before"))
        handle.write(b'{"pad":"')
        left = middle_bytes - len(b'{"pad":"') - len(b'"}\n')
        while left > 0:
            handle.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
        if newline:
            handle.write(b'"}\n')
            handle.write(envelope(2, "after"))


@pytest.fixture(scope="module")
def huge_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace and state root whose session ``s`` holds a 200 MB line (written once)."""
    base = tmp_path_factory.mktemp("huge")
    (base / "ws").mkdir()
    state = base / "state"
    layout = StateLayout(root=state, workspace=Path(os.path.realpath(base / "ws")))
    write_log(layout.session_log("s"), HUGE_LINE_BYTES)
    return base


def huge_command(base: Path, *args: str) -> list[str]:
    return [
        "env",
        f"AX_STATE_DIR={base / 'state'}",
        tool_path("log"),
        *args,
        "-C",
        os.path.realpath(base / "ws"),
    ]


def test_events_refuses_a_200_mb_line_with_its_number_in_bounded_memory(huge_log: Path) -> None:
    small = huge_log / "small"
    (small / "ws").mkdir(parents=True)
    small_layout = StateLayout(small / "state", Path(os.path.realpath(small / "ws")))
    write_log(small_layout.session_log("s"), 100)
    _, baseline, _ = peak_rss(*huge_command(small, "events", "--session", "s"))

    code, peak, stderr = peak_rss(*huge_command(huge_log, "events", "--session", "s"))

    assert code == 1
    assert f":2: line of {HUGE_LINE_BYTES} bytes is longer than" in stderr
    # About the cap above an ordinary run, not the 200 MB line (several times over).
    assert peak - baseline < 3 * LINE_MAX_BYTES, f"peak {peak >> 20} MiB, base {baseline >> 20}"


def test_the_lenient_reader_skips_the_line_and_says_so(huge_log: Path) -> None:
    command = huge_command(huge_log, "events", "--session", "s", "--lenient")
    code, peak, stderr = peak_rss(*command)
    assert code == 0
    assert f"skipped line 2: line of {HUGE_LINE_BYTES} bytes is longer than" in stderr
    done = subprocess.run(command, capture_output=True, timeout=120)
    kinds = [orjson.loads(line)["kind"] for line in done.stdout.splitlines()]
    assert kinds == ["before", "after"]
    assert peak < 4 * LINE_MAX_BYTES + 128 * 1024 * 1024

    listing = subprocess.run(
        huge_command(huge_log, "sessions", "--json"), capture_output=True, timeout=120
    )
    assert listing.returncode == 0
    [row] = orjson.loads(listing.stdout)
    assert (row["events"], row["problems"]) == (2, 1)


def test_verify_and_append_name_the_line(huge_log: Path) -> None:
    verify = subprocess.run(
        huge_command(huge_log, "verify", "--session", "s"), capture_output=True, timeout=120
    )
    assert verify.returncode == 1
    [problem] = orjson.loads(verify.stdout)["problems"]
    assert problem["line"] == 2 and "longer than" in problem["problem"]
    append = subprocess.run(
        huge_command(huge_log, "append", "--session", "s"),
        input=b'{"type":"custom","kind":"x","data":{}}',
        capture_output=True,
        timeout=120,
    )
    assert append.returncode == 1
    assert f":2: line of {HUGE_LINE_BYTES} bytes" in append.stderr.decode()


def test_lines_at_the_cap_are_read_and_one_byte_more_is_not(layout: StateLayout) -> None:
    log = layout.session_log("s")
    write_log(log, LINE_MAX_BYTES)
    problems: list = []
    assert len(list(read_events(log, "s", lenient=True, problems=problems))) == 2
    assert problems[0].line == 2 and "not valid JSON" not in problems[0].problem
    write_log(log, LINE_MAX_BYTES + 1)
    with pytest.raises(CorruptStore, match=f"line of {LINE_MAX_BYTES + 1} bytes"):
        list(read_events(log, "s"))


# The writer's checks run against a small cap: redacting 16 MiB of text takes seconds.
SMALL_CAP = 64 * 1024


def test_the_writer_never_writes_a_line_over_the_cap(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "LINE_MAX_BYTES", SMALL_CAP)
    append_events(layout, "s", [{"type": "custom", "kind": "a", "data": {}}])
    before = layout.session_log("s").read_bytes()
    # Control characters take six bytes each as JSON: the line, not the input, is measured.
    data = {"blob": "\x01" * (SMALL_CAP // 6 + 1)}
    events = [
        {"type": "custom", "kind": "b", "data": {}},
        {"type": "custom", "kind": "c", "data": data},
    ]
    with pytest.raises(UsageError, match="event 2 would be a log line of about"):
        append_events(layout, "s", events)
    assert layout.session_log("s").read_bytes() == before
    # Up to the cap is written (the widest seq is allowed for), and read back.
    padding = SMALL_CAP - len(before) - 40
    [record] = append_events(
        layout, "s", [{"type": "custom", "kind": "d", "data": {"p": "y" * padding}}]
    )
    written = layout.session_log("s").read_bytes()[len(before) :]
    assert SMALL_CAP - 64 < len(written) <= SMALL_CAP
    assert [r["seq"] for r in read_events(layout.session_log("s"), "s")] == [1, record["seq"]]


def test_an_oversized_trailing_fragment_is_moved_aside_in_pieces(layout: StateLayout) -> None:
    log = layout.session_log("s")
    write_log(log, 2 * LINE_MAX_BYTES, newline=False)
    [record] = append_events(layout, "s", [{"type": "custom", "kind": "next", "data": {}}])
    assert record["seq"] == 3
    events = list(read_events(log, "s"))
    assert [e["type"] for e in events] == ["custom", "log.recovered", "custom"]
    partial = log.with_name(log.name + ".partial")
    assert partial.stat().st_size == events[1]["bytes"] + 1
    assert events[1]["bytes"] == 2 * LINE_MAX_BYTES - 3


def test_the_latest_session_lookup_skips_an_oversized_first_line(layout: StateLayout) -> None:
    log = layout.session_log("s")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * (LINE_MAX_BYTES + 10) + b"\n")
    assert first_record(log) is None


def test_cli_append_refuses_an_oversized_event(
    layout: StateLayout, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "LINE_MAX_BYTES", SMALL_CAP)
    head, tail = b'{"type":"custom","kind":"k","data":{"s":"', b'"}}'
    body = head + b"y" * (SMALL_CAP - len(head) - len(tail)) + tail
    result = run_cli(main, ["append", "--session", "s", "-C", str(layout.workspace)], body.decode())
    assert result.exit_code == 2
    assert "event 1 would be a log line of about" in result.stderr
    assert not layout.session_log("s").exists()
