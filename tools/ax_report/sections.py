"""The report's sections, one class each, and the registry that orders them.

A section names the event types it folds (``handles``), keeps only the small
state it needs while events stream past (``consume``), and renders that state
as JSON and as Markdown lines. Adding a section is one class here, one entry in
``SECTIONS`` and one test.

Wording rule: a section states what the events record and no more. A missing
event is reported as "not recorded", never filled in with a guess.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from ax_report.context import Context
from ax_report.intake import Event, InvalidLine
from ax_report.ledger import FileHistory, FileLedger
from ax_report.scope import check_regions, regions_of, relative
from ax_report.text import code, plural, region_label, seconds, shown

KILLS = ("timeout", "aborted")


class Section:
    name: ClassVar[str]
    title: ClassVar[str]
    # Event types it folds: exact names, "prefix.*" for a family, or "*" for every event.
    handles: ClassVar[tuple[str, ...]]

    def consume(self, event: Event, ctx: Context) -> None:
        raise NotImplementedError

    def to_json(self, ctx: Context) -> Any:
        raise NotImplementedError

    def to_markdown(self, ctx: Context) -> list[str]:
        raise NotImplementedError


def _none(lines: list[str]) -> list[str]:
    return lines if lines else ["None recorded."]


# --- header ------------------------------------------------------------------


class Header(Section):
    name = "header"
    title = "Session report"
    handles = ("session.*", "assistant.message", "memory.narrative", "sandbox.status")

    def __init__(self) -> None:
        self.workspace: str | None = None
        self.started: str | None = None
        self.lifecycle: dict[str, Any] | None = None
        self.provider: str | None = None
        self.model: str | None = None
        self.usage: Counter[str] = Counter()
        self.usage_seen = False
        self.sandbox: dict[str, Any] | None = None

    def consume(self, event: Event, ctx: Context) -> None:
        kind = event["type"]
        if kind.startswith("session."):
            self._lifecycle(event, event.get("ts"))
        elif kind in ("assistant.message", "memory.narrative"):
            # ax-agent's journal call at a session's end is a model call, though no message.
            self._usage(event.get("usage"))
        elif kind == "sandbox.status":
            status = event.get("sandbox")
            self.sandbox = dict(status if isinstance(status, dict) else event)

    def _lifecycle(self, event: Event, ts: Any) -> None:
        # The newest lifecycle event decides the end: a resume after a clean end reopens it.
        self.lifecycle = {
            "type": event["type"],
            "seq": event.get("seq"),
            "ts": ts if isinstance(ts, str) else None,
            "reason": event.get("reason") if event["type"] == "session.ended" else None,
        }
        if event["type"] != "session.started":
            return
        if self.started is None:
            self.started = self.lifecycle["ts"]
            self.workspace = event["workspace"]
        for key in ("provider", "model"):
            if isinstance(event.get(key), str):
                setattr(self, key, event[key])

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.usage_seen = True
        for key, value in usage.items():
            if type(value) is int:
                self.usage[key] += value

    def _end(self) -> dict[str, Any]:
        if self.lifecycle is None:
            return {"state": "not-recorded"}
        if self.lifecycle["type"] == "session.ended":
            return {"state": "ended", **_without_type(self.lifecycle)}
        return {"state": "open", "after": self.lifecycle["type"], **_without_type(self.lifecycle)}

    def _sandbox(self) -> dict[str, Any] | None:
        if self.sandbox is None:
            return None
        status = self.sandbox
        return {
            "backend": status.get("backend"),
            "profile": status.get("profile"),
            "enforced": status.get("enforced") is True,
            "confines": status.get("confines"),
            "doesNotConfine": status.get("doesNotConfine"),
        }

    def to_json(self, ctx: Context) -> Any:
        return {
            "session": ctx.session,
            "workspace": self.workspace,
            "started": self.started,
            "end": self._end(),
            "lastEventTs": ctx.last_ts,
            "provider": self.provider,
            "model": self.model,
            "usage": dict(sorted(self.usage.items())) if self.usage_seen else None,
            "sandbox": self._sandbox(),
            "eventsByType": dict(sorted(ctx.by_type.items())),
        }

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"# {self.title}: {ctx.session or '(session id not recorded)'}", ""]
        lines.append(f"- Workspace: {code(self.workspace) if self.workspace else 'not recorded'}")
        lines.append(f"- Started: {self.started or 'not recorded'}")
        lines.append(f"- End: {self._end_text(ctx)}")
        who = f"provider {self.provider or 'not recorded'}, model {self.model or 'not recorded'}"
        lines.append(f"- Model: {who}")
        if self.usage_seen:
            figures = ", ".join(f"{key} {value}" for key, value in sorted(self.usage.items()))
            lines.append(f"- Usage: {figures or 'no figures'}")
        else:
            lines.append("- Usage: not recorded")
        lines.append(f"- Sandbox: {self._sandbox_text()}")
        invalid = ctx.invalid + ctx.notes
        lines.append(
            f"- Events: {ctx.events} read, {plural(ctx.invalid, 'invalid line')}"
            + (" (see Input problems)" if invalid else "")
        )
        return lines

    def _end_text(self, ctx: Context) -> str:
        end = self._end()
        where = f"seq {end.get('seq')}, {end.get('ts') or 'time not recorded'}"
        if end["state"] == "not-recorded":
            return "not recorded (no session lifecycle event)"
        if end["state"] == "ended":
            return f"ended ({where}), reason: {shown(end.get('reason'))}"
        return (
            f"NOT ENDED: the newest lifecycle event is {end['after']} ({where}) and no "
            f"session.ended follows it (crashed, killed or still running); "
            f"last event at {ctx.last_ts or 'an unrecorded time'}"
        )

    def _sandbox_text(self) -> str:
        status = self._sandbox()
        if status is None:
            return "no sandbox.status recorded (each command's own boundary is under Commands)"
        backend = status["backend"] or "backend not recorded"
        profile = f", profile {status['profile']}" if status["profile"] else ""
        if not status["enforced"]:
            return f"{backend}{profile}: NOT enforced, nothing is confined by it"
        confines = _listing(status["confines"])
        gaps = _listing(status["doesNotConfine"])
        return f"{backend}{profile}: enforced; confines {confines}; does not confine {gaps}"


def _without_type(lifecycle: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in lifecycle.items() if key != "type"}


def _listing(value: Any) -> str:
    if value is None:
        return "(not recorded)"
    if isinstance(value, list):
        return ", ".join(shown(item) for item in value) or "(nothing listed)"
    return shown(value)


# --- files changed -----------------------------------------------------------


def _check_key(event: Event) -> tuple[str, ...]:
    """What pairs a check's completion with its start: kind, unit, scope and recipe."""
    scope = event["scope"]
    scopes = [str(item) for item in scope] if isinstance(scope, list) else [str(scope)]
    return (str(event["kind"]), str(event["project"]), str(event["recipeId"]), *scopes)


