"""The process seam (``AX_COMPOSE=process``): each verb runs the real ``ax-<tool> <verb>``.

The request goes to the child as JSON on stdin (or, where the verb takes
flags, as its flags), the answer is parsed from its stdout into the same
model the in-process seam returns, and an exit status is turned back into
the same ``libcommon.errors`` type the core function would have raised. An
abort sends the child SIGINT, which ax-exec and ax-check turn into a tree
kill and an "aborted" answer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from libcommon import jsonio
from libcommon.errors import (
    AxError,
    CorruptStore,
    ExitStatus,
    Fenced,
    NotTrusted,
    OperationFailed,
    Unsupported,
    UsageError,
)
from libcommon.paths import StateLayout

from . import VERBS, BeforeStored, OutputHook, unknown_verb
from .models import (
    AppendRequest,
    ArchiveRequest,
    CheckBrowserRequest,
    CheckDetectRequest,
    CheckpointCreateRequest,
    CheckpointListRequest,
    CheckpointPruneRequest,
    CheckRunRequest,
    FrameRequest,
    MapBuildRequest,
    MapRetrieveRequest,
    MapShowRequest,
    MemoryRequest,
    NoteKeyRequest,
    NoteSetRequest,
    PathsRequest,
    RecallRequest,
    SaveOutputRequest,
    SearchRequest,
    SetupPlanRequest,
    SetupRunRequest,
    SlateStartRequest,
    TrailRequest,
)

# How often a running child is checked for the caller's abort.
ABORT_POLL_S = 0.05
# After SIGINT, how long the child gets to kill its tree and answer before SIGKILL.
ABORT_GRACE_S = 10.0
# How a child ends when SIGINT finds it before its handler: killed by the signal, or
# through cliapp's KeyboardInterrupt answer.
_INTERRUPTED = (-signal.SIGINT, ExitStatus.ABORTED)


@dataclass
class ChildResult:
    status: int
    stdout: str
    stderr: str


def tool_script(tool: str, environ: Mapping[str, str]) -> str:
    """The ``ax-<tool>`` console script: beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / f"ax-{tool}"
    if beside.exists():
        return str(beside)
    found = shutil.which(f"ax-{tool}", path=environ.get("PATH", os.defpath))
    if found is None:
        raise OperationFailed(
            f"ax-{tool} is not installed, so the process seam cannot reach it",
            hint="install ax, or unset AX_COMPOSE to compose in-process",
        )
    return found


def error_from(tool: str, child: ChildResult) -> AxError:
    """The typed error a failed ``ax-<tool>`` stands for, with its own message and hint."""
    message, hint = _message_and_hint(tool, child.stderr)
    status = child.status
    if status == ExitStatus.USAGE:
        return UsageError(message, hint)
    if status == ExitStatus.UNTRUSTED:
        return NotTrusted(message, hint)
    if status == ExitStatus.FENCED:
        return Fenced(message, hint)
    if status == ExitStatus.UNSUPPORTED:
        return Unsupported(message, "process-seam", hint)
    return OperationFailed(message, hint)


def _message_and_hint(tool: str, stderr: str) -> tuple[str, str | None]:
    prefix = f"ax-{tool}: "
    message = None
    hint = None
    for line in stderr.splitlines():
        if line.startswith(prefix + "error: ") and message is None:
            message = line[len(prefix + "error: ") :]
        elif line.startswith(prefix + "hint: ") and hint is None:
            hint = line[len(prefix + "hint: ") :]
    if message is None:
        tail = stderr.strip().splitlines()[-1:] or ["no message"]
        message = f"ax-{tool} failed: {tail[0]}"
    return message, hint


