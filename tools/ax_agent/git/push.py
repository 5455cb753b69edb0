"""A person's push, bound to what was observed (``/push``, ``ax-agent push``).

``prepare_push`` looks and writes nothing: the local branch's commit, the remote's
push URL (a config read), and the remote's branch through ``git ls-remote`` against
that URL, the one network verb of looking (no fetch, no remote-tracking ref, no
FETCH_HEAD). It relates the two: a new branch, a fast-forward, a divergence, or
``unknown`` when the remote holds a commit this repository has never seen, which no
push replaces, forced or not: ax cannot say what would be discarded. ax-policy decides
the push as an external write (``git_push``): it asks every time and is never
grantable; a blocked host denies.

``push`` sends exactly what was previewed. The refspec's source is the observed oid,
not a branch name, so a branch that moves while the person reads cannot change what is
sent; every push carries ``--force-with-lease`` bound to the observed remote oid (empty
for a new branch), so the server refuses if the remote moved. It re-reads the remote
first, runs ``git push --dry-run --porcelain`` and checks it structurally (exactly one
ref, the approved one, from the approved commit), pushes, then reads the remote again:
``ok`` is what git answered, ``verified`` that the remote now holds the commit.

The push goes to the URL, not the remote's name, so what is observed is what is pushed
to, and the remote's ``uploadpack``/``receivepack`` programs are never taken from
config. Credentials are git's own helpers': ax holds none, and ``GH_TOKEN`` and
``GITHUB_TOKEN`` never reach git or anything it starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from libcommon.errors import OperationFailed, UsageError
from libcommon.git import DELIBERATE_ENV_DROPPED, GitOutput, run_git
from libcommon.redact import redact

from .repo import GIT_READ_TIMEOUT_S, PROBE_COMMANDS, Repo, probe_from, run_many

if TYPE_CHECKING:
    from ax_policy import Decision, Grants
    from libcommon.paths import StateLayout

# ls-remote and push reach another machine: longer than a local read, still bounded.
PUSH_LOOK_TIMEOUT_S = 60.0
PUSH_TIMEOUT_S = 300.0
# The name ax-policy decides a push under (no model tool has it).
PUSH_TOOL = "git_push"
# A transport that runs a command named in the URL is never allowed.
_NO_COMMAND_TRANSPORTS = ("-c", "protocol.ext.allow=never")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")

Relation = Literal["new", "up-to-date", "fast-forward", "diverged", "unknown"]


@dataclass
class PushPlan:
    repo: Repo
    remote: str
    url: str
    branch: str
    # The local commit observed: what is sent (the refspec's source).
    oid: str
    # The remote's commit observed for the branch, None when it has no such branch.
    remote_oid: str | None
    relation: Relation
    force: bool
    # ax-policy's reason for asking (an external write, asked every time).
    policy: str = ""
    blockers: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def shown_url(self) -> str:
        return redact(self.url)

    def preview(self) -> list[str]:
        from ..tools.git_status import scrub

        was = self.remote_oid[:12] if self.remote_oid else "nothing (a new branch)"
        lines = [
            f"Push {self.oid[:12]} to {scrub(self.ref)} on {scrub(self.remote)} "
            f"({scrub(self.shown_url)})",
            f"the remote's {scrub(self.ref)} is now {was}: {self.relation}",
        ]
        if self.force:
            lines.append(
                f"forced, with --force-with-lease={scrub(self.ref)}:{self.remote_oid or ''}"
            )
        lines += [f"warning: {warning}" for warning in self.warnings]
        lines += [f"blocked: {blocker}" for blocker in self.blockers]
        return lines


@dataclass(frozen=True)
class PushResult:
    ok: bool
    verified: bool
    reason: str
    event: dict[str, Any]


def push_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment git pushes with: no token a child could forward."""
    return {key: value for key, value in environ.items() if key not in DELIBERATE_ENV_DROPPED}


def _name(value: str, what: str) -> str:
    if not _NAME.match(value) or ".." in value or value.endswith((".lock", "/", ".")):
        raise UsageError(
            f"{what} {value!r} is not a name ax pushes to", hint=f"give a plain {what}"
        )
    return value


def _one(
    top: Path, args: list[str], environ: Mapping[str, str], timeout_s: float = GIT_READ_TIMEOUT_S
) -> GitOutput | None:
    return run_git(top, args, environ, timeout_s=timeout_s)


