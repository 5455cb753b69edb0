"""An offline tracker in a folder: tasks and comments as JSON files, with Linear's arguments.

It is the connection kind that works without a network, for tests, demos and teams that
want a tracker view without a service. Its operations take the reference's Linear
arguments (``task.write``, ``task.read``, ``comment.write``, ``comment.read``) and behave
the way a remote service does where it matters to the ledger: a create carries its
operation's marker (the last line of the description or body, as it would on Linear), and
each change is one atomic file, so after a lost response it either exists whole or not at
all.

Layout under the configured folder::

    tasks/<n>.json              one task; its identifier is TRK-<n>
    comments/<n>/<m>.json       comments on task n, in order
    .lock                       held while a number is allocated
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_json
from libcommon.errors import CorruptStore
from libcommon.locks import file_lock

from .base import Call, OperationSpec, Params, Receipt, Rejected

KIND = "file-tracker"
IDENTIFIER_PREFIX = "TRK-"
# A read returns at most this many tasks or comments.
READ_MAX = 50
TITLE_MAX_CHARS = 512
TEXT_MAX_CHARS = 64 * 1024
# A tracker file larger than this is corrupt, not a record.
RECORD_MAX_BYTES = 256 * 1024

Identifier = Annotated[str, Field(pattern=r"^TRK-[1-9][0-9]{0,9}$")]
Ref = Annotated[str, Field(min_length=1, max_length=128)]
Title = Annotated[str, Field(min_length=1, max_length=TITLE_MAX_CHARS)]
Text = Annotated[str, Field(max_length=TEXT_MAX_CHARS)]


class TaskWrite(Params):
    """Linear's task.write: passing ``id`` turns a create into an update."""

    id: Identifier | None = None
    title: Title | None = None
    description: Text | None = None
    team_id: Ref | None = None
    project_id: Ref | None = None
    state_id: Ref | None = None
    assignee_id: Ref | None = None
    priority: Annotated[int, Field(ge=0, le=4)] | None = None

    @model_validator(mode="after")
    def _create_needs_title(self) -> TaskWrite:
        if self.id is None and self.title is None:
            raise ValueError("a new task needs a title (or pass id to update one)")
        if self.id is not None and len(self.model_fields_set) == 1:
            raise ValueError("an update names at least one field besides id")
        return self


class TaskRead(Params):
    """Exactly one of ``id``, ``query`` or ``project_id``."""

    id: Identifier | None = None
    query: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    project_id: Ref | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TaskRead:
        given = [name for name in ("id", "query", "project_id") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of id, query or project_id (got {len(given)})")
        return self


class CommentWrite(Params):
    issue_id: Identifier
    body: Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CHARS)]


class CommentRead(Params):
    issue_id: Identifier
    first: int = Field(default=20, ge=1, le=READ_MAX)


OPERATIONS: dict[str, OperationSpec] = {
    spec.name: spec
    for spec in (
        OperationSpec("task.write", TaskWrite, "Create a task, or update one by id.", True),
        OperationSpec("task.read", TaskRead, "Tasks by id, by a text query or by project.", False),
        OperationSpec("comment.write", CommentWrite, "Comment on a task.", True),
        OperationSpec(
            "comment.read", CommentRead, "A task's comments with author and time.", False
        ),
    )
}

_TASK_FIELDS = ("title", "description", "team_id", "project_id", "state_id", "assignee_id")


class FileTrackerConfig(Params):
    """A person's configuration of one file tracker connection."""

    kind: Literal["file-tracker"]
    path: Annotated[str, Field(min_length=1, max_length=4096)]

    @model_validator(mode="after")
    def _absolute(self) -> FileTrackerConfig:
        if not os.path.isabs(self.path):
            raise ValueError("path is an absolute folder")
        return self


