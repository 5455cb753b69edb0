"""``@plan`` / ``@review`` routing, the unknown-sigil refusal, and the task status lines."""

from __future__ import annotations

from agent.terminal.test_units import Clock, make

from ax_agent.terminal.sigils import Routed, route
from ax_agent.terminal.status import StatusLine


def test_plan_and_review_route_to_the_planner_and_the_inspector() -> None:
    planned = route("@plan split the parser in two")
    assert planned == Routed("plan", "planner", "split the parser in two")
    reviewed = route("  @review the lexer's error paths\nand its tests")
    assert isinstance(reviewed, Routed) and reviewed.role == "inspector"
    assert reviewed.request == "the lexer's error paths\nand its tests"
    text = reviewed.turn_text()
    assert text.startswith("the lexer's error paths")
    assert "delegate_task" in text and "role: inspector" in text and "label: review" in text


def test_an_unknown_sigil_is_refused_by_name_and_an_empty_one_asks_for_a_request() -> None:
    assert (
        route("@deploy now") == "@deploy is not a sigil (known: @plan, @review); nothing was sent"
    )
    assert route("@ plan") == "@ is not a sigil (known: @plan, @review); nothing was sent"
    refused = route("@" + "x" * 100)
    assert isinstance(refused, str) and refused.startswith("@" + "x" * 40 + "… is not a sigil")
    assert (
        route("@plan") == "@plan needs a request after it, e.g. @plan the parser's error handling"
    )


def test_a_line_that_does_not_start_with_at_is_no_sigil() -> None:
    assert route("mail me@example.com the plan") is None
    assert route("plan @review") is None


def test_each_running_task_gets_a_status_line_cleaned_of_control_bytes() -> None:
    screen, _, err = make(tty=True)
    line = StatusLine(screen, Clock())
    line.begin()
    line.set_tasks(
        ["look (explorer): step 2, read_file, 3s", "fix (executor): step 1, \x1b[31m, 1s"]
    )
    shown = line.lines()
    assert len(shown) == 3
    assert "look (explorer): step 2, read_file, 3s" in shown[1]
    assert "\x1b[31m" not in shown[2]
    line.set_tasks([])
    assert len(line.lines()) == 1
    line.end()
    assert "look (explorer)" in err.getvalue()
