"""record_source: a researcher records one finding (web research, issue 25).

One falsifiable claim, the URLs it rests on and a corroboration verdict
(``research.findings``: "corroborated" on fewer than two distinct sources is
refused, so is a URL naming no public source or a claim sanitising would
alter). A recorded finding is a ``research.source`` event in the task's log,
reaches the parent's log at the task's end (``webresearch.ResearchLedger``),
and is folded into the project's RESEARCH.md at once (idempotent by note id).
Findings are context, never verification: no research event marks a file
CHECKED or satisfies a gate; acceptance names the weakly sourced ones as
caveats. The policy allows it like a note (``internal``): it sends nothing.
"""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts

from ..research.errors import ResearchError
from ..research.findings import CLAIM_MAX_CHARS, SOURCES_MAX, Verdict, finding
from ..webresearch import fold_findings
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error
from .research_call import refusal

FINDINGS_PER_TASK_MAX = 30


class RecordSourceInput(ToolInput):
    claim: str = Field(
        min_length=1,
        max_length=CLAIM_MAX_CHARS,
        description="One falsifiable claim, in one plain line (e.g. 'libfoo 3.0 removed "
        "frobnicate()').",
    )
    sources: list[str] = Field(
        min_length=1,
        max_length=SOURCES_MAX,
        description="The URLs the claim rests on, as the provider returned them.",
    )
    verdict: Verdict = Field(
        description="corroborated (two or more distinct sources agree), single-source, "
        "disputed (sources disagree) or unverified."
    )


def run(request: RecordSourceInput, ctx: ToolContext) -> ToolResult:
    session = ctx.session
    if session is None:
        return error("record_source runs only inside a session")
    ledger = session.research_ledger
    if len(ledger.findings) >= FINDINGS_PER_TASK_MAX:
        return error(f"this session has recorded {FINDINGS_PER_TASK_MAX} findings, the most")
    try:
        item = finding(request.claim, list(request.sources), request.verdict)
    except ResearchError as exc:
        return error(refusal(exc))
    fold_findings(session.layout, [item])
    recorded = item.as_json()
    ledger.findings.append(recorded)
    session.record({"type": "research.source", **recorded})
    message = (
        f"recorded finding {item.id} ({item.verdict}, {recorded['distinctSources']} source(s))"
    )
    return ToolResult(content=message + "; it is in the project's RESEARCH.md.", summary=message)


TOOL = ModelTool(
    name="record_source",
    description=(
        "Record one research finding (researchers only): one falsifiable claim, the URLs "
        "it rests on, and a verdict: corroborated (two or more distinct sources), "
        "single-source, disputed or unverified. Findings are your research's record; "
        "they are kept for 30 days in the project's RESEARCH.md and never verify code."
    ),
    input_model=RecordSourceInput,
    facts=ToolFacts(name="record_source", internal=True),
    run=run,
)
