"""External slates: a private scratchpad for another agent, closed into human review.

These handlers are the single implementation behind ``ax-slate open |
write-seed | close`` and ax-mcp's slate tools. Each external session id owns
exactly one file, ``external-slates/<id>.json``; the id is checked here, in one
place, before any path is built, and no handler lists or reads across ids.
Every change is a read-modify-write under that id's lock with an atomic
replace.

Staleness has no background timer: every handler call first closes the
project's slates that have gone untouched past the stale window.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_json
from libcommon.contracts import Contract
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import file_lock
from libcommon.paths import StateLayout, project_slug
from libcommon.redact import redact

from .models import (
    EXTERNAL_HARNESS,
    EXTERNAL_TRUST,
    CloseOutcome,
    CloseRequest,
    CloseResult,
    ExternalSlate,
    OpenRequest,
    Proposal,
    SeedOrigin,
    SlateSeed,
    WriteSeedRequest,
)

EXTERNAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
WORKSPACE_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,160}$")
SEED_MAX_CHARS = 4_000
SEEDS_MAX = 200
ANCHORS_MAX_BYTES = 64 * 1024
STALE_AFTER_S = 30 * 60.0


def check_external_id(value: str) -> str:
    """The one check every external id passes before it becomes part of a path."""
    if not EXTERNAL_ID_PATTERN.fullmatch(value):
        raise UsageError(
            f"invalid externalSessionId {value!r}",
            hint="use 1-128 characters: letters, digits, '_' or '-'",
        )
    return value


def _default_is_trusted(layout: StateLayout) -> Callable[[Path], bool]:
    from libcommon.trust import is_trusted

    return lambda workspace: is_trusted(layout.root, workspace)


def _default_known(layout: StateLayout) -> Callable[[], list[Path]]:
    from libcommon.trust import trusted_workspaces

    return lambda: trusted_workspaces(layout.root)


@dataclass(frozen=True)
class ExternalContext:
    """What the handlers need from the process serving them.

    ``layout`` is the server's own workspace and state root: slates live in its
    project. ``is_trusted`` decides whether close may bind to a workspace (by
    default, the user's trust.json); ``known_workspaces`` lists the folders an
    explicit ``workspaceId`` may name besides the anchors' and the server's.
    """

    layout: StateLayout
    is_trusted: Callable[[Path], bool]
    known_workspaces: Callable[[], list[Path]]
    stale_after: timedelta = field(default=timedelta(seconds=STALE_AFTER_S))

    @classmethod
    def for_layout(
        cls, layout: StateLayout, stale_after: timedelta = timedelta(seconds=STALE_AFTER_S)
    ) -> ExternalContext:
        return cls(layout, _default_is_trusted(layout), _default_known(layout), stale_after)


def _slate_file(ctx: ExternalContext, external_id: str) -> Path:
    return ctx.layout.external_slates_dir / f"{check_external_id(external_id)}.json"


def _lock_file(ctx: ExternalContext, external_id: str) -> Path:
    return ctx.layout.external_slates_dir / f"{check_external_id(external_id)}.lock"


def _load(path: Path) -> ExternalSlate | None:
    from pydantic import ValidationError

    from libcommon.cliapp import describe_validation_error

    data = jsonio.read_json(path)
    if data is None:
        return None
    try:
        return ExternalSlate.model_validate(data)
    except ValidationError as exc:
        problem = describe_validation_error(exc, "slate")
        raise CorruptStore(str(path), f"not an external slate ({problem})") from None


def _save(path: Path, slate: ExternalSlate) -> None:
    atomic_write_json(path, slate.to_json())


def _require(path: Path, external_id: str) -> ExternalSlate:
    slate = _load(path)
    if slate is None:
        raise OperationFailed(
            f"there is no external slate {external_id!r} in this project",
            hint="open it first",
        )
    return slate


# ---- the three handlers -----------------------------------------------------


def open_slate(request: OpenRequest, ctx: ExternalContext) -> ExternalSlate:
    """Create the slate for an id, or return the existing one unmodified."""
    check_external_id(request.external_session_id)
    if request.workspace_id is not None and not WORKSPACE_ID_PATTERN.fullmatch(
        request.workspace_id
    ):
        raise UsageError(f"invalid workspaceId {request.workspace_id!r}")
    size = len(jsonio.dumps(request.anchors))
    if size > ANCHORS_MAX_BYTES:
        raise UsageError(f"anchors are {size} bytes of JSON; the cap is {ANCHORS_MAX_BYTES}")
    close_stale(ctx)
    path = _slate_file(ctx, request.external_session_id)
    with file_lock(_lock_file(ctx, request.external_session_id)):
        existing = _load(path)
        if existing is not None:
            return existing
        stamp = clock.timestamp()
        slate = ExternalSlate(
            external_session_id=request.external_session_id,
            workspace_id=request.workspace_id,
            anchors=request.anchors,
            created_at=stamp,
            last_write_at=stamp,
        )
        _save(path, slate)
        return slate


def write_seed(request: WriteSeedRequest, ctx: ExternalContext) -> SlateSeed:
    """Add a draft Seed; the handler alone writes its origin and trust."""
    external_id = check_external_id(request.external_session_id)
    if not request.text.strip():
        raise UsageError("a seed's text cannot be empty")
    if len(request.text) > SEED_MAX_CHARS:
        raise UsageError(
            f"seed text is {len(request.text)} characters; the cap is {SEED_MAX_CHARS}"
        )
    text = redact(request.text)
    close_stale(ctx)
    path = _slate_file(ctx, external_id)
    with file_lock(_lock_file(ctx, external_id)):
        slate = _require(path, external_id)
        if slate.closed_at is not None:
            raise OperationFailed(
                f"external slate {external_id!r} was closed at {slate.closed_at}",
                hint="open a slate under a new externalSessionId",
            )
        for seed in slate.seeds:
            if seed.text == text:
                return seed  # exact-text duplicates are stored once
        if len(slate.seeds) >= SEEDS_MAX:
            raise OperationFailed(
                f"external slate {external_id!r} already holds {SEEDS_MAX} seeds",
                hint="close it so the seeds go to review, then open a new one",
            )
        stamp = clock.timestamp()
        seed = SlateSeed(
            id=clock.new_id("seed"),
            text=text,
            ts=stamp,
            kind=request.kind,
            origin=SeedOrigin(harness=EXTERNAL_HARNESS, external_session_id=external_id),
            trust=EXTERNAL_TRUST,
        )
        slate.seeds.append(seed)
        slate.last_write_at = stamp
        _save(path, slate)
        return seed


def close_slate(request: CloseRequest, ctx: ExternalContext) -> CloseResult:
    """Close a slate into review: a proposal when bound, an unbound candidate when not."""
    external_id = check_external_id(request.external_session_id)
    close_stale(ctx)
    path = _slate_file(ctx, external_id)
    with file_lock(_lock_file(ctx, external_id)):
        slate = _require(path, external_id)
        if slate.closed_at is not None and slate.close_outcome is not None:
            return CloseResult(
                external_session_id=external_id,
                closed=True,
                already_closed=True,
                outcome=slate.close_outcome,
            )
        outcome = _close_locked(ctx, path, slate, stale=False)
    return CloseResult(
        external_session_id=external_id, closed=True, already_closed=False, outcome=outcome
    )


# ---- closing ----------------------------------------------------------------


def _close_locked(
    ctx: ExternalContext, path: Path, slate: ExternalSlate, *, stale: bool
) -> CloseOutcome:
    bound, reason = resolve_binding(ctx, slate)
    proposal_id = candidate_id = None
    if not slate.seeds:
        reason += "; no seeds, so nothing was sent to review (the slate file keeps the anchors)"
    elif bound is not None:
        proposal_id = clock.new_id("prop")
        target = StateLayout(root=ctx.layout.root, workspace=bound).proposals_dir
        _write_proposal(target / f"{proposal_id}.json", proposal_id, "proposal", slate, bound)
    else:
        candidate_id = clock.new_id("cand")
        target = ctx.layout.candidates_dir
        _write_proposal(
            target / f"{candidate_id}.json", candidate_id, "unbound-candidate", slate, None
        )
    outcome = CloseOutcome(
        bound_workspace_id=project_slug(bound) if bound is not None else None,
        proposal_id=proposal_id,
        candidate_id=candidate_id,
        reason=reason,
        stale=stale,
    )
    slate.closed_at = clock.timestamp()
    slate.close_outcome = outcome
    _save(path, slate)
    return outcome


def _write_proposal(
    path: Path, proposal_id: str, kind: Any, slate: ExternalSlate, bound: Path | None
) -> None:
    proposal = Proposal(
        id=proposal_id,
        kind=kind,
        workspace_id=project_slug(bound) if bound is not None else None,
        external_session_id=slate.external_session_id,
        origin=SeedOrigin(harness=EXTERNAL_HARNESS, external_session_id=slate.external_session_id),
        trust=EXTERNAL_TRUST,
        anchors=slate.anchors,
        seeds=slate.seeds,
        created_at=clock.timestamp(),
    )
    atomic_write_json(path, proposal.to_json())


def resolve_binding(ctx: ExternalContext, slate: ExternalSlate) -> tuple[Path | None, str]:
    """The trusted workspace a slate's seeds may be proposed to, and why (or why not).

    An explicit workspaceId must be the slug of a trusted workspace. Otherwise
    the workspace comes from ``anchors.root`` (the nearest trusted folder that
    holds it) or, with no root, from the server's own workspace. An untrusted
    or unresolvable answer binds nothing: the seeds become an unbound candidate
    rather than a proposal against a guessed id.
    """
    root = _anchor_root(ctx, slate.anchors)
    if slate.workspace_id is not None:
        candidates = [ctx.layout.workspace, *ctx.known_workspaces()]
        if root is not None:
            candidates = [root, *root.parents, *candidates]
        for workspace in candidates:
            if project_slug(workspace) == slate.workspace_id and ctx.is_trusted(workspace):
                return workspace, f"workspaceId {slate.workspace_id} is a trusted workspace"
        return None, f"workspaceId {slate.workspace_id} names no trusted workspace"
    if root is not None:
        for folder in (root, *root.parents):
            if folder.is_dir() and ctx.is_trusted(folder):
                return folder, f"anchors.root lies in the trusted workspace {folder}"
        return None, f"anchors.root {root} is not inside a trusted workspace"
    if ctx.is_trusted(ctx.layout.workspace):
        return ctx.layout.workspace, "no anchors.root; the server's workspace is trusted"
    return None, "no anchors.root, and the server's workspace is not trusted"


def _anchor_root(ctx: ExternalContext, anchors: dict[str, Any]) -> Path | None:
    raw = anchors.get("root")
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    # A relative root is taken relative to the server's workspace.
    return Path(os.path.realpath(os.path.join(ctx.layout.workspace, raw)))


def close_stale(ctx: ExternalContext) -> list[str]:
    """Close every open slate of this project untouched past the stale window."""
    folder = ctx.layout.external_slates_dir
    if not folder.is_dir():
        return []
    cutoff = clock.now() - ctx.stale_after
    closed = []
    for path in sorted(folder.glob("*.json")):
        external_id = path.stem
        if not EXTERNAL_ID_PATTERN.fullmatch(external_id):
            continue
        if not _is_stale(path, cutoff):
            continue
        with file_lock(_lock_file(ctx, external_id)):
            # Re-read under the lock: a writer may have touched it meanwhile.
            if not _is_stale(path, cutoff):
                continue
            slate = _load(path)
            assert slate is not None
            _close_locked(ctx, path, slate, stale=True)
            closed.append(external_id)
    return closed


def _is_stale(path: Path, cutoff: datetime) -> bool:
    try:
        slate = _load(path)
    except CorruptStore:
        # Another id's damaged file must not break this id's calls; that id's
        # own next call reports it.
        return False
    if slate is None or slate.closed_at is not None:
        return False
    return datetime.fromisoformat(slate.last_write_at) < cutoff


# ---- the table ax-mcp serves ------------------------------------------------


@dataclass(frozen=True)
class Handler:
    """One external-slate operation: its request and response contracts and its code."""

    name: str
    description: str
    request: type[Contract]
    response: type[Contract]
    call: Callable[[Any, ExternalContext], Contract]


HANDLERS: dict[str, Handler] = {
    "open": Handler(
        "open",
        "Open a private slate for an external session id (a second open returns it unchanged).",
        OpenRequest,
        ExternalSlate,
        open_slate,
    ),
    "writeSeed": Handler(
        "writeSeed",
        "Add a draft Seed (redacted, at most 4,000 characters) to an open slate.",
        WriteSeedRequest,
        SlateSeed,
        write_seed,
    ),
    "close": Handler(
        "close",
        "Close a slate: its Seeds go to human review as a proposal or an unbound candidate.",
        CloseRequest,
        CloseResult,
        close_slate,
    ),
}
