"""Trust: recorded consent to let ax operate in a folder.

Trust is not a sandbox; it says a person agreed, nothing more. It lives in
``trust.json`` (keyed by the workspace's realpath) and an append-only
``trust.log``, both at the state root, which is never inside a workspace, so a
repository cannot plant its own consent. An executor's worktree under the state
root inherits its parent workspace's trust (``libcommon.trust.derived_parent``),
which is never written to the store. Keys are exact realpaths: two folders
that differ only in case are two folders on a case-sensitive filesystem.
"""

from __future__ import annotations

from collections.abc import Callable

from libcommon import clock
from libcommon.errors import NotTrusted
from libcommon.locks import file_lock
from libcommon.paths import StateLayout
from libcommon.trust import derived_parent

from .models import TrustEntry, TrustStatus, TrustStore
from .stores import load_store, lock_path, save_store


def check_trust(layout: StateLayout) -> TrustStatus:
    """Is this workspace trusted? A corrupt store raises CorruptStore, never "no"."""
    store = load_store(layout.trust_file, TrustStore)
    key = str(layout.workspace)
    entry = store.workspaces.get(key)
    if entry is not None:
        return TrustStatus(workspace=key, trusted=True, basis="store", granted_at=entry.granted_at)
    # An executor's worktree of a trusted workspace: trusted by derivation, never stored.
    parent = derived_parent(layout.root, layout.workspace)
    inherited = store.workspaces.get(str(parent)) if parent is not None else None
    if inherited is None:
        return TrustStatus(workspace=key, trusted=False)
    return TrustStatus(
        workspace=key, trusted=True, basis="derived", granted_at=inherited.granted_at
    )


def grant_trust(layout: StateLayout, source: str = "cli") -> TrustStatus:
    """Record consent for this workspace (idempotent: an existing grant is kept)."""
    key = str(layout.workspace)
    with file_lock(lock_path(layout.trust_file)):
        store = load_store(layout.trust_file, TrustStore)
        entry = store.workspaces.get(key)
        if entry is None:
            entry = TrustEntry(granted_at=clock.timestamp(), source=source)
            store.workspaces[key] = entry
            record = {"action": "grant", "workspace": key, "source": source}
            save_store(layout.trust_file, store, layout.trust_log, record)
    return TrustStatus(workspace=key, trusted=True, basis="store", granted_at=entry.granted_at)


def revoke_trust(layout: StateLayout, source: str = "cli") -> bool:
    """Withdraw consent; True when there was a grant to withdraw."""
    key = str(layout.workspace)
    with file_lock(lock_path(layout.trust_file)):
        store = load_store(layout.trust_file, TrustStore)
        if store.workspaces.pop(key, None) is None:
            return False
        record = {"action": "revoke", "workspace": key, "source": source}
        save_store(layout.trust_file, store, layout.trust_log, record)
    return True


def ensure_trusted(
    layout: StateLayout,
    *,
    interactive: bool,
    trust_once: bool = False,
    ask: Callable[[str], bool] | None = None,
) -> TrustStatus:
    """The trust gate: trusted, consented now, or NotTrusted (exit 3).

    ``trust_once`` is ``--trust-this-workspace``: consent for this invocation
    only, never written. ``ask`` is offered the question only when the caller
    is interactive (a real terminal); a piped answer nobody read is not consent.
    """
    status = check_trust(layout)
    if status.trusted:
        return status
    if trust_once:
        return TrustStatus(workspace=status.workspace, trusted=True, basis="once")
    hint = (
        f"run `ax-policy trust grant -C {status.workspace}` to record consent, "
        "or pass --trust-this-workspace for this run only"
    )
    if interactive and ask is not None:
        question = f"Let ax read, change and run commands in {status.workspace}?"
        if ask(question):
            return grant_trust(layout, source="prompt")
        raise NotTrusted(f"consent to work in {status.workspace} was declined", hint=hint)
    raise NotTrusted(f"workspace {status.workspace} is not trusted", hint=hint)
