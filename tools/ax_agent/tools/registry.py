"""Every model-facing tool, in the order the model is shown them."""

from __future__ import annotations

from functools import cache

from ..delegation.roles import PARENT_ONLY_TOOLS
from .base import ModelTool


def all_tools() -> list[ModelTool]:
    """The parent session's tools in a stable order (a fresh list: the caller may change
    it): every registered tool but the ones only a delegated role holds."""
    return [tool for tool in _tools() if tool.name not in CHILD_ONLY]


def every_tool() -> list[ModelTool]:
    """Every registered tool, the child-only ones included (a fresh list)."""
    return list(_tools())


def child_only_tools() -> dict[str, ModelTool]:
    """The tools only a delegated role's registry holds, by name."""
    return {tool.name: tool for tool in _tools() if tool.name in CHILD_ONLY}


@cache
def _tools() -> tuple[ModelTool, ...]:
    from . import (
        apply_task_changes,
        browser_flow,
        delegate_task,
        edit_file,
        episode,
        git_checkpoint,
        git_status,
        glob,
        grep,
        history_search,
        inspect_pages,
        list_dir,
        plan_write,
        project_setup,
        propose_lesson,
        read_document,
        read_file,
        recall_step,
        record_source,
        render_document,
        report_finding,
        retrieve,
        run_check,
        run_command,
        slate_note,
        slate_trail,
        thread,
        threads,
        triage_finding,
        view_image,
        web_extract,
        web_search,
        write_file,
    )

    modules = (
        read_file,
        # Vision (issue 23): an image, for a model the catalog says takes images.
        view_image,
        list_dir,
        glob,
        grep,
        # The repository map (issue 18): ranked files for a name or a few words.
        retrieve,
        write_file,
        edit_file,
        run_command,
        run_check,
        # Browser flows (issue 25): a typed flow against the running preview, kind browser.
        browser_flow,
        # Project setup (issue 22): installs, migrations and seeds. Parent-only: no child
        # role's registry may hold it (an executor's worktree is disposable).
        project_setup,
        slate_note,
        recall_step,
        # Bounded context (issue 13): the read-only recall of what left the request.
        slate_trail,
        history_search,
        # Project memory (issue 19): a durable lesson for later sessions.
        propose_lesson,
        # Git (issue 20): the repository's state, through harness-named read commands,
        # and a recovery point under a hidden ref.
        git_status,
        git_checkpoint,
        # Plans (issue 21): the session's structured plan, approved by a person.
        plan_write,
        # Delegated tasks (issue 21): one to three helpers side by side.
        delegate_task,
        # Executors (issue 21): the parent applies a task's captured files (parent only).
        apply_task_changes,
        # The review ledger (issue 22): a reviewer's findings, and the parent's triage.
        report_finding,
        triage_finding,
        # Web research (issue 25): the parent's web_search; a researcher's web_extract
        # (whole pages) and record_source (findings), which the parent never holds.
        web_search,
        web_extract,
        record_source,
        # Documents (issue 25): DOCX, XLSX, PPTX and PDF read by their bytes.
        read_document,
        render_document,
        inspect_pages,
        # Orchestrator mode (issue 26): dispatch a worker thread, list and steer them,
        # record what one delivered. Only an orchestrating session holds them.
        thread,
        threads,
        episode,
    )
    return tuple(module.TOOL for module in modules)


# Tools only the parent session may hold: no child role's registry may include them. One
# list, the delegation table's, which says why each is there.
PARENT_ONLY: frozenset[str] = PARENT_ONLY_TOOLS
# Tools the parent session never holds, only a delegated role whose registry names them:
# web_extract returns whole web pages and record_source records findings, so the main
# agent never receives a raw page by construction (issue 25).
CHILD_ONLY: frozenset[str] = frozenset({"web_extract", "record_source"})


def get_tool(name: str) -> ModelTool | None:
    """The tool the model named, or None for a name no tool has."""
    return next((tool for tool in _tools() if tool.name == name), None)
