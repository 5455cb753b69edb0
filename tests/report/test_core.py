"""build_report as a pure function: determinism, sections, scope and the CHECKED rule."""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ax_report import SECTIONS, build_report
from ax_report.build import render_json
from ax_report.intake import InvalidLine
from ax_report.scope import check_regions, covers, relative
from ax_report.sections import Approvals, Section
from libcommon import clock
from libcommon.errors import UsageError

WS = "/ws"
CHANGE = {"pre": None, "post": "p"}


def started(seq: int) -> dict[str, Any]:
    return {"seq": seq, "type": "session.started", "workspace": WS}


def mutated(seq: int, path: str) -> dict[str, Any]:
    return {
        "seq": seq,
        "type": "file.mutated",
        "callId": None,
        "path": path,
        "pre": None,
        "post": "p",
    }


def command(seq: int, call: str, cwd: str) -> dict[str, Any]:
    return {
        "seq": seq,
        "type": "command.started",
        "callId": call,
        "command": "run",
        "cwd": cwd,
        "sandbox": None,
    }


def ended(seq: int, call: str, termination: str, code: int | None) -> dict[str, Any]:
    return {
        "seq": seq,
        "type": "command.ended",
        "callId": call,
        "termination": termination,
        "exitCode": code,
        "durationMs": 5,
    }


def check_started(seq: int, project: str) -> dict[str, Any]:
    return {
        "seq": seq,
        "type": "check.started",
        "kind": "test",
        "project": project,
        "scope": ".",
        "recipeId": "r",
    }


def completed(
    seq: int, project: str, verdict: str, termination: str, code: int | None
) -> dict[str, Any]:
    return {
        **check_started(seq, project),
        "type": "check.completed",
        "verdict": verdict,
        "exitCode": code,
        "termination": termination,
        "reason": None,
    }


def check(
    seq: int, project: str, verdict: str, termination: str, code: int | None
) -> list[dict[str, Any]]:
    """A check run: its start, then its completion."""
    return [check_started(seq, project), completed(seq + 1, project, verdict, termination, code)]


def verdicts(events: list[Any]) -> dict[str, str]:
    document, _ = build_report(events)
    return {item["path"]: item["verdict"] for item in document["files"]}


def test_folders_are_compared_by_component_not_by_prefix() -> None:
    events = [
        started(1),
        mutated(2, "api/a.py"),
        mutated(3, "web2/b.js"),
        command(4, "c", "web"),
        ended(5, "c", "exited", 0),
    ]
    assert verdicts(events) == {"api/a.py": "UNCHECKED", "web2/b.js": "UNCHECKED"}
    assert covers("web", "web/b.js") and not covers("web", "web2/b.js")
    assert covers("", "anything/at/all")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (".", ""),
        ("", ""),
        ("api/./x/../y", "api/y"),
        ("/ws", ""),
        ("/ws/api", "api"),
        ("/wsx/api", None),
        ("../api", None),
        ("/elsewhere", None),
    ],
)
def test_paths_are_normalised_against_the_workspace(raw: str, expected: str | None) -> None:
    assert relative(raw, WS) == expected


def test_an_absolute_cwd_without_a_recorded_workspace_covers_nothing() -> None:
    assert relative("/ws/api", None) is None
    events = [mutated(1, "a.py"), command(2, "c", "/ws"), ended(3, "c", "exited", 0)]
    assert verdicts(events) == {"a.py": "UNCHECKED"}


def test_check_scope_narrows_within_the_project_and_never_widens_it() -> None:
    assert check_regions("api", ".", WS) == ["api"]
    assert check_regions("api", ["api/tests", "api/src"], WS) == ["api/src", "api/tests"]
    assert check_regions(".", "web", WS) == ["web"]
    assert check_regions("api", "web", WS) == []  # a scope outside the unit covers nothing
    assert check_regions("../other", ".", WS) == []


def test_a_check_must_pass_exit_0_and_exit_to_count() -> None:
    events = [
        started(1),
        mutated(2, "a.py"),
        *check(3, ".", "failed", "exited", 1),
        *check(5, ".", "unsupported", "exited", 0),  # contradictory: not a pass
        mutated(7, "b.py"),
        *check(8, ".", "passed", "exited", 0),
        mutated(10, "c.py"),
        *check(11, ".", "error", "timeout", None),
    ]
    assert verdicts(events) == {"a.py": "UNCHECKED", "b.py": "UNCHECKED", "c.py": "UNCHECKED"}
    assert verdicts(events[:9]) == {"a.py": "CHECKED", "b.py": "CHECKED"}


