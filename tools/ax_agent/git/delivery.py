"""What a person does with git, from the terminal (``/commit``) or the command line
(``ax-agent commit``): one flow for both, so the preview, the question and the record
cannot differ between them.

Every flow shows its preview, then asks. With no one to ask (not a terminal) it needs
``--yes``; without it the flow stops after the preview, exit 2, saying so. The model
never reaches these: they are commands a person types, and no model tool can call one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout

Say = Callable[[str], None]
Confirm = Callable[[str], bool]
Record = Callable[[dict[str, Any]], None]


def commit_flow(
    layout: StateLayout,
    session_id: str,
    environ: Mapping[str, str],
    *,
    message: str | None,
    yes: bool,
    confirm: Confirm | None,
    say: Say,
    record: Record,
) -> str | None:
    """Preview, ask, commit: the new commit's oid, or None when the person said no."""
    from .commit import check_message, commit, default_message, prepare_commit

    plan = prepare_commit(layout, session_id, environ)
    for line in plan.preview():
        say(line)
    if plan.blockers:
        raise OperationFailed("nothing was committed: " + "; ".join(plan.blockers))
    text = check_message(message) if message is not None else default_message(session_id, plan)
    say(f"message: {text.splitlines()[0]}")
    if not yes:
        if confirm is None:
            raise UsageError(
                "nothing was committed: there is no one here to confirm the preview",
                hint="read the preview above, then run again with --yes",
            )
        if not confirm(f"Commit these {len(plan.rows)} path(s)?"):
            say("Nothing was committed.")
            return None
    made = commit(layout, session_id, environ, plan, text)
    record(made.event)
    say(f"Committed {made.oid} ({len(plan.rows)} path(s)).")
    return made.oid


def push_flow(
    layout: StateLayout,
    session_id: str,
    environ: Mapping[str, str],
    *,
    remote: str | None,
    branch: str | None,
    force: bool,
    yes: bool,
    confirm: Confirm | None,
    say: Say,
    record: Record,
) -> bool:
    """Look, preview, ask, push, look again. True when the remote verifiably holds the commit;
    OperationFailed when git refused or nothing could be verified."""
    from .push import prepare_push, push, started_event

    plan = prepare_push(layout, environ, remote=remote, branch=branch, force=force)
    for line in plan.preview():
        say(line)
    if plan.blockers:
        raise OperationFailed("nothing was pushed: " + "; ".join(plan.blockers))
    say(f"policy: {plan.policy}")
    if not yes:
        if confirm is None:
            raise UsageError(
                "nothing was pushed: there is no one here to confirm the preview",
                hint="read the preview above, then run again with --yes",
            )
        if not confirm(f"Push {plan.oid[:12]} to {plan.ref} on {plan.remote}?"):
            say("Nothing was pushed.")
            return False
    record(started_event(plan))
    result = push(environ, plan)
    record(result.event)
    if not result.ok:
        raise OperationFailed(f"the push failed: {result.reason}")
    if not result.verified:
        raise OperationFailed(f"pushed, but not verified: {result.reason}")
    say(f"Pushed {plan.oid[:12]} to {plan.ref} on {plan.remote}; the remote now shows it.")
    return True
