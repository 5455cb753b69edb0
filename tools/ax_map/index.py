"""The index: one SQLite file in the state root, derived, never authority.

``projects/<slug>/map/index.sqlite`` holds the inventory (one row per file, keyed by
its path's bytes, with the size and ``mtime_ns`` it was extracted at), the
definitions, the referenced names, the raw import specifiers and the resolved import
edges, and a ``meta`` table with the schema version and the coverage of the build
that wrote it.

Writes are whole-file and atomic: a build works on a private copy
(``.index-<random>.tmp`` beside it, journal off), fsyncs it and renames it over
the index. The index file is therefore never changed in place, so a reader opens
it read-only and ``immutable`` and needs no lock: it sees one build's index from
start to end, even while the next build replaces it. Builds take
``build.lock`` (flock) in the same folder, so two never write at once.

An index that is missing, cannot be read, or carries another schema version is
not read: a build starts over from nothing (cold) and says why; a reader raises
``IndexUnavailable`` naming the reason and the cure (``ax-map build``). An index of
a newer schema version is rebuilt too, in this version: the index is a cache, so
the newer ax-map rebuilds it in turn when it next runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from collections.abc import Iterable, Mapping
from contextlib import closing, suppress
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from libcommon.atomic import fsync_dir
from libcommon.errors import OperationFailed
from libcommon.paths import StateLayout

from .model import Coverage, FileEntry, FileStatus, Snapshot, Symbol
from .pathtext import quote_path

SCHEMA_VERSION = 3
# files.tier: how a file's extraction was made.
TIER_NONE = 0
# The first tier's whole extraction: definitions, imports and references.
TIER_FIRST = 1
TIER_PARSED = 2
# The first tier's extraction, kept because tree-sitter gave up or crashed on the file.
TIER_PARSE_FAILED = 3
# The first tier's definitions; its references and imports not extracted yet.
TIER_STRUCTURE = 4
INDEX_NAME = "index.sqlite"
LOCK_NAME = "build.lock"
_TMP_PREFIX = ".index-"
_TMP_SUFFIX = ".tmp"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE files (
    path BLOB PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    language TEXT,
    status TEXT NOT NULL,
    skip TEXT,
    tracked INTEGER NOT NULL,
    changed INTEGER NOT NULL,
    tier INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE symbols (path BLOB PRIMARY KEY, definitions TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE refs (path BLOB PRIMARY KEY, names TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE specs (path BLOB PRIMARY KEY, specs TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE imports (source BLOB NOT NULL, target BLOB NOT NULL);
"""
# A writer holds this many rows of a table before it writes them, in one statement.
_BUFFERED_ROWS = 4096


class IndexUnavailable(OperationFailed):
    """The index cannot be read; ``reason`` is missing, corrupt, older or newer."""

    def __init__(self, path: Path, reason: str, detail: str) -> None:
        super().__init__(
            f"the map index {quote_path(str(path))} is {detail}",
            hint="run `ax-map build` to build it (it is derived and safe to rebuild)",
        )
        self.reason = reason


class StoredFile(NamedTuple):
    """A ``files`` row, as the next build's stat-diff compares it (a tuple: a warm build
    reads 20,000 of them, and a frozen dataclass costs three times as much to make)."""

    size: int
    mtime_ns: int
    language: str | None
    status: FileStatus
    skip: str | None
    tracked: bool
    changed: bool
    tier: int


def index_path(map_dir: Path) -> Path:
    return map_dir / INDEX_NAME


# os.fsencode's encoding and error handler, named once: a build encodes every path twice,
# and the call through os.fsencode costs as much again as the encoding.
_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()


def _key(path: str) -> bytes:
    return path.encode(_FS_ENCODING, _FS_ERRORS)


def _path(key: bytes) -> str:
    return os.fsdecode(key)