def _run_text(run: dict[str, Any]) -> str:
    """Names a command or check run for people: what, where, and its seq."""
    seq = f"seq {run['seq']}" if run.get("seq") is not None else "seq not recorded"
    if run["run"] == "command":
        return f"command {code(run['command'])} in {region_label(run['cwd'])} ({seq})"
    recipe = f", recipe {run['recipeId']}" if run.get("recipeId") else ""
    return f"check {run['kind']} in {region_label(run['project'])} ({seq}{recipe})"


def _shown_run(run: dict[str, Any]) -> dict[str, Any]:
    return {**run, "command": shown(run["command"])} if run["run"] == "command" else run


class Files(Section):
    """Per file: churn, and CHECKED only on a covering exit 0 of a run started after its
    last change (a run's end pairs with its start, in the same process life)."""

    name = "files"
    title = "Files changed"
    handles = (
        "session.started",
        "file.mutated",
        "undo.applied",
        "command.started",
        "command.ended",
        "check.started",
        "check.completed",
    )

    def __init__(self) -> None:
        self.ledger = FileLedger()
        self.outside: set[str] = set()
        # region -> (position, run) of the newest covering exit 0 (the position of its
        # start: a run that began before a change may not have seen it) and the newest kill
        self.passes: dict[str, tuple[int, dict[str, Any]]] = {}
        self.kills: dict[str, tuple[int, dict[str, Any]]] = {}
        # callId -> (position, region, run) of each command started and not yet ended
        self.running: dict[str, list[tuple[int, str | None, dict[str, Any]]]] = {}
        # a check's identity -> the positions of its starts not yet completed
        self.checking: dict[tuple[str, ...], list[int]] = {}

    def consume(self, event: Event, ctx: Context) -> None:
        kind = event["type"]
        if kind == "session.started":
            # A run that never ended died with the old process: nothing may pair with it.
            self.running.clear()
            self.checking.clear()
        elif kind == "check.started":
            self.checking.setdefault(_check_key(event), []).append(ctx.position)
        elif kind == "file.mutated":
            path = relative(event["path"], ctx.workspace)
            if path is None or path == "":
                path = event["path"]
                self.outside.add(path)
            self.ledger.mutated(path, event["pre"], event["post"], ctx.event_seq, ctx.position)
        elif kind == "undo.applied":
            self.ledger.undone(event["reverted"], ctx.event_seq, ctx.position)
        elif kind == "command.started":
            # The command is kept as recorded and only made presentable if a file names it.
            run = {"run": "command", "command": event["command"], "seq": ctx.event_seq}
            region = relative(event["cwd"], ctx.workspace)
            run["cwd"] = region
            self.running.setdefault(event["callId"], []).append((ctx.position, region, run))
        elif kind == "command.ended":
            self._command_ended(event, ctx)
        else:
            self._check_completed(event, ctx)

    def _command_ended(self, event: Event, ctx: Context) -> None:
        started = self.running.get(event["callId"])
        if not started:
            return  # without its start the cwd is unknown, so it covers nothing
        at, region, run = started.pop(0)
        if not started:
            del self.running[event["callId"]]
        if region is None:
            return
        self._record([region], event, {**run, "seq": ctx.event_seq}, at, ctx.position)

    def _check_completed(self, event: Event, ctx: Context) -> None:
        # A completion with no start of its own in this process passes nothing; its kill
        # still vetoes (a veto needs no proof: it can only make a file UNCHECKED).
        key = _check_key(event)
        starts = self.checking.get(key)
        at = starts.pop() if starts else None
        if not starts:
            self.checking.pop(key, None)
        regions = check_regions(event["project"], event["scope"], ctx.workspace)
        run = {
            "run": "check",
            "kind": event["kind"],
            "project": relative(event["project"], ctx.workspace),
            "recipeId": event["recipeId"],
            "seq": ctx.event_seq,
        }
        passed = event["verdict"] == "passed"
        self._record(regions, event, run, at, ctx.position, passed)

    def _record(
        self,
        regions: list[str],
        event: Event,
        run: dict[str, Any],
        started: int | None,
        ended: int,
        passed: bool = True,
    ) -> None:
        termination = event["termination"]
        if termination == "exited" and event["exitCode"] == 0 and passed:
            if started is None:
                return
            for region in regions:
                if region not in self.passes or self.passes[region][0] < started:
                    self.passes[region] = (started, run)
        elif termination in KILLS:
            for region in regions:
                self.kills[region] = (ended, {**run, "termination": termination})

    def _verdict(self, history: FileHistory) -> dict[str, Any]:
        if history.path in self.outside:
            return {"verdict": "UNCHECKED", "why": "outside-workspace", "run": None}
        passed: tuple[int, dict[str, Any]] | None = None
        killed: tuple[int, dict[str, Any]] | None = None
        for region in regions_of(history.path):
            found = self.passes.get(region)
            if found and found[0] > history.last_change and (not passed or found[0] > passed[0]):
                passed = found
            kill = self.kills.get(region)
            if kill and kill[0] > history.last_change and (not killed or kill[0] > killed[0]):
                killed = kill
        if killed is not None:
            return {
                "verdict": "UNCHECKED",
                "why": "killed-after-change",
                "run": _shown_run(killed[1]),
            }
        if passed is not None:
            return {"verdict": "CHECKED", "why": "check ran, exit 0", "run": _shown_run(passed[1])}
        return {"verdict": "UNCHECKED", "why": "no-exit-0-after-change", "run": None}

    def to_json(self, ctx: Context) -> Any:
        return [
            {
                "path": history.path,
                "status": history.status,
                "changes": history.changes,
                "reverted": history.reverted,
                "lastChangeSeq": history.last_change_seq,
                **self._verdict(history),
            }
            for history in self.ledger.sorted()
        ]

    def to_markdown(self, ctx: Context) -> list[str]:
        files = self.ledger.sorted()
        lines = [f"## {self.title} ({len(files)})", ""]
        body = []
        for history in files:
            verdict = self._verdict(history)
            churn = plural(history.changes, "change")
            if history.reverted:
                churn += f", {history.reverted} reverted"
            body.append(
                f"- {code(history.path)}: {history.status}, {churn}. "
                f"**{verdict['verdict']}**: {self._why(verdict, history)}"
            )
        return lines + _none(body)

    @staticmethod
    def _why(verdict: dict[str, Any], history: FileHistory) -> str:
        last = history.last_change_seq
        after = (
            f"after its last change (seq {last})" if last is not None else "after its last change"
        )
        if verdict["why"] == "outside-workspace":
            return "outside the workspace; no run covers it"
        if verdict["why"] == "killed-after-change":
            run = verdict["run"]
            return (
                f"killed ({run['termination']}): {_run_text(run)}, {after}; "
                "a kill vetoes any exit 0"
            )
        if verdict["why"] == "check ran, exit 0":
            return f"check ran, exit 0: {_run_text(verdict['run'])}, {after}"
        return f"no command or check covering it started {after} and exited 0"


