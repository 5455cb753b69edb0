"""What a session learns about its world at start: sandbox, git, and the system prompt.

Everything here runs after the trust gate. The git probe runs a fixed set of
read-only git commands through libcommon's hardened runner, because a
repository's own config is untrusted bytes. The instruction files the system
prompt carries are found, capped and neutralised by ``instructions``; the
project memory that follows them is rendered by ax-slate (``memory``), and the
repository map after it by ax-map (``repo_map``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libcommon.git import git_problem, parse_status_z, run_git, run_git_batch

if TYPE_CHECKING:
    from ax_policy import SandboxStatus

    from .instructions import Instructions

GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class SandboxFacts:
    """The probed sandbox in ax-policy's shape, plus what the report shows."""

    policy: SandboxStatus
    confines: list[str] = field(default_factory=list)
    does_not_confine: list[str] = field(default_factory=list)
    reason: str | None = None

    def event(self) -> dict[str, Any]:
        return {
            "type": "sandbox.status",
            "backend": self.policy.backend,
            "enforced": self.policy.enforced,
            "profiles": list(self.policy.profiles),
            "networkDenied": self.policy.network_denied,
            "confines": self.confines,
            "doesNotConfine": self.does_not_confine,
            "reason": self.reason,
        }


def probe_sandbox() -> SandboxFacts:
    """ax-exec's probe mapped onto the status ax-policy decides with.

    A profile counts only when it is enforced; the network counts as denied only
    when every enforced profile denies it. What is (not) confined is taken from
    the widest enforced profile, the one an allowed check runs under.
    """
    import ax_exec
    from ax_policy import SandboxStatus

    probe = ax_exec.probe_sandbox()
    selected = next(b for b in probe.backends if b.backend == probe.selected)
    enforced = [status for status in selected.profiles if status.enforced]
    profiles = [status.profile for status in enforced if status.profile != "none"]
    widest = next((s for s in enforced if s.profile == "workspace-write"), None) or (
        enforced[0] if enforced else None
    )
    policy = SandboxStatus.model_validate(
        {
            "backend": probe.selected,
            "enforced": bool(selected.enforced and profiles),
            "profiles": profiles,
            "networkDenied": bool(enforced) and all(s.network != "none" for s in enforced),
        }
    )
    reasons = [b.reason for b in probe.backends if b.reason and not b.enforced]
    return SandboxFacts(
        policy=policy,
        confines=list(widest.confines) if widest else [],
        does_not_confine=list(widest.does_not_confine)
        if widest
        else ["everything: commands run with the user's full authority"],
        reason="; ".join(reasons) or None,
    )


@dataclass(frozen=True)
class GitFacts:
    repo: bool
    branch: str | None = None
    head: str | None = None
    dirty: int | None = None
    reason: str | None = None
    # The work tree's top folder (realpath): where instruction files start.
    toplevel: Path | None = None

    def event(self) -> dict[str, Any]:
        return {
            "type": "git.context",
            "repo": self.repo,
            "branch": self.branch,
            "head": self.head,
            "dirty": self.dirty,
            "reason": self.reason,
        }


def probe_git(workspace: Path, environ: Mapping[str, str]) -> GitFacts:
    """Branch, HEAD and the count of changed files, read-only; never raises."""
    problem = git_problem(environ)
    if problem is not None:
        return GitFacts(repo=False, reason=problem)

    # One read of the repository's drivers and the four commands at once; outside a work
    # tree the last three fail and are not looked at.
    answers = [
        done.text() if done is not None and done.ok else None
        for done in run_git_batch(
            workspace,
            [
                ("rev-parse", "--is-inside-work-tree", "--show-toplevel"),
                ("rev-parse", "--abbrev-ref", "HEAD"),
                ("rev-parse", "--verify", "-q", "HEAD"),
                # Submodules keep out: git would run in each with that repository's config.
                (
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--untracked-files=normal",
                    "--ignore-submodules=all",
                ),
            ],
            environ,
            timeout_s=GIT_TIMEOUT_S,
        )
    ]
    inside, branch, head, status = answers
    answer = inside.splitlines() if inside is not None else []
    if len(answer) != 2 or answer[0] != "true":
        return GitFacts(repo=False, reason="not inside a git work tree")
    return GitFacts(
        repo=True,
        branch=branch.strip() if branch else None,
        head=head.strip() if head else None,
        dirty=_changed_files(status),
        reason=None if head else "no commit yet",
        toplevel=Path(os.path.realpath(answer[1])),
    )


def _changed_files(status: str | None) -> int:
    """Changed paths in ``status -z`` output: a rename is one change in two fields."""
    if not status:
        return 0
    try:
        return len(parse_status_z(status.encode("utf-8", "surrogateescape")))
    except ValueError:
        return 0


def git_toplevel(folder: Path, environ: Mapping[str, str]) -> Path | None:
    """The top of the git work tree holding ``folder`` (realpath), None outside one."""
    done = run_git(folder, ("rev-parse", "--show-toplevel"), environ, timeout_s=GIT_TIMEOUT_S)
    if done is None or not done.ok or not done.text().strip():
        return None
    return Path(os.path.realpath(done.text().strip()))


def system_prompt(
    workspace: Path,
    sandbox: SandboxFacts,
    git: GitFacts,
    instructions: Instructions,
    memory: str = "",
    repo_map: str = "",
) -> str:
    """The stable prefix of every request: who the agent is, where, and under what rules.

    ``memory`` is the project memory section (``ax_agent.memory``): it follows the
    instruction files. ``repo_map`` is the repository map section
    (``ax_agent.repo_map``), last: the largest part, and the one most likely to
    differ between two sessions.
    """
    from .instructions import shown_name

    lines = [
        "You are ax, a coding agent working in one workspace on the user's behalf.",
        f"Workspace: {workspace} (paths you pass to tools are relative to it).",
    ]
    if instructions.working != workspace:
        folder = shown_name(instructions.working.relative_to(workspace).as_posix())
        lines.append(f"The user works in its folder {folder}/ (their current directory).")
    lines += [
        "",
        "How to work:",
        "- Read before you change. Make the smallest change that does the job.",
        "- Verify with run_check (test, lint, typecheck, build) or run_command, and say",
        "  plainly what you verified and what you did not.",
        "- Every tool call is decided by a policy: reads and writes inside the workspace",
        "  run at once (a snapshot is taken before each write, so it can be undone); other",
        "  actions may need the user's approval, and a denied call says why. Do not try to",
        "  get around a denial; tell the user what you needed instead.",
        "- When you are done, answer with a short summary of what changed and why.",
        "",
        "Session facts (observed at start; the current state of the files outranks them):",
    ]
    if sandbox.policy.enforced:
        lines.append(
            f"- Sandbox: {sandbox.policy.backend}, enforced "
            f"(profiles: {', '.join(sandbox.policy.profiles)}; network "
            f"{'denied' if sandbox.policy.network_denied else 'allowed'})."
        )
    else:
        lines.append("- Sandbox: none enforced; every command needs the user's approval.")
    if git.repo:
        lines.append(
            f"- Git: branch {git.branch or '?'}, HEAD {(git.head or 'none')[:12]}, "
            f"{git.dirty} changed file(s)."
        )
    else:
        lines.append(f"- Git: {git.reason or 'no repository'}.")
    if instructions.text:
        lines += ["", instructions.text]
    if memory:
        lines += ["", memory]
    if repo_map:
        lines += ["", repo_map]
    return "\n".join(lines)