def _index_file(path: Path) -> os.stat_result:
    """The index file's status, never following a link: IndexUnavailable unless a file."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise IndexUnavailable(path, "missing", "missing") from None
    except OSError as exc:
        raise IndexUnavailable(path, "corrupt", f"unreadable ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise IndexUnavailable(path, "corrupt", "not a regular file")
    return info


def open_reader(path: Path) -> sqlite3.Connection:
    """The index opened read-only and immutable, its schema version checked."""
    _index_file(path)
    uri = f"{path.as_uri()}?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise IndexUnavailable(path, "corrupt", f"unreadable ({exc})") from None
    try:
        version = _schema_version(connection)
    except sqlite3.Error as exc:
        connection.close()
        raise IndexUnavailable(path, "corrupt", f"unreadable ({exc})") from None
    if version != SCHEMA_VERSION:
        connection.close()
        newer = version is not None and version > SCHEMA_VERSION
        raise IndexUnavailable(
            path,
            "newer" if newer else "older",
            f"of schema version {version} (this ax-map reads {SCHEMA_VERSION})",
        )
    return connection


def _schema_version(connection: sqlite3.Connection) -> int | None:
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except ValueError:
        return None


def read_meta(connection: sqlite3.Connection) -> dict[str, str]:
    return dict(connection.execute("SELECT key, value FROM meta").fetchall())


def read_files(connection: sqlite3.Connection) -> dict[str, StoredFile]:
    rows = connection.execute(
        "SELECT path, size, mtime_ns, language, status, skip, tracked, changed, tier FROM files"
    )
    return {
        _path(key): StoredFile(size, mtime, language, status, skip, bool(tr), bool(ch), tier)
        for key, size, mtime, language, status, skip, tr, ch, tier in rows
    }


def read_specs(connection: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    return {
        _path(key): tuple(text.split("\n"))
        for key, text in connection.execute("SELECT path, specs FROM specs")
    }


class Writer:
    """A private copy of the index that ``commit`` puts in place atomically."""

    def __init__(self, map_dir: Path, base: Path | None) -> None:
        """Start from a copy of ``base`` (a readable index of this version) or empty."""
        self.map_dir = map_dir
        self.tmp = map_dir / f"{_TMP_PREFIX}{os.urandom(8).hex()}{_TMP_SUFFIX}"
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            if base is not None:
                _copy_into(base, fd)
        finally:
            os.close(fd)
        self.db = sqlite3.connect(self.tmp, isolation_level=None)
        # A private file until the rename: a crash leaves a temporary file the next build
        # removes, so neither a journal nor SQLite's own syncs buy anything here.
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("PRAGMA cache_size = -65536")
        if base is None:
            self.db.executescript(_SCHEMA)
        self.db.execute("BEGIN")
        # Rows not written yet, by table: ``_flush`` writes them before any other
        # statement, so every statement sees what was put before it.
        self._files: list[tuple[bytes, int, int, str | None, str, str | None, int, int, int]] = []
        # (path, the file's definitions as a JSON array of [name, kind, line] arrays).
        self._symbols: list[tuple[bytes, str]] = []
        self._refs: list[tuple[bytes, str]] = []
        self._specs: list[tuple[bytes, str]] = []

    def _flush(self) -> None:
        for sql, rows in (
            ("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._files),
            ("INSERT INTO symbols VALUES (?, ?)", self._symbols),
            ("INSERT INTO refs VALUES (?, ?)", self._refs),
            ("INSERT INTO specs VALUES (?, ?)", self._specs),
        ):
            if rows:
                self.db.executemany(sql, rows)
                rows.clear()

    def put_file(self, path: str, entry: FileEntry, tier: int) -> None:
        self._files.append(
            (
                _key(path),
                entry.size,
                entry.mtime_ns,
                entry.language,
                entry.status,
                entry.skip,
                int(entry.tracked),
                int(entry.changed),
                tier,
            )
        )
        if len(self._files) >= _BUFFERED_ROWS:
            self._flush()

    def set_flags(self, path: str, tracked: bool, changed: bool) -> None:
        self._flush()
        self.db.execute(
            "UPDATE files SET tracked = ?, changed = ? WHERE path = ?",
            (int(tracked), int(changed), _key(path)),
        )

    def clear_content(self, path: str) -> None:
        self._flush()
        key = _key(path)
        for table in ("symbols", "refs", "specs"):
            self.db.execute(f"DELETE FROM {table} WHERE path = ?", (key,))

    def remove(self, path: str) -> None:
        self.clear_content(path)
        self.db.execute("DELETE FROM files WHERE path = ?", (_key(path),))

    def put_content(
        self, path: str, definitions: str | None, references: str | None, imports: str | None
    ) -> None:
        """``definitions``: a JSON array of [name, kind, line] arrays; ``references``: the
        names sorted and joined by spaces; ``imports``: the specifiers joined by newlines
        (``extract.Content``). None puts nothing for that part: a file's references and
        imports come after its definitions, from the first tier's second step."""
        key = _key(path)
        if definitions is not None and definitions != "[]":
            self._symbols.append((key, definitions))
        if references is not None:
            self._refs.append((key, references))
        if imports:
            self._specs.append((key, imports))
        if len(self._symbols) >= _BUFFERED_ROWS or len(self._refs) >= _BUFFERED_ROWS:
            self._flush()

    def replace_imports(self, edges: Iterable[tuple[str, str]]) -> None:
        self._flush()
        self.db.execute("DELETE FROM imports")
        self.db.executemany(
            "INSERT INTO imports VALUES (?, ?)",
            [(_key(source), _key(target)) for source, target in edges],
        )

    def set_meta(self, values: Mapping[str, str]) -> None:
        self._flush()
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def specs(self) -> dict[str, tuple[str, ...]]:
        self._flush()
        return read_specs(self.db)

    def commit(self, target: Path) -> None:
        """Make the copy the index: commit, fsync, rename over ``target``, fsync the folder."""
        self._flush()
        self.db.execute("COMMIT")
        self.db.close()
        fd = os.open(self.tmp, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.tmp, target)
        fsync_dir(self.map_dir)

    def abandon(self) -> None:
        with suppress(sqlite3.Error):
            self.db.close()
        with suppress(FileNotFoundError):
            self.tmp.unlink()


