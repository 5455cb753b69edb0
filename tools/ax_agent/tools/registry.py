"""Every model-facing tool, in the order the model is shown them."""

from __future__ import annotations

from functools import cache

from .base import ModelTool


def all_tools() -> list[ModelTool]:
    """The tools in a stable order (a fresh list: the caller may change it)."""
    return list(_tools())


@cache
def _tools() -> tuple[ModelTool, ...]:
    from . import (
        apply_task_changes,
        delegate_task,
        edit_file,
        episode,
        git_checkpoint,
        git_status,
        glob,
        grep,
        history_search,
        list_dir,
        plan_write,
        project_setup,
        propose_lesson,
        read_file,
        recall_step,
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
        # Orchestrator mode (issue 26): dispatch a worker thread, list and steer them,
        # record what one delivered. Only an orchestrating session holds them.
        thread,
        threads,
        episode,
    )
    return tuple(module.TOOL for module in modules)


# Tools only the parent session may hold: no child role's registry may include them.
# project_setup: an executor's worktree is disposable, so an install there fills a folder
# about to be deleted, and a migration there writes the real database from "isolation".
# triage_finding: the parent's judgment of its reviewers' findings, never a child's.
# thread, threads, episode: no worker ever obtains the orchestrator's own tools.
PARENT_ONLY: frozenset[str] = frozenset(
    {"project_setup", "triage_finding", "thread", "threads", "episode"}
)


def get_tool(name: str) -> ModelTool | None:
    """The tool the model named, or None for a name no tool has."""
    return next((tool for tool in _tools() if tool.name == name), None)