def test_a_pass_counts_only_from_a_run_started_after_the_change_in_the_same_process() -> None:
    passed = ("passed", "exited", 0)
    lone = [started(1), mutated(2, "a.py"), completed(3, ".", *passed)]
    assert verdicts(lone) == {"a.py": "UNCHECKED"}  # no start: it proves nothing
    began_before = [
        started(1),
        check_started(2, "."),
        mutated(3, "a.py"),
        completed(4, ".", *passed),
    ]
    assert verdicts(began_before) == {"a.py": "UNCHECKED"}
    command_before = [
        started(1),
        command(2, "c", "."),
        mutated(3, "a.py"),
        ended(4, "c", "exited", 0),
    ]
    assert verdicts(command_before) == {"a.py": "UNCHECKED"}
    # A start from a process that died pairs with nothing after the restart.
    dead = [mutated(2, "a.py"), check_started(3, "."), started(4), completed(5, ".", *passed)]
    assert verdicts([started(1), *dead]) == {"a.py": "UNCHECKED"}
    dead_command = [
        mutated(2, "a.py"),
        command(3, "c", "."),
        started(4),
        ended(5, "c", "exited", 0),
    ]
    assert verdicts([started(1), *dead_command]) == {"a.py": "UNCHECKED"}
    # Another scope's start does not pair either; the run's own start does.
    other = {**check_started(3, "."), "scope": ["tests"]}
    assert verdicts([started(1), mutated(2, "a.py"), other, completed(4, ".", *passed)]) == {
        "a.py": "UNCHECKED"
    }
    assert verdicts([started(1), mutated(2, "a.py"), *check(3, ".", *passed)]) == {
        "a.py": "CHECKED"
    }


def test_a_browser_pass_never_marks_a_file_checked() -> None:
    # The event exactly as ax-check records a passing flow: the flow's verdict, no exit
    # code and no termination, so no file-CHECKED correlation can count it.
    # Its start is there too, so the run is paired: only the missing exit code keeps it out.
    from ax_check.browser import completed_event, started_event
    from ax_check.flow import FlowResult

    flow_pass = completed_event(FlowResult(verdict="passed", origin="http://127.0.0.1:1"), "k")
    assert (flow_pass["exitCode"], flow_pass["termination"]) == (None, None)
    flow = [{"seq": 3, **started_event()}, {"seq": 4, **flow_pass}]
    events = [started(1), mutated(2, "a.py"), *flow]
    assert verdicts(events) == {"a.py": "UNCHECKED"}
    # The same place checked by a command that exited 0 is CHECKED: the browser was the gap.
    assert verdicts([*events, *check(5, ".", "passed", "exited", 0)]) == {"a.py": "CHECKED"}


def test_output_is_byte_identical_whatever_the_clock() -> None:
    events = [started(1), mutated(2, "a.py"), command(3, "c", "."), ended(4, "c", "exited", 0)]
    first = build_report(events)
    with clock.use(clock.StepClock(datetime(1999, 1, 1, tzinfo=UTC))):
        second = build_report(list(events))
    assert render_json(first[0]) == render_json(second[0])
    assert first[1] == second[1]


def test_events_may_be_any_iterable_and_are_not_needed_afterwards() -> None:
    def stream() -> Any:
        yield started(1)
        yield mutated(2, "a.py")

    document, _ = build_report(stream())
    assert document["events"] == {"read": 2, "invalid": 0}


def test_invalid_line_items_are_counted_with_their_own_line_numbers() -> None:
    document, markdown = build_report([started(1), InvalidLine(7, "torn"), 42])
    assert document["events"] == {"read": 1, "invalid": 2}
    assert document["problems"]["listed"] == [
        {"line": 7, "problem": "torn"},
        {"line": 3, "problem": "not a JSON object but int"},
    ]
    assert "- line 7: torn" in markdown