def _copy_into(source: Path, fd: int) -> None:
    """Copy the index file into ``fd`` without following a link in its place."""
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        remaining = os.fstat(src).st_size
        offset = 0
        while remaining > 0:
            sent = os.sendfile(fd, src, offset, remaining)
            if sent == 0:
                break
            offset += sent
            remaining -= sent
    finally:
        os.close(src)


def remove_leftovers(map_dir: Path) -> None:
    """Remove the temporary copies of builds that died (under the build lock)."""
    with suppress(FileNotFoundError):
        for entry in os.scandir(map_dir):
            if entry.name.startswith(_TMP_PREFIX) and entry.name.endswith(_TMP_SUFFIX):
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)


# The index file last loaded by ``current_snapshot`` (its identity) and what it held.
_last_loaded: tuple[tuple[str, int, int, int, int], Snapshot] | None = None


def current_snapshot(layout: StateLayout) -> Snapshot:
    """``load_snapshot``, but the same object again while the index file is the same.

    A long-lived caller (ax-mcp's server, an agent session) asks for the map many
    times; the snapshot and the ranking structure cached on it (``structure_of``) cost
    about a second on the stdlib, and an index is only ever replaced by rename, never
    changed in place, so its device, inode, size and mtime name one content.
    """
    global _last_loaded
    path = index_path(layout.map_dir)
    info = _index_file(path)
    identity = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if _last_loaded is not None and _last_loaded[0] == identity:
        return _last_loaded[1]
    snapshot = load_snapshot(layout)
    _last_loaded = (identity, snapshot)
    return snapshot


def load_snapshot(layout: StateLayout) -> Snapshot:
    """Everything ``layout``'s index holds, read at one moment, without a lock.

    Raises IndexUnavailable when there is no index of this version to read.
    """
    path = index_path(layout.map_dir)
    with closing(open_reader(path)) as connection:
        try:
            return _snapshot(connection, str(layout.workspace))
        except sqlite3.Error as exc:
            raise IndexUnavailable(path, "corrupt", f"unreadable ({exc})") from None
        except ValueError as exc:
            # A file's definitions that are not a JSON array of [name, kind, line].
            raise IndexUnavailable(path, "corrupt", f"unreadable ({exc})") from None


# A file's definitions in the order the snapshot lists them: by line, then name.
_BY_LINE_AND_NAME = itemgetter(2, 0)


def _is_row(row: object) -> bool:
    return isinstance(row, list) and len(row) == 3


class _Decoded(dict[bytes, str]):
    """Each stored path decoded once, however many rows name it."""

    def __missing__(self, key: bytes) -> str:
        value = self[key] = _path(key)
        return value


