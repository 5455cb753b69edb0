"""A person's deliberate commit of what this session changed (``/commit``, ``ax-agent commit``).

``prepare_commit`` builds the preview: the paths this session's typed tools changed
(its ``file.mutated`` events) intersected with ``git status``, so every path staged is
one git itself reports changed, and nothing else is touched: the user's other staged
and unstaged changes stay as they are. It lists what blocks the commit (no identity
configured: ax never sets one; something already staged, whose commit would mix the
user's staging with the session's; a merge, rebase or the like half done; a locked
index; nothing to commit) and what to know first (a session file changed outside the
session since ax wrote it; commands whose effects no event names, whose changes are not
staged; a detached HEAD). ``git_status``'s ``changes`` view reads the same attribution.

``commit`` runs only after the person confirmed that preview: it prepares again and
refuses when anything the person saw has changed, stages exactly the previewed paths
(``--literal-pathspecs``, NUL-separated from a file, so a name with a newline or a
glob character is that name), and commits them with ``--only`` under the user's own
identity and hooks (``libcommon.git.run_git_deliberate``). A refused commit (a hook
said no) unstages what it staged, says what git and the hooks said, and records
nothing; a made one records ``commit.created``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from libcommon.errors import OperationFailed, UsageError
from libcommon.git import DeliberateOutput, GitOutput, run_git_deliberate
from libcommon.paths import StateLayout

from .repo import (
    PROBE_COMMANDS,
    STATUS_COMMAND,
    Change,
    Repo,
    parse_status,
    probe_from,
    run_many,
    session_changes,
)

# The longest message a commit takes from the command line.
COMMIT_MESSAGE_MAX_CHARS = 10_000
# Rows of a preview that are listed; the rest are counted.
COMMIT_PREVIEW_MAX_ROWS = 200
_IDENTITY_COMMANDS = (("config", "--get", "user.name"), ("config", "--get", "user.email"))


@dataclass
class CommitPlan:
    repo: Repo
    branch: str | None
    # The session's changed paths as git status shows them (top-level relative).
    rows: list[Change] = field(default_factory=list)
    # Changed paths this session did not change: left exactly as they are.
    others: int = 0
    blockers: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    identity: str | None = None

    @property
    def paths(self) -> list[str]:
        return [row.path for row in self.rows]

    def preview(self) -> list[str]:
        from ..tools.git_status import scrub

        where = f"branch {scrub(self.branch)}" if self.branch else "a detached HEAD"
        lines = [f"Commit on {where} in {scrub(str(self.repo.toplevel))}"]
        if self.identity:
            lines.append(f"as {scrub(self.identity)} (your git identity)")
        lines.append(f"{len(self.rows)} path(s) this session changed:")
        lines += [f"  {row.xy} {scrub(row.path)}" for row in self.rows[:COMMIT_PREVIEW_MAX_ROWS]]
        if len(self.rows) > COMMIT_PREVIEW_MAX_ROWS:
            lines.append(f"  and {len(self.rows) - COMMIT_PREVIEW_MAX_ROWS} more")
        if self.others:
            lines.append(f"{self.others} other changed path(s) are left as they are")
        lines += [f"warning: {warning}" for warning in self.warnings]
        lines += [f"blocked: {blocker}" for blocker in self.blockers]
        return lines


@dataclass(frozen=True)
class CommitResult:
    oid: str
    event: dict[str, Any]


def prepare_commit(layout: StateLayout, session_id: str, environ: Mapping[str, str]) -> CommitPlan:
    """The preview of a commit of this session's changes; NotARepository outside one."""
    from ax_log import hash_recorded

    answers = run_many(
        layout.workspace, [*PROBE_COMMANDS, STATUS_COMMAND, *_IDENTITY_COMMANDS], environ
    )
    repo = probe_from(layout.workspace, answers[: len(PROBE_COMMANDS)])
    status_answer, name_answer, email_answer = answers[len(PROBE_COMMANDS) :]
    status = parse_status(status_answer)
    plan = CommitPlan(repo=repo, branch=status.branch)
    changed = session_changes(layout, session_id)
    mine = {os.path.relpath(layout.workspace / path, repo.toplevel): path for path in changed.files}
    plan.rows = [change for change in status.changes if change.path in mine]
    plan.others = len(status.changes) - len(plan.rows)

    name = _identity_part(environ, "GIT_AUTHOR_NAME", name_answer)
    email = _identity_part(environ, "GIT_AUTHOR_EMAIL", email_answer, "EMAIL")
    if name and email:
        plan.identity = f"{name} <{email}>"
    else:
        plan.blockers.append(
            "git has no identity configured (user.name and user.email); set yours with "
            '`git config --global user.name "…"` and `git config --global user.email …`; '
            "ax never sets one for you"
        )
    progress = repo.in_progress()
    if progress is not None:
        plan.blockers.append(f"{progress} is in progress; finish or abort it first, then commit")
    elif any(change.conflicted for change in status.changes):
        plan.blockers.append("there are unresolved conflicts; resolve them first")
    if repo.index_locked():
        plan.blockers.append(
            "the index is locked (.git/index.lock exists): another git is running, or one "
            "crashed; when none is running, remove the lock file"
        )
    staged = [change for change in status.changes if change.staged]
    if staged:
        plan.blockers.append(
            f"{len(staged)} path(s) are already staged (e.g. {staged[0].path!r}); a commit "
            "now would mix your staging with this session's changes: commit or unstage "
            "them first (`git restore --staged PATH`)"
        )
    if status.truncated:
        plan.blockers.append("git status printed more than ax reads; commit with git yourself")
    if not plan.rows:
        plan.blockers.append(
            "nothing to commit: no file this session changed differs from HEAD"
            if changed.files
            else "nothing to commit: this session has changed no files"
        )
    if status.branch is None and repo.head is not None:
        plan.warnings.append("HEAD is detached: the commit will be on no branch")
    for row in plan.rows:
        relative = mine[row.path]
        try:
            now = hash_recorded(layout, relative)
        except (UsageError, OSError):
            now = "unreadable"
        if now != changed.files[relative]:
            plan.warnings.append(
                f"{row.path!r} changed outside this session since ax last wrote it; "
                "its bytes on disk now are what would be committed"
            )
    if changed.unattributed_commands:
        plan.warnings.append(
            f"{changed.unattributed_commands} command(s) ran that could change files no event "
            "names; their changes are not staged (see `git status`)"
        )
    return plan