def test_invalid_lines_beyond_the_listing_cap_are_still_counted() -> None:
    from ax_report.context import LISTED_PROBLEMS_MAX

    items = [InvalidLine(n, "bad") for n in range(1, LISTED_PROBLEMS_MAX + 6)]
    document, markdown = build_report(items)
    problems = document["problems"]
    assert problems["invalid"] == LISTED_PROBLEMS_MAX + 5
    assert (len(problems["listed"]), problems["unlisted"]) == (LISTED_PROBLEMS_MAX, 5)
    assert "… and 5 more, not listed" in markdown


def test_one_section_can_be_asked_for() -> None:
    events = [started(1), mutated(2, "a.py")]
    document, markdown = build_report(events, ["files"])
    assert set(document) == {"format", "events", "files"}
    assert markdown.startswith("## Files changed (1)")
    assert "# Session report" not in markdown


def test_an_unknown_section_is_refused_naming_the_choices() -> None:
    with pytest.raises(UsageError) as caught:
        build_report([], ["plans"])
    assert "plans" in caught.value.message
    assert caught.value.hint is not None and "files" in caught.value.hint


def test_the_registry_renders_every_section_in_order() -> None:
    names = [section.name for section in SECTIONS]
    assert names == [
        "header",
        "files",
        "commands",
        "checks",
        "approvals",
        "undo",
        "checkpoints",
        "tasks",
        "previews",
        "custom",
        "acceptance",
        "problems",
    ]
    document, _ = build_report([started(1)])
    assert list(document)[2:] == names
    assert all(issubclass(section, Section) for section in SECTIONS)


def test_decided_calls_leave_no_state_behind() -> None:
    approvals = Approvals()
    from ax_report.context import Context

    ctx = Context()
    for n in range(1000):
        call = f"c{n}"
        approvals.consume({"type": "tool.requested", "callId": call, "tool": "t", "input": {}}, ctx)
        approvals.consume(
            {
                "type": "policy.decision",
                "callId": call,
                "verdict": "allow",
                "class": "read",
                "rule": "r",
                "reason": "x",
            },
            ctx,
        )
    assert approvals.allowed == 1000
    assert approvals.requested == {} and approvals.asked == [] and approvals.denied == []


# --- the CHECKED rule against a naive oracle -----------------------------------

PATHS = ["a.py", "api/x.py", "api/sub/y.py", "web/z.js", "web2/w.js"]
CWDS = [".", "api", "api/sub", "web", "/ws/web", "/ws", "../out", "/elsewhere", "web2/"]
ENDINGS = [
    ("exited", 0),
    ("exited", 1),
    ("timeout", None),
    ("aborted", None),
    ("spawn-error", None),
]

action = st.one_of(
    st.tuples(st.just("mutate"), st.sampled_from(PATHS)),
    st.tuples(
        st.just("run"), st.sampled_from(CWDS), st.sampled_from([*ENDINGS, None])
    ),  # None: never ends
    st.tuples(st.just("check"), st.sampled_from([".", "api", "web"]), st.sampled_from(ENDINGS)),
)


def oracle(actions: list[tuple[Any, ...]]) -> dict[str, str]:
    """The rule restated as plainly as possible, scanning the whole history per file."""

    def region(raw: str) -> str | None:
        path = posixpath.normpath(raw if raw.startswith("/") else posixpath.join(WS, raw))
        return "" if path == WS else path[len(WS) + 1 :] if path.startswith(WS + "/") else None

    runs = []  # (index, region, passed, killed)
    last_change: dict[str, int] = {}
    for index, item in enumerate(actions):
        if item[0] == "mutate":
            last_change[item[1]] = index
        elif item[2] is not None:
            termination, code = item[2]
            passed = termination == "exited" and code == 0
            runs.append((index, region(item[1]), passed, termination in ("timeout", "aborted")))
    result = {}
    for path, changed in last_change.items():
        after = [
            run
            for run in runs
            if run[0] > changed
            and run[1] is not None
            and (run[1] == "" or path == run[1] or path.startswith(run[1] + "/"))
        ]
        good = any(run[2] for run in after) and not any(run[3] for run in after)
        result[path] = "CHECKED" if good else "UNCHECKED"
    return result


