"""What the index holds, as plain data: the inventory, symbols and edges a build extracted.

The index (index.py) stores these; ranking, rendering and retrieval read them. Paths are
workspace-relative POSIX strings. Names are identifier characters only (extraction
refuses anything else), so repository prose never reaches a prompt through the map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

FileStatus = Literal["indexed", "listed", "pending"]


@dataclass(frozen=True)
class FileEntry:
    """One file of the inventory.

    ``indexed``: its symbols are extracted; ``listed``: never read (``skip`` says why:
    secret-named, binary, too large, minified, no grammar, unreadable, ...);
    ``pending``: not extracted yet (a build ran out of its wall budget).
    """

    path: str
    size: int
    mtime_ns: int
    language: str | None
    status: FileStatus
    skip: str | None = None
    tracked: bool = True
    changed: bool = False


@dataclass(frozen=True)
class Symbol:
    """A definition: ``kind`` is function, class, method, type, variable, ..."""

    path: str
    name: str
    kind: str
    line: int


@dataclass(frozen=True)
class Coverage:
    total: int
    indexed: int
    listed: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    capped: int = 0
    languages: dict[str, int] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return self.pending > 0 or self.capped > 0


@dataclass(frozen=True)
class Snapshot:
    """Everything a ranking needs, read from the index at one moment."""

    workspace: str
    files: list[FileEntry]
    symbols: list[Symbol]
    # file -> the identifier names it references (uses), deduplicated.
    references: dict[str, frozenset[str]]
    # (importing file, imported file), resolved to files of the inventory.
    imports: list[tuple[str, str]]
    coverage: Coverage
    git: bool
    # False when the listing or the walk was cut short: coverage.total is a lower bound.
    exact: bool = True

    @cached_property
    def unlinked(self) -> int:
        """Indexed files with their definitions only: the build's budget ran out before
        their references and imports, so the ranking cannot link them. Counted once a
        snapshot, not once a render."""
        return sum(1 for f in self.files if f.status == "indexed" and f.path not in self.references)