def _text(done: GitOutput | None) -> str | None:
    return done.text().strip() if done is not None and done.ok else None


def observe_remote(top: Path, url: str, ref: str, environ: Mapping[str, str]) -> str | None:
    """The remote's oid for ``ref``, None when it has none; OperationFailed when unreachable."""
    done = _one(
        top,
        [*_NO_COMMAND_TRANSPORTS, "ls-remote", "--refs", url, ref],
        environ,
        PUSH_LOOK_TIMEOUT_S,
    )
    if done is None or not done.ok:
        raise OperationFailed(
            f"git ls-remote could not read {redact(url)}",
            hint="check the URL, the network and your git credentials",
        )
    for line in done.text().splitlines():
        oid, _, name = line.partition("\t")
        if name == ref and _OID.match(oid):
            return oid
    return None


def prepare_push(
    layout: StateLayout,
    environ: Mapping[str, str],
    *,
    remote: str | None = None,
    branch: str | None = None,
    force: bool = False,
) -> PushPlan:
    """Look at both sides and relate them; a host the configuration blocks is refused
    before ls-remote reaches it."""
    env = push_environment(environ)
    workspace = layout.workspace
    repo = probe_from(workspace, run_many(workspace, PROBE_COMMANDS, env))
    top = repo.toplevel
    if branch is None:
        current = _text(_one(top, ["symbolic-ref", "-q", "HEAD"], env))
        if current is None or not current.startswith("refs/heads/"):
            raise OperationFailed(
                "HEAD is detached: a push needs a branch",
                hint="check one out (git switch -c NAME) or name one: --branch NAME",
            )
        branch = current.removeprefix("refs/heads/")
    branch = _name(branch, "branch")
    oid = _text(_one(top, ["rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}"], env))
    if oid is None:
        raise OperationFailed(
            f"there is no local branch {branch!r} with a commit to push"
            + (" (the repository has no commit yet)" if repo.head is None else "")
        )
    if remote is None:
        remote = _text(_one(top, ["config", "--get", f"branch.{branch}.remote"], env)) or "origin"
    remote = _name(remote, "remote")
    url = _text(_one(top, ["remote", "get-url", "--push", remote], env))
    if not url:
        raise OperationFailed(
            f"there is no remote {remote!r}", hint="list them with `git remote -v`"
        )
    if url.startswith("-"):
        raise OperationFailed(f"the URL of remote {remote!r} starts with '-'; ax will not use it")
    ref = f"refs/heads/{branch}"
    decision = push_decision(url, layout)
    if decision.verdict == "deny":
        raise OperationFailed(f"nothing was pushed: {decision.reason}")
    remote_oid = observe_remote(top, url, ref, env)
    plan = PushPlan(repo, remote, url, branch, oid, remote_oid, "new", force, decision.reason)
    plan.relation = _relation(top, oid, remote_oid, env)
    if plan.relation == "up-to-date":
        plan.blockers.append(f"nothing to push: the remote's {ref} is already {oid[:12]}")
    elif plan.relation == "unknown":
        plan.blockers.append(
            f"the remote's {ref} is at {remote_oid}, a commit this repository has never seen; "
            "ax cannot say what a push would discard and will not replace it, forced or not "
            f"(look first: git fetch {remote})"
        )
    elif plan.relation == "diverged" and not force:
        plan.blockers.append(
            f"not a fast-forward: the remote's {ref} has commits {branch} does not; merge or "
            "rebase first, or push with --force to replace them (bound to what was observed)"
        )
    elif plan.relation == "diverged":
        plan.warnings.append(
            f"forced: the commits on the remote's {ref} that {branch} lacks will be discarded"
        )
    if repo.in_progress() is not None:
        plan.warnings.append(f"{repo.in_progress()} is in progress in this repository")
    return plan


def _relation(top: Path, oid: str, remote_oid: str | None, env: Mapping[str, str]) -> Relation:
    if remote_oid is None:
        return "new"
    if remote_oid == oid:
        return "up-to-date"
    known = _one(top, ["cat-file", "-e", f"{remote_oid}^{{commit}}"], env)
    if known is None or not known.ok:
        return "unknown"
    ancestor = _one(top, ["merge-base", "--is-ancestor", remote_oid, oid], env)
    if ancestor is not None and ancestor.returncode == 0:
        return "fast-forward"
    if ancestor is not None and ancestor.returncode == 1:
        return "diverged"
    return "unknown"


