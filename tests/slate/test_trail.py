"""The Trail: harness-written, append-only, step numbers from the file's tail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ax_slate.jsonl as jsonl_module
from ax_slate import RecordRequest, SlateUnavailable, read_trail, record, save_output
from ax_slate.cli import main
from ax_slate.trail import ARGS_DIGEST_MAX_CHARS, OUTCOME_MAX_CHARS
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.paths import StateLayout

pytestmark = pytest.mark.usefixtures("started")


def rec(layout: StateLayout, tool: str = "read_file", **args: object) -> int:
    return record(layout, "s1", RecordRequest(tool=tool, args=dict(args), outcome="ok")).step


def trail_lines(layout: StateLayout, session: str = "s1") -> list[dict[str, object]]:
    path = layout.session_dir(session) / "trail.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_steps_are_numbered_from_the_file(layout: StateLayout) -> None:
    assert [rec(layout, path=f"f{i}.py") for i in range(5)] == [1, 2, 3, 4, 5]
    lines = trail_lines(layout)
    assert [line["step"] for line in lines] == [1, 2, 3, 4, 5]
    assert lines[2]["argsDigest"] == 'path="f2.py"'
    assert set(lines[0]) == {"step", "ts", "tool", "argsDigest", "outcome", "output"}


def test_partial_last_line_is_set_aside_not_lost(layout: StateLayout) -> None:
    rec(layout)
    rec(layout)
    trail = layout.session_dir("s1") / "trail.jsonl"
    with trail.open("ab") as handle:
        handle.write(b'{"step": 3, "ts": "torn')  # a writer died mid-append
    assert rec(layout) == 3
    assert [line["step"] for line in trail_lines(layout)] == [1, 2, 3]
    aside = trail.with_name("trail.jsonl.partial").read_bytes()
    assert aside == b'{"step": 3, "ts": "torn\n'


def test_lines_longer_than_a_chunk_are_read_whole(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small chunk makes every line span several reads from the end of the file.
    monkeypatch.setattr(jsonl_module, "TAIL_CHUNK_BYTES", 16)
    for i in range(1, 6):
        assert rec(layout, path="p" * 50 * i) == i
    assert [e.step for e in read_trail(layout, "s1", count=None)] == [1, 2, 3, 4, 5]
    trail = layout.session_dir("s1") / "trail.jsonl"
    with trail.open("ab") as handle:
        handle.write(b'{"step": 6, "torn": "' + b"z" * 100)
    assert rec(layout) == 6
    assert trail.with_name("trail.jsonl.partial").read_bytes().startswith(b'{"step": 6')


def test_corrupt_last_line_is_refused(layout: StateLayout) -> None:
    rec(layout)
    trail = layout.session_dir("s1") / "trail.jsonl"
    with trail.open("ab") as handle:
        handle.write(b"garbage\n")
    with pytest.raises(CorruptStore):
        rec(layout)
    assert trail.read_bytes().endswith(b"garbage\n")  # never rewritten


def test_digest_and_outcome_are_redacted_and_clipped(layout: StateLayout) -> None:
    key = "sk-ant-" + "a" * 40
    entry = record(
        layout,
        "s1",
        RecordRequest(
            tool="shell",
            args={"cmd": f"echo {key} " + "x" * 1000},
            outcome=f"ANTHROPIC_API_KEY={key} " + "y" * 1000,
        ),
    )
    raw = (layout.session_dir("s1") / "trail.jsonl").read_text()
    assert key not in raw
    assert len(entry.args_digest) == ARGS_DIGEST_MAX_CHARS
    assert len(entry.outcome) == OUTCOME_MAX_CHARS
    assert entry.outcome.endswith("…")


def test_secret_named_arguments_are_redacted(layout: StateLayout) -> None:
    entry = record(
        layout,
        "s1",
        RecordRequest(
            tool="login", args={"user": "me", "password": "hunter2", "api_key": "k1"}, outcome="ok"
        ),
    )
    assert "hunter2" not in entry.args_digest and "k1" not in entry.args_digest
    assert entry.args_digest.startswith('user="me" password=')


def test_filters(layout: StateLayout) -> None:
    for i in range(1, 31):
        rec(layout, "edit_file" if i % 3 == 0 else "read_file", path=f"src/m{i}.py")
    assert [e.step for e in read_trail(layout, "s1")] == list(range(11, 31))
    assert [e.step for e in read_trail(layout, "s1", count=3)] == [28, 29, 30]
    assert [e.step for e in read_trail(layout, "s1", count=None, tool="edit_file")] == list(
        range(3, 31, 3)
    )
    assert [e.step for e in read_trail(layout, "s1", file="m1")] == [1, *range(10, 20)]
    assert [e.step for e in read_trail(layout, "s1", from_step=5, to_step=8)] == [5, 6, 7, 8]
    with pytest.raises(SlateUnavailable):
        read_trail(layout, "other")
    with pytest.raises(UsageError):
        read_trail(layout, "s1", count=0)


def test_record_cli(run_cli, layout: StateLayout, workspace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    request = {"tool": "shell", "args": {"cmd": "ls"}, "outcome": "exit 0", "output": str(out)}
    result = run_cli(main, ["record", "--session", "s1", "-C", str(workspace)], json.dumps(request))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["step"] == 1
    assert json.loads(result.stdout)["output"] == str(out)
    listed = run_cli(main, ["trail", "--session", "s1", "-C", str(workspace), "--json"])
    assert json.loads(listed.stdout)["tool"] == "shell"


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        ('{"tool": "x", "args": {}, "outcome": "ok", "extra": 1}', "extra"),
        ('{"args": {}, "outcome": "ok"}', "tool"),
        ('{"tool": "x", "args": [], "outcome": "ok"}', "args"),
        ("not json", "not valid JSON"),
    ],
)
def test_record_refuses_bad_input(
    run_cli, layout: StateLayout, workspace: Path, stdin: str, problem: str
) -> None:
    result = run_cli(main, ["record", "--session", "s1", "-C", str(workspace)], stdin)
    assert result.exit_code == 2
    assert problem in result.stderr
    assert not (layout.session_dir("s1") / "trail.jsonl").exists()


@pytest.mark.parametrize("session", ["../escape", "a/b", "..", ".hidden", "x.jsonl"])
def test_traversal_session_ids_are_refused(
    run_cli, layout: StateLayout, workspace: Path, state_dir: Path, session: str
) -> None:
    stdin = '{"tool": "x", "args": {}, "outcome": "ok"}'
    result = run_cli(main, ["record", "--session", session, "-C", str(workspace)], stdin)
    assert result.exit_code == 2
    assert "invalid session id" in result.stderr
    assert list(state_dir.rglob("trail.jsonl")) == []


def test_concurrent_recorders_get_distinct_gapless_steps(layout: StateLayout) -> None:
    script = (
        "import sys\n"
        "from ax_slate import RecordRequest, record\n"
        "from libcommon.paths import state_layout\n"
        "layout = state_layout(sys.argv[1])\n"
        "for i in range(50):\n"
        "    record(layout, 's1', RecordRequest(tool='t', args={'i': i}, outcome='ok'))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(layout.workspace)]) for _ in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    assert [line["step"] for line in trail_lines(layout)] == list(range(1, 201))


def test_save_output_is_redacted(layout: StateLayout) -> None:
    path = save_output(layout, "s1", "token: ghp_" + "A" * 36 + "\nbody")
    assert path.parent == layout.session_dir("s1") / "outputs"
    assert "ghp_" not in path.read_text()
    assert path.read_text().endswith("\nbody")


@pytest.mark.parametrize("name", ["trail.jsonl", "trail.jsonl.partial", "trail.lock"])
def test_a_linked_trail_file_is_refused_and_nothing_written_through_it(
    layout: StateLayout, tmp_path: Path, name: str
) -> None:
    rec(layout)
    folder = layout.session_dir("s1")
    if name == "trail.jsonl.partial":
        with (folder / "trail.jsonl").open("ab") as handle:
            handle.write(b'{"step": 2')
    outside = tmp_path / "outside.txt"
    link = folder / name
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    with pytest.raises(OperationFailed, match="is a symbolic link"):
        rec(layout)
    assert not outside.exists()