# --- commands ----------------------------------------------------------------


def _boundary(sandbox: Any) -> dict[str, Any]:
    """Whether a command ran confined, stated only as far as the event records it."""
    if sandbox is None or sandbox in ("none", ""):
        return {"sandboxed": False, "description": "not sandboxed"}
    if isinstance(sandbox, str):
        return {"sandboxed": False, "description": f"sandbox {sandbox}, enforcement not recorded"}
    if isinstance(sandbox, dict):
        backend = sandbox.get("backend") or "backend not recorded"
        profile = sandbox.get("profile")
        named = f"{backend}, {profile}" if profile else str(backend)
        if sandbox.get("enforced") is True:
            return {"sandboxed": True, "description": f"sandboxed ({named}, enforced)"}
        if sandbox.get("enforced") is False or profile in (None, "none"):
            return {"sandboxed": False, "description": f"not sandboxed ({named}, not enforced)"}
        return {"sandboxed": False, "description": f"sandbox {named}, enforcement not recorded"}
    return {"sandboxed": False, "description": "boundary not recorded"}


class Commands(Section):
    name = "commands"
    title = "Commands"
    handles = ("command.started", "command.ended")

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.open: dict[str, list[int]] = {}

    def consume(self, event: Event, ctx: Context) -> None:
        call = event["callId"]
        if event["type"] == "command.started":
            self.open.setdefault(call, []).append(len(self.runs))
            self.runs.append(
                {
                    "callId": call,
                    "command": shown(event["command"]),
                    "cwd": relative(event["cwd"], ctx.workspace),
                    "boundary": _boundary(event["sandbox"]),
                    "startedSeq": ctx.event_seq,
                    "outcome": "never-completed",
                    "termination": None,
                    "exitCode": None,
                    "durationMs": None,
                    "endedSeq": None,
                }
            )
            return
        waiting = self.open.get(call)
        if waiting:
            run = self.runs[waiting.pop(0)]
            if not waiting:
                del self.open[call]
        else:
            run = {
                "callId": call,
                "command": None,
                "cwd": None,
                "boundary": {"sandboxed": False, "description": "boundary not recorded"},
                "startedSeq": None,
            }
            self.runs.append(run)
        termination = event["termination"]
        run["outcome"] = {"exited": "exited", "spawn-error": "spawn-error"}.get(
            termination, "killed" if termination in KILLS else "unknown"
        )
        run.update(
            termination=termination,
            exitCode=event["exitCode"],
            durationMs=event["durationMs"],
            endedSeq=ctx.event_seq,
        )

    def to_json(self, ctx: Context) -> Any:
        return self.runs

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.runs)})", ""]
        body = []
        for number, run in enumerate(self.runs, start=1):
            what = code(run["command"]) if run["command"] is not None else "(start not recorded)"
            where = region_label(run["cwd"]) if run["startedSeq"] is not None else "unknown cwd"
            boundary = run["boundary"]["description"]
            body.append(f"{number}. {what} in {where}, {boundary}: {_outcome_text(run)}")
        return lines + _none(body)


