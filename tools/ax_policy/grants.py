"""Grants: standing answers to questions the engine would otherwise ask.

Session grants live in memory only, keyed (tool, class), and exist only for
the grantable classes (sensitive reads, external reads); the engine never
consults them for a tool that runs a command, writes or deletes.

Durable grants (``grants.json`` + the append-only ``grants.log`` at the state
root) hold exact identities only: one check replay key, or one named tool from
a closed set of read-only external tools, one exact MCP tool, or one exact
workspace-declared MCP server entry (its sha256), scoped to one workspace. No
prefixes, no patterns. They are listed and revoked with ``ax-policy grants``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import ValidationError

from libcommon import clock
from libcommon.cliapp import describe_validation_error
from libcommon.errors import OperationFailed, UsageError
from libcommon.locks import file_lock

from .models import DurableGrant, GrantClass, GrantStore, SessionGrant
from .stores import load_store, lock_path, save_store

GRANTABLE_CLASSES: frozenset[str] = frozenset(get_args(GrantClass))


class SessionGrants:
    """In-memory (tool, class) grants for one session; never persisted."""

    def __init__(
        self, entries: Iterable[SessionGrant] = (), replay_keys: Iterable[str] = ()
    ) -> None:
        self._held: set[tuple[str, GrantClass]] = set()
        # Setup installs answered for the session: exact replay keys, no tool, no class.
        self._replays: set[str] = set(replay_keys)
        for entry in entries:
            self.add(entry.tool, entry.grant_class)

    def add_replay(self, key: str) -> None:
        self._replays.add(key)

    def holds_replay(self, key: str) -> bool:
        return key in self._replays

    def replay_keys(self) -> list[str]:
        return sorted(self._replays)

    def add(self, tool: str, grant_class: str) -> None:
        if grant_class not in GRANTABLE_CLASSES:
            raise UsageError(
                f"class {grant_class!r} cannot be granted for a session",
                hint=f"only {', '.join(sorted(GRANTABLE_CLASSES))} are grantable",
            )
        self._held.add((tool, cast(GrantClass, grant_class)))

    def holds(self, tool: str, grant_class: str) -> bool:
        return (tool, grant_class) in self._held

    def entries(self) -> list[SessionGrant]:
        return [
            SessionGrant(tool=tool, grant_class=grant_class)
            for tool, grant_class in sorted(self._held)
        ]


@dataclass
class Grants:
    """What the engine may consult: this session's grants and the workspace's durable ones."""

    session: SessionGrants = field(default_factory=SessionGrants)
    durable: Sequence[DurableGrant] = ()

    def has_replay_key(self, key: str) -> bool:
        return any(g.kind == "check-replay" and g.replay_key == key for g in self.durable)

    def has_external_tool(self, tool: str) -> bool:
        return any(g.kind == "external-tool" and g.tool == tool for g in self.durable)

    def has_mcp_server(self, entry_sha256: str) -> bool:
        return any(g.kind == "mcp-server" and g.entry_sha256 == entry_sha256 for g in self.durable)


def _grants_file(root: Path) -> Path:
    return root / "grants.json"


def _grants_log(root: Path) -> Path:
    return root / "grants.log"


def list_durable_grants(root: Path, workspace: Path | None = None) -> list[DurableGrant]:
    """Every durable grant at the state root ``root``, or only one workspace's."""
    store = load_store(_grants_file(root), GrantStore)
    if workspace is None:
        return list(store.grants)
    return [grant for grant in store.grants if grant.workspace == str(workspace)]


def add_durable_grant(
    root: Path,
    workspace: Path,
    *,
    replay_key: str | None = None,
    tool: str | None = None,
    mcp_server: tuple[str, str] | None = None,
) -> DurableGrant:
    """Record one exact identity for ``workspace``; an identical grant is returned as is.

    ``mcp_server`` is a workspace-declared MCP server's (name, entry sha256).
    """
    given = [value for value in (replay_key, tool, mcp_server) if value is not None]
    if len(given) != 1:
        raise UsageError("a durable grant holds exactly one replay key, one tool or one server")
    kind: Literal["check-replay", "external-tool", "mcp-server"] = (
        "check-replay"
        if replay_key is not None
        else ("external-tool" if tool is not None else "mcp-server")
    )
    try:
        grant = DurableGrant(
            id=clock.new_id("g"),
            kind=kind,
            workspace=str(workspace),
            replay_key=replay_key,
            tool=tool,
            server=mcp_server[0] if mcp_server else None,
            entry_sha256=mcp_server[1] if mcp_server else None,
            created_at=clock.timestamp(),
        )
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, "grant")) from None
    with file_lock(lock_path(_grants_file(root))):
        store = load_store(_grants_file(root), GrantStore)
        for existing in store.grants:
            if _identity(existing) == _identity(grant):
                return existing
        store.grants.append(grant)
        save_store(
            _grants_file(root), store, _grants_log(root), {"action": "grant", **grant.to_json()}
        )
    return grant


def _identity(grant: DurableGrant) -> tuple[str | None, ...]:
    return (grant.workspace, grant.kind, grant.replay_key, grant.tool, grant.entry_sha256)


def revoke_durable_grant(root: Path, grant_id: str) -> DurableGrant:
    """Remove one durable grant by id; it applies from the next session that loads grants."""
    with file_lock(lock_path(_grants_file(root))):
        store = load_store(_grants_file(root), GrantStore)
        for index, grant in enumerate(store.grants):
            if grant.id == grant_id:
                del store.grants[index]
                save_store(
                    _grants_file(root),
                    store,
                    _grants_log(root),
                    {"action": "revoke", **grant.to_json()},
                )
                return grant
    raise OperationFailed(
        f"no durable grant with id {grant_id!r}",
        hint="list them with `ax-policy grants list`",
    )