class FileTracker:
    kind = KIND

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root

    @classmethod
    def from_config(cls, name: str, config: Mapping[str, Any]) -> FileTracker:
        parsed = FileTrackerConfig.model_validate(dict(config))
        return cls(name, Path(parsed.path))

    def operations(self) -> Mapping[str, OperationSpec]:
        return OPERATIONS

    # --- invoke -----------------------------------------------------------------------

    def invoke(self, operation: str, params: Params, call: Call) -> Receipt:
        if isinstance(params, TaskWrite):
            return self._task_write(params, call)
        if isinstance(params, TaskRead):
            return Receipt(None, {"tasks": self._task_read(params)})
        if isinstance(params, CommentWrite):
            return self._comment_write(params, call)
        if isinstance(params, CommentRead):
            return Receipt(None, {"comments": self._comments(params.issue_id)[: params.first]})
        raise Rejected(f"the file tracker has no operation {operation!r}")

    def _task_write(self, params: TaskWrite, call: Call) -> Receipt:
        now = clock.timestamp()
        if params.id is not None:
            with file_lock(self.root / ".lock"):
                task = self._load_task(params.id)
                for name in params.model_fields_set - {"id"}:
                    task[name] = getattr(params, name)
                task["updated_at"] = now
                atomic_write_json(self._task_path(params.id), task)
            return Receipt(params.id, {"task": task})
        description = params.description or ""
        task = {
            **{name: getattr(params, name) for name in _TASK_FIELDS},
            "description": f"{description}\n\n{call.marker}" if description else call.marker,
            "priority": params.priority,
            "created_by": call.seat,
            "created_at": now,
            "updated_at": now,
        }
        with file_lock(self.root / ".lock"):
            number = self._next_number(self.root / "tasks")
            task["id"] = f"{IDENTIFIER_PREFIX}{number}"
            atomic_write_json(self.root / "tasks" / f"{number}.json", task)
        return Receipt(task["id"], {"task": task})

    def _comment_write(self, params: CommentWrite, call: Call) -> Receipt:
        self._load_task(params.issue_id)
        folder = self.root / "comments" / params.issue_id.removeprefix(IDENTIFIER_PREFIX)
        with file_lock(self.root / ".lock"):
            number = self._next_number(folder)
            comment = {
                "id": f"{params.issue_id}-C{number}",
                "issue_id": params.issue_id,
                "body": f"{params.body}\n\n{call.marker}",
                "author": call.seat,
                "created_at": clock.timestamp(),
            }
            atomic_write_json(folder / f"{number}.json", comment)
        return Receipt(comment["id"], {"comment": comment})

    def _task_read(self, params: TaskRead) -> list[dict[str, Any]]:
        if params.id is not None:
            return [self._load_task(params.id)]
        found = []
        needle = (params.query or "").casefold()
        for task in self._tasks():
            if params.project_id is not None:
                hit = task.get("project_id") == params.project_id
            else:
                text = f"{task.get('title') or ''}\n{task.get('description') or ''}"
                hit = needle in text.casefold()
            if hit:
                found.append(task)
                if len(found) == READ_MAX:
                    break
        return found

    # --- read back --------------------------------------------------------------------

    def read_back(self, operation: str, params: Params, call: Call) -> Receipt | None:
        """A create is found by its marker; an update when the task shows what it set."""
        if isinstance(params, TaskWrite):
            if params.id is None:
                for task in self._tasks():
                    if _ends_with_marker(task.get("description"), call.marker):
                        return Receipt(task["id"], {"task": task})
                return None
            task = self._load_task(params.id)
            wanted = {name: getattr(params, name) for name in params.model_fields_set - {"id"}}
            if all(task.get(name) == value for name, value in wanted.items()):
                return Receipt(params.id, {"task": task})
            return None
        if isinstance(params, CommentWrite):
            for comment in self._comments(params.issue_id):
                if _ends_with_marker(comment.get("body"), call.marker):
                    return Receipt(comment["id"], {"comment": comment})
        return None

    # --- files ------------------------------------------------------------------------

    def _task_path(self, identifier: str) -> Path:
        return self.root / "tasks" / f"{identifier.removeprefix(IDENTIFIER_PREFIX)}.json"

    def _load_task(self, identifier: str) -> dict[str, Any]:
        task = _load(self._task_path(identifier))
        if task is None:
            raise Rejected(f"no task {identifier} in tracker {self.name!r}")
        return task

    def _tasks(self) -> Iterator[dict[str, Any]]:
        for number in _numbers(self.root / "tasks"):
            task = _load(self.root / "tasks" / f"{number}.json")
            if task is not None:
                yield task

    def _comments(self, issue_id: str) -> list[dict[str, Any]]:
        self._load_task(issue_id)
        folder = self.root / "comments" / issue_id.removeprefix(IDENTIFIER_PREFIX)
        loaded = (_load(folder / f"{number}.json") for number in _numbers(folder))
        return [comment for comment in loaded if comment is not None]

    def _next_number(self, folder: Path) -> int:
        numbers = _numbers(folder)
        return (numbers[-1] if numbers else 0) + 1


def _ends_with_marker(text: Any, marker: str) -> bool:
    # The marker is the text's last line: a marker quoted inside a text is not its own.
    return isinstance(text, str) and text.rsplit("\n", 1)[-1] == marker


def _numbers(folder: Path) -> list[int]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(
        int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()
    )


def _load(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as handle:
            raw = handle.read(RECORD_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(raw) > RECORD_MAX_BYTES:
        raise CorruptStore(str(path), f"larger than {RECORD_MAX_BYTES} bytes")
    try:
        document = jsonio.loads(raw)
    except jsonio.JSONDecodeError as exc:
        raise CorruptStore(str(path), f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise CorruptStore(str(path), "not a JSON object")
    return document