def _outcome_text(run: dict[str, Any]) -> str:
    outcome = run["outcome"]
    took = seconds(run["durationMs"]) if run["durationMs"] is not None else ""
    if outcome == "never-completed":
        return "STARTED but never completed: effects unknown"
    if outcome == "exited":
        return f"exited {run['exitCode']} in {took}"
    if outcome == "killed":
        return f"killed: {run['termination']} after {took}, no exit code"
    if outcome == "spawn-error":
        return "did not start (spawn-error), no exit code"
    return f"ended with termination {shown(run['termination'])}, no exit code"


# --- checks ------------------------------------------------------------------


class Checks(Section):
    name = "checks"
    title = "Checks"
    handles = ("session.started", "check.started", "check.completed")

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        # Paired as the Files section pairs them, so both say the same of a completion.
        self.open: dict[tuple[str, ...], list[int]] = {}

    def consume(self, event: Event, ctx: Context) -> None:
        if event["type"] == "session.started":
            # A start of a process that died stays "never completed"; nothing pairs with it.
            self.open.clear()
            return
        key = _check_key(event)
        if event["type"] == "check.started":
            self.open.setdefault(key, []).append(len(self.runs))
            self.runs.append(
                {
                    "kind": event["kind"],
                    "project": relative(event["project"], ctx.workspace),
                    "scope": event["scope"],
                    "recipeId": event["recipeId"],
                    "startedSeq": ctx.event_seq,
                    "verdict": None,
                    "reason": None,
                    "exitCode": None,
                    "termination": None,
                    "replayKey": None,
                    "completedSeq": None,
                }
            )
            return
        waiting = self.open.get(key)
        if waiting:
            run = self.runs[waiting.pop()]
            if not waiting:
                del self.open[key]
        else:
            run = {
                "kind": event["kind"],
                "project": relative(event["project"], ctx.workspace),
                "scope": event["scope"],
                "recipeId": event["recipeId"],
                "startedSeq": None,
            }
            self.runs.append(run)
        replay = event.get("replayKey")
        run.update(
            verdict=event["verdict"],
            reason=event["reason"],
            exitCode=event["exitCode"],
            termination=event["termination"],
            replayKey=replay if isinstance(replay, str) else None,
            completedSeq=ctx.event_seq,
        )

    def to_json(self, ctx: Context) -> Any:
        return self.runs

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.runs)})", ""]
        body = []
        for run in self.runs:
            recipe = f" (recipe {run['recipeId']})" if run["recipeId"] else ""
            key = (
                f"replay key {code(run['replayKey'])}"
                if run["replayKey"]
                else "replay key not recorded"
            )
            unpaired = (
                "; NO check.started in this process before it, so it checks no file"
                if run["startedSeq"] is None
                else ""
            )
            body.append(
                f"- {run['kind']} in {region_label(run['project'])}{recipe}: "
                f"{_verdict_text(run)}{unpaired}; {key}"
            )
        return lines + _none(body)


