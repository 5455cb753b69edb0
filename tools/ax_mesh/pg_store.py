"""The PostgreSQL backend (``AX_MESH_DSN``): one mesh shared by runners on several machines.

The same SQL core as SQLite, with PostgreSQL's own concurrency: a write transaction
takes a transaction-scoped advisory lock on what it changes (a record's store and
path, a recipient's inbox), reads the seat's lease row ``FOR SHARE`` so a new lease
cannot be granted mid-write (fencing), and queues are taken ``FOR UPDATE SKIP LOCKED``.
Search is a stored ``tsvector`` (the ``simple`` configuration: no stemming, like FTS5's
unicode61) with ``ts_headline`` snippets. ``NOTIFY mesh_<seat>`` after a message is only
a wake-up hint; the tables are the truth.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from libcommon.errors import OperationFailed

from .query import parse_web_query
from .sqlcore import RECORD_COLUMNS, SCHEMA_VERSION, SqlCore, record_of
from .store import SearchHit, SearchPage

if TYPE_CHECKING:
    import psycopg

# Any fixed key: the schema is created under it, so two first starts do not race.
_SCHEMA_LOCK = 0x61786D657368
CONNECT_TIMEOUT_S = 10

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS seats (
    name TEXT PRIMARY KEY, role TEXT NOT NULL, manifest TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    lease_generation BIGINT NOT NULL DEFAULT 0, lease_holder TEXT,
    lease_expires_at DOUBLE PRECISION, handoff TEXT, retired INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS stores (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, owner TEXT, created_at TEXT NOT NULL,
    work_counter BIGINT NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS records (
    id BIGSERIAL PRIMARY KEY, store TEXT NOT NULL REFERENCES stores(name),
    path TEXT NOT NULL, kind TEXT NOT NULL, revision BIGINT NOT NULL, author TEXT NOT NULL,
    lease_generation BIGINT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    archived INTEGER NOT NULL DEFAULT 0, text TEXT NOT NULL, tags TEXT NOT NULL,
    source_refs TEXT NOT NULL, provenance TEXT, data TEXT, size BIGINT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', path || ' ' || text)) STORED);
CREATE UNIQUE INDEX IF NOT EXISTS records_live_path ON records (store, path) WHERE archived = 0;
CREATE INDEX IF NOT EXISTS records_updated ON records (store, updated_at);
CREATE INDEX IF NOT EXISTS records_tsv ON records USING GIN (tsv);
CREATE TABLE IF NOT EXISTS revisions (
    record_id BIGINT NOT NULL REFERENCES records(id), revision BIGINT NOT NULL,
    op TEXT NOT NULL, author TEXT NOT NULL, lease_generation BIGINT NOT NULL,
    ts TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (record_id, revision));
CREATE TABLE IF NOT EXISTS messages (
    id BIGSERIAL PRIMARY KEY, conversation_id TEXT NOT NULL, sender TEXT NOT NULL,
    recipient TEXT NOT NULL, body TEXT NOT NULL, correlation_id TEXT, reply_to BIGINT,
    wake INTEGER NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    not_before DOUBLE PRECISION NOT NULL, lease_until DOUBLE PRECISION, lease_token TEXT,
    created_at TEXT NOT NULL, last_error TEXT,
    done_at DOUBLE PRECISION);
CREATE INDEX IF NOT EXISTS messages_queue ON messages (recipient, state, id);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id, id);
CREATE TABLE IF NOT EXISTS automations (
    id BIGSERIAL PRIMARY KEY, seat TEXT NOT NULL REFERENCES seats(name),
    name TEXT NOT NULL, instruction TEXT NOT NULL, schedule TEXT NOT NULL, status TEXT NOT NULL,
    next_run DOUBLE PRECISION, runs_queued BIGINT NOT NULL, skipped_runs BIGINT NOT NULL,
    missed_runs BIGINT NOT NULL, last_key_at DOUBLE PRECISION, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS automations_due ON automations (seat, status, next_run);
CREATE TABLE IF NOT EXISTS automation_runs (
    id BIGSERIAL PRIMARY KEY, automation_id BIGINT NOT NULL REFERENCES automations(id),
    seat TEXT NOT NULL, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL, instruction TEXT NOT NULL,
    scheduled_at DOUBLE PRECISION NOT NULL, missed BIGINT NOT NULL, state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, not_before DOUBLE PRECISION NOT NULL,
    lease_until DOUBLE PRECISION, lease_token TEXT, created_at TEXT NOT NULL, last_error TEXT,
    done_at DOUBLE PRECISION);
CREATE INDEX IF NOT EXISTS automation_runs_queue ON automation_runs (seat, state, id);
CREATE INDEX IF NOT EXISTS automation_runs_open ON automation_runs (automation_id, state);
CREATE TABLE IF NOT EXISTS connections (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS operations (
    id BIGSERIAL PRIMARY KEY, seat TEXT NOT NULL, connection TEXT NOT NULL,
    operation TEXT NOT NULL, params TEXT NOT NULL, request_digest TEXT NOT NULL,
    idempotency_key TEXT, status TEXT NOT NULL, receipt TEXT, result TEXT, error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, lease_until DOUBLE PRECISION NOT NULL, confirmed_by TEXT,
    UNIQUE (seat, connection, idempotency_key));
"""