def _snapshot(connection: sqlite3.Connection, workspace: str) -> Snapshot:
    meta = read_meta(connection)
    paths = _Decoded()
    files = [
        FileEntry(paths[key], size, mtime, language, status, skip, bool(tr), bool(ch))
        for key, size, mtime, language, status, skip, tr, ch in connection.execute(
            "SELECT path, size, mtime_ns, language, status, skip, tracked, changed FROM files "
            "ORDER BY path"
        )
    ]
    symbols: list[Symbol] = []
    for key, definitions in connection.execute(
        "SELECT path, definitions FROM symbols ORDER BY path"
    ):
        path = paths[key]
        rows = json.loads(definitions)
        if not isinstance(rows, list) or not all(_is_row(row) for row in rows):
            raise ValueError(f"definitions of {quote_path(path)} are not [name, kind, line] rows")
        rows.sort(key=_BY_LINE_AND_NAME)
        symbols.extend(Symbol(path, name, kind, line) for name, kind, line in rows)
    references = {
        paths[key]: frozenset(names.split())
        for key, names in connection.execute("SELECT path, names FROM refs")
    }
    imports = [
        (paths[source], paths[target])
        for source, target in connection.execute(
            "SELECT source, target FROM imports ORDER BY source, target"
        )
    ]
    return Snapshot(
        workspace=workspace,
        files=files,
        symbols=symbols,
        references=references,
        imports=imports,
        coverage=coverage_of(files, meta),
        git=meta.get("git") == "1",
        exact=meta.get("exact", "1") == "1",
    )


def coverage_of(files: Iterable[FileEntry], meta: Mapping[str, str]) -> Coverage:
    indexed = pending = 0
    listed: dict[str, int] = {}
    languages: dict[str, int] = {}
    for entry in files:
        if entry.status == "indexed":
            indexed += 1
        elif entry.status == "pending":
            pending += 1
        else:
            reason = entry.skip or "unknown"
            listed[reason] = listed.get(reason, 0) + 1
        language = entry.language or "other"
        languages[language] = languages.get(language, 0) + 1
    capped = int(meta.get("capped", "0"))
    return Coverage(
        total=indexed + pending + sum(listed.values()) + capped,
        indexed=indexed,
        listed=dict(sorted(listed.items())),
        pending=pending,
        capped=capped,
        languages=dict(sorted(languages.items(), key=lambda item: (-item[1], item[0]))),
    )


@dataclass(frozen=True)
class IndexStats:
    workspace: str
    index: str
    bytes: int
    schema_version: int
    written_at: str | None
    git: bool
    coverage: Coverage
    exact: bool
    # Indexed files by extraction tier: tree-sitter's, or only the first tier's.
    parsed: int
    first_tier_only: int
    parse_failed: int
    references_pending: int
    symbols: int
    references: int
    import_edges: int
    notes: list[str]


def index_stats(layout: StateLayout) -> IndexStats:
    """What ``layout``'s index holds, counted (raises IndexUnavailable without one)."""
    path = index_path(layout.map_dir)
    with closing(open_reader(path)) as connection:
        try:
            return _stats(connection, path, quote_path(str(layout.workspace)))
        except sqlite3.Error as exc:
            raise IndexUnavailable(path, "corrupt", f"unreadable ({exc})") from None


def _stats(connection: sqlite3.Connection, path: Path, workspace: str) -> IndexStats:
    meta = read_meta(connection)
    files = [
        FileEntry(_path(key), 0, 0, language, status, skip)
        for key, language, status, skip in connection.execute(
            "SELECT path, language, status, skip FROM files"
        )
    ]
    tiers = dict(
        connection.execute(
            "SELECT tier, count(*) FROM files WHERE status = 'indexed' GROUP BY tier"
        ).fetchall()
    )

    def count(sql: str) -> int:
        (value,) = connection.execute(sql).fetchone()
        return int(value or 0)

    try:
        notes = [str(note) for note in json.loads(meta.get("notes", "[]"))]
    except ValueError:
        notes = []
    return IndexStats(
        workspace=workspace,
        index=quote_path(str(path)),
        bytes=path.stat().st_size,
        schema_version=SCHEMA_VERSION,
        written_at=meta.get("written_at"),
        git=meta.get("git") == "1",
        coverage=coverage_of(files, meta),
        exact=meta.get("exact", "1") == "1",
        parsed=int(tiers.get(TIER_PARSED, 0)),
        first_tier_only=sum(int(n) for tier, n in tiers.items() if tier != TIER_PARSED),
        parse_failed=int(tiers.get(TIER_PARSE_FAILED, 0)),
        references_pending=int(tiers.get(TIER_STRUCTURE, 0)),
        symbols=count("SELECT sum(json_array_length(definitions)) FROM symbols"),
        references=count(
            "SELECT sum(length(names) - length(replace(names, ' ', '')) + (names != '')) FROM refs"
        ),
        import_edges=count("SELECT count(*) FROM imports"),
        notes=notes,
    )