def _verdict_text(run: dict[str, Any]) -> str:
    verdict = run["verdict"]
    if verdict is None:
        return "STARTED but never completed: effects unknown"
    if verdict == "unsupported":
        return f"unsupported ({shown(run['reason']) if run['reason'] else 'reason not recorded'})"
    if run["termination"] == "exited":
        detail = f"exit {run['exitCode']}"
    elif run["termination"] is None:
        detail = "no exit code"
    else:
        detail = f"{run['termination']}, no exit code"
    reason = f", {shown(run['reason'])}" if run["reason"] else ""
    return f"{shown(verdict)} ({detail}{reason})"


# --- approvals and policy ----------------------------------------------------

_SUMMARY_KEYS = ("command", "path", "pattern", "url")


def _asked_what(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in _SUMMARY_KEYS:
            if key in tool_input:
                return shown(tool_input[key])
    return shown(tool_input)


def _described(request: dict[str, Any] | None, call: str) -> dict[str, Any]:
    """A request as the report shows it: the tool and a short, redacted summary of its input."""
    if request is None:
        return {"callId": call, "tool": None, "what": None, "requestedSeq": None}
    return {
        "callId": call,
        "tool": request["tool"],
        "what": _asked_what(request["input"]),
        "requestedSeq": request["requestedSeq"],
    }


class Approvals(Section):
    name = "approvals"
    title = "Approvals and policy"
    handles = ("tool.requested", "policy.decision", "approval.resolved", "tool.completed")

    def __init__(self) -> None:
        # calls waiting for a decision; dropped once decided, so this stays small
        self.requested: dict[str, dict[str, Any]] = {}
        self.asked: list[dict[str, Any]] = []
        self.asked_by_call: dict[str, int] = {}
        self.denied: list[dict[str, Any]] = []
        self.allowed = 0

    def consume(self, event: Event, ctx: Context) -> None:
        kind = event["type"]
        call = event["callId"]
        if kind == "tool.requested":
            # Kept raw until decided: most calls are allowed and never need describing.
            self.requested[call] = {
                "callId": call,
                "tool": event["tool"],
                "input": event["input"],
                "requestedSeq": ctx.event_seq,
            }
        elif kind == "policy.decision":
            self._decided(event, ctx)
        elif kind == "approval.resolved":
            self._answered(event, ctx)
        else:
            self.requested.pop(call, None)

    def _decided(self, event: Event, ctx: Context) -> None:
        call = event["callId"]
        request = self.requested.pop(call, None)
        if event["verdict"] == "allow":
            self.allowed += 1
            return
        entry = {
            **_described(request, call),
            "verdict": event["verdict"],
            "class": event["class"],
            "rule": event["rule"],
            "reason": event["reason"],
            "decisionSeq": ctx.event_seq,
        }
        if event["verdict"] == "deny":
            self.denied.append(entry)
            return
        # ask, or a verdict this report does not know: both wait for a person's answer
        entry.update(answer=None, scope=None, answerSeq=None)
        self.asked_by_call[call] = len(self.asked)
        self.asked.append(entry)

    def _answered(self, event: Event, ctx: Context) -> None:
        call = event["callId"]
        index = self.asked_by_call.get(call)
        if index is None:
            index = len(self.asked)
            self.asked_by_call[call] = index
            self.asked.append(
                {"callId": call, "tool": None, "what": None, "verdict": None, "decisionSeq": None}
            )
        self.asked[index].update(
            answer=event["answer"], scope=event["scope"], answerSeq=ctx.event_seq
        )

    def to_json(self, ctx: Context) -> Any:
        return {
            "allowedWithoutQuestion": self.allowed,
            "asked": self.asked,
            "denied": self.denied,
            "undecided": self._undecided(),
        }

    def _undecided(self) -> list[dict[str, Any]]:
        return [_described(request, call) for call, request in self.requested.items()]

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title}", ""]
        lines.append(f"- Allowed by policy without a question: {self.allowed}")
        for entry in self.asked:
            answer = (
                f"answered {shown(entry['answer'])}, scope {shown(entry['scope'])}"
                if entry.get("answer") is not None
                else "no answer recorded"
            )
            question = "" if entry["verdict"] is not None else " (no recorded question)"
            lines.append(f"- Asked: {_call_text(entry)}{question}: {answer}")
        for entry in self.denied:
            lines.append(
                f"- Denied: {_call_text(entry)}: rule {shown(entry['rule'])}, "
                f"{shown(entry['reason'])}"
            )
        for entry in self._undecided():
            lines.append(f"- Requested, no policy decision recorded: {_call_text(entry)}")
        return lines


def _call_text(entry: dict[str, Any]) -> str:
    tool = entry["tool"] or "tool not recorded"
    what = f" {code(entry['what'])}" if entry["what"] else ""
    return f"{tool}{what} (call {entry['callId']})"


# --- undo --------------------------------------------------------------------


