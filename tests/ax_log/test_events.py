"""The event registry: every core type, its required fields, and the extension rule."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from ax_log.events import REGISTRY, EventBody, body_fields, parse_body, parse_stored, register
from libcommon.errors import UsageError

SHA = "a" * 64
SNAPSHOT = {"plan": None, "threads": [], "episodes": [], "notes": {}, "trail": []}

# One minimal valid event per core type (docs/events.md has the same table).
EXAMPLES: dict[str, dict[str, Any]] = {
    "session.started": {"workspace": "/w"},
    "session.ended": {"reason": "done"},
    "user.message": {"content": "hi"},
    "assistant.message": {"content": [{"type": "text", "text": "ok"}]},
    "tool.requested": {"callId": "c1", "tool": "read_file", "input": {"path": "a"}},
    "policy.decision": {
        "callId": "c1",
        "verdict": "allow",
        "class": "observe",
        "rule": "read-in-workspace",
        "reason": "inside the workspace",
    },
    "approval.resolved": {"callId": "c1", "answer": "yes", "scope": "once"},
    "tool.completed": {"callId": "c1", "ok": True, "summary": "read 3 lines"},
    "snapshot.stored": {"path": "a.txt", "sha256": None},
    "file.mutated": {"callId": None, "path": "a.txt", "pre": None, "post": SHA},
    "undo.applied": {"paths": ["a.txt"], "reverted": [3], "refused": []},
    "command.started": {"callId": "c2", "command": "ls", "cwd": ".", "sandbox": None},
    "command.ended": {
        "callId": "c2",
        "termination": "exited",
        "exitCode": 0,
        "durationMs": 12,
    },
    "check.started": {"kind": "test", "project": ".", "scope": ".", "recipeId": "pytest"},
    "check.completed": {
        "kind": "test",
        "project": ".",
        "scope": ".",
        "recipeId": "pytest",
        "verdict": "passed",
        "exitCode": 0,
        "termination": "exited",
        "reason": None,
    },
    "setup.started": {"intent": "install", "project": ".", "recipeId": "setup.npm-ci@."},
    "setup.completed": {
        "intent": "install",
        "project": ".",
        "recipeId": "setup.npm-ci@.",
        "verdict": "succeeded",
        "exitCode": 0,
        "termination": "exited",
        "reason": None,
    },
    "context.compacted": {
        "rewrite": 1,
        "reason": "forced",
        "tokensBefore": 150000,
        "tokensAfter": 90000,
        "saving": 60000,
        "invalidated": 90000,
        "elided": [{"callId": "c1", "form": "marker", "bytes": 48213, "sha256": SHA, "row": 12}],
        "cutFrom": 0,
        "cutTo": 40,
    },
    "context.held": {
        "reason": "cache",
        "tokensBefore": 120000,
        "saving": 3000,
        "invalidated": 80000,
        "pending": 2,
        "cutTo": 0,
        "notice": False,
    },
    "custom": {"kind": "note", "data": {"anything": [1, {"x": None}]}},
    "log.recovered": {"partialFile": "s.jsonl.partial", "offset": 10, "bytes": 4, "sha256": SHA},
    "preview.started": {
        "previewId": "p1",
        "script": "dev",
        "command": ["npm", "run", "dev"],
        "cwd": "/w",
        "pid": 42,
        "logPath": "/s/p1.log",
        "ttlS": 600.0,
    },
    "preview.ready": {
        "previewId": "p1",
        "url": "http://127.0.0.1:5173/",
        "pid": 42,
        "note": "socket ownership not verified",
    },
    "preview.failed": {"previewId": "p1", "reason": "no-port-announced"},
    "preview.stopped": {"previewId": "p1", "reason": "ttl", "exitCode": -15},
    "trust.verified": {"workspace": "/w", "basis": "store"},
    "config.loaded": {"sources": [{"layer": "user", "path": "/s/config.json", "present": False}]},
    "sandbox.status": {
        "backend": "landlock",
        "enforced": True,
        "profiles": ["read-only", "workspace-write"],
        "networkDenied": True,
    },
    "git.context": {"repo": False},
    "memory.loaded": {"documents": [{"path": "AGENT.md", "status": "loaded"}]},
    "memory.narrative": {
        "narrative": "unavailable",
        "documents": [{"doc": "journal", "path": "/s/JOURNAL.md", "bytes": 9, "sha256": "0" * 64}],
    },
    "map.built": {"status": "skipped"},
    "artifact.rendered": {
        "callId": "c1",
        "spec": "report.docspec.json",
        "specSha256": "0" * 64,
        "status": "rendered",
        "outputs": [
            {
                "format": "docx",
                "path": "report.docx",
                "sha256": "1" * 64,
                "bytes": 9,
                "pages": None,
                "deterministic": True,
            }
        ],
        "pdf": "not-asked",
    },
    "artifact.inspected": {
        "callId": "c2",
        "path": "report.pdf",
        "sha256": "2" * 64,
        "pages": [
            {"page": 1, "sha256": "3" * 64, "bytes": 9, "width": 10, "height": 14, "scale": 1.0}
        ],
        "pageCount": 1,
        "shown": False,
    },
    "thread.started": {"threadId": "s-1", "label": "fix-a", "task": "fix a"},
    "thread.message": {"threadId": "s-1", "sender": "worker", "text": "done"},
    "thread.ended": {"threadId": "s-1", "reason": "stopped"},
    "episode.recorded": {"threadId": "s-1", "summary": "a fixed"},
    "reminder.sent": {"kind": "parallel-calls", "text": "issue independent calls together"},
    "mcp.server": {"server": "docs", "state": "ready"},
    "mcp.call": {"server": "docs", "tool": "search", "durationMs": 12.5, "outcome": "ok"},
    "turn.completed": {"stopReason": "end_turn", "steps": 2},
    "turn.aborted": {"phase": "tool", "steps": 1},
    "provider.changed": {
        "provider": "script",
        "model": "m2",
        "previousProvider": "script",
        "previousModel": "m1",
    },
    "session.accepted": {"unfinished": ["the last turn did not finish (aborted)"]},
    "repair.dismissed": {"number": 2, "signature": "0123456789abcdef", "reason": "flaky CI"},
    "commit.created": {
        "oid": "b" * 40,
        "parent": "a" * 40,
        "branch": "main",
        "paths": ["src/app.py"],
        "warnings": ["HEAD is detached: the commit will be on no branch"],
    },
    "push.started": {
        "remote": "origin",
        "url": "https://example.com/r.git",
        "ref": "refs/heads/main",
        "oid": "b" * 40,
        "expected": "a" * 40,
        "force": False,
    },
    "push.completed": {
        "remote": "origin",
        "url": "https://example.com/r.git",
        "ref": "refs/heads/main",
        "oid": "b" * 40,
        "expected": None,
        "force": True,
        "ok": True,
        "verified": True,
        "reason": "pushed",
    },
    # Fresh-session handoff (issue 26).
    "handoff.purpose": {"attemptId": "h-1", "purpose": "post-check"},
    "handoff.failed": {"attemptId": "h-1", "stage": "idle-wait", "reason": "owned"},
    "handoff.transferred": {"attemptId": "h-1", "successor": "s-2", "purpose": "post-check"},
    "handoff.entry": {"sessionId": "s-2", "snapshot": SNAPSHOT},
    "handoff.state": {"snapshot": SNAPSHOT},
    "handoff.kickoff_claimed": {"sha256": SHA},
    "handoff.kickoff_failed": {"sha256": SHA, "reason": "killed"},
    "handoff.failover": {"attemptId": "f-1"},
    "handoff.continued": {"attemptId": "f-1"},
    # Plans and delegated tasks (issue 21).
    "plan.written": {"path": "/s/p.plan.json", "sha256": SHA, "status": "draft", "tasks": 2},
    "plan.approved": {"sha256": SHA},
    "task.started": {"group": "g1", "taskId": "parse", "role": "executor"},
    "task.asked": {"group": "g1", "taskId": "parse", "callId": "c1"},
    "task.observed": {"group": "g1", "taskId": "parse", "kind": "stall", "detail": "60 s"},
    "task.answered": {"group": "g1", "taskId": "parse", "callId": "c1", "answer": "no"},
    "task.captured": {"group": "g1", "taskId": "parse", "files": ["src/a.py"]},
    "task.completed": {"group": "g1", "taskId": "parse"},
    "task.failed": {"group": "g1", "taskId": "parse", "reason": "error"},
    "task.cancelled": {"group": "g1", "taskId": "parse", "reason": "user"},
    "task.applied": {"group": "g1", "taskId": "parse", "applied": ["src/a.py"]},
    "task.discarded": {"group": "g1", "taskId": "parse", "reason": "superseded"},
    "worktree.removed": {"group": "g1", "taskId": "parse", "path": "/s/wt/parse", "ok": True},
    "worktree.discarded": {"group": "g1", "taskId": "parse", "path": "/s/sp/1", "reason": "x"},
    "worktrees.swept": {},
    "review.finding": {
        "group": "g2",
        "taskId": "look",
        "number": 1,
        "severity": "high",
        "path": "src/a.py",
        "title": "drops the error",
    },
    "review.captured": {"group": "g2", "taskId": "look", "findings": 1},
    "review.triaged": {"finding": "g2/look/1", "action": "refute", "reason": "checked upstream"},
    "research.spent": {"callId": "c9", "tool": "web_search", "host": "api.tavily.com"},
    "research.settled": {"callId": "c9", "tool": "web_search", "chars": 120, "outcome": "ok"},
    "research.source": {
        "noteId": "r-0123456789ab",
        "claim": "libfoo 3.0 removed frobnicate()",
        "sources": ["https://libfoo.example/changelog"],
        "verdict": "single-source",
        "distinctSources": 1,
    },
    "research.captured": {"group": "g3", "taskId": "look-up"},
    "checkpoint.created": {
        "ref": "refs/ax/checkpoints/s1/1",
        "n": 1,
        "kind": "agent",
        "commit": "a" * 40,
        "tree": "b" * 40,
        "parent": None,
    },
    "checkpoint.restored": {
        "ref": "refs/ax/checkpoints/s1/1",
        "commit": "a" * 40,
        "callId": "restore-1",
        "restored": ["a.txt"],
        "removed": ["new.txt"],
    },
    "checkpoint.pruned": {"refs": ["refs/ax/checkpoints/s1/1"]},
    "checkpoint.skipped": {"kind": "pre-integration", "reason": "not inside a git working tree"},
    "model.uncatalogued": {
        "model": "my-local-model",
        "provider": "openai-compatible",
        "contextWindow": 128000,
        "maxOutput": 8192,
        "note": "not in ax's catalog",
    },
}


def test_every_registered_type_has_an_example() -> None:
    assert set(EXAMPLES) == set(REGISTRY)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_example_validates_and_round_trips(kind: str) -> None:
    body = parse_body({"type": kind, **EXAMPLES[kind]})
    fields = body_fields(body)
    assert fields["type"] == kind
    assert next(iter(fields)) == "type"
    for key, value in EXAMPLES[kind].items():
        assert fields[key] == value


@pytest.mark.parametrize(
    ("kind", "field"),
    [(kind, field) for kind, example in sorted(EXAMPLES.items()) for field in example],
)
def test_each_required_field_is_required(kind: str, field: str) -> None:
    optional = {
        ("session.ended", "workspace"),
        ("preview.stopped", "exitCode"),
        ("session.accepted", "unfinished"),
        ("commit.created", "warnings"),
    }
    data = {"type": kind, **{k: v for k, v in EXAMPLES[kind].items() if k != field}}
    if (kind, field) in optional:
        parse_body(data)
        return
    with pytest.raises(UsageError, match=f"field '{field}'"):
        parse_body(data)


def test_unknown_type_and_unknown_field_are_refused() -> None:
    with pytest.raises(UsageError, match=r"unknown event type 'tool\.exploded'"):
        parse_body({"type": "tool.exploded"})
    with pytest.raises(UsageError, match="field 'colour': unknown field"):
        parse_body({"type": "session.started", "workspace": "/w", "colour": "red"})
    with pytest.raises(UsageError, match="field 'type' is missing"):
        parse_body({"workspace": "/w"})


@pytest.mark.parametrize("key", ["v", "seq", "ts", "session"])
def test_envelope_fields_are_the_logs_to_assign(key: str) -> None:
    with pytest.raises(UsageError, match=f"field '{key}' is assigned by the log"):
        parse_body({"type": "custom", "kind": "k", "data": {}, key: 1})


def test_wrong_types_and_values_are_refused() -> None:
    with pytest.raises(UsageError, match="field 'verdict'"):
        parse_body({**EXAMPLES["policy.decision"], "type": "policy.decision", "verdict": "maybe"})
    with pytest.raises(UsageError, match="field 'pre'"):
        parse_body({**EXAMPLES["file.mutated"], "type": "file.mutated", "pre": "not-a-hash"})
    with pytest.raises(UsageError, match="field 'data'"):
        parse_body({"type": "custom", "kind": "note", "data": [1, 2]})
    with pytest.raises(UsageError, match="field 'kind'"):
        parse_body({"type": "custom", "kind": "", "data": {}})


def test_exit_code_only_when_exited() -> None:
    base = {"type": "command.ended", "callId": "c", "durationMs": 5}
    parse_body({**base, "termination": "timeout", "exitCode": None})
    with pytest.raises(UsageError, match="exitCode must be null"):
        parse_body({**base, "termination": "timeout", "exitCode": 0})
    with pytest.raises(UsageError, match="exitCode is required"):
        parse_body({**base, "termination": "exited", "exitCode": None})
    with pytest.raises(UsageError, match="termination"):
        parse_body({**base, "termination": "crashed", "exitCode": None})
    unsupported = {**EXAMPLES["check.completed"], "type": "check.completed"}
    unsupported.update(verdict="unsupported", exitCode=None, termination=None, reason="no-recipe")
    parse_body(unsupported)


def test_parse_stored_sets_the_envelope_aside() -> None:
    record = {
        "v": 1,
        "seq": 4,
        "ts": "t",
        "session": "s",
        "type": "custom",
        "kind": "k",
        "data": {},
    }
    assert body_fields(parse_stored(record)) == {"type": "custom", "kind": "k", "data": {}}
    with pytest.raises(UsageError, match="seq 4: unknown event type"):
        parse_stored({**record, "type": "nope"})


def test_registry_extends_additively_and_refuses_duplicates() -> None:
    class PlanUpdated(EventBody):
        type: Literal["plan.updated"] = "plan.updated"
        steps: list[str]

    try:
        register(PlanUpdated)
        assert body_fields(parse_body({"type": "plan.updated", "steps": ["a"]})) == {
            "type": "plan.updated",
            "steps": ["a"],
        }
        with pytest.raises(ValueError, match="already registered"):
            register(PlanUpdated)
    finally:
        REGISTRY.pop("plan.updated", None)

    class Bad(EventBody):
        type: Literal["NotDotted"] = "NotDotted"

    with pytest.raises(ValueError, match="dotted lowercase"):
        register(Bad)