def _push_args(plan: PushPlan, *, dry_run: bool) -> list[str]:
    lease = f"--force-with-lease={plan.ref}:{plan.remote_oid or ''}"
    return [
        *_NO_COMMAND_TRANSPORTS,
        "push",
        "--porcelain",
        *(["--dry-run"] if dry_run else []),
        lease,
        plan.url,
        f"{plan.oid}:{plan.ref}",
    ]


def check_porcelain(plan: PushPlan, done: GitOutput | None) -> str | None:
    """Why git's porcelain answer is not exactly the approved push; None when it is."""
    if done is None:
        return "git push did not answer in time"
    rows = [line.split("\t") for line in done.text().splitlines() if "\t" in line]
    if len(rows) != 1:
        return f"git push named {len(rows)} refs, not exactly the approved one"
    row = rows[0]
    if len(row) != 3:
        return "git push printed a row ax cannot read"
    flag, refspec, summary = row
    if refspec != f"{plan.oid}:{plan.ref}":
        return f"git push would send {refspec}, not the approved {plan.oid}:{plan.ref}"
    allowed = {"*", " ", "+"} if plan.force else {"*", " "}
    if flag == "!":
        return f"the remote refused: {summary}"
    if flag not in allowed or done.returncode != 0:
        return f"git push answered {flag!r} {summary}"
    return None


def push(environ: Mapping[str, str], approved: PushPlan) -> PushResult:
    """Send exactly the approved push, then look again; never raises for a refusal."""
    env = push_environment(environ)
    top = approved.repo.toplevel
    base: dict[str, Any] = {
        "remote": approved.remote,
        "url": approved.shown_url,
        "ref": approved.ref,
        "oid": approved.oid,
        "expected": approved.remote_oid,
        "force": approved.force,
    }
    now = observe_remote(top, approved.url, approved.ref, env)
    if now != approved.remote_oid:
        reason = (
            f"the remote's {approved.ref} moved since the preview "
            f"({approved.remote_oid or 'absent'} -> {now or 'absent'}); nothing was pushed"
        )
        return _done(base, False, False, reason)
    dry = _one(top, _push_args(approved, dry_run=True), env, PUSH_TIMEOUT_S)
    problem = check_porcelain(approved, dry)
    if problem is not None:
        return _done(
            base, False, False, f"the dry run did not match: {problem}; nothing was pushed"
        )
    done = _one(top, _push_args(approved, dry_run=False), env, PUSH_TIMEOUT_S)
    problem = check_porcelain(approved, done)
    try:
        after = observe_remote(top, approved.url, approved.ref, env)
    except OperationFailed:
        after = None
    verified = after == approved.oid
    if problem is not None:
        return _done(base, False, verified, problem)
    reason = "pushed" if verified else "git reported the push, but the remote does not show it"
    return _done(base, True, verified, reason)


def _done(base: dict[str, Any], ok: bool, verified: bool, reason: str) -> PushResult:
    event = {
        "type": "push.completed",
        **base,
        "ok": ok,
        "verified": verified,
        "reason": redact(reason),
    }
    return PushResult(ok, verified, redact(reason), event)


def started_event(plan: PushPlan) -> dict[str, Any]:
    return {
        "type": "push.started",
        "remote": plan.remote,
        "url": plan.shown_url,
        "ref": plan.ref,
        "oid": plan.oid,
        "expected": plan.remote_oid,
        "force": plan.force,
    }


def push_decision(url: str, layout: StateLayout, grants: Grants | None = None) -> Decision:
    """ax-policy's decision on this push: an external write, so it asks every time, is never
    grantable (no session or durable grant answers it), and a blocked host denies."""
    from ax_policy import DecisionContext, ExternalFact, ToolFacts, decide, load_config

    fact = ExternalFact(host=_host(url), write=True)
    context = DecisionContext(
        workspace=layout.workspace, config=load_config(layout), state_dir=layout.root
    )
    return decide(ToolFacts(PUSH_TOOL, external=lambda _input: fact), None, context, grants)


def _host(url: str) -> str | None:
    match = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)", url)
    if match:
        return match.group(1)
    scp = re.match(r"^(?:[^@/:]+@)?([^/:]+):", url)
    return scp.group(1) if scp and not url.startswith("/") else None
