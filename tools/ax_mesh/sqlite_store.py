"""The default backend: one SQLite database in the state root, in WAL mode.

A write transaction is ``BEGIN IMMEDIATE``: it takes the database's one write lock
before reading, so a compare-and-swap reads and writes with no writer in between, and
an append can never overwrite another. Readers run beside it on WAL snapshots. Search
is an FTS5 table kept in the same transaction as the record it indexes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from libcommon.errors import CorruptStore

from .query import parse_web_query, to_fts5
from .sqlcore import RECORD_COLUMNS, SCHEMA_VERSION, SqlCore, record_of
from .store import SearchHit, SearchPage

DB_NAME = "mesh.db"
# How long a writer waits for the write lock before the call fails (a stuck writer).
BUSY_TIMEOUT_S = 30.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS seats (
    name TEXT PRIMARY KEY, role TEXT NOT NULL, manifest TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    lease_generation INTEGER NOT NULL DEFAULT 0, lease_holder TEXT, lease_expires_at REAL,
    handoff TEXT, retired INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS stores (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, owner TEXT, created_at TEXT NOT NULL,
    work_counter INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT, store TEXT NOT NULL REFERENCES stores(name),
    path TEXT NOT NULL, kind TEXT NOT NULL, revision INTEGER NOT NULL, author TEXT NOT NULL,
    lease_generation INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    archived INTEGER NOT NULL DEFAULT 0, text TEXT NOT NULL, tags TEXT NOT NULL,
    source_refs TEXT NOT NULL, provenance TEXT, data TEXT, size INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS records_live_path ON records (store, path) WHERE archived = 0;
CREATE INDEX IF NOT EXISTS records_updated ON records (store, updated_at);
CREATE TABLE IF NOT EXISTS revisions (
    record_id INTEGER NOT NULL REFERENCES records(id), revision INTEGER NOT NULL,
    op TEXT NOT NULL, author TEXT NOT NULL, lease_generation INTEGER NOT NULL,
    ts TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (record_id, revision));
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5 (path, text, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL, sender TEXT NOT NULL,
    recipient TEXT NOT NULL, body TEXT NOT NULL, correlation_id TEXT, reply_to INTEGER,
    wake INTEGER NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL, lease_until REAL, lease_token TEXT, created_at TEXT NOT NULL,
    last_error TEXT, done_at REAL);
CREATE INDEX IF NOT EXISTS messages_queue ON messages (recipient, state, id);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id, id);
CREATE TABLE IF NOT EXISTS automations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, seat TEXT NOT NULL REFERENCES seats(name),
    name TEXT NOT NULL, instruction TEXT NOT NULL, schedule TEXT NOT NULL, status TEXT NOT NULL,
    next_run REAL, runs_queued INTEGER NOT NULL, skipped_runs INTEGER NOT NULL,
    missed_runs INTEGER NOT NULL, last_key_at REAL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS automations_due ON automations (seat, status, next_run);
CREATE TABLE IF NOT EXISTS automation_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, automation_id INTEGER NOT NULL REFERENCES automations(id),
    seat TEXT NOT NULL, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL, instruction TEXT NOT NULL,
    scheduled_at REAL NOT NULL, missed INTEGER NOT NULL, state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL, lease_until REAL,
    lease_token TEXT, created_at TEXT NOT NULL, last_error TEXT, done_at REAL);
CREATE INDEX IF NOT EXISTS automation_runs_queue ON automation_runs (seat, state, id);
CREATE INDEX IF NOT EXISTS automation_runs_open ON automation_runs (automation_id, state);
CREATE TABLE IF NOT EXISTS connections (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, seat TEXT NOT NULL, connection TEXT NOT NULL,
    operation TEXT NOT NULL, params TEXT NOT NULL, request_digest TEXT NOT NULL,
    idempotency_key TEXT, status TEXT NOT NULL, receipt TEXT, result TEXT, error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, lease_until REAL NOT NULL, confirmed_by TEXT,
    UNIQUE (seat, connection, idempotency_key));
"""


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def all(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, *params: Any) -> tuple[Any, ...] | None:
        rows = self.conn.execute(sql, params).fetchall()
        return rows[0] if rows else None

    def run(self, sql: str, *params: Any) -> int:
        return self.conn.execute(sql, params).rowcount


