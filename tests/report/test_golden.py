"""Golden reports over small hand-written event streams, and the rule each one pins.

Each ``golden/<name>.jsonl`` has its expected ``.md`` and ``.json`` beside it:
the report must reproduce them byte for byte. The golden files were reviewed by
hand when written; regenerate them only deliberately (AX_UPDATE_GOLDEN=1) and
read the diff. The rule tests below assert the same verdicts directly, so a
golden regenerated carelessly still cannot hide a broken rule.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from ax_report.build import build_report, render_json
from ax_report.intake import read_jsonl

GOLDEN = Path(__file__).parent / "golden"
STREAMS = sorted(path.stem for path in GOLDEN.glob("*.jsonl"))


def report_of(name: str) -> tuple[dict[str, Any], str]:
    with (GOLDEN / f"{name}.jsonl").open("rb") as stream:
        return build_report(read_jsonl(stream))


def verdicts(document: dict[str, Any]) -> dict[str, str]:
    return {item["path"]: item["verdict"] for item in document["files"]}


@pytest.mark.parametrize("name", STREAMS)
def test_golden_report_is_reproduced_byte_for_byte(name: str) -> None:
    document, markdown = report_of(name)
    rendered = render_json(document)
    if os.environ.get("AX_UPDATE_GOLDEN") == "1":
        (GOLDEN / f"{name}.md").write_text(markdown)
        (GOLDEN / f"{name}.json").write_text(rendered)
    assert markdown == (GOLDEN / f"{name}.md").read_text()
    assert rendered == (GOLDEN / f"{name}.json").read_text()


def test_every_rule_has_a_golden_stream() -> None:
    expected = {"scope", "order", "veto", "never_completed", "resume_crash", "invalid", "tasks"}
    assert expected <= set(STREAMS)


def test_scope_a_run_checks_only_files_under_its_folder() -> None:
    document, markdown = report_of("scope")
    assert verdicts(document) == {
        "api/app.py": "CHECKED",  # check test, project api
        "docs/guide.md": "CHECKED",  # project "." narrowed to scope ["docs"]
        "lib/util.py": "UNCHECKED",  # its typecheck failed
        "web/ui.js": "CHECKED",  # npm test, cwd /ws/web
    }
    by_path = {item["path"]: item for item in document["files"]}
    assert by_path["web/ui.js"]["run"]["command"] == "npm test"
    assert by_path["api/app.py"]["run"] == {
        "run": "check",
        "kind": "test",
        "project": "api",
        "recipeId": "python-pytest",
        "seq": 9,
    }
    # An absolute path under the workspace is reported workspace-relative.
    assert "docs/guide.md" in by_path
    assert "`make check` in a folder outside the workspace" in markdown


def test_order_a_pass_must_come_after_the_last_change() -> None:
    document, markdown = report_of("order")
    assert verdicts(document) == {
        "before_only.py": "CHECKED",
        "failing.py": "UNCHECKED",  # the only run after it exited 1
        "settled.py": "CHECKED",
        "twice.py": "UNCHECKED",  # changed again after the pass
    }
    assert "check ran, exit 0" in markdown


def test_veto_a_kill_after_the_change_beats_any_exit_0() -> None:
    document, markdown = report_of("veto")
    assert verdicts(document) == {
        "api/killed_after_pass.py": "UNCHECKED",
        "api/pass_after_kill.py": "UNCHECKED",  # a later exit 0 does not lift the veto
        "lib/check_aborted.py": "UNCHECKED",  # an aborted check vetoes a passed one
        "web/elsewhere.js": "CHECKED",  # the kill was in api/, not web/
    }
    assert "killed (timeout): command `pytest --slow` in `api`" in markdown
    assert "killed: timeout after 30.0 s, no exit code" in markdown


def test_never_completed_commands_and_checks_say_effects_unknown() -> None:
    document, markdown = report_of("never_completed")
    commands = document["commands"]
    assert [run["outcome"] for run in commands] == ["never-completed", "spawn-error", "exited"]
    assert "`cargo test` in `.`, not sandboxed (landlock, workspace-write, not enforced): " \
        "STARTED but never completed: effects unknown" in markdown  # fmt: skip
    assert document["checks"][0]["verdict"] is None
    assert "build in `.` (recipe cargo-build): STARTED but never completed" in markdown
    # An end without a start has no cwd, so its exit 0 checks nothing.
    assert verdicts(document) == {"src/main.rs": "UNCHECKED"}


def test_resume_then_crash_never_shows_the_earlier_clean_end() -> None:
    document, markdown = report_of("resume_crash")
    end = document["header"]["end"]
    assert end["state"] == "open"
    assert (end["seq"], end["after"]) == (5, "session.started")
    assert "NOT ENDED" in markdown
    assert "reason: completed" not in markdown
    header = document["header"]
    assert header["started"] == "2026-11-30T10:00:00.000Z"
    assert (header["provider"], header["model"]) == ("anthropic", "claude-y")
    assert header["usage"] == {
        "cacheCreationInputTokens": 80,
        "cacheReadInputTokens": 80,
        "inputTokens": 150,
        "outputTokens": 25,
    }
    assert header["sandbox"]["enforced"] is True
    assert document["custom"] == {"ci.note": 1, "hook.format": 2}


def test_invalid_lines_are_listed_and_counted() -> None:
    document, markdown = report_of("invalid")
    assert document["events"] == {"read": 5, "invalid": 8}
    listed = {item["line"]: item["problem"] for item in document["problems"]["listed"]}
    assert sorted(listed) == [2, 3, 4, 5, 6, 7, 9, 11, 12]
    assert listed[4] == "blank line"
    assert "not valid JSON" in listed[2]
    assert "newer than this report" in listed[6]
    assert listed[7] == "seq 4: file.mutated: field 'path' is missing"
    assert listed[9] == "seq 6: command.ended: exitCode must be null when termination is 'timeout'"
    assert "used anyway" in listed[11]
    assert "8 invalid lines (see Input problems)" in markdown
    # The contradictory end (timeout with exit code 0) was refused, so it never reads as a pass.
    assert document["commands"][0]["outcome"] == "never-completed"


def test_approvals_list_what_never_ran_and_commands_only_what_did() -> None:
    document, markdown = report_of("approvals")
    approvals = document["approvals"]
    assert approvals["allowedWithoutQuestion"] == 1
    assert [(a["callId"], a.get("answer")) for a in approvals["asked"]] == [
        ("r2", "no"),
        ("r3", "yes"),
        ("r5", None),
    ]
    assert [(d["callId"], d["rule"]) for d in approvals["denied"]] == [("r4", "protected-path")]
    assert [u["callId"] for u in approvals["undecided"]] == ["r6"]
    assert [run["command"] for run in document["commands"]] == ["make test"]
    assert "rm -rf build" not in markdown.split("## Commands")[1].split("## Checks")[0]
    assert "abcdefghijklmnop1234" not in markdown  # the bearer token is redacted


def test_undo_is_folded_into_file_status_and_restoring_needs_a_new_check() -> None:
    document, markdown = report_of("undo")
    files = {item["path"]: item for item in document["files"]}
    assert (files["a.py"]["status"], files["a.py"]["reverted"]) == ("reverted", 2)
    assert files["new.py"]["status"] == "reverted"
    assert files["b.py"]["status"] == "modified"
    # pytest passed at seq 8, but undo changed a.py's bytes at seq 10: no claim survives that.
    assert verdicts(document) == {"a.py": "UNCHECKED", "b.py": "CHECKED", "new.py": "UNCHECKED"}
    assert "refused seq 6 `b.py`: drifted" in markdown


def test_report_is_identical_whatever_the_input_key_order() -> None:
    lines = (GOLDEN / "scope.jsonl").read_bytes().splitlines()
    reordered = [orjson.dumps(dict(reversed(list(orjson.loads(line).items())))) for line in lines]
    assert build_report(read_jsonl(reordered)) == report_of("scope")


def test_tasks_fold_integration_capture_loss_and_interruption() -> None:
    document, markdown = report_of("tasks")
    states = {item["id"]: item["state"] for item in document["tasks"]}
    assert states == {
        # Captured, one file applied and one refused: still integrating.
        "lexer": "integrating",
        # Completed with no capture: its work was lost, so it failed.
        "parser": "failed",
        "survey": "completed",
        # Open when the parent started again: interrupted, and its late end is ignored.
        "fixer": "interrupted",
    }
    lexer = document["tasks"][0]
    assert lexer["captured"] == ["src/lexer.py", "src/tokens.py"] and lexer["omitted"] == 3
    assert lexer["applied"] == ["src/tokens.py"]
    assert [item["path"] for item in lexer["refused"]] == ["src/lexer.py"]
    assert "worktree NOT removed" in markdown
    # A spare refused when parked after the task, and one refused when claimed for a task
    # (before its task.started): each is the task's.
    discarded = {item["id"]: item["sparesDiscarded"] for item in document["tasks"]}
    assert [len(discarded[key]) for key in ("lexer", "parser", "survey", "fixer")] == [1, 0, 0, 1]
    assert "still works in it" in discarded["lexer"][0]
    assert "differ from the base" in discarded["fixer"][0]
    assert markdown.count("spare worktree discarded") == 2
