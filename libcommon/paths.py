"""The state root, the workspace, the project slug and the on-disk layout.

All of ax's state lives under one root outside the workspace (DESIGN.md,
"State root"). A root that resolves inside the workspace is refused: a
repository must never be able to plant the state that grants it authority.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from libcommon.errors import UsageError

SLUG_HASH_CHARS = 12
SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# A session owns sessions/<id>/ next to files named <id>.<suffix>; an id that ends in
# one of these suffixes would make one session's folder another session's file.
RESERVED_ID_SUFFIXES = (".jsonl", ".lock", ".partial", ".guard", ".tmp", ".index")
_UNSAFE_SLUG_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def resolve_lenient(path: str | os.PathLike[str]) -> Path:
    """Resolve symlinks and ``..`` component by component, like the kernel would.

    Unlike ``Path.resolve(strict=True)`` the path need not exist: the part that
    does not exist yet is kept as written. ``..`` is never folded lexically
    before a symlink is followed, so ``link/..`` cannot hide where it leads.
    """
    return Path(os.path.realpath(os.path.join(os.getcwd(), os.fspath(path))))


def is_within(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or str(path).startswith(str(root).rstrip(os.sep) + os.sep)


def state_root(environ: Mapping[str, str] | None = None) -> Path:
    """``AX_STATE_DIR``, else ``$XDG_STATE_HOME/ax``, else ``~/.local/state/ax``."""
    env = os.environ if environ is None else environ
    explicit = env.get("AX_STATE_DIR")
    if explicit:
        return resolve_lenient(explicit)
    xdg = env.get("XDG_STATE_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return resolve_lenient(Path(xdg) / "ax")
    home = env.get("HOME") or os.path.expanduser("~")
    return resolve_lenient(Path(home) / ".local" / "state" / "ax")


def resolve_workspace(raw: str | os.PathLike[str] | None = None) -> Path:
    """The workspace's realpath; it must be an existing directory."""
    target = Path(os.path.realpath(os.fspath(raw) if raw is not None else os.getcwd()))
    if not target.is_dir():
        raise UsageError(
            f"workspace {os.fspath(raw) if raw is not None else target} is not a directory",
            hint="pass an existing folder with -C/--workspace",
        )
    return target


def project_slug(workspace: Path) -> str:
    """``<basename>-<first 12 hex of sha256(realpath)>``.

    Characters that are unsafe in a directory name are replaced by ``_``; the
    hash keeps two workspaces apart even when their basenames collide.
    """
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()
    base = _UNSAFE_SLUG_CHARS.sub("_", os.path.basename(real.rstrip(os.sep))) or "root"
    return f"{base}-{digest[:SLUG_HASH_CHARS]}"


def check_session_id(session_id: str) -> str:
    """Refuse an id that could escape its folder, before any path is built."""
    if not SESSION_ID_PATTERN.fullmatch(session_id):
        raise UsageError(
            f"invalid session id {session_id!r}",
            hint="use 1-128 characters: letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )
    if session_id.endswith(RESERVED_ID_SUFFIXES):
        raise UsageError(
            f"invalid session id {session_id!r}: it ends in a suffix ax uses for its own files",
            hint=f"pick an id that does not end in {', '.join(RESERVED_ID_SUFFIXES)}",
        )
    return session_id


@dataclass(frozen=True)
class StateLayout:
    """Where each piece of state lives for one workspace (see DESIGN.md)."""

    root: Path
    workspace: Path

    @property
    def config_file(self) -> Path:
        return self.root / "config.json"

    @property
    def trust_file(self) -> Path:
        return self.root / "trust.json"

    @property
    def trust_log(self) -> Path:
        return self.root / "trust.log"

    @property
    def grants_file(self) -> Path:
        return self.root / "grants.json"

    @property
    def grants_log(self) -> Path:
        return self.root / "grants.log"

    # Cached: the slug is a realpath and a sha256, and a tool call asks for it dozens of times.
    @cached_property
    def slug(self) -> str:
        return project_slug(self.workspace)

    @cached_property
    def project_dir(self) -> Path:
        return self.root / "projects" / self.slug

    @property
    def objects_dir(self) -> Path:
        return self.project_dir / "objects"

    @property
    def sessions_dir(self) -> Path:
        return self.project_dir / "sessions"

    @property
    def external_slates_dir(self) -> Path:
        return self.project_dir / "external-slates"

    @property
    def proposals_dir(self) -> Path:
        return self.project_dir / "proposals"

    @property
    def candidates_dir(self) -> Path:
        return self.project_dir / "candidates"

    @property
    def previews_dir(self) -> Path:
        return self.project_dir / "previews"

    @property
    def memory_dir(self) -> Path:
        return self.project_dir / "memory"

    @property
    def map_dir(self) -> Path:
        """ax-map's derived index: rebuildable at any time, never authority."""
        return self.project_dir / "map"

    def session_log(self, session_id: str) -> Path:
        return self.sessions_dir / f"{check_session_id(session_id)}.jsonl"

    def session_lease(self, session_id: str) -> Path:
        return self.sessions_dir / f"{check_session_id(session_id)}.lock"

    def session_dir(self, session_id: str) -> Path:
        return self.sessions_dir / check_session_id(session_id)


def state_layout(
    workspace: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> StateLayout:
    """Resolve the workspace and state root, refusing a root inside the workspace."""
    ws = resolve_workspace(workspace)
    root = state_root(environ)
    if is_within(root, ws):
        raise UsageError(
            f"state root {root} is inside the workspace {ws}",
            hint="point AX_STATE_DIR (or XDG_STATE_HOME) at a folder outside the workspace",
        )
    return StateLayout(root=root, workspace=ws)