class Undo(Section):
    name = "undo"
    title = "Undo"
    handles = ("undo.applied",)

    def __init__(self) -> None:
        self.undos: list[dict[str, Any]] = []

    def consume(self, event: Event, ctx: Context) -> None:
        refused = [
            {
                "seq": item.get("seq"),
                "path": item.get("path"),
                "reason": item.get("reason"),
            }
            for item in event["refused"]
            if isinstance(item, dict)
        ]
        self.undos.append(
            {
                "seq": ctx.event_seq,
                "paths": [path for path in event["paths"] if isinstance(path, str)],
                "reverted": list(event["reverted"]),
                "refused": refused,
            }
        )

    def to_json(self, ctx: Context) -> Any:
        return self.undos

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.undos)})", ""]
        body = []
        for undo in self.undos:
            reverted = ", ".join(f"seq {seq}" for seq in undo["reverted"]) or "nothing"
            paths = ", ".join(code(path) for path in undo["paths"]) or "no paths"
            body.append(f"- undo (seq {undo['seq']}) over {paths}: reverted {reverted}")
            for refusal in undo["refused"]:
                body.append(
                    f"  - refused seq {refusal['seq']} {code(str(refusal['path']))}: "
                    f"{shown(refusal['reason'])}"
                )
        return lines + _none(body)


# --- git checkpoints ---------------------------------------------------------


class Checkpoints(Section):
    """Git checkpoints the session created, restored, skipped and pruned, as its events
    record them. Whether a ref still exists is git's to say (``ax-log checkpoint list``):
    an event is what was done, not what is there now."""

    name = "checkpoints"
    title = "Checkpoints"
    handles = ("checkpoint.*",)

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def consume(self, event: Event, ctx: Context) -> None:
        kind = event["type"].removeprefix("checkpoint.")
        entry: dict[str, Any] = {"seq": ctx.event_seq, "event": kind}
        if kind == "created":
            entry.update(ref=event["ref"], kind=event["kind"], commit=event["commit"])
            entry.update(label=event.get("label"), skipped=len(event.get("skipped") or []))
        elif kind == "restored":
            refused = event.get("refused") or []
            entry.update(ref=event["ref"], callId=event["callId"])
            entry.update(restored=len(event["restored"]), removed=len(event["removed"]))
            entry.update(refused=[item.get("path") for item in refused if isinstance(item, dict)])
        elif kind == "skipped":
            entry.update(kind=event["kind"], reason=event["reason"])
        elif kind == "pruned":
            entry.update(refs=list(event["refs"]), kept=list(event.get("kept") or []))
        else:
            return
        self.entries.append(entry)

    def to_json(self, ctx: Context) -> Any:
        return self.entries

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.entries)})", ""]
        body = []
        for entry in self.entries:
            event = entry["event"]
            if event == "created":
                label = f" {shown(entry['label'])}" if entry["label"] else ""
                body.append(
                    f"- created {code(entry['ref'])} ({entry['kind']}, "
                    f"{str(entry['commit'])[:12]}){label}, seq {entry['seq']}"
                    + (f"; {entry['skipped']} path(s) left out" if entry["skipped"] else "")
                )
            elif event == "restored":
                refused = ", ".join(code(str(path)) for path in entry["refused"])
                body.append(
                    f"- restored {code(entry['ref'])}: {entry['restored']} file(s) written, "
                    f"{entry['removed']} removed (one undo: call {entry['callId']}), seq "
                    f"{entry['seq']}" + (f"; refused {refused}" if refused else "")
                )
            elif event == "skipped":
                body.append(
                    f"- not taken ({entry['kind']}): {shown(entry['reason'])}, seq {entry['seq']}"
                )
            else:
                body.append(
                    f"- pruned {len(entry['refs'])} ref(s), kept {len(entry['kept'])}, "
                    f"seq {entry['seq']}"
                )
        return lines + _none(body)


# --- delegated tasks ---------------------------------------------------------