class SqliteStore(SqlCore):
    backend = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            # Created 0600 before SQLite opens it; its -wal and -shm files take its mode.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        try:
            self.conn = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False
            )
            self.conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a committed revision survives a power cut, not only a crash.
            self.conn.execute("PRAGMA synchronous = FULL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise CorruptStore(str(path), f"SQLite cannot open it: {exc}") from None

    def _migrate(self) -> None:
        with self.write() as tx:
            row = tx.one("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
            if row is not None:
                version = tx.one("SELECT value FROM meta WHERE key = 'schema_version'")
                if version is not None and int(version[0]) > SCHEMA_VERSION:
                    raise CorruptStore(
                        str(self.path),
                        f"schema version {version[0]} is newer than this ax-mesh "
                        f"({SCHEMA_VERSION}); upgrade ax-tools",
                    )
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            tx.run(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO NOTHING",
                str(SCHEMA_VERSION),
            )

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def read(self) -> Iterator[_SqliteTx]:
        # One snapshot for the statements of a read, so a listing is consistent.
        self.conn.execute("BEGIN DEFERRED")
        try:
            yield _SqliteTx(self.conn)
        finally:
            self.conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[_SqliteTx]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield _SqliteTx(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def index_record(self, tx: Any, record_id: int, path: str, text: str, live: bool) -> None:
        tx.run("DELETE FROM records_fts WHERE rowid = ?", record_id)
        if live:
            tx.run(
                "INSERT INTO records_fts (rowid, path, text) VALUES (?, ?, ?)",
                record_id,
                path,
                text,
            )

    def search(
        self,
        stores: list[str],
        query: str,
        prefix: str,
        tags: list[str],
        limit: int,
        offset: int,
        candidates: int,
    ) -> SearchPage:
        if not stores:
            return SearchPage([], False)
        expression = to_fts5(parse_web_query(query))
        where, params = self._scope(stores, prefix, tags, table="r")
        columns = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
        # FTS5 walks its doclists newest rowid first and stops after ``candidates + 1``
        # matches inside the readable scope; bm25 (global statistics, so the same score an
        # unbounded search gives) ranks only those, and the snippet is made for the page
        # alone. One more than the bound tells whether the bound cut anything.
        with self.read() as tx:
            rows = tx.all(
                "WITH cand AS (SELECT r.id AS id, bm25(records_fts) AS score "
                "FROM records_fts JOIN records r ON r.id = records_fts.rowid "
                f"WHERE records_fts MATCH ? AND {where} "
                "ORDER BY records_fts.rowid DESC LIMIT ?), "
                "bound AS (SELECT count(*) > ? AS cut, min(id) AS oldest FROM cand), "
                "page AS (SELECT cand.id AS id, cand.score AS score FROM cand, bound "
                "WHERE NOT bound.cut OR cand.id > bound.oldest "
                "ORDER BY cand.score, cand.id LIMIT ? OFFSET ?) "
                # From ``bound``, so an empty page still says whether the bound cut.
                f"SELECT {columns}, page.score, bound.cut FROM bound LEFT JOIN page ON 1 "
                "LEFT JOIN records r ON r.id = page.id ORDER BY page.score, page.id",
                expression,
                *params,
                candidates + 1,
                candidates,
                limit,
                offset,
            )
            cut = bool(rows[0][17]) if rows else False
            rows = [row for row in rows if row[0] is not None]
            if not rows:
                return SearchPage([], cut)
            # Snippets in a statement of their own: FTS5 seeks each page row by rowid.
            ids = [row[0] for row in rows]
            snippets = dict(
                tx.all(
                    "SELECT rowid, snippet(records_fts, 1, '«', '»', '…', 24) FROM records_fts "
                    f"WHERE records_fts MATCH ? AND rowid IN ({', '.join('?' for _ in ids)})",
                    expression,
                    *ids,
                )
            )
        hits = [
            SearchHit(record_of(row[:16]), snippets.get(row[0], ""), -float(row[16]))
            for row in rows
        ]
        return SearchPage(hits, cut)