def _identity_part(
    environ: Mapping[str, str], variable: str, answer: GitOutput | None, fallback: str = ""
) -> str | None:
    """One half of the identity in git's own order: the variable, the config, the fallback."""
    if environ.get(variable):
        return environ[variable]
    if answer is not None and answer.ok and answer.text().strip():
        return answer.text().strip()
    return environ.get(fallback) if fallback and environ.get(fallback) else None


def check_message(message: str) -> str:
    text = message.strip()
    if not text:
        raise UsageError("the commit message is empty")
    if len(text) > COMMIT_MESSAGE_MAX_CHARS:
        raise UsageError(f"the commit message is longer than {COMMIT_MESSAGE_MAX_CHARS} characters")
    if "\x00" in text:
        raise UsageError("the commit message contains a NUL character")
    return text


def default_message(session_id: str, plan: CommitPlan) -> str:
    return f"Changes from ax session {session_id} ({len(plan.rows)} file(s))"


def commit(
    layout: StateLayout,
    session_id: str,
    environ: Mapping[str, str],
    approved: CommitPlan,
    message: str,
) -> CommitResult:
    """Commit exactly the approved plan's paths; OperationFailed when anything changed."""
    text = check_message(message)
    now = prepare_commit(layout, session_id, environ)
    if now.blockers:
        raise OperationFailed("the commit is blocked: " + "; ".join(now.blockers))
    if now.paths != approved.paths or now.repo.head != approved.repo.head:
        raise OperationFailed(
            "the repository changed since the preview; nothing was committed",
            hint="look at the new preview and confirm again",
        )
    top = now.repo.toplevel
    with tempfile.TemporaryDirectory(prefix="ax-commit-") as scratch:
        spec = Path(scratch) / "paths"
        spec.write_bytes(b"\0".join(os.fsencode(path) for path in now.paths))
        from_file = [f"--pathspec-from-file={spec}", "--pathspec-file-nul"]
        added = run_git_deliberate(top, ["--literal-pathspecs", "add", "-A", *from_file], environ)
        if added is None or not added.ok:
            _unstage(top, now, from_file, environ)
            raise OperationFailed("git add failed; nothing was committed" + _said(added))
        made = run_git_deliberate(
            top,
            ["--literal-pathspecs", "commit", "-q", "--only", "-m", text, *from_file],
            environ,
        )
        if made is None or not made.ok:
            _unstage(top, now, from_file, environ)
            raise OperationFailed(
                "git commit failed (a hook may have refused it); nothing was committed and "
                "what this session staged was unstaged" + _said(made)
            )
    head = run_many(top, [PROBE_COMMANDS[2]], environ)[0]
    oid = head.text().strip() if head is not None and head.ok else ""
    if not oid or oid == now.repo.head:
        raise OperationFailed("git commit reported success but HEAD did not move")
    event = {
        "type": "commit.created",
        "oid": oid,
        "parent": now.repo.head,
        "branch": now.branch,
        "paths": now.paths,
        "warnings": now.warnings,
    }
    return CommitResult(oid, event)


def _unstage(top: Path, plan: CommitPlan, from_file: list[str], environ: Mapping[str, str]) -> None:
    """Put the index back for the paths this commit staged (nothing else was staged)."""
    if plan.repo.head is not None:
        args = ["--literal-pathspecs", "reset", "-q", *from_file]
    else:
        args = ["--literal-pathspecs", "rm", "--cached", "-q", "-r", "--ignore-unmatch", *from_file]
    run_git_deliberate(top, args, environ)


def _said(done: DeliberateOutput | None) -> str:
    if done is None:
        return " (git could not run, or ran out of time)"
    said = done.said()
    return f":\n{said}" if said else ""
