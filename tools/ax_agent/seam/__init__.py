"""The composition seam: the one way ax-agent reaches another ax tool.

Each call names a verb and passes its pydantic request; the answer is the
verb's pydantic response. In-process is the default; ``AX_COMPOSE=process``
runs the real ``ax-<tool> <verb>`` with the request as JSON on stdin, so the
same session can be run both ways and compared.

| verb | request | response |
|---|---|---|
| ``policy.decide`` | ``ax_policy.DecisionRequest`` | ``ax_policy.Decision`` |
| ``exec.run`` | ``ax_exec.ExecSpec`` | ``ax_exec.ExecOutcome`` |
| ``log.append`` | ``AppendRequest`` | the stored events |
| ``log.snapshot`` / ``log.mutated`` | ``PathsRequest`` | the stored events, with before/after |
| ``check.run`` | ``CheckRunRequest`` | ``ax_check.CheckResult`` |
| ``check.detect`` | ``CheckDetectRequest`` | ``ax_check.DetectReport`` |
| ``check.setup`` | ``SetupRunRequest`` | ``ax_check.SetupResult`` |
| ``check.setup_plan`` | ``SetupPlanRequest`` | ``ax_check.SetupPlan`` |
| ``check.browser`` | ``CheckBrowserRequest`` | ``ax_check.FlowResult`` |
| ``slate.start`` | ``SlateStartRequest`` | ``ax_slate.SessionSlate`` |
| ``slate.record`` | ``ax_slate.RecordRequest`` | ``ax_slate.TrailEntry`` |
| ``slate.save_output`` | ``SaveOutputRequest`` | the saved file's path (str) |
| ``slate.note_set`` | ``NoteSetRequest`` | ``ax_slate.Note`` |
| ``slate.note_delete`` | ``NoteKeyRequest`` | whether a note was deleted |
| ``slate.recall`` | ``RecallRequest`` | ``ax_slate.RecallPage`` |
| ``slate.search`` | ``SearchRequest`` | ``ax_slate.SearchResult`` |
| ``slate.trail`` | ``TrailRequest`` | a list of ``ax_slate.TrailEntry`` |
| ``slate.frame`` | ``FrameRequest`` | ``ax_slate.Frame`` |
| ``slate.archive`` | ``ArchiveRequest`` | the archive row (int) |
| ``slate.memory_render`` | ``MemoryRequest`` | ``ax_slate.MemoryInjection`` |
| ``slate.memory_describe`` | ``MemoryRequest`` | a list of ``ax_slate.MemoryDocInfo`` |
| ``slate.journal_write`` | ``ax_slate.JournalEntryRequest`` | ``ax_slate.JournalWriteResult`` |
| ``slate.codebase_write`` | ``ax_slate.CodebaseRequest`` | ``ax_slate.CodebaseWriteResult`` |
| ``slate.lesson_propose`` | ``ax_slate.LessonInput`` | ``ax_slate.LessonResult`` |
| ``map.build`` | ``MapBuildRequest`` | ``ax_map.BuildSummary`` |
| ``map.show`` | ``MapShowRequest`` | ``MapShown`` |
| ``map.retrieve`` | ``MapRetrieveRequest`` | ``Retrieved`` |
| ``log.checkpoint_create`` | ``CheckpointCreateRequest`` | ``ax_log.CreatedView`` |
| ``log.checkpoint_list`` | ``CheckpointListRequest`` | a list of ``ax_log.CheckpointView`` |
| ``log.checkpoint_prune`` | ``CheckpointPruneRequest`` | ``ax_log.PruneView`` |

(request and answer models without a package are in ``ax_agent.seam.models``.)

Both implementations raise the same ``libcommon.errors`` types for the same
failures, so a caller never needs to know which one it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel

from libcommon.errors import AxError, OperationFailed, UsageError

VERBS = (
    "policy.decide",
    "exec.run",
    "log.append",
    "log.snapshot",
    "log.mutated",
    "check.run",
    "check.detect",
    # Project setup (issue 22): installs, migrations and seeds, never a check.
    "check.setup",
    "check.setup_plan",
    # Browser flows (issue 25): a typed flow against the running preview, kind browser.
    "check.browser",
    "slate.start",
    "slate.record",
    "slate.save_output",
    "slate.note_set",
    "slate.note_delete",
    "slate.recall",
    "slate.search",
    # Bounded context (issue 13): the recall tools and the request's frame and archive.
    "slate.trail",
    "slate.frame",
    "slate.archive",
    # Project memory (issue 19): the session's start, /memory, propose_lesson and its end.
    "slate.memory_render",
    "slate.memory_describe",
    "slate.journal_write",
    "slate.codebase_write",
    "slate.lesson_propose",
    # The repository map (issue 18): the session's start and the retrieve tool.
    "map.build",
    "map.show",
    "map.retrieve",
    # Git checkpoints (issue 20): git_checkpoint and the pruning at a clean end.
    "log.checkpoint_create",
    "log.checkpoint_list",
    "log.checkpoint_prune",
)


# A running command's output as it arrives: (stream name, bytes). Only exec.run calls it.
OutputHook = Callable[[str, bytes], None]


class Seam(Protocol):
    def call(
        self,
        verb: str,
        request: BaseModel,
        *,
        abort: threading.Event | None = None,
        on_output: OutputHook | None = None,
    ) -> Any: ...


def unknown_verb(verb: str) -> UsageError:
    return UsageError(f"the seam has no verb {verb!r}", hint=f"verbs: {', '.join(VERBS)}")


class BeforeStored(OperationFailed):
    """log.snapshot / log.mutated failed after the request's ``before`` events were stored.

    Those events stay in the log; any other error from these verbs means nothing was stored.
    """

    def __init__(self, cause: AxError) -> None:
        super().__init__(cause.message, hint=cause.hint)
