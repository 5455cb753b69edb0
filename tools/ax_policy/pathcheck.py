"""Path validation: what a path really points at, stated as facts.

``validate_path`` never says allow or deny. It resolves the path the way the
kernel would (symlinks followed component by component, ``..`` applied after
them), then reports whether the result is inside the workspace, whether it is
the workspace folder itself, a protected place, secret-named, a file with more
than one hard link or a device, FIFO or socket, each with the reason. A path
the system refuses to resolve (too long, unreadable, a loop) is not valid,
never an exception. The engine turns facts into a verdict.

``check_path`` computes the facts as a plain dataclass without touching
pydantic (``ax-policy review-command`` starts faster for it); ``validate_path``
is the same answer as the ``PathFacts`` contract.

These checks are logical policy for the typed file tools. They race with the
filesystem (a link can change between the check and the use); the sandbox, not
this module, is what confines a process.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from libcommon.paths import is_within, resolve_lenient, state_root
from libcommon.safeopen import PROTECTED_NAMES
from libcommon.secretnames import secret_folder, secret_name_pattern

if TYPE_CHECKING:
    from .models import PathFacts

MAX_PATH_CHARS = 4096
# How much of a path an unresolvable-path reason quotes.
MAX_REASON_PATH_CHARS = 200

# Places where writes are denied and a command's cwd is refused, wherever they
# appear: the repository's internals and the workspace's own ax config. The one
# set the writers (libcommon.safeopen) refuse too.
PROTECTED_SEGMENTS = PROTECTED_NAMES


class PathRules(Protocol):
    """The configured deny lists a path check reads (a WorkspaceConfig or DenyLists)."""

    @property
    def protected_paths(self) -> Sequence[str]: ...

    @property
    def secret_patterns(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class PathFinding:
    """What check_path found out about one path; the fields of the PathFacts contract."""

    raw: str
    write: bool
    valid: bool
    invalid_reason: str | None = None
    resolved: str | None = None
    inside_workspace: bool = False
    containment_reason: str | None = None
    protected: bool = False
    protected_reason: str | None = None
    secret: bool = False
    secret_reason: str | None = None
    workspace_root: bool = False
    hard_linked: bool = False
    hard_linked_reason: str | None = None
    special: bool = False
    special_reason: str | None = None


def validate_path(
    raw: str,
    workspace: str | os.PathLike[str],
    *,
    write: bool = False,
    base: str | os.PathLike[str] | None = None,
    config: PathRules | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> PathFacts:
    """Facts about ``raw`` as the PathFacts contract; see check_path."""
    from .models import PathFacts

    finding = check_path(raw, workspace, write=write, base=base, config=config, state_dir=state_dir)
    return PathFacts(**asdict(finding))


def check_path(
    raw: str,
    workspace: str | os.PathLike[str],
    *,
    write: bool = False,
    base: str | os.PathLike[str] | None = None,
    config: PathRules | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> PathFinding:
    """Facts about ``raw``; relative paths are taken from ``base`` (default: the workspace)."""
    problem = _invalid_reason(raw)
    if problem is not None:
        return PathFinding(raw=raw, write=write, valid=False, invalid_reason=problem)

    try:
        return _examine(raw, workspace, write, base, config, state_dir)
    except (OSError, RecursionError) as exc:
        # The system refused to resolve or examine it (a name too long, a folder it
        # may not read, a link chain too deep): nothing is known, so it is not valid.
        return PathFinding(raw=raw, write=write, valid=False, invalid_reason=_unresolvable(exc))


def _examine(
    raw: str,
    workspace: str | os.PathLike[str],
    write: bool,
    base: str | os.PathLike[str] | None,
    config: PathRules | None,
    state_dir: str | os.PathLike[str] | None,
) -> PathFinding:
    ws = Path(os.path.realpath(workspace))
    start = Path(os.path.realpath(base)) if base is not None else ws
    joined = start / raw
    resolved = resolve_lenient(joined)
    loop = _unresolved_link(resolved)
    if loop is not None:
        return PathFinding(
            raw=raw,
            write=write,
            valid=False,
            invalid_reason=f"symbolic link {loop} cannot be resolved (a loop)",
        )

    inside = is_within(resolved, ws)
    if inside:
        containment = f"{resolved} is inside the workspace {ws}"
    elif is_within(Path(os.path.normpath(joined)), ws):
        containment = f"{raw!r} leads outside the workspace {ws} through a symlink, to {resolved}"
    else:
        containment = f"{resolved} is outside the workspace {ws}"

    rel = _relative(resolved, ws)
    raw_parts = _parts(raw)
    protected = _protected_reason(resolved, ws, rel, raw_parts, config, state_dir)
    secret = _secret_reason(raw_parts, rel, resolved, config)
    linked, special = _file_kind_reasons(resolved)
    return PathFinding(
        raw=raw,
        write=write,
        valid=True,
        resolved=str(resolved),
        inside_workspace=inside,
        containment_reason=containment,
        protected=protected is not None,
        protected_reason=protected,
        secret=secret is not None,
        secret_reason=secret,
        workspace_root=resolved == ws,
        hard_linked=linked is not None,
        hard_linked_reason=linked,
        special=special is not None,
        special_reason=special,
    )


def _unresolvable(exc: OSError | RecursionError) -> str:
    if isinstance(exc, RecursionError):
        return "it cannot be resolved: too many levels of symbolic links"
    what = exc.strerror or errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    where = f" at {exc.filename}" if exc.filename is not None else ""
    if len(where) > MAX_REASON_PATH_CHARS:
        where = where[:MAX_REASON_PATH_CHARS] + "…"
    return f"it cannot be resolved: {what}{where}"


def _file_kind_reasons(resolved: Path) -> tuple[str | None, str | None]:
    """Why the file there is multiply linked and why it is special (a device, FIFO, socket)."""
    try:
        info = os.stat(resolved)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        return None, None
    linked = None
    if info.st_nlink > 1:
        # Another name for the same file may be anywhere on this file system: reading
        # it reads that file, and writing in place writes it.
        linked = (
            f"it has {info.st_nlink} hard links, so the same file has another name that "
            "may be outside the workspace"
        )
    special = None
    if not stat.S_ISREG(mode):
        kind = (
            "a character device"
            if stat.S_ISCHR(mode)
            else "a block device"
            if stat.S_ISBLK(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        special = f"it is {kind}, which reaches outside the files of the workspace"
    return linked, special


def _invalid_reason(raw: str) -> str | None:
    if raw == "":
        return "the path is empty"
    if len(raw) > MAX_PATH_CHARS:
        return f"the path is longer than {MAX_PATH_CHARS} characters"
    for char in raw:
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0:
            name = "NUL" if code == 0 else f"control character U+{code:04X}"
            return f"the path contains a {name}"
        if 0xD800 <= code <= 0xDFFF:
            return "the path contains bytes that are not valid UTF-8"
    return None


def _unresolved_link(resolved: Path) -> Path | None:
    """A component realpath left as a link is a loop it gave up on."""
    for candidate in (resolved, *resolved.parents):
        if candidate.is_symlink():
            return candidate
    return None


def _relative(resolved: Path, ws: Path) -> str | None:
    if resolved == ws:
        return "."
    if is_within(resolved, ws):
        return str(resolved.relative_to(ws))
    return None


def _parts(raw: str) -> list[str]:
    return [part for part in PurePosixPath(raw).parts if part not in ("/", ".", "")]


def _segments_named(parts: Iterable[str], names: frozenset[str]) -> str | None:
    for part in parts:
        if part.casefold() in names:
            return part
    return None


def _protected_reason(
    resolved: Path,
    ws: Path,
    rel: str | None,
    raw_parts: list[str],
    config: PathRules | None,
    state_dir: str | os.PathLike[str] | None,
) -> str | None:
    resolved_parts = _parts(rel) if rel is not None else _parts(str(resolved))
    segment = _segments_named(resolved_parts, PROTECTED_SEGMENTS) or _segments_named(
        raw_parts, PROTECTED_SEGMENTS
    )
    if segment is not None:
        return f"it is inside a {segment} folder, which ax never lets a tool change"
    root = Path(os.path.realpath(state_dir)) if state_dir is not None else state_root()
    if is_within(resolved, root) and not in_executor_worktree(resolved, ws, root):
        return f"it is inside ax's state root {root}"
    if config is not None and rel is not None:
        for pattern in config.protected_paths:
            if matches_pattern(rel, pattern):
                return f"it matches the configured protected path {pattern!r}"
    return None


def in_executor_worktree(resolved: Path, ws: Path, root: Path) -> bool:
    """Is ``resolved`` inside ``ws``, the workspace of this check, and is ``ws`` an
    executor's registered worktree under the state root ``root``?

    The one place under the state root a tool may change: an executor's session works
    in its own git worktree there (``ax_agent.tasks.worktrees``). Registered means what
    trust by derivation proves (``libcommon.trust.derived_parent``: the group's owner
    file names the folder as one of its tasks, for the workspace whose project holds
    it). Everything else under the root (logs, grants, the trust store, the owner file,
    other tasks' worktrees) stays refused, and a parent's session, whose workspace is
    not under the root, gets nothing from this.
    """
    from libcommon.trust import derived_parent

    return is_within(resolved, ws) and derived_parent(root, ws) is not None


def _secret_reason(
    raw_parts: list[str], rel: str | None, resolved: Path, config: PathRules | None
) -> str | None:
    resolved_parts = _parts(rel) if rel is not None else _parts(str(resolved))
    names = [parts[-1] for parts in (raw_parts, resolved_parts) if parts]
    for name in names:
        pattern = secret_name_pattern(name)
        if pattern is not None:
            return f"the name {name!r} looks like a secret ({pattern})"
    folder = secret_folder(raw_parts) or secret_folder(resolved_parts)
    if folder is not None:
        return f"it is inside a {folder} folder, which holds credentials"
    if config is not None:
        candidates = [*names, *([rel] if rel is not None else []), "/".join(raw_parts)]
        for pattern in config.secret_patterns:
            if any(matches_pattern(candidate, pattern) for candidate in candidates if candidate):
                return f"it matches the configured secret pattern {pattern!r}"
    return None


def matches_pattern(rel: str, pattern: str) -> bool:
    """Does a workspace-relative path (or any folder above it) match a glob pattern?

    A pattern without a slash matches any single name on the way (``*.sqlite``,
    ``secrets``); one with a slash matches the path from the workspace root
    (``config/prod/*``). Matching is case-insensitive, which only ever widens a
    deny list.
    """
    target = pattern.strip().removeprefix("./").rstrip("/").casefold()
    if not target:
        return False
    parts = [part.casefold() for part in _parts(rel)]
    if "/" not in target:
        return any(fnmatch.fnmatchcase(part, target) for part in parts)
    return any(
        fnmatch.fnmatchcase("/".join(parts[:end]), target.lstrip("/"))
        for end in range(1, len(parts) + 1)
    )
