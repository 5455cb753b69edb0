"""report_finding: a reviewer task records one typed finding (the review ledger, issue 22).

It is a reviewer's only findings channel. The findings live in the task's own
``ReviewChannel`` (harness state, one per delegated task, built where the
task is spawned), so parallel reviewers never interleave: the channel, not
the model, names the group and the task. At the task's end the delegation
engine writes ``channel.events()`` into the parent's log, whatever the task's
status: each ``review.finding`` and one ``review.captured {findings: n}``
(0: a recorded clean review). A session with no channel (the parent, any
other role) is refused. The inspector's channel is *advisory*: its findings
are shown and block nothing.

What the call refuses, with nothing recorded: more than ``FINDINGS_MAX`` per
task; a path that is empty, absolute, holds ``..``, is not in its normal
form, would be changed by sanitising (control or marker text: an altered
path names no real file, so it is refused rather than escaped), leaves the
workspace (the containment rule: its real path, links followed) or names
nothing there. Titles and details are bounded and neutralised on the way in
(``tasks.review.clean_text``), because they are later shown in
harness-attributed lines. The channel is ax's own state, so the policy allows
the call like a note (``internal``).
"""

from __future__ import annotations

import os
import posixpath
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ax_policy import ToolFacts
from libcommon.paths import is_within

from ..tasks.review import ADVISORY_ROLE, BLOCKING_ROLE, clean_text
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded

# The roles whose registry holds report_finding (the inspector's is the advisory channel).
REVIEW_ROLES: frozenset[str] = frozenset({BLOCKING_ROLE, ADVISORY_ROLE})
# Findings one task may record.
FINDINGS_MAX = 50
FINDING_TITLE_MAX_CHARS = 200
FINDING_DETAIL_MAX_CHARS = 2000
FINDING_PATH_MAX_CHARS = 400

Severity = Literal["critical", "high", "medium", "low"]


class ReportFindingInput(ToolInput):
    severity: Severity = Field(
        description="critical: wrong or unsafe, must not ship; high: a real defect; medium: "
        "a weakness worth fixing; low: a nit."
    )
    path: str = Field(
        max_length=FINDING_PATH_MAX_CHARS,
        description="The file it is about, relative to the workspace root, e.g. 'src/app.py'.",
    )
    line: int = Field(default=0, ge=0, description="The line it is about (0: none).")
    title: str = Field(
        min_length=1,
        max_length=FINDING_TITLE_MAX_CHARS,
        description="The finding in one line: what is wrong.",
    )
    detail: str = Field(
        default="",
        max_length=FINDING_DETAIL_MAX_CHARS,
        description="Why it is wrong and how it shows (evidence: a failing input, a line).",
    )


@dataclass
class ReviewChannel:
    """One reviewer task's findings, in the order reported (harness state, per task)."""

    group: str
    task_id: str
    role: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def advisory(self) -> bool:
        return self.role == ADVISORY_ROLE

    def add(self, finding: dict[str, Any]) -> int:
        with self._lock:
            if len(self.findings) >= FINDINGS_MAX:
                raise Refused(
                    f"this task has recorded {FINDINGS_MAX} findings, the most one task may; "
                    "report the most important ones, merged where they share a cause"
                )
            number = len(self.findings) + 1
            self.findings.append({**finding, "number": number})
            return number

    def events(self) -> list[dict[str, Any]]:
        """The capture for the parent's log: every finding, then ``review.captured``."""
        with self._lock:
            found = list(self.findings)
        common = {"group": self.group, "taskId": self.task_id}
        extra = {"advisory": True} if self.advisory else {}
        return [
            *({"type": "review.finding", **common, **f, **extra} for f in found),
            {"type": "review.captured", **common, "findings": len(found), **extra},
        ]


def checked_path(raw: str, workspace: Path) -> str:
    """``raw`` when it names a file inside the workspace as written, else Refused."""
    if not raw:
        raise Refused("the path is empty; give the file the finding is about")
    if clean_text(raw, FINDING_PATH_MAX_CHARS) != raw:
        raise Refused(
            "the path holds control characters, marker text or surrounding spaces; it is "
            "refused rather than altered (an altered path names no real file)"
        )
    if raw.startswith("/") or ".." in raw.split("/"):
        raise Refused(f"{raw!r} is not a workspace-relative path (no leading '/', no '..')")
    if posixpath.normpath(raw) != raw:
        raise Refused(f"write the path as {posixpath.normpath(raw)!r}")
    root = Path(os.path.realpath(workspace))
    target = Path(os.path.realpath(root / raw))
    if not is_within(target, root):
        raise Refused(f"{raw!r} leads outside the workspace (through a symbolic link?)")
    if not target.exists():
        raise Refused(f"{raw!r} names nothing in the workspace")
    return raw


@guarded
def run(request: ReportFindingInput, ctx: ToolContext) -> ToolResult:
    channel = ctx.review
    if channel is None:
        raise Refused(
            "report_finding is for delegated reviewer tasks; this session is not one "
            "(a finding of your own belongs in your answer)"
        )
    finding: dict[str, Any] = {
        "severity": request.severity,
        "path": checked_path(request.path, ctx.workspace),
        "title": clean_text(request.title, FINDING_TITLE_MAX_CHARS),
        "detail": clean_text(request.detail, FINDING_DETAIL_MAX_CHARS),
    }
    if not finding["title"]:
        raise Refused("the title is empty once control characters are removed")
    if request.line:
        finding["line"] = request.line
    number = channel.add(finding)
    kind = "advisory finding" if channel.advisory else "finding"
    message = f"recorded {kind} {number} [{request.severity}] {request.path}"
    return ToolResult(
        content=message + f" ({FINDINGS_MAX - number} more allowed).", summary=message
    )


TOOL = ModelTool(
    name="report_finding",
    description=(
        "Record one review finding (reviewer tasks only): severity (critical, high, medium, "
        "low), the workspace-relative file, optionally the line, a one-line title and the "
        "detail. Findings are your review's only record: what you do not report here is not "
        "part of the review. Report each defect once; none at all records a clean review."
    ),
    input_model=ReportFindingInput,
    facts=ToolFacts(name="report_finding", internal=True),
    run=run,
)