class Tasks(Section):
    """Delegated tasks as their events record them: per task id, its role, how many
    attempts, the last attempt's state, the files captured (and how many the caps left
    out), applied and refused, the spare worktrees refused for it (claimed for it, or
    parked after it: ``worktree.discarded``) and worktrees that could not be removed. A
    task the plan
    names but no event does (queued, blocked, parent-owned) is not listed: the report
    reads the log, not the plan."""

    name = "tasks"
    title = "Tasks"
    handles = ("task.*", "worktree.removed", "worktree.discarded", "session.started")

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        # (group, taskId) of each attempt, to its task's entry.
        self.open: dict[tuple[str, str], dict[str, Any]] = {}
        # A spare refused while the group was prepared comes before its task.started.
        self.refused_spares: dict[tuple[str, str], list[str]] = {}

    def consume(self, event: Event, ctx: Context) -> None:
        kind = event["type"]
        if kind == "session.started":
            for entry in self.tasks.values():
                if entry["state"] in ("running", "awaiting-approval"):
                    entry["state"] = "interrupted"
            return
        group, task = event.get("group"), event.get("taskId")
        if not isinstance(group, str) or not isinstance(task, str):
            return
        if kind == "worktree.discarded" and (group, task) not in self.open:
            self.refused_spares.setdefault((group, task), []).append(str(event.get("reason")))
            return
        if kind == "task.started":
            entry = self.tasks.setdefault(task, {"id": task, "attempts": 0})
            entry.update(
                role=event.get("role"),
                group=group,
                seq=ctx.event_seq,
                state="running",
                captured=None,
                omitted=0,
                applied=[],
                refused=[],
                sparesDiscarded=self.refused_spares.pop((group, task), []),
                worktreeNotRemoved=[],
            )
            entry["attempts"] += 1
            self.open[(group, task)] = entry
            return
        attempt = self.open.get((group, task))
        if attempt is not None:
            self._attempt(attempt, kind, event)

    @staticmethod
    def _attempt(entry: dict[str, Any], kind: str, event: Event) -> None:
        ended = entry["state"] not in ("running", "awaiting-approval")
        if kind in ("task.completed", "task.failed", "task.cancelled") and not ended:
            entry["state"] = kind.removeprefix("task.")
            entry["reason"] = event.get("reason")
        elif kind == "task.asked" and not ended:
            entry["state"] = "awaiting-approval"
        elif kind == "task.answered" and entry["state"] == "awaiting-approval":
            entry["state"] = "running"
        elif kind == "task.captured":
            entry["captured"] = [str(path) for path in event.get("files") or []]
            omitted = event.get("omitted")
            entry["omitted"] = omitted if type(omitted) is int else 0
        elif kind == "task.applied":
            entry["applied"] = sorted(
                set(entry["applied"]) | {str(p) for p in event.get("applied") or []}
            )
            entry["refused"] = [
                {"path": str(item.get("path")), "reason": str(item.get("reason"))}
                for item in event.get("refused") or []
                if isinstance(item, dict)
            ]
        elif kind == "task.discarded":
            entry["state"] = "cancelled"
            entry["reason"] = event.get("reason")
        elif kind == "worktree.removed" and event.get("ok") is not True:
            entry["worktreeNotRemoved"].append(str(event.get("reason")))
        elif kind == "worktree.discarded":
            entry["sparesDiscarded"].append(str(event.get("reason")))

    def to_json(self, ctx: Context) -> Any:
        return [_task_view(self.tasks[key]) for key in self.tasks]

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.tasks)})", ""]
        body = []
        for key in self.tasks:
            view = _task_view(self.tasks[key])
            head = (
                f"- {code(view['id'])} ({view['role']}, group {code(view['group'])}): "
                f"{view['state']}, {plural(view['attempts'], 'attempt')}"
            )
            if view["reason"]:
                head += f" ({shown(str(view['reason']))})"
            body.append(head)
            if view["captured"] is not None:
                left = (
                    f"; {view['omitted']} left out (caps, outside the workspace)"
                    if view["omitted"]
                    else ""
                )
                body.append(f"  - captured {plural(len(view['captured']), 'file')}{left}")
            if view["applied"]:
                applied = ", ".join(code(path) for path in view["applied"])
                body.append(f"  - applied: {applied}")
            for refusal in view["refused"]:
                body.append(f"  - refused {code(refusal['path'])}: {shown(refusal['reason'])}")
            for why in view["sparesDiscarded"]:
                body.append(f"  - spare worktree discarded: {shown(why)}")
            for why in view["worktreeNotRemoved"]:
                body.append(f"  - worktree NOT removed: {shown(why)}")
        return lines + _none(body)