def _sql(statement: str) -> Any:
    from psycopg import sql

    # The statements are ax-mesh's own constants with '?' placeholders, never input.
    return sql.SQL(statement.replace("?", "%s"))


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def all(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(_sql(statement), params)
        return list(cur.fetchall()) if cur.description else []

    def one(self, statement: str, *params: Any) -> tuple[Any, ...] | None:
        rows = self.all(statement, *params)
        return rows[0] if rows else None

    def run(self, statement: str, *params: Any) -> int:
        return self.conn.execute(_sql(statement), params).rowcount


def channel(seat: str) -> str:
    """The NOTIFY channel of a seat's inbox (seat names are [a-z0-9_-], '-' is not an
    identifier character)."""
    return "mesh_" + seat.replace("-", "_")


def server_of(dsn: str) -> str:
    """Where a DSN points, for messages: host, port and database, never the password."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except ProgrammingError:  # a malformed DSN: libpq says why when it connects
        return "(AX_MESH_DSN)"
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or parts.get('user') or ''}"


def scrub(text: str, dsn: str) -> str:
    """libpq's message with the DSN's password taken out, should it ever quote it."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(dsn).get("password")
    except ProgrammingError:
        password = None
    text = " ".join(text.split())
    return text.replace(str(password), "***") if password else text


class PgStore(SqlCore):
    backend = "postgresql"
    share_lock = " FOR SHARE"
    update_lock = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    instr = "strpos"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.where = server_of(dsn)
        self.conn = self._connect()
        try:
            self._check_encoding()
        except BaseException:
            self.conn.close()
            raise
        self._migrate()

    def _check_encoding(self) -> None:
        """Refuse a database that is not UTF8: SQL_ASCII stores any bytes unchecked, so
        texts would not round-trip and to_tsvector would misread them; checked before the
        schema is created, so nothing is written there."""
        row = self.conn.execute("SHOW server_encoding").fetchone()
        value = row[0] if row else b"?"
        # Under SQL_ASCII psycopg hands text back as bytes: one more sign of the problem.
        encoding = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
        if encoding.upper() not in ("UTF8", "UTF-8"):
            raise OperationFailed(
                f"the mesh's PostgreSQL database at {self.where} has server_encoding "
                f"{encoding}; ax-mesh needs UTF8",
                hint="create the database with ENCODING 'UTF8' (createdb -E UTF8 -T template0) "
                "and point AX_MESH_DSN at it",
            )

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        try:
            return psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.OperationalError as exc:
            raise self._away(exc) from None

    def _away(self, exc: Exception) -> OperationFailed:
        return OperationFailed(
            f"cannot reach the mesh's PostgreSQL server at {self.where}: "
            f"{scrub(str(exc), self.dsn)}",
            hint="check AX_MESH_DSN and that the server is up; nothing was written",
        )

    def _migrate(self) -> None:
        with self.write() as tx:
            tx.one("SELECT pg_advisory_xact_lock(?)", _SCHEMA_LOCK)
            exists = tx.one("SELECT to_regclass('meta')")
            if exists is not None and exists[0] is not None:
                version = tx.one("SELECT value FROM meta WHERE key = 'schema_version'")
                if version is not None and int(version[0]) > SCHEMA_VERSION:
                    raise OperationFailed(
                        f"the mesh's schema version {version[0]} is newer than this ax-mesh "
                        f"({SCHEMA_VERSION})",
                        hint="upgrade ax-tools on this machine",
                    )
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    tx.run(statement)
            tx.run(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO NOTHING",
                str(SCHEMA_VERSION),
            )

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[_PgTx]:
        """One transaction; a connection the server dropped (a restart, a network cut) is
        replaced at the next one, and the one it broke fails whole: the server rolls back
        what it never saw committed."""
        import psycopg

        if self.conn.closed or self.conn.broken:
            self.conn = self._connect()
        try:
            with self.conn.transaction():
                yield _PgTx(self.conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if self.conn.closed or self.conn.broken:
                raise self._away(exc) from None
            raise

    @contextmanager
    def read(self) -> Iterator[_PgTx]:
        with self._transaction() as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[_PgTx]:
        with self._transaction() as tx:
            yield tx

    def lock(self, tx: Any, key: str) -> None:
        digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
        tx.one("SELECT pg_advisory_xact_lock(?)", digest)

    def notify(self, tx: Any, recipient: str) -> None:
        tx.run(f"NOTIFY {channel(recipient)}")

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
        parsed = parse_web_query(query)
        # The parsed query rebuilt term by term, so it means exactly what FTS5 is given.
        term = "phraseto_tsquery('simple', ?)"
        alternatives = " || ".join(
            "(" + " && ".join(term for _ in group) + ")" for group in parsed.groups
        )
        expression = f"({alternatives})" + "".join(f" && !!{term}" for _ in parsed.excluded)
        params: list[Any] = [t for group in parsed.groups for t in group] + parsed.excluded
        where, scope = self._scope(stores, prefix, tags, table="r")
        columns = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
        # The candidates are the newest ``candidates + 1`` matches inside the readable scope
        # (the planner picks the GIN index for a rare word and a backward primary-key scan
        # that stops early for a common one); ts_rank_cd ranks only those, and ts_headline
        # runs for the page alone. One more than the bound tells whether it cut anything.
        with self.read() as tx:
            rows = tx.all(
                "WITH cand AS MATERIALIZED (SELECT r.id, ts_rank_cd(r.tsv, query.q) AS score "
                f"FROM records r, (SELECT {expression} AS q) query WHERE r.tsv @@ query.q "
                f"AND {where} "
                "ORDER BY r.id DESC LIMIT ?), "
                "bound AS (SELECT count(*) > ? AS cut, min(id) AS oldest FROM cand), "
                "page AS (SELECT cand.id, cand.score FROM cand, bound "
                "WHERE NOT bound.cut OR cand.id > bound.oldest "
                "ORDER BY cand.score DESC, cand.id LIMIT ? OFFSET ?) "
                # From ``bound``, so an empty page still says whether the bound cut.
                f"SELECT {columns}, ts_headline('simple', r.text, query.q, 'StartSel=«, "
                "StopSel=», MaxWords=24, MinWords=8, MaxFragments=1, FragmentDelimiter=…'), "
                "page.score, bound.cut FROM bound LEFT JOIN page ON true "
                "LEFT JOIN records r ON r.id = page.id, "
                f"(SELECT {expression} AS q) query ORDER BY page.score DESC, page.id",
                *params,
                *scope,
                candidates + 1,
                candidates,
                limit,
                offset,
                *params,
            )
        cut = bool(rows[0][18]) if rows else False
        rows = [row for row in rows if row[0] is not None]
        return SearchPage(
            [SearchHit(record_of(row[:16]), row[16], float(row[17])) for row in rows], cut
        )
