"""``ax-slate archive``: the verb the process seam keeps messages with."""

from __future__ import annotations

from pathlib import Path

from ax_slate import open_session, search
from ax_slate.cli import main
from libcommon import jsonio
from libcommon.paths import state_layout


def test_a_message_is_archived_whole_and_its_row_printed(run_cli, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    layout = state_layout(workspace)
    open_session(layout, "s1")
    message = {"role": "tool", "ts": "t", "callId": "c1", "content": "line\n“two”"}
    args = ["archive", "--session", "s1", "-C", str(workspace)]
    first = run_cli(main, args, stdin=jsonio.dumps(message).decode())
    second = run_cli(main, args, stdin=jsonio.dumps(message).decode())
    assert (first.exit_code, jsonio.loads(first.stdout)) == (0, {"row": 1})
    assert jsonio.loads(second.stdout) == {"row": 2}
    assert search(layout, "s1", row=1).text == "[row 1, tool]\nc1\nline\n“two”"


def test_bad_input_is_refused_and_nothing_is_written(run_cli, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    layout = state_layout(workspace)
    open_session(layout, "s1")
    args = ["archive", "--session", "s1", "-C", str(workspace)]
    for stdin, problem in (("{not json", "not valid JSON"), ("[1, 2]", "must be a JSON object")):
        result = run_cli(main, args, stdin=stdin)
        assert result.exit_code == 2 and problem in result.stderr
    assert not (layout.session_dir("s1") / "archive.jsonl").exists()
