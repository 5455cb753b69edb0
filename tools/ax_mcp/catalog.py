"""The tools ax-mcp serves, each a thin adapter onto another tool's core.

Names use underscores: dots are legal in MCP but several clients (and the
Anthropic API) reject them. The slate tools are exactly ax-slate's handlers;
the policy tools are exactly what ax-policy's verbs answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ax_mcp.models import (
    CheckDetectRequest,
    CheckPathRequest,
    CheckRunRequest,
    RetrieveRequest,
    RetrieveResult,
    ReviewCommandRequest,
    WorkspaceMapRequest,
    WorkspaceMapResult,
)
from ax_mcp.server import Tool
from libcommon.errors import NotTrusted
from libcommon.paths import StateLayout

if TYPE_CHECKING:
    from ax_map import Snapshot

# A check started by a model through MCP may run this long before its tree is killed.
CHECK_RUN_TIMEOUT_S = 600.0

# In a trusted workspace the map index is refreshed before each map or search, within
# this much wall time: enough for a warm stat-diff of 20,000 files, small enough that a
# call never stalls a client. Files it does not reach stay pending for the next call.
MAP_REFRESH_BUDGET_S = 2.0

# ax-slate's handler name -> the MCP tool name.
SLATE_TOOL_NAMES = {"open": "slate_open", "writeSeed": "slate_write_seed", "close": "slate_close"}


def build_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    return [
        *slate_tools(layout),
        *check_tools(layout, environ),
        *policy_tools(layout, environ),
        *map_tools(layout, environ),
        *seat_tools(environ),
    ]


def seat_tools(environ: Mapping[str, str]) -> list[Tool]:
    """Issue 24: started as a seat of an ax-mesh, the seat's tools (ax_mcp.mesh_tools)."""
    from ax_mcp.mesh_tools import mesh_tools

    return mesh_tools(environ)


def slate_tools(layout: StateLayout) -> list[Tool]:
    from ax_slate import HANDLERS, ExternalContext

    context = ExternalContext.for_layout(layout)
    tools = []
    for handler_name, tool_name in SLATE_TOOL_NAMES.items():
        handler = HANDLERS[handler_name]

        def call(request: Any, handler: Any = handler) -> Any:
            return handler.call(request, context)

        tools.append(
            Tool(tool_name, handler.description, handler.request, handler.response, call, False)
        )
    return tools


def check_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    from ax_check import CheckRequest, CheckResult, DetectReport, detect, run_check
    from ax_check import Hooks as CheckHooks

    def detect_units(request: CheckDetectRequest) -> DetectReport:
        return detect(layout.workspace, environ)

    def run(request: CheckRunRequest) -> CheckResult:
        from ax_policy import check_trust

        if not check_trust(layout).trusted:
            raise NotTrusted(
                f"check_run runs the project's own code, and {layout.workspace} is not trusted",
                hint=f"a person can trust it with `ax-policy trust grant -C {layout.workspace}`",
            )
        targets = (request.target,) if request.target else ()
        return run_check(
            CheckRequest(
                kind=request.kind,
                workspace=layout.workspace,
                project=request.project,
                targets=targets,
                timeout_s=CHECK_RUN_TIMEOUT_S,
            ),
            CheckHooks(environ=environ),
        )

    return [
        Tool(
            "check_detect",
            "The project units of the workspace, their manifests, and which check kinds "
            "resolve to which command (nothing is run).",
            CheckDetectRequest,
            DetectReport,
            detect_units,
            True,
        ),
        Tool(
            "check_run",
            "Run one typed check (build, test, test-targeted, typecheck, lint, format, "
            "static-analysis) with the command the project's own manifests give. The "
            "verdict is the exit code; 'unsupported' carries a typed reason. Needs a "
            "trusted workspace.",
            CheckRunRequest,
            CheckResult,
            run,
            False,
        ),
    ]


def policy_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    from ax_policy import (
        CommandReview,
        PathCheck,
        check_path_in_workspace,
        review_in_workspace,
    )

    path_env = environ.get("PATH", "")

    def review(request: ReviewCommandRequest) -> CommandReview:
        return review_in_workspace(layout, request.command, path_env)

    def check_path(request: CheckPathRequest) -> PathCheck:
        return check_path_in_workspace(layout, request.path, write=request.write)

    return [
        Tool(
            "policy_review_command",
            "Review a shell command the way ax does before running it: 'read-only' only "
            "when it is proven read-only, otherwise 'ask' or 'deny', with the reasons.",
            ReviewCommandRequest,
            CommandReview,
            review,
            True,
        ),
        Tool(
            "policy_check_path",
            "The facts ax's policy uses about a path: resolved location, inside the "
            "workspace or not, protected, secret-named, and ok (no question needed).",
            CheckPathRequest,
            PathCheck,
            check_path,
            True,
        ),
    ]


