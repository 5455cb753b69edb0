"""Delegated tasks (issue 21): roles, child sessions, their supervision and the group.

``roles`` is the runtime contract of each role (its tools, its prompt, who
answers its questions), pinned against ax-policy's fact table when it loads;
``child`` starts a task's own session; ``forward`` carries an executor's
questions to the parent's approver; ``group`` runs one delegate call's tasks
side by side and supervises them. An executor's worktree comes from
``tasks.worktrees``, prepared, captured and released by the delegate tool.
"""
