"""Snapshots written by hand for ranking, rendering and retrieval tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ax_map.model import Coverage, FileEntry, Snapshot, Symbol


def kind_of(name: str) -> str:
    if name.isupper():
        return "constant"
    return "class" if name[:1].isupper() else "function"


def snapshot(
    files: Mapping[str, tuple[Sequence[str], Iterable[str]]],
    *,
    imports: Sequence[tuple[str, str]] = (),
    changed: Iterable[str] = (),
    untracked: Iterable[str] = (),
    listed: Mapping[str, str] | None = None,
    pending: Iterable[str] = (),
    git: bool = True,
    capped: int = 0,
    workspace: str = "/ws",
) -> Snapshot:
    """``files``: path -> (names it defines, names it uses). Each definition is on its
    own line (1, 2, ...), with a kind guessed from its spelling."""
    changed, untracked, pending = set(changed), set(untracked), set(pending)
    listed = dict(listed or {})
    entries = []
    symbols = []
    references = {}
    for path, (defines, uses) in files.items():
        status = "pending" if path in pending else "indexed"
        entries.append(
            FileEntry(
                path,
                size=100,
                mtime_ns=1,
                language="python",
                status=status,
                tracked=path not in untracked,
                changed=path in changed,
            )
        )
        if status == "indexed":
            symbols += [
                Symbol(path, name, kind_of(name), line) for line, name in enumerate(defines, 1)
            ]
            references[path] = frozenset(uses)
    for path, reason in listed.items():
        entries.append(FileEntry(path, 10, 1, None, "listed", skip=reason))
    reasons: dict[str, int] = {}
    for reason in listed.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    coverage = Coverage(
        total=len(entries),
        indexed=sum(1 for e in entries if e.status == "indexed"),
        listed=reasons,
        pending=len(pending),
        capped=capped,
        languages={"python": sum(1 for e in entries if e.language)} if entries else {},
    )
    return Snapshot(workspace, entries, symbols, references, list(imports), coverage, git)
