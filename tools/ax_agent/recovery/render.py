"""A diagnosis as the model reads it: the class, the evidence, and the catalogue's advice."""

from __future__ import annotations

from .catalogue import FAILED_KIND
from .classify import Diagnosis


def diagnosis_lines(diagnosis: Diagnosis) -> list[str]:
    entry = diagnosis.entry
    proof = [
        diagnosis.kind or "the failed check" if k == FAILED_KIND else k for k in entry.regression
    ]
    where = f"{diagnosis.kind} in unit {diagnosis.project}" if diagnosis.kind else None
    lines = [f"diagnosis: {entry.name} ({entry.summary})"]
    lines += [f"  evidence: {item}" for item in diagnosis.evidence]
    lines.append(f"  evidence it needs: {'; '.join(entry.evidence)}")
    lines.append(f"  look further: {'; '.join(entry.diagnostics)}")
    lines.append(f"  what may be done: {'; '.join(entry.actions)}")
    if proof:
        scope = f" (scope {', '.join(diagnosis.scope)})" if diagnosis.scope and where else ""
        lines.append(f"  a repair is proven by: {', '.join(proof)} passing again{scope}")
    lines.append(
        "  try it yourself: yes"
        if entry.auto
        else "  try it yourself: no, stop and tell the person (it needs their decision)"
    )
    lines.append(f"  stop when: {'; '.join(entry.stop)}")
    return lines