def map_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    def workspace_map(request: WorkspaceMapRequest) -> WorkspaceMapResult:
        from ax_map import (
            DEFAULT_MAP_CHARS,
            MapShown,
            check_map_request,
            focus_paths,
            map_view,
            unmatched_focus,
        )

        chars = DEFAULT_MAP_CHARS if request.chars is None else request.chars
        focus = focus_paths(layout.workspace, request.focus)
        check_map_request(chars, request.query, focus)
        snapshot, refreshed, note = _fresh_snapshot(layout, environ)
        view = map_view(snapshot, chars=chars, query=request.query, focus=focus)
        shown = MapShown.of(view, snapshot, request.query, focus, unmatched_focus(snapshot, focus))
        return WorkspaceMapResult.model_validate(
            {**shown.model_dump(), "refreshed": refreshed, "index_note": note}
        )

    def retrieve(request: RetrieveRequest) -> RetrieveResult:
        from ax_map import DEFAULT_RETRIEVE_LIMIT, Retrieved, check_retrieve_request, retrieve_hits

        limit = DEFAULT_RETRIEVE_LIMIT if request.limit is None else request.limit
        check_retrieve_request(request.query, limit)
        snapshot, refreshed, note = _fresh_snapshot(layout, environ)
        hits = retrieve_hits(snapshot, layout.workspace, request.query, limit=limit)
        found = Retrieved.of(request.query, hits, snapshot)
        return RetrieveResult.model_validate(
            {**found.model_dump(), "refreshed": refreshed, "index_note": note}
        )

    return [
        Tool(
            "workspace_map",
            "A map of the workspace in a bounded number of characters: coverage, the "
            "directory tree with counts, uncommitted files, and the key files ranked (for "
            "'query' and 'focus' when given) with their top definitions. No line numbers: "
            "use retrieve for those. Cite it by sha256.",
            WorkspaceMapRequest,
            WorkspaceMapResult,
            workspace_map,
            True,
        ),
        Tool(
            "retrieve",
            "The files that best answer a symbol name, a path or a few words, ranked, each "
            "with why it ranks, its matching definitions with their line numbers, and a few "
            "lines read from disk now.",
            RetrieveRequest,
            RetrieveResult,
            retrieve,
            True,
        ),
    ]


def _fresh_snapshot(layout: StateLayout, environ: Mapping[str, str]) -> tuple[Snapshot, bool, str]:
    """The index to answer from, refreshed first when the workspace is trusted.

    Building reads every file of the workspace and runs git in it, which is operating
    in the folder: only with recorded trust. Without it the index a person built is
    used as it is, and the answer says it was not refreshed.
    """
    from ax_map import IndexUnavailable, build_index, current_snapshot
    from ax_policy import check_trust
    from libcommon.errors import AxError

    workspace = layout.workspace
    if check_trust(layout).trusted:
        try:
            built = build_index(layout, budget_s=MAP_REFRESH_BUDGET_S, environ=environ)
        except AxError as exc:  # another build holds the lock, the listing failed, ...
            refreshed, note = False, f"not refreshed: {exc.message}; the existing index is used"
        else:
            refreshed = True
            note = (
                f"refreshed just now: {built.extracted} files read, {built.reused} unchanged, "
                f"{built.removed} gone"
            )
            if built.coverage.pending:
                note += (
                    f"; {built.coverage.pending} files not reached within "
                    f"{MAP_REFRESH_BUDGET_S:g}s stay pending for the next call"
                )
        return current_snapshot(layout), refreshed, note
    try:
        snapshot = current_snapshot(layout)
    except IndexUnavailable as exc:
        raise NotTrusted(
            f"{exc.message}, and {workspace} is not trusted, so ax-mcp does not build one",
            hint=f"build it with `ax-map build -C {workspace}`, or trust the workspace with "
            f"`ax-policy trust grant -C {workspace}` and ax-mcp keeps it fresh",
        ) from None
    return (
        snapshot,
        False,
        (
            f"not refreshed: {workspace} is not trusted; the index as last built is used "
            f"(`ax-map build -C {workspace}` refreshes it)"
        ),
    )
