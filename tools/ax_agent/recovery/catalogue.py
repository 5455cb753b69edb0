"""The recovery catalogue: one entry per failure class, as data.

Each entry says what the class looks like (``signals``: the persisted signal
names, unsupported reasons and terminations that select it), what evidence a
diagnosis must rest on, how to look further, what may be done about it, how a
repair is proven (``regression``: check kinds; ``FAILED_KIND`` stands for the
kind that failed, so the proof always includes it), whether the harness may
let the model try it without a person (``auto``), and when to stop.
``unknown`` is a real answer: stop and escalate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FailureClass = Literal[
    "dependency-setup",
    "compile-type",
    "test-assertion",
    "lint-format",
    "runtime-process",
    "integration-conflict",
    "policy-approval",
    "timeout-resource",
    "preview-startup",
    "browser-verification",
    "unknown",
]
# In ``regression``: the kind of the check that failed.
FAILED_KIND = "$failed"


@dataclass(frozen=True)
class Entry:
    name: FailureClass
    summary: str
    signals: tuple[str, ...]
    evidence: tuple[str, ...]
    diagnostics: tuple[str, ...]
    actions: tuple[str, ...]
    regression: tuple[str, ...]
    auto: bool
    stop: tuple[str, ...]


CATALOGUE: dict[str, Entry] = {
    entry.name: entry
    for entry in (
        Entry(
            "dependency-setup",
            "the project's environment or toolchain is missing or cannot be fetched",
            (
                "unsupported: toolchain-unavailable",
                "unsupported: precondition-curable",
                "network-error",
                "dependency-unavailable",
            ),
            ("the unsupported reason and its cure, or the dependency the signal names",),
            ("ax-check detect: the unit, its environment and what is missing",),
            (
                "a person installs what the cure names (installs run third-party code)",
                "fix a misspelt dependency name or version in the manifest",
            ),
            (FAILED_KIND,),
            False,
            (
                "the same signature after the cure ran",
                "the registry or network is unreachable",
            ),
        ),
        Entry(
            "compile-type",
            "the code does not compile or does not type-check",
            ("compile-error", "type-error"),
            ("each finding's path, line and code",),
            ("read the named file around the named line",),
            ("edit the named file at the named place; change no test to silence it",),
            (FAILED_KIND,),
            True,
            (
                "the same signature after a change (the hypothesis was wrong: form a new one)",
                "the fix would change a public interface the plan does not name",
            ),
        ),
        Entry(
            "test-assertion",
            "tests ran and some failed",
            ("test-failed", "test-error", "package-failed", "no-tests-collected"),
            ("the failing test ids and their assertion output",),
            (
                "run_check test-targeted on the failing ids",
                "read the test and the code it calls",
            ),
            (
                "fix the code under test",
                "fix the test only when it asserts something the task changed on purpose",
            ),
            (FAILED_KIND,),
            True,
            (
                "the same signature after a change",
                "a fix would delete or weaken an assertion",
            ),
        ),
        Entry(
            "lint-format",
            "a linter or formatter reports findings, or a check rewrote the sources",
            ("lint", "source-changed"),
            ("each finding's path, line and rule; the files a check changed",),
            ("read the rule's documentation and the named line",),
            ("fix the named lines; format only the files the task touches",),
            (FAILED_KIND,),
            True,
            ("the same signature after a change", "the rule conflicts with another check"),
        ),
        Entry(
            "runtime-process",
            "the check's command could not start",
            ("termination: spawn-error",),
            ("the recipe's command and the spawn error",),
            ("ax-check detect; look at the program's path and permissions",),
            ("a person repairs the environment",),
            (FAILED_KIND,),
            False,
            ("the command still cannot start",),
        ),
        Entry(
            "integration-conflict",
            "a task's captured changes could not be applied to the workspace",
            ("task.applied: refused",),
            ("each refused path and why",),
            ("compare the workspace file with the task's base",),
            ("run the task again from the current workspace", "discard the capture"),
            (),
            False,
            ("the same paths are refused again",),
        ),
        Entry(
            "policy-approval",
            "the policy or a person refused the action",
            ("policy.decision: deny", "approval.resolved: no"),
            ("the rule that decided, or the person's answer",),
            ("read the policy decision's rule and reason",),
            ("ask the person; do not retry the same action another way",),
            (),
            False,
            ("always: a refusal is a decision, not a defect",),
        ),
        Entry(
            "timeout-resource",
            "the check ran out of time and was killed: no verdict",
            ("termination: timeout",),
            ("the command, its duration and the timeout",),
            ("run a narrower check (test-targeted) to find the slow part",),
            ("narrow the run", "a person raises the timeout"),
            (FAILED_KIND,),
            False,
            ("the same signature twice",),
        ),
        Entry(
            "preview-startup",
            "a preview server did not become ready",
            ("preview.failed",),
            ("the preview's reason and its log tail",),
            ("read the preview's log",),
            ("fix the start script or the code it loads",),
            (),
            False,
            ("the same reason twice",),
        ),
        Entry(
            "browser-verification",
            "a browser flow failed",
            ("check kind: browser",),
            ("the failing step and the last observed state",),
            ("run the flow again and read its findings",),
            ("fix the page the failing step names",),
            (FAILED_KIND,),
            False,
            ("the same signature after a change",),
        ),
        Entry(
            "unknown",
            "no recognised signal: the failure has no diagnosis yet",
            ("unclassified", "no signal", "task.failed"),
            ("the full output (recall_step) or the child's log",),
            ("read the whole output; run the narrowest check that fails",),
            ("a person decides: stop and escalate",),
            (FAILED_KIND,),
            False,
            ("always: unknown is escalated, never retried blindly",),
        ),
    )
}