def _task_view(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with the executor's integration folded into its state."""
    state = entry["state"]
    captured = entry["captured"]
    reason = entry.get("reason")
    if state == "completed" and entry["role"] == "executor":
        if captured is None:
            state, reason = "failed", "it completed but its changes were never captured"
        elif not set(captured) <= set(entry["applied"]) or entry["refused"]:
            state = "integrating"
    return {
        "id": entry["id"],
        "role": entry["role"],
        "group": entry["group"],
        "state": state,
        "attempts": entry["attempts"],
        "reason": reason,
        "captured": captured,
        "omitted": entry["omitted"],
        "applied": entry["applied"],
        "refused": entry["refused"],
        "sparesDiscarded": entry["sparesDiscarded"],
        "worktreeNotRemoved": entry["worktreeNotRemoved"],
    }


# --- previews ----------------------------------------------------------------


class Previews(Section):
    """Dev servers started in the session: what answered, and why each stopped."""

    name = "previews"
    title = "Previews"
    handles = ("preview.*",)

    def __init__(self) -> None:
        self.previews: dict[str, dict[str, Any]] = {}

    def consume(self, event: Event, ctx: Context) -> None:
        preview_id = event.get("previewId")
        if not isinstance(preview_id, str):
            return
        entry = self.previews.setdefault(preview_id, {"id": preview_id, "seq": ctx.event_seq})
        kind = event["type"].removeprefix("preview.")
        if kind == "started":
            entry.update(script=event.get("script"), command=event.get("command"))
        elif kind == "ready":
            entry.update(url=event.get("url"), note=event.get("note"))
        elif kind == "failed":
            entry.update(failed=event.get("reason"))
        elif kind == "stopped":
            entry.update(
                stopped=event.get("reason"),
                exitCode=event.get("exitCode"),
                killVerified=event.get("killVerified"),
            )

    def to_json(self, ctx: Context) -> Any:
        return [self.previews[key] for key in sorted(self.previews)]

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({len(self.previews)})", ""]
        return lines + _none([_preview_text(self.previews[key]) for key in sorted(self.previews)])


def _preview_text(entry: dict[str, Any]) -> str:
    command = entry.get("command")
    what = shown(" ".join(command)) if isinstance(command, list) else "command not recorded"
    parts = [
        f"- {code(entry['id'])} ({shown(entry.get('script') or 'script not recorded')}: "
        f"{code(what)})"
    ]
    if entry.get("url"):
        parts.append(f"answered at {shown(entry['url'])} ({shown(entry.get('note') or '')})")
    if entry.get("failed"):
        parts.append(f"failed: {shown(entry['failed'])}")
    if entry.get("stopped"):
        kill = entry.get("killVerified")
        verified = "" if kill is None else ", kill verified" if kill else ", kill NOT verified"
        parts.append(f"stopped: {shown(entry['stopped'])}{verified}")
    else:
        parts.append("STARTED, no stop recorded: it may still be running (ax-preview list)")
    return "; ".join(parts)


# --- custom events -----------------------------------------------------------


class Custom(Section):
    name = "custom"
    title = "Custom events"
    handles = ("custom",)

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()

    def consume(self, event: Event, ctx: Context) -> None:
        self.kinds[event["kind"]] += 1

    def to_json(self, ctx: Context) -> Any:
        return dict(sorted(self.kinds.items()))

    def to_markdown(self, ctx: Context) -> list[str]:
        lines = [f"## {self.title} ({sum(self.kinds.values())})", ""]
        body = [f"- {code(kind)}: {count}" for kind, count in sorted(self.kinds.items())]
        return lines + _none(body)


# --- acceptance --------------------------------------------------------------


class Acceptance(Section):
    """The acceptance state: COMPLETE, or its blockers, and its caveats.

    ax-agent computes it (one function, ``ax_agent.acceptance``, from the plan and
    the same folds as the gates) and passes it in (``build_report(acceptance=…)``)
    for ``/report`` and the journal; alone, the report cannot read a plan, so it
    shows the state the newest ``/accept`` recorded, and says so.
    """

    name = "acceptance"
    title = "Acceptance"
    handles = ("session.accepted",)

    def __init__(self) -> None:
        self.recorded: dict[str, Any] | None = None
        self.live: dict[str, Any] | None = None

    def consume(self, event: Event, ctx: Context) -> None:
        unfinished = [str(item) for item in event.get("unfinished") or []]
        self.recorded = {
            "source": "accepted",
            "seq": ctx.event_seq,
            "complete": not unfinished,
            "blockers": unfinished,
            "caveats": [str(item) for item in event.get("caveats") or []],
        }

    def to_json(self, ctx: Context) -> Any:
        if self.live is not None:
            return {"source": "live", **self.live}
        return self.recorded

    def to_markdown(self, ctx: Context) -> list[str]:
        state = self.to_json(ctx)
        lines = [f"## {self.title}", ""]
        if state is None:
            return [*lines, "Not accepted: `/accept` records the acceptance state."]
        if state["source"] == "accepted":
            lines += [f"As `/accept` recorded it (seq {state['seq']}):", ""]
        verdict = "COMPLETE" if state["complete"] else f"NOT COMPLETE ({len(state['blockers'])})"
        lines.append(f"- **{verdict}**")
        lines += [f"- blocker: {shown(item)}" for item in state["blockers"]]
        lines += [f"- caveat: {shown(item)}" for item in state["caveats"]]
        return lines


# --- input problems ----------------------------------------------------------


class Problems(Section):
    """Lines the report could not use, each named, so none is dropped silently."""

    name = "problems"
    title = "Input problems"
    handles = ("log.recovered",)

    def consume(self, event: Event, ctx: Context) -> None:
        # A writer died mid-line and ax-log kept the fragment aside: worth a remark.
        fragment = (
            f"{event.get('bytes')} bytes" if type(event.get("bytes")) is int else "a fragment"
        )
        where = event.get("partialFile")
        ctx.note(
            InvalidLine(
                ctx.position,
                f"seq {ctx.event_seq}: the log moved a partial line ({fragment}) aside"
                + (f" to {where}" if isinstance(where, str) else ""),
            )
        )

    def to_json(self, ctx: Context) -> Any:
        return ctx.problems_json()

    def to_markdown(self, ctx: Context) -> list[str]:
        counts = f"{plural(ctx.invalid, 'invalid line')}, {plural(ctx.notes, 'remark')}"
        lines = [f"## {self.title} ({counts})", ""]
        body = [f"- line {line.line}: {line.problem}" for line in ctx.listed]
        unlisted = ctx.invalid + ctx.notes - len(ctx.listed)
        if unlisted:
            body.append(f"- … and {unlisted} more, not listed")
        return lines + _none(body)


SECTIONS: list[type[Section]] = [
    Header,
    Files,
    Commands,
    Checks,
    Approvals,
    Undo,
    Checkpoints,
    Tasks,
    Previews,
    Custom,
    Acceptance,
    Problems,
]
