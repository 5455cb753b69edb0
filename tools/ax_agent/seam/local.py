"""The in-process seam: each verb calls the owning tool's public function.

This is the default composition. It calls exactly what the tool's own CLI
verb calls, so ``AX_COMPOSE=process`` gives the same answers and the same
events (the end-to-end test compares them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from libcommon.errors import AxError
from libcommon.paths import StateLayout

from . import BeforeStored, OutputHook, unknown_verb
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


class LocalSeam:
    def __init__(
        self,
        layout: StateLayout,
        session_id: str,
        environ: Mapping[str, str],
        policy_config: Any,
    ) -> None:
        self.layout = layout
        self.session_id = session_id
        self.environ = environ
        self.policy_config = policy_config
        # The snapshot records this process took, so log.mutated need not reread the log.
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._verbs: dict[str, Callable[[Any, threading.Event | None], Any]] = {
            "policy.decide": self._decide,
            "exec.run": self._exec,
            "log.append": self._append,
            "log.snapshot": self._snapshot,
            "log.mutated": self._mutated,
            "check.run": self._check,
            "check.detect": self._detect,
            "check.setup": self._setup,
            "check.setup_plan": self._setup_plan,
            "check.browser": self._browser,
            "slate.start": self._slate_start,
            "slate.record": self._record,
            "slate.save_output": self._save_output,
            "slate.note_set": self._note_set,
            "slate.note_delete": self._note_delete,
            "slate.recall": self._recall,
            "slate.search": self._search,
            "slate.trail": self._trail,
            "slate.frame": self._frame,
            "slate.archive": self._archive,
            "slate.memory_render": self._memory_render,
            "slate.memory_describe": self._memory_describe,
            "slate.journal_write": self._journal_write,
            "slate.codebase_write": self._codebase_write,
            "slate.lesson_propose": self._lesson_propose,
            "map.build": self._map_build,
            "map.show": self._map_show,
            "map.retrieve": self._map_retrieve,
            "log.checkpoint_create": self._checkpoint_create,
            "log.checkpoint_list": self._checkpoint_list,
            "log.checkpoint_prune": self._checkpoint_prune,
        }

    def call(
        self,
        verb: str,
        request: BaseModel,
        *,
        abort: threading.Event | None = None,
        on_output: OutputHook | None = None,
    ) -> Any:
        if verb == "exec.run":
            return self._exec(request, abort, on_output)
        handler = self._verbs.get(verb)
        if handler is None:
            raise unknown_verb(verb)
        return handler(request, abort)

    def _decide(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_policy import decide_request, list_durable_grants

        # The same call `ax-policy decide` makes, with the configuration loaded at start.
        return decide_request(
            request,
            self.layout.workspace,
            config=self.policy_config,
            durable=list_durable_grants(self.layout.root, self.layout.workspace),
            state_dir=self.layout.root,
        )

    def _exec(
        self, request: Any, abort: threading.Event | None, on_output: OutputHook | None = None
    ) -> Any:
        from ax_exec import run_managed

        return run_managed(request, abort=abort, on_output=on_output, environ=self.environ)

    def _append(self, request: AppendRequest, abort: threading.Event | None) -> Any:
        from ax_log import append_events

        return append_events(self.layout, self.session_id, request.events)

    def _checkpoint_create(
        self, request: CheckpointCreateRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import CreatedView, create_checkpoint

        result = create_checkpoint(
            self.layout,
            self.session_id,
            kind=request.kind,
            label=request.label,
            environ=self.environ,
        )
        return CreatedView.model_validate(result.to_json())

    def _checkpoint_list(
        self, request: CheckpointListRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import CheckpointView, list_checkpoints

        found = list_checkpoints(self.layout, self.session_id, self.environ)
        return [CheckpointView.model_validate(item.to_json()) for item in found]

    def _checkpoint_prune(
        self, request: CheckpointPruneRequest, abort: threading.Event | None
    ) -> Any:
        from ax_log import PruneView, prune_session

        result = prune_session(self.layout, self.session_id, self.environ)
        return PruneView.model_validate(result.to_json())

    def _snapshot(self, request: PathsRequest, abort: threading.Event | None) -> Any:
        from ax_log import snapshot_events

        records = self._store(
            request, lambda: snapshot_events(self.layout, request.paths, request.call_id)
        )
        for record in records:
            if record["type"] == "snapshot.stored":
                self._snapshots[record["path"]] = record
        return records

    def _mutated(self, request: PathsRequest, abort: threading.Event | None) -> Any:
        from ax_log import latest_snapshots, mutation_events, workspace_path

        def events() -> list[Any]:
            relative = [workspace_path(self.layout, raw)[1] for raw in request.paths]
            known = (
                self._snapshots
                if all(path in self._snapshots for path in relative)
                else latest_snapshots(self.layout, self.session_id)
            )
            return mutation_events(
                self.layout, self.session_id, request.paths, request.call_id, snapshots=known
            )

        return self._store(request, events)

    def _store(self, request: PathsRequest, own: Callable[[], list[Any]]) -> list[Any]:
        """One batch: ``before``, the verb's own events, ``after`` (see PathsRequest)."""
        from ax_log import append_events

        try:
            events = own()
        except BaseException as exc:
            if request.before:
                append_events(self.layout, self.session_id, request.before)
                if isinstance(exc, AxError):
                    raise BeforeStored(exc) from exc
            raise
        batch = [*request.before, *events, *request.after]
        return append_events(self.layout, self.session_id, batch)

    def _detect(self, request: CheckDetectRequest, abort: threading.Event | None) -> Any:
        from ax_check import detect

        return detect(self.layout.workspace, self.environ)

    def _check(self, request: CheckRunRequest, abort: threading.Event | None) -> Any:
        from ax_check import DEFAULT_TIMEOUT_S, CheckRequest, Hooks, run_check

        check = CheckRequest(
            kind=request.kind,
            workspace=self.layout.workspace,
            project=request.project,
            targets=tuple(request.targets),
            session=self.session_id,
            timeout_s=DEFAULT_TIMEOUT_S if request.timeout_s is None else request.timeout_s,
            sandbox=request.sandbox or "none",  # type: ignore[arg-type]  # checked by ax-check
        )
        return run_check(check, Hooks(abort=abort, environ=self.environ))

    def _browser(self, request: CheckBrowserRequest, abort: threading.Event | None) -> Any:
        from ax_check import BrowserRequest, parse_flow, run_browser_check

        browser = BrowserRequest(
            parse_flow(request.flow),
            request.preview_url,
            workspace=self.layout.workspace,
            session=self.session_id,
            project=request.project,
        )
        return run_browser_check(browser, self.environ, abort)

    def _setup(self, request: SetupRunRequest, abort: threading.Event | None) -> Any:
        from ax_check import SETUP_DEFAULT_TIMEOUT_S, Hooks, SetupRequest, run_setup

        setup = SetupRequest(
            intent=request.intent,
            workspace=self.layout.workspace,
            project=request.project,
            session=self.session_id,
            timeout_s=SETUP_DEFAULT_TIMEOUT_S if request.timeout_s is None else request.timeout_s,
            expect_key=request.expect_key,
        )
        return run_setup(setup, Hooks(abort=abort, environ=self.environ))

    def _setup_plan(self, request: SetupPlanRequest, abort: threading.Event | None) -> Any:
        from ax_check import SetupRequest, plan_setup

        setup = SetupRequest(
            intent=request.intent, workspace=self.layout.workspace, project=request.project
        )
        return plan_setup(setup, self.environ)

    def _slate_start(self, request: SlateStartRequest, abort: threading.Event | None) -> Any:
        from ax_slate import open_session

        return open_session(self.layout, self.session_id, continues=request.continues)

    def _record(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import record

        return record(self.layout, self.session_id, request)

    def _save_output(self, request: SaveOutputRequest, abort: threading.Event | None) -> Any:
        from ax_slate import save_output

        return str(save_output(self.layout, self.session_id, request.text))

    def _note_set(self, request: NoteSetRequest, abort: threading.Event | None) -> Any:
        from ax_slate import set_note

        return set_note(self.layout, self.session_id, request.key, request.text)

    def _note_delete(self, request: NoteKeyRequest, abort: threading.Event | None) -> Any:
        from ax_slate import delete_note

        return delete_note(self.layout, self.session_id, request.key)

    def _recall(self, request: RecallRequest, abort: threading.Event | None) -> Any:
        from ax_slate import recall_step

        return recall_step(self.layout, self.session_id, request.step, request.page)

    def _search(self, request: SearchRequest, abort: threading.Event | None) -> Any:
        from ax_slate import search

        return search(
            self.layout, self.session_id, query=request.query, row=request.row, page=request.page
        )

    def _trail(self, request: TrailRequest, abort: threading.Event | None) -> Any:
        from ax_slate import read_trail

        return read_trail(
            self.layout,
            self.session_id,
            count=request.count,
            tool=request.tool,
            file=request.file,
            from_step=request.from_step,
            to_step=request.to_step,
        )

    def _frame(self, request: FrameRequest, abort: threading.Event | None) -> Any:
        from ax_slate import FRAME_TRAIL_TOKENS, build_frame

        budget = FRAME_TRAIL_TOKENS if request.budget is None else request.budget
        return build_frame(self.layout, self.session_id, budget)

    def _archive(self, request: ArchiveRequest, abort: threading.Event | None) -> Any:
        from ax_slate import archive_message

        return archive_message(self.layout, self.session_id, request.message)

    def _memory_render(self, request: MemoryRequest, abort: threading.Event | None) -> Any:
        from ax_slate import render_memory

        return render_memory(self.layout, request.digests)

    def _memory_describe(self, request: MemoryRequest, abort: threading.Event | None) -> Any:
        from ax_slate import describe_memory

        return describe_memory(self.layout, request.digests)

    def _journal_write(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import write_journal_entry

        return write_journal_entry(self.layout, request)

    def _codebase_write(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import write_codebase

        return write_codebase(self.layout, request)

    def _lesson_propose(self, request: Any, abort: threading.Event | None) -> Any:
        from ax_slate import propose_lesson

        return propose_lesson(self.layout, self.session_id, request)

    def _map_build(self, request: MapBuildRequest, abort: threading.Event | None) -> Any:
        from ax_map import BuildSummary, build_index

        result = build_index(self.layout, budget_s=request.budget_s, environ=self.environ)
        return BuildSummary.of(result)

    def _map_show(self, request: MapShowRequest, abort: threading.Event | None) -> Any:
        from ax_map import MapShown, current_snapshot, map_view

        # ax-map's own contract, as `ax-map show --json` prints it, so both seams give
        # the same answer (paths quoted alike).
        snapshot = current_snapshot(self.layout)
        view = map_view(snapshot, chars=request.chars)
        return MapShown.of(view, snapshot, None, [], [])

    def _map_retrieve(self, request: MapRetrieveRequest, abort: threading.Event | None) -> Any:
        from ax_map import Retrieved, current_snapshot, retrieve_hits

        snapshot = current_snapshot(self.layout)
        hits = retrieve_hits(snapshot, self.layout.workspace, request.query, limit=request.limit)
        return Retrieved.of(request.query, hits, snapshot)