def to_events(actions: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    events = [started(1)]
    for index, item in enumerate(actions):
        seq = len(events) + 1
        if item[0] == "mutate":
            events.append(mutated(seq, item[1]))
        elif item[0] == "run":
            events.append(command(seq, f"c{index}", item[1]))
            if item[2] is not None:
                events.append(ended(seq + 1, f"c{index}", *item[2]))
        else:
            termination, code = item[2]
            verdict = "passed" if (termination, code) == ("exited", 0) else "failed"
            events += check(seq, item[1], verdict, termination, code)
    return events


def test_the_checks_section_pairs_runs_as_the_files_section_does() -> None:
    passed = ("passed", "exited", 0)
    dead = [started(1), check_started(2, "."), started(3), completed(4, ".", *passed)]
    document, markdown = build_report(dead)
    assert [(run["startedSeq"], run["completedSeq"]) for run in document["checks"]] == [
        (2, None),
        (None, 4),
    ]
    lines = [line for line in markdown.splitlines() if line.startswith("- test in")]
    assert lines == [
        "- test in `.` (recipe r): STARTED but never completed: effects unknown; replay key "
        "not recorded",
        "- test in `.` (recipe r): passed (exit 0); NO check.started in this process before "
        "it, so it checks no file; replay key not recorded",
    ]
    document, markdown = build_report([started(1), *check(2, ".", *passed)])
    assert [(run["startedSeq"], run["completedSeq"]) for run in document["checks"]] == [(2, 3)]
    assert "NO check.started" not in markdown


@settings(max_examples=300, deadline=None)
@given(st.lists(action, max_size=25))
def test_checked_matches_the_naive_oracle(actions: list[tuple[Any, ...]]) -> None:
    assert verdicts(to_events(actions)) == oracle(actions)


def test_a_recovered_partial_line_is_remarked_on() -> None:
    recovered = {
        "seq": 2,
        "type": "log.recovered",
        "partialFile": "s.jsonl.partial",
        "offset": 10,
        "bytes": 17,
        "sha256": "0" * 64,
    }
    document, markdown = build_report([started(1), recovered])
    assert document["problems"]["remarks"] == 1
    assert "seq 2: the log moved a partial line (17 bytes) aside to s.jsonl.partial" in markdown


def test_checkpoints_created_restored_skipped_and_pruned_are_listed() -> None:
    ref = "refs/ax/checkpoints/s1/1"
    events = [
        started(1),
        {"seq": 2, "type": "checkpoint.created", "ref": ref, "n": 1, "kind": "agent",
         "commit": "a" * 40, "tree": "b" * 40, "parent": None, "label": "before fmt",
         "skipped": [{"path": "big.bin", "reason": "large-file", "files": 1}]},
        {"seq": 3, "type": "checkpoint.skipped", "kind": "pre-integration",
         "reason": "session s1 already holds 20 checkpoints", "callId": "c1"},
        {"seq": 4, "type": "checkpoint.restored", "ref": ref, "commit": "a" * 40,
         "callId": "restore-1", "restored": ["a.txt"], "removed": ["new.txt"],
         "refused": [{"path": "b.txt", "reason": "drifted"}]},
        {"seq": 5, "type": "checkpoint.pruned", "refs": [ref], "kept": []},
    ]  # fmt: skip
    document, markdown = build_report(events)
    assert [entry["event"] for entry in document["checkpoints"]] == [
        "created",
        "skipped",
        "restored",
        "pruned",
    ]
    assert document["checkpoints"][2]["refused"] == ["b.txt"]
    assert "## Checkpoints (4)" in markdown
    assert "1 file(s) written, 1 removed (one undo: call restore-1)" in markdown
    assert "refused `b.txt`" in markdown and "1 path(s) left out" in markdown


def test_acceptance_shows_the_recorded_state_or_the_one_ax_agent_computed() -> None:
    accepted = {"type": "session.accepted", "seq": 2, "unfinished": ["task a is queued"],
                "complete": False, "caveats": ["repair 1. DISMISSED"]}  # fmt: skip
    document, markdown = build_report([started(1), accepted], only=["acceptance"])
    assert document["acceptance"]["source"] == "accepted"
    assert "As `/accept` recorded it (seq 2)" in markdown
    assert "- **NOT COMPLETE (1)**" in markdown and "- blocker: task a is queued" in markdown
    assert "- caveat: repair 1. DISMISSED" in markdown
    live = {"complete": True, "blockers": [], "caveats": []}
    document, markdown = build_report([started(1), accepted], acceptance=live)
    assert document["acceptance"] == {"source": "live", **live}
    assert "- **COMPLETE**" in markdown and "blocker" not in markdown.split("## Acceptance")[1]
