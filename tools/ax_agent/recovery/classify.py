"""Deterministic classification of a failure, from its event alone.

The order is load-bearing. A non-verdict termination wins first: an abort (the
person's Ctrl-C) produced no verdict and is no defect at all (None), a timeout
is ``timeout-resource``, a command that could not start ``runtime-process``.
A missing toolchain comes next (an unsupported ``toolchain-unavailable`` or
``precondition-curable``, or a fetch signal), because every diagnostic after
it is downstream noise. Then the parsers' persisted signals, most upstream
first; a failure with none of them is ``unknown``, never a guess. An
unsupported result for a capability reason (``no-recipe``, ``precondition``)
or a caller's ``bad-request`` is nothing to repair (None).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tasks.verify import scope_of
from .catalogue import CATALOGUE, Entry

# Signals, most upstream first: the first class any of them selects wins.
SIGNAL_CLASSES: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "dependency-setup",
        frozenset({"toolchain-unavailable", "network-error", "dependency-unavailable"}),
    ),
    ("compile-type", frozenset({"compile-error", "type-error"})),
    (
        "test-assertion",
        frozenset({"test-failed", "test-error", "package-failed", "no-tests-collected"}),
    ),
    ("lint-format", frozenset({"lint", "source-changed"})),
)
SETUP_REASONS = frozenset({"toolchain-unavailable", "precondition-curable"})
# Evidence lines a diagnosis keeps (its signals), at most.
DIAGNOSIS_EVIDENCE_MAX = 10


@dataclass(frozen=True)
class Diagnosis:
    """A failure's class and the evidence it rests on."""

    entry: Entry
    # What failed: a check (kind, unit, scope) or an event (its type).
    subject: str
    evidence: tuple[str, ...]
    # Same failure, same signature: what a newer attempt supersedes.
    signature: str
    kind: str | None = None
    project: str | None = None
    scope: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.entry.name


def _signature(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _signals(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = []
    for signal in event.get("signals") or []:
        if isinstance(signal, Mapping):
            found.append((str(signal.get("name")), str(signal.get("detail"))))
    return found


def check_class(event: Mapping[str, Any]) -> str | None:
    """The class of a ``check.completed`` (or a run_check result shaped like one)."""
    verdict = event.get("verdict")
    if verdict == "passed":
        return None
    termination = event.get("termination")
    if termination == "aborted":
        return None
    if termination == "timeout":
        return "timeout-resource"
    if termination == "spawn-error":
        return "runtime-process"
    if verdict == "unsupported":
        return "dependency-setup" if event.get("reason") in SETUP_REASONS else None
    names = {name for name, _detail in _signals(event)}
    if "toolchain-unavailable" in names or names & SIGNAL_CLASSES[0][1]:
        return "dependency-setup"
    if event.get("kind") == "browser":
        return "browser-verification"
    for name, selecting in SIGNAL_CLASSES[1:]:
        if names & selecting:
            return name
    return "unknown"


def classify_check(event: Mapping[str, Any]) -> Diagnosis | None:
    """A failing check's diagnosis (see the module docstring); None: nothing to repair."""
    name = check_class(event)
    if name is None:
        return None
    signals = sorted(set(_signals(event)))
    kind, project = str(event.get("kind")), str(event.get("project"))
    scope = scope_of(event.get("scope"))
    evidence = [f"{signal}: {detail}" for signal, detail in signals]
    if event.get("verdict") == "unsupported":
        evidence.insert(0, f"unsupported: {event.get('reason')}")
    elif event.get("termination") not in (None, "exited"):
        evidence.insert(0, f"termination: {event.get('termination')}")
    elif not signals:
        evidence.append(f"{event.get('verdict')} with exit code {event.get('exitCode')}, no signal")
    where = f" in unit {project}" if project != "." else ""
    return Diagnosis(
        entry=CATALOGUE[name],
        subject=f"{kind} check{where}",
        evidence=tuple(evidence[:DIAGNOSIS_EVIDENCE_MAX]),
        signature=_signature(name, kind, project, scope, signals),
        kind=kind,
        project=project,
        scope=scope,
    )


def classify_event(event: Mapping[str, Any]) -> Diagnosis | None:
    """Any failure event's diagnosis: checks, applies, previews, tasks, refusals."""
    kind = event.get("type")
    if kind == "check.completed":
        return classify_check(event)
    if kind == "task.applied" and event.get("refused"):
        refused = _refused(event.get("refused") or [])
        task = str(event.get("taskId"))
        return _diagnosis("integration-conflict", f"task {task}", refused, task, refused)
    if kind == "task.failed":
        task = str(event.get("taskId"))
        # "A task failed" is no diagnosis: the child's log holds the evidence.
        evidence = [f"task.failed: {event.get('reason')}", "see the child session's log"]
        return _diagnosis("unknown", f"task {task}", evidence, task, str(event.get("reason")))
    if kind == "preview.failed":
        preview = str(event.get("previewId"))
        evidence = [f"preview.failed: {event.get('reason')}"]
        return _diagnosis("preview-startup", f"preview {preview}", evidence, preview)
    if kind == "policy.decision" and event.get("verdict") == "deny":
        evidence = [f"policy.decision: deny ({event.get('rule')}: {event.get('reason')})"]
        return _diagnosis("policy-approval", f"call {event.get('callId')}", evidence)
    if kind == "approval.resolved" and event.get("answer") == "no":
        evidence = [f"approval.resolved: no ({event.get('approver')})"]
        return _diagnosis("policy-approval", f"call {event.get('callId')}", evidence)
    return None


def _refused(items: Sequence[Any]) -> list[str]:
    return sorted(
        f"{item.get('path')}: {item.get('reason')}" for item in items if isinstance(item, Mapping)
    )


def _diagnosis(name: str, subject: str, evidence: Sequence[str], *key: Any) -> Diagnosis:
    return Diagnosis(
        entry=CATALOGUE[name],
        subject=subject,
        evidence=tuple(evidence[:DIAGNOSIS_EVIDENCE_MAX]),
        signature=_signature(name, subject, *key),
    )