class ProcessSeam:
    def __init__(self, layout: StateLayout, session_id: str, environ: Mapping[str, str]) -> None:
        self.layout = layout
        self.session_id = session_id
        self.environ = dict(environ)

    def call(
        self,
        verb: str,
        request: BaseModel,
        *,
        abort: threading.Event | None = None,
        on_output: OutputHook | None = None,
    ) -> Any:
        # on_output is not served: a child ax-exec reports its output when it ends.
        del on_output
        if verb not in VERBS:
            raise unknown_verb(verb)
        handler: Any = getattr(self, "_" + verb.replace(".", "_"))
        return handler(request, abort)

    # --- running a child ---------------------------------------------------------

    def _run(
        self,
        tool: str,
        args: list[str],
        stdin: str = "",
        abort: threading.Event | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> ChildResult:
        argv = [tool_script(tool, self.environ), *args]
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.environ,
            text=True,
        )
        watcher = None
        if abort is not None:
            done = threading.Event()
            watcher = threading.Thread(
                target=_interrupt_on_abort, args=(process, abort, done), daemon=True
            )
            watcher.start()
        try:
            out, err = process.communicate(stdin)
        finally:
            if watcher is not None:
                done.set()
                watcher.join()
        child = ChildResult(process.returncode, out, err)
        if child.status not in ok:
            raise error_from(tool, child)
        return child

    def _session_args(self) -> list[str]:
        return ["--session", self.session_id, "-C", str(self.layout.workspace)]

    # --- the verbs -----------------------------------------------------------------

    def _policy_decide(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_policy import Decision

        child = self._run(
            "policy",
            ["decide", "-C", str(self.layout.workspace), "-"],
            request.model_dump_json(by_alias=True),
        )
        return Decision.model_validate_json(child.stdout)

    def _exec_run(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_exec import ExecOutcome

        # ax-exec mirrors the child's status; any status with an outcome on stdout is an answer.
        child = self._run(
            "exec",
            ["run", "--request"],
            request.model_dump_json(by_alias=True),
            abort,
            ok=(*range(256), -signal.SIGINT),
        )
        if not child.stdout.strip():
            if abort is not None and abort.is_set() and child.status in _INTERRUPTED:
                # The SIGINT reached ax-exec before it installed its handler, which it
                # does before it starts anything: no command ran, so none is left.
                raise OperationFailed("aborted before ax-exec started the command: nothing ran")
            raise error_from("exec", child)
        return ExecOutcome.model_validate_json(child.stdout)

    def _log_append(self, request: AppendRequest, abort: threading.Event | None) -> Any:
        lines = "".join(jsonio.dumps_line(event).decode() for event in request.events)
        child = self._run("log", ["append", *self._session_args()], lines)
        return _json_lines(child.stdout)

    def _log_snapshot(self, request: PathsRequest, abort: threading.Event | None) -> Any:
        return self._paths_verb("snapshot", request)

    def _log_mutated(self, request: PathsRequest, abort: threading.Event | None) -> Any:
        return self._paths_verb("mutated", request)

    def _log_checkpoint_create(
        self, request: CheckpointCreateRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import CreatedView

        label = ["--label", request.label] if request.label is not None else []
        args = ["checkpoint", "create", *self._session_args(), "--kind", request.kind, *label]
        return CreatedView.model_validate_json(self._run("log", args).stdout)

    def _log_checkpoint_list(
        self, request: CheckpointListRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import CheckpointView

        child = self._run("log", ["checkpoint", "list", "--json", *self._session_args()])
        return [CheckpointView.model_validate(item) for item in jsonio.loads(child.stdout)]

    def _log_checkpoint_prune(
        self, request: CheckpointPruneRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import PruneView

        child = self._run("log", ["checkpoint", "prune", *self._session_args()], ok=(0, 1))
        return PruneView.model_validate_json(child.stdout)

    def _paths_verb(self, verb: str, request: PathsRequest) -> Any:
        # The CLI verb takes no extra events: before and after are appends of their own.
        stored: list[dict[str, Any]] = []
        if request.before:
            stored += self._log_append(AppendRequest(events=request.before), None)
        call = ["--call", request.call_id] if request.call_id is not None else []
        try:
            child = self._run("log", [verb, *self._session_args(), *call, "--", *request.paths])
        except AxError as exc:
            if request.before:
                raise BeforeStored(exc) from exc
            raise
        stored += _json_lines(child.stdout)
        if request.after:
            stored += self._log_append(AppendRequest(events=request.after), None)
        return stored

    def _check_run(self, request: CheckRunRequest, abort: threading.Event | None) -> Any:
        from ax_check import CheckResult

        args = [request.kind, *self._session_args(), "--json"]
        if request.project is not None:
            args += ["--project", request.project]
        for target in request.targets:
            args += ["--target", target]
        if request.timeout_s is not None:
            args += ["--timeout", repr(request.timeout_s)]
        args += ["--sandbox", request.sandbox or "none"]
        # 0 passed, 1 failed or error, 5 unsupported: each is a verdict with JSON on stdout.
        child = self._run("check", args, abort=abort, ok=(0, 1, 5))
        if not child.stdout.strip():
            raise error_from("check", child)
        result = CheckResult.model_validate_json(child.stdout)
        if child.status == ExitStatus.FAILED and "evidence was not recorded" in child.stderr:
            message, hint = _message_and_hint("check", child.stderr)
            raise OperationFailed(message, hint)
        return result

    def _check_detect(self, request: CheckDetectRequest, abort: threading.Event | None) -> Any:
        from ax_check import DetectReport

        child = self._run("check", ["detect", "-C", str(self.layout.workspace), "--json"])
        return DetectReport.model_validate_json(child.stdout)

    def _check_setup(self, request: SetupRunRequest, abort: threading.Event | None) -> Any:
        from ax_check import SetupResult

        args = ["setup", request.intent, *self._session_args(), "--json"]
        if request.project is not None:
            args += ["--project", request.project]
        if request.timeout_s is not None:
            args += ["--timeout", repr(request.timeout_s)]
        if request.expect_key is not None:
            args += ["--expect-key", request.expect_key]
        # 0 succeeded, 1 failed or error, 5 unsupported: each a verdict with JSON on stdout;
        # a refusal (a changed setup, a bad request) prints no JSON and raises.
        child = self._run("check", args, abort=abort, ok=(0, 1, 5))
        if not child.stdout.strip():
            raise error_from("check", child)
        result = SetupResult.model_validate_json(child.stdout)
        if child.status == ExitStatus.FAILED and "evidence was not recorded" in child.stderr:
            message, hint = _message_and_hint("check", child.stderr)
            raise OperationFailed(message, hint)
        return result

    def _check_browser(self, request: CheckBrowserRequest, abort: threading.Event | None) -> Any:
        from ax_check import FlowResult

        args = ["browser", *self._session_args(), "--json", "--flow", "-"]
        args += ["--origin", request.preview_url, "--project", request.project]
        # 0 passed, 1 failed or error, 5 unsupported: each a verdict with JSON on stdout.
        child = self._run("check", args, json.dumps(request.flow), abort=abort, ok=(0, 1, 5))
        if not child.stdout.strip():
            raise error_from("check", child)
        return FlowResult.model_validate_json(child.stdout)

    def _check_setup_plan(self, request: SetupPlanRequest, abort: threading.Event | None) -> Any:
        from ax_check import SetupPlan

        args = ["setup", request.intent, "-C", str(self.layout.workspace), "--dry-run", "--json"]
        if request.project is not None:
            args += ["--project", request.project]
        child = self._run("check", args, ok=(0, 5))
        return SetupPlan.model_validate_json(child.stdout)

    def _slate_start(self, request: SlateStartRequest, abort: threading.Event | None) -> Any:
        from ax_slate import SessionSlate

        extra = ["--continues", request.continues] if request.continues else []
        child = self._run("slate", ["start", *self._session_args(), *extra])
        return SessionSlate.model_validate_json(child.stdout)

    def _slate_record(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import TrailEntry

        child = self._run(
            "slate", ["record", *self._session_args()], request.model_dump_json(by_alias=True)
        )
        return TrailEntry.model_validate_json(child.stdout)

    def _slate_save_output(self, request: SaveOutputRequest, abort: threading.Event | None) -> Any:
        child = self._run("slate", ["save-output", *self._session_args()], request.text)
        return str(jsonio.loads(child.stdout)["path"])

    def _slate_note_set(self, request: NoteSetRequest, abort: threading.Event | None) -> Any:
        from ax_slate import Note

        child = self._run(
            "slate", ["note", "set", request.key, *self._session_args()], request.text
        )
        return Note.model_validate_json(child.stdout)

    def _slate_note_delete(self, request: NoteKeyRequest, abort: threading.Event | None) -> Any:
        child = self._run(
            "slate", ["note", "delete", request.key, *self._session_args()], ok=(0, 1)
        )
        if child.status == 0:
            return True
        message, _ = _message_and_hint("slate", child.stderr)
        if "has no note" in message:
            return False
        raise error_from("slate", child)

    def _slate_recall(self, request: RecallRequest, abort: threading.Event | None) -> Any:
        from ax_slate import RecallPage

        args = ["recall", *self._session_args(), "--step", str(request.step)]
        child = self._run("slate", [*args, "--page", str(request.page), "--json"])
        return RecallPage.model_validate_json(child.stdout)

    def _slate_search(self, request: SearchRequest, abort: threading.Event | None) -> Any:
        from ax_slate import SearchResult

        args = ["search", *self._session_args(), "--page", str(request.page), "--json"]
        if request.query is not None:
            args += ["--query", request.query]
        if request.row is not None:
            args += ["--row", str(request.row)]
        child = self._run("slate", args)
        return SearchResult.model_validate_json(child.stdout)

    def _slate_trail(self, request: TrailRequest, abort: threading.Event | None) -> Any:
        from ax_slate import TrailEntry

        args = ["trail", *self._session_args(), "--count", str(request.count), "--json"]
        for flag, value in (
            ("--tool", request.tool),
            ("--file", request.file),
            ("--from", request.from_step),
            ("--to", request.to_step),
        ):
            if value is not None:
                args += [flag, str(value)]
        child = self._run("slate", args)
        return [TrailEntry.model_validate(line) for line in _json_lines(child.stdout)]

    def _slate_frame(self, request: FrameRequest, abort: threading.Event | None) -> Any:
        from ax_slate import Frame

        budget = [] if request.budget is None else ["--budget", str(request.budget)]
        child = self._run("slate", ["frame", *self._session_args(), *budget, "--json"])
        return Frame.model_validate_json(child.stdout)

    def _slate_archive(self, request: ArchiveRequest, abort: threading.Event | None) -> Any:
        child = self._run(
            "slate", ["archive", *self._session_args()], jsonio.dumps(request.message).decode()
        )
        return int(jsonio.loads(child.stdout)["row"])

    def _memory_args(self, request: MemoryRequest) -> list[str]:
        args = ["-C", str(self.layout.workspace), "--json"]
        if request.digests is not None:
            args += [
                "--file-set-digest",
                request.digests.file_set,
                "--content-digest",
                request.digests.content,
            ]
        return args

    def _slate_memory_render(self, request: MemoryRequest, abort: threading.Event | None) -> Any:
        from ax_slate import MemoryInjection

        child = self._run("slate", ["memory", "render", *self._memory_args(request)])
        return MemoryInjection.model_validate_json(child.stdout)

    def _slate_memory_describe(self, request: MemoryRequest, abort: threading.Event | None) -> Any:
        from ax_slate import MemoryDocInfo

        # 1: a document is corrupt, and the list (which says so) is on stdout all the same.
        child = self._run("slate", ["memory", "list", *self._memory_args(request)], ok=(0, 1))
        if not child.stdout.strip():
            raise error_from("slate", child)
        rows = jsonio.loads(child.stdout)
        return [MemoryDocInfo.model_validate(row) for row in rows]

    def _slate_journal_write(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import JournalWriteResult

        child = self._run(
            "slate",
            ["memory", "write-journal", "-C", str(self.layout.workspace)],
            request.model_dump_json(by_alias=True),
        )
        return JournalWriteResult.model_validate_json(child.stdout)

    def _slate_codebase_write(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import CodebaseWriteResult

        child = self._run(
            "slate",
            ["memory", "write-codebase", "-C", str(self.layout.workspace)],
            request.model_dump_json(by_alias=True),
        )
        return CodebaseWriteResult.model_validate_json(child.stdout)

    def _slate_lesson_propose(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import LessonResult

        child = self._run(
            "slate",
            ["memory", "propose-lesson", *self._session_args()],
            request.model_dump_json(by_alias=True),
        )
        return LessonResult.model_validate_json(child.stdout)

    def _workspace_args(self) -> list[str]:
        return ["-C", str(self.layout.workspace)]

    def _map_build(self, request: MapBuildRequest, abort: threading.Event | None) -> Any:
        from ax_map import BuildSummary

        args = ["build", *self._workspace_args(), "--budget-seconds", repr(request.budget_s)]
        child = self._run("map", args, abort=abort)
        return BuildSummary.model_validate_json(child.stdout)

    def _map_show(self, request: MapShowRequest, abort: threading.Event | None) -> Any:
        args = ["show", *self._workspace_args(), "--chars", str(request.chars), "--json"]
        from ax_map import MapShown

        child = self._run("map", args, abort=abort)
        return MapShown.model_validate_json(child.stdout)

    def _map_retrieve(self, request: MapRetrieveRequest, abort: threading.Event | None) -> Any:
        # "--" ends the options: a query that starts with a dash is still the query.
        args = ["retrieve", *self._workspace_args(), "--limit", str(request.limit), "--json"]
        from ax_map import Retrieved

        child = self._run("map", [*args, "--", request.query], abort=abort)
        return Retrieved.model_validate_json(child.stdout)


def _json_lines(text: str) -> list[dict[str, Any]]:
    try:
        return [jsonio.loads(line) for line in text.splitlines() if line.strip()]
    except jsonio.JSONDecodeError as exc:
        raise CorruptStore("ax-log output", f"not JSON Lines ({exc})") from None


def _interrupt_on_abort(
    process: subprocess.Popen[str], abort: threading.Event, done: threading.Event
) -> None:
    """SIGINT the child once the caller aborts; SIGKILL it if it does not answer in time."""
    while not done.is_set():
        if abort.wait(ABORT_POLL_S):
            break
    if done.is_set():
        return
    try:
        process.send_signal(signal.SIGINT)
    except ProcessLookupError:
        return
    if not done.wait(ABORT_GRACE_S):
        process.kill()
