"""The PostgreSQL backend of the memory store (psycopg 3 + pgvector); the store over it is
:class:`~memlab.store.postgres.PostgresStore`.

Install with ``pip install 'memlab[postgres]'``. The records, the version rule, the events and the errors are those
of :class:`~memlab.store.memory.MemoryStore` (one class over both backends: :mod:`memlab.store.core`); what changes
is where they live:

* ``memories`` holds the vectors in a ``vector(dim)`` column with an HNSW index
  (``USING hnsw (embedding vector_cosine_ops)``); there is no separate index file to keep in step.
* The version rule runs inside one SQL transaction per call: the slot ``(user, key, scope, type, project)`` is
  serialised by a transaction-level advisory lock (which also covers a slot with no row yet, where
  ``SELECT ... FOR UPDATE`` has nothing to lock), and its active versions are read ``FOR UPDATE``; a partial
  unique index keeps one active memory per keyed slot whatever the writer.
* ``memory_events`` is the audit log; ``memory_outbox`` the memories awaiting an integrity check (written in the
  memory's own transaction while :attr:`~memlab.store.memory.MemoryStore.track_checks` is on), as on SQLite.
* ``supabase_chats`` mirrors :class:`~memlab.chats.store.Chat` in the Supabase shape (uuid id, jsonb histories,
  ``summary_embedding vector(dim)``: :meth:`~memlab.store.postgres.PostgresStore.put_chat`) and the SQL function
  ``search_chats_semantic`` ranks a user's chats by the cosine of their ``summary_embedding``. The app's own chats
  (:class:`~memlab.chats.ChatStore`) live in ``chats``, ``chat_turns`` and ``chat_passages``, as on SQLite.

The vector search is ``ORDER BY embedding <=> q LIMIT k`` under ``WHERE user_id = ... AND is_active``, with one of
three scans (:data:`VECTOR_SCANS`; the store's ``scan=``):
``"exact"`` (default) never uses the HNSW index (the user's rows are scanned and sorted: the exact cosine order,
like ``MemoryStore``'s default ``Flat`` index); ``"auto"`` lets the planner choose, with pgvector's iterative index
scan (``hnsw.iterative_scan = strict_order``) so that a selective user filter still fills ``k`` results;
``"hnsw"`` forces the HNSW index. Exact is the default (the same answers as the SQLite store); ``"auto"`` pays
off for users with thousands of memories. Measured on 10,000 memories of one user (``ef_search`` 100, this
module's default; ``eval/experiments/pg_hnsw_recall.py``): exact 15 ms p50; HNSW 1.8 ms p50 with recall@10 0.989
on e5 embeddings of real persona sentences, but 0.60 on random 384-d unit vectors (no cluster structure).
With many users the picture turns: 20,000 random vectors over 20 users (``--users 20``), the planner chose HNSW in
``"auto"`` and found 0.31 of each user's true top-10 (12 ms p50), while ``"exact"`` (the user's 1,000 rows through
the ``user_id`` index, then sorted) answered in 2.2 ms p50 / 8.4 ms p95 with recall 1.0: one graph over every user's
vectors serves a per-user filter badly. Keep ``"exact"`` unless one user holds most of the rows. The exact search is
ONE autocommit statement (no ``BEGIN``/``SET``/``COMMIT`` round trips); the HNSW modes set their knobs with
``SET LOCAL`` in a transaction of their own, and pgvector 0.8's iterative scan (``iterative_scan``: ``strict_order``
by default, ``relaxed_order`` re-sorted here) keeps a filtered HNSW search filling ``k`` rows.

Loading many rows: :meth:`PostgresStore.bulk_load` (binary ``COPY``, the HNSW and full-text indexes dropped and
built once at the end, in one transaction); ``add_many`` walks the HNSW graph for each row (~40 rows/s past 100k
rows on 2 cores). ``memlab bench integrity --backend postgres --memories 1000000 --users 1000`` measures both
searches at 1M (docs: results, "Scale").
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlab._validation import check_positive_int
from memlab.errors import BackendError, InvalidInputError
from memlab.protocols import Embedder
from memlab.records import MemoryItem
from memlab.store.core import COLUMNS, events_table, item_from_row
from memlab.store.pg_db import PgDatabase, import_psycopg
from memlab.store.sql import SQLReads, SQLWrite

if TYPE_CHECKING:
    import psycopg


__all__ = ["ITERATIVE_SCANS", "SCHEMA", "VECTOR_SCANS", "PostgresBackend"]

#: How the vector search may use the HNSW index: ``exact`` never, ``auto`` as the planner likes, ``hnsw`` always.
VECTOR_SCANS = ("exact", "auto", "hnsw")

#: pgvector >= 0.8 ``hnsw.iterative_scan``: continue an HNSW scan until ``k`` rows pass the user filter.
ITERATIVE_SCANS = ("strict_order", "relaxed_order", "off")

#: The indexes :meth:`PostgresBackend.bulk_load` drops before its COPY and builds again after it (name -> DDL).
_BULK_INDEXES = {
    "memories_embedding_hnsw": "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories "
    "USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})",
    "memories_text_fts": "CREATE INDEX IF NOT EXISTS memories_text_fts ON memories "
    "USING gin (to_tsvector('simple', text))",
}

def _search_chats_fn(table: str) -> str:
    """The SQL function ``search_chats_semantic`` over ``table`` (the Supabase-shaped chats)."""
    return f"""
    CREATE OR REPLACE FUNCTION search_chats_semantic(
        query_embedding vector,
        match_user text,
        match_count integer DEFAULT 5,
        max_distance double precision DEFAULT NULL
    ) RETURNS TABLE (id uuid, similarity double precision)
    LANGUAGE sql STABLE AS $fn$
        SELECT c.id, 1 - (c.summary_embedding <=> query_embedding) AS similarity
        FROM {table} c
        WHERE c.user_id = match_user
          AND c.summary_embedding IS NOT NULL
          AND (max_distance IS NULL OR (c.summary_embedding <=> query_embedding) <= max_distance)
        ORDER BY c.summary_embedding <=> query_embedding, c.last_activity_at DESC, c.id
        LIMIT match_count
    $fn$"""


#: Schema migrations, applied in order under an advisory lock; ``{dim}``, ``{m}``, ``{ef}`` are filled at creation.
SCHEMA: list[str] = [
    """
    CREATE TABLE memories (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        user_id text NOT NULL,
        text text NOT NULL,
        scope text NOT NULL DEFAULT 'global',
        type text NOT NULL DEFAULT 'fact',
        key text,
        value text,
        confidence double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
        project_id text,
        source text,
        keywords jsonb NOT NULL DEFAULT '[]',
        topic text,
        created_at timestamptz NOT NULL,
        valid_from timestamptz,
        valid_to timestamptz,
        version integer NOT NULL DEFAULT 1,
        chain_id bigint NOT NULL,
        supersedes bigint REFERENCES memories(id),
        superseded_by bigint REFERENCES memories(id),
        is_active boolean NOT NULL DEFAULT true,
        superseded_at timestamptz,
        context text,
        embedding vector({dim}) NOT NULL
    );
    CREATE INDEX memories_user_active ON memories (user_id, is_active);
    CREATE INDEX memories_slot ON memories (user_id, key, scope, type, project_id);
    CREATE INDEX memories_chain ON memories (chain_id, version);
    CREATE UNIQUE INDEX memories_active_slot ON memories (user_id, key, scope, type, COALESCE(project_id, ''))
        WHERE is_active AND key IS NOT NULL;
    CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops)
        WITH (m = {m}, ef_construction = {ef});
    """ + events_table("postgresql").replace("{", "{{").replace("}", "}}") + """;
    CREATE INDEX memory_events_memory ON memory_events (memory_id);
    CREATE INDEX memory_events_chain ON memory_events (chain_id);
    CREATE TABLE memory_check_queue (
        memory_id bigint PRIMARY KEY REFERENCES memories(id),
        user_id text NOT NULL,
        queued_at timestamptz NOT NULL
    );
    CREATE TABLE chats (
        id uuid PRIMARY KEY,
        user_id text NOT NULL,
        title text,
        full_history jsonb NOT NULL DEFAULT '[]',
        assistant_history jsonb NOT NULL DEFAULT '[]',
        summary_text text,
        summary_embedding vector({dim}),
        last_activity_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL
    );
    CREATE INDEX chats_user ON chats (user_id, last_activity_at DESC);
    CREATE INDEX chats_summary_hnsw ON chats USING hnsw (summary_embedding vector_cosine_ops);
    """ + _search_chats_fn("chats"),
]

SCHEMA.append(
    # 2: full-text index for hybrid search (PostgreSQL's own text search, 'simple' configuration: no language's
    # stemmer is imposed on Italian, English or Chinese text)
    """
    CREATE INDEX memories_text_fts ON memories USING gin (to_tsvector('simple', text));
    """
)

SCHEMA.append(
    # 3: one name per concept on both backends: the check outbox is ``memory_outbox`` (``created_at``), and
    # ``updated_at`` is the time of a memory's last change (taken from the events already logged for older rows);
    # the Supabase-shaped chats mirror of ``PostgresStore.put_chat`` becomes ``supabase_chats``: ``chats`` is the
    # app's chat table (memlab.chats.ChatStore) on PostgreSQL as on SQLite
    """
    ALTER TABLE memory_check_queue RENAME TO memory_outbox;
    ALTER TABLE memory_outbox RENAME COLUMN queued_at TO created_at;
    ALTER TABLE memories ADD COLUMN updated_at timestamptz;
    ALTER TABLE chats RENAME TO supabase_chats;
    ALTER INDEX chats_user RENAME TO supabase_chats_user;
    ALTER INDEX chats_summary_hnsw RENAME TO supabase_chats_summary_hnsw;
    """ + _search_chats_fn("supabase_chats") + """;
    UPDATE memories m SET updated_at = COALESCE(
        (SELECT MAX(e.at) FROM memory_events e WHERE e.memory_id = m.id AND e.event IN (
            'created', 'superseded', 'lost', 'deactivated', 'reactivated', 'annotated', 'key_changed',
            'context_cleared')),
        m.superseded_at, m.created_at);
    """
)

#: Advisory-lock key of schema migrations (any constant; the slot locks use ``hashtextextended`` keys).
_MIGRATION_LOCK = 0x6D656D6C6162  # "memlab"


def _to_numpy(v: Any) -> NDArray[np.float32]:
    """A ``vector`` value as float32 (pgvector's loader gives a ``Vector``, or an array in older versions)."""
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)


def _slot_lock_key(user_id: str, key: str, scope: str, type_: str, project_id: str | None) -> str:
    return json.dumps([user_id, key, scope, type_, project_id], ensure_ascii=False)


def _pg_value(value: Any) -> Any:
    """A Python value as the ``memories`` columns take it (lists as jsonb text)."""
    return json.dumps(list(value), ensure_ascii=False) if isinstance(value, list | tuple) else value


#: The columns of a new row (the vector is appended as ``embedding``).
_INSERTED = ("id", "user_id", "text", "scope", "type", "key", "value", "confidence", "project_id", "source",
             "keywords", "topic", "created_at", "valid_from", "valid_to", "version", "chain_id", "supersedes",
             "superseded_by", "is_active", "superseded_at", "updated_at")


class _PgWrite(SQLWrite):
    """:class:`~memlab.store.backend.StoreWrite` on PostgreSQL: one transaction of the shared connection. A keyed
    slot is serialised by a transaction-level advisory lock (it also covers a slot with no row yet, where ``SELECT
    ... FOR UPDATE`` has nothing to lock), and the rows it changes are read ``FOR UPDATE``."""

    for_update = " FOR UPDATE"

    def _lock_slot(self, user_id: str, key: str, scope: str, type: str, project_id: str | None) -> None:
        self.db.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
                        (_slot_lock_key(user_id, key, scope, type, project_id),))

    def _json(self) -> str:
        return "CAST(? AS jsonb)"

    @property
    def cur(self) -> psycopg.Cursor[Any]:
        """A cursor of this transaction (for ``COPY``)."""
        return self.db.conn.cursor()

    def insert(self, row: Mapping[str, Any], vector: NDArray[np.float32]) -> int:
        new_id = int(self.db.query_one("SELECT nextval(pg_get_serial_sequence('memories', 'id')) AS id")["id"])
        values = {**row, "id": new_id, "chain_id": new_id if row["chain_id"] is None else row["chain_id"],
                  "keywords": json.dumps(list(row["keywords"]), ensure_ascii=False)}
        marks = ["CAST(? AS jsonb)" if c == "keywords" else "?" for c in _INSERTED]
        self.db.execute(f"INSERT INTO memories({', '.join(_INSERTED)}, embedding) VALUES ({', '.join(marks)}, ?)",
                        [*(values[c] for c in _INSERTED), np.ascontiguousarray(vector, dtype=np.float32)])
        return new_id


class PostgresBackend(SQLReads):
    """Memories in PostgreSQL, their vectors in pgvector (HNSW, cosine): a :class:`~memlab.store.backend.StoreBackend`.

    Args:
        dsn: a libpq connection string or URI (e.g. ``postgresql://user@host/db``). The database must have the
            ``vector`` extension or let this user create it.
        scan: ``"exact"`` (default: the same answers as the SQLite backend's exact FAISS index), ``"auto"`` or
            ``"hnsw"`` (see the module docstring).
        ef_search: HNSW candidate list at query time (``hnsw.ef_search``; pgvector's default is 40).
        hnsw_m, hnsw_ef_construction: HNSW build parameters (used when the schema is created, and by
            :meth:`build_hnsw_index`).
        iterative_scan: pgvector >= 0.8's ``hnsw.iterative_scan`` for the ``auto``/``hnsw`` scans: with a user
            filter the scan goes on until ``k`` rows pass it. ``strict_order`` (default) keeps the distance order
            inside the scan; ``relaxed_order`` may return them slightly out of order (re-sorted here) and
            finds more of the true top-k under a selective filter; ``off``: one pass of ``ef_search`` candidates.
        max_scan_tuples: ``hnsw.max_scan_tuples`` of the iterative scan (pgvector's default 20,000).
        connect_timeout: seconds to wait for the server.

    Raises:
        MissingDependencyError: psycopg/pgvector are not installed.
        BackendError: the server cannot be reached, or the ``vector`` extension is not available.
    """

    kind = "postgresql"

    def __init__(
        self,
        dsn: str,
        *,
        scan: Literal["exact", "auto", "hnsw"] = "exact",
        ef_search: int = 100,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        iterative_scan: Literal["strict_order", "relaxed_order", "off"] = "strict_order",
        max_scan_tuples: int | None = None,
        connect_timeout: int = 10,
    ) -> None:
        owner = "PostgresStore"
        if not isinstance(dsn, str) or not dsn.strip():
            raise InvalidInputError(f"The 'dsn' parameter of {owner} must be a non-empty str. Got {dsn!r}.")
        if scan not in VECTOR_SCANS:
            raise InvalidInputError(f"The 'scan' parameter of {owner} must be one of {VECTOR_SCANS}. Got {scan!r}.")
        if iterative_scan not in ITERATIVE_SCANS:
            raise InvalidInputError(f"The 'iterative_scan' parameter of {owner} must be one of {ITERATIVE_SCANS}. "
                                    f"Got {iterative_scan!r} instead.")
        self.ef_search = check_positive_int(ef_search, name="ef_search", owner=owner)
        self.hnsw_m = check_positive_int(hnsw_m, name="hnsw_m", owner=owner)
        self.hnsw_ef_construction = check_positive_int(hnsw_ef_construction, name="hnsw_ef_construction",
                                                       owner=owner)
        self.max_scan_tuples = None if max_scan_tuples is None else check_positive_int(
            max_scan_tuples, name="max_scan_tuples", owner=owner)
        self.scan = scan
        self.iterative_scan = iterative_scan
        self.location = _without_password(dsn)
        self.embedder: Embedder = None  # type: ignore[assignment]  # set by open()
        _, self._register_vector = import_psycopg()
        self._db = PgDatabase(dsn, location=self.location, connect_timeout=connect_timeout)

    @property
    def db(self) -> PgDatabase:
        """The database of the app's other tables: the same connection (so a memory and a notification can be written
        in one transaction), with :class:`~memlab.store.db.Database`'s interface."""
        return self._db

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The connection (autocommit outside transactions; a broken one is replaced between transactions)."""
        return self._db._connected()  # type: ignore[no-any-return]

    @property
    def _lock(self) -> threading.RLock:
        return self._db.lock

    @property
    def closed(self) -> bool:
        return bool(self._db.closed)

    # ------------------------------------------------------------------ lifecycle
    def open(self, embedder: Embedder, *, reembed: bool) -> None:
        """Create or upgrade the schema (under an advisory lock) and bind the database to ``embedder``.

        Raises:
            BackendError: the ``vector`` extension is missing, or the schema is newer than this memlab.
            InvalidInputError: the database was built with another embedder (PostgreSQL does not re-embed).
        """
        import psycopg

        self.embedder = embedder
        try:
            self._ensure_vector(psycopg)
            self._register_vector(self.conn)
            self._db.on_connect.append(self._register_vector)
            self._migrate()
            self._check_embedder()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the connection (idempotent). Every write is already committed."""
        self._db.close()

    def flush(self) -> None:
        """Nothing to write: the vectors and their index live in the database."""

    def probe(self) -> int:
        """Count all memories (a health check of the connection and the server)."""
        return self.count(None, include_inactive=True)

    def rebuild_index(self) -> None:
        """``REINDEX`` the HNSW index (it is never out of step with the rows; this only re-packs it), or build it
        when a bulk load left it out."""
        if not self.has_hnsw_index():
            self.build_hnsw_index()
            return
        with self._lock:
            self.conn.execute("REINDEX INDEX memories_embedding_hnsw")

    def index_health(self) -> dict[str, Any]:
        """pgvector for ``/health``: the column's dimension is the embedder's (the schema was built for it), the
        scan in use and whether the HNSW index exists."""
        return {"ok": True, "kind": "pgvector", "dim": int(self.embedder.dim), "scan": self.scan,
                "hnsw": self.has_hnsw_index()}

    def has_hnsw_index(self) -> bool:
        """Whether the HNSW index of the memories exists (a bulk load with ``build_index=False`` drops it)."""
        with self._tx() as cur:
            row = cur.execute("SELECT to_regclass('memories_embedding_hnsw') IS NOT NULL AS ok").fetchone()
        return bool(row and row["ok"])

    def drop_hnsw_index(self) -> None:
        """Drop the HNSW index (idempotent): the exact scan (the default) never reads it, and every write pays for
        it (measured at 1M memories: add p50 1.5 ms without it, 32 ms with it)."""
        with self._tx() as cur:
            cur.execute("DROP INDEX IF EXISTS memories_embedding_hnsw")

    def build_hnsw_index(self, *, maintenance_work_mem: str = "1GB", parallel_workers: int | None = None) -> float:
        """Build the HNSW index of the memories when it is missing; the build's seconds (0.0 when it was there).

        Args:
            maintenance_work_mem: the build's memory (``SET LOCAL maintenance_work_mem``); pgvector builds much
                faster while the whole graph fits (about 1.7 GB for 1M 384-d vectors with ``m=16``).
            parallel_workers: ``max_parallel_maintenance_workers`` (default: CPUs - 1).
        """
        if self.has_hnsw_index():
            return 0.0
        workers = max(0, (os.cpu_count() or 1) - 1) if parallel_workers is None else int(parallel_workers)
        t = time.perf_counter()
        with self._tx() as cur:
            self._maintenance_settings(cur, maintenance_work_mem, workers)
            cur.execute(  # type: ignore[call-overload]
                _BULK_INDEXES["memories_embedding_hnsw"].format(m=self.hnsw_m, ef=self.hnsw_ef_construction))
        self.analyze()
        return time.perf_counter() - t

    def analyze(self) -> None:
        """``ANALYZE memories`` (outside a transaction: the planner's statistics after a bulk change)."""
        import psycopg

        try:
            with self._lock:
                self.conn.execute("ANALYZE memories")
        except psycopg.Error as exc:
            raise BackendError(f"PostgreSQL error in PostgresStore: {exc}".strip()) from exc

    @staticmethod
    def _maintenance_settings(cur: psycopg.Cursor[Any], maintenance_work_mem: str, workers: int) -> None:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (str(maintenance_work_mem),))
        cur.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(max(0, int(workers))),))

    def _ensure_vector(self, psycopg: Any) -> None:
        row = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            try:
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise BackendError(
                    f"PostgresStore needs the pgvector extension and could not create it: {exc}".strip()
                ) from exc
            row = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        self.vector_version = str(row[0])
        major, minor = (int(x) for x in self.vector_version.split(".")[:2])
        #: pgvector >= 0.8 can continue an HNSW scan until enough rows pass the user filter.
        self._iterative_scan = (major, minor) >= (0, 8)

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """One transaction and a dict-row cursor, under the backend's lock (the store's own errors pass through;
        a database error, e.g. a lost connection, rolls the transaction back and becomes a BackendError)."""
        import psycopg
        from psycopg.rows import dict_row

        try:
            with self._db.transaction(), self.conn.cursor(row_factory=dict_row) as cur:
                yield cur
        except psycopg.Error as exc:
            raise BackendError(f"PostgreSQL error in PostgresStore: {exc}".strip()) from exc

    def _migrate(self) -> None:
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS memlab_meta (key text PRIMARY KEY, value text NOT NULL)")
            row = cur.execute("SELECT value FROM memlab_meta WHERE key = 'schema_version'").fetchone()
            current = int(row["value"]) if row else 0
            if current > len(SCHEMA):
                raise BackendError(f"The database has memlab schema version {current}; this memlab knows "
                                   f"{len(SCHEMA)}. Upgrade memlab.")
            for sql in SCHEMA[current:]:
                cur.execute(  # type: ignore[call-overload]
                    sql.format(dim=int(self.embedder.dim), m=self.hnsw_m, ef=self.hnsw_ef_construction))
            if current < len(SCHEMA):
                cur.execute("INSERT INTO memlab_meta(key, value) VALUES ('schema_version', %s) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(len(SCHEMA)),))

    def _check_embedder(self) -> None:
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        with self._tx() as cur:
            rows = cur.execute("SELECT key, value FROM memlab_meta WHERE key IN ('embedder', 'dim')").fetchall()
            meta = {r["key"]: r["value"] for r in rows}
            if "embedder" not in meta:
                cur.executemany("INSERT INTO memlab_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                                [("embedder", name), ("dim", str(self.embedder.dim))])
                return
            if meta["embedder"] != name or int(meta.get("dim", 0)) != self.embedder.dim:
                n = cur.execute("SELECT COUNT(*) AS n FROM memories").fetchone()
                raise InvalidInputError(
                    f"This database was built with embedder {meta['embedder']!r} (dim {meta.get('dim')}, "
                    f"{n['n'] if n else 0} memories); refusing to open it with {name!r} (dim {self.embedder.dim}). "
                    "Open it with the same embedder; PostgresStore does not re-embed."
                )

    # ------------------------------------------------------------------ writes
    @contextmanager
    def write(self) -> Iterator[_PgWrite]:
        """One write transaction (committed at the end of the block, rolled back on an exception)."""
        import psycopg

        try:
            with self._db.transaction():
                yield _PgWrite(self)
        except psycopg.Error as exc:  # a constraint the store's rules should have kept: still one clear error
            raise BackendError(f"PostgreSQL error in PostgresStore: {exc}".strip()) from exc

    # ------------------------------------------------------------------ reads (the rest: memlab.store.sql)
    def _rows(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        with self._tx() as cur:
            return cur.execute(sql, params).fetchall()  # type: ignore[call-overload,no-any-return]

    def _vector(self, value: Any) -> NDArray[np.float32]:
        return _to_numpy(value)

    # ------------------------------------------------------------------ search
    def _search_settings(self, cur: psycopg.Cursor[Any], scan: str) -> None:
        """``SET LOCAL`` the HNSW and planner settings of one search (they end with its transaction)."""
        cur.execute(f"SET LOCAL hnsw.ef_search = {int(self.ef_search)}")  # type: ignore[call-overload]
        if scan != "exact" and self._iterative_scan:
            cur.execute(f"SET LOCAL hnsw.iterative_scan = {self.iterative_scan}")  # type: ignore[call-overload]
            if self.max_scan_tuples is not None:
                tuples = int(self.max_scan_tuples)
                cur.execute(f"SET LOCAL hnsw.max_scan_tuples = {tuples}")  # type: ignore[call-overload]
        if scan == "hnsw":
            for knob in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cur.execute(f"SET LOCAL {knob} = off")  # type: ignore[call-overload]

    @staticmethod
    def _search_sql(scan: str, where: str, columns: str, relaxed: bool = False) -> str:
        """The search statement of ``scan``. Each scan has its own text: psycopg prepares a statement after a few
        runs and the server may keep a generic plan for it, planned under the settings of the first scan that
        ran it; distinct texts keep each scan's plan. ``exact`` orders by ``(embedding <=> q) + 0``, an
        expression no index can give, so it is exact whatever the planner settings."""
        order = "(embedding <=> %(q)s) + 0" if scan == "exact" else "embedding <=> %(q)s"
        sql = (f"SELECT /* memlab search: {scan} */ {columns}, embedding <=> %(q)s AS distance FROM memories "
               f"WHERE {where} ORDER BY {order} LIMIT %(k)s")
        if relaxed:  # pgvector's relaxed_order may return the rows slightly out of order: sort them again
            sql = f"WITH hits AS MATERIALIZED ({sql}) SELECT * FROM hits ORDER BY distance"
        return sql

    def _relaxed(self) -> bool:
        return self._iterative_scan and self.iterative_scan == "relaxed_order"

    def _search_args(self, user_id: str, query: NDArray[np.float32], k: int, scan: str | None,
                     include_inactive: bool, exclude: Sequence[int]) -> tuple[str, str, dict[str, Any]]:
        scan = self.scan if scan is None else scan
        if scan not in VECTOR_SCANS:
            raise InvalidInputError(f"The 'scan' parameter of PostgresStore.search must be one of {VECTOR_SCANS}. "
                                    f"Got {scan!r}.")
        where = "user_id = %(u)s" + ("" if include_inactive else " AND is_active")
        params: dict[str, Any] = {"u": user_id, "q": np.ascontiguousarray(query, dtype=np.float32), "k": int(k)}
        if exclude:
            where += " AND NOT (id = ANY(%(drop)s))"
            params["drop"] = sorted({int(i) for i in exclude})
        return scan, where, params

    def search_rows(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
                    exclude: Sequence[int], columns: str, scan: str | None = None) -> list[dict[str, Any]]:
        """The rows (``columns`` and ``distance``) of the user's ``k`` nearest memories. The exact scan is ONE
        autocommit statement (one round trip: no BEGIN/SET/COMMIT); the HNSW scans set their knobs with
        ``SET LOCAL`` in a transaction of their own."""
        import psycopg
        from psycopg.rows import dict_row

        scan, where, params = self._search_args(user_id, query, k, scan, include_inactive, exclude)
        if scan != "exact":
            with self._tx() as cur:
                self._search_settings(cur, scan)
                sql = self._search_sql(scan, where, columns, self._relaxed())
                return cur.execute(sql, params).fetchall()  # type: ignore[call-overload,no-any-return]
        try:
            with self._lock, self.conn.cursor(row_factory=dict_row) as cur:
                sql = self._search_sql(scan, where, columns)
                return cur.execute(sql, params).fetchall()  # type: ignore[call-overload,no-any-return]
        except psycopg.Error as exc:
            raise BackendError(f"PostgreSQL error in PostgresStore: {exc}".strip()) from exc

    def dense(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
              exclude: Sequence[int]) -> list[tuple[int, float]]:
        rows = self.search_rows(user_id, query, k, include_inactive=include_inactive, exclude=exclude, columns="id")
        return [(int(r["id"]), 1.0 - float(r["distance"])) for r in rows]

    def dense_items(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
                    exclude: Sequence[int], scan: str | None = None) -> list[tuple[MemoryItem, float]]:
        rows = self.search_rows(user_id, query, k, include_inactive=include_inactive, exclude=exclude,
                                columns=COLUMNS, scan=scan)
        return [(item_from_row(r), 1.0 - float(r["distance"])) for r in rows]

    def lexical(self, user_id: str, text: str, k: int, *, include_inactive: bool) -> Callable[[], list[int]]:
        """PostgreSQL full-text search (``ts_rank_cd`` over a GIN index of ``to_tsvector('simple', text)``), run
        now. Chinese words inside a sentence are found by the dense half only here (the SQLite backend splits CJK
        characters for its FTS5 index; PostgreSQL's parser keeps a run of them as one word)."""
        from memlab.store.lexical import query_terms

        words = [t for t in query_terms(text) if " " not in t]
        if not words:
            return list
        active = "" if include_inactive else " AND is_active"
        rows = self._rows(
            "SELECT id FROM memories WHERE user_id = %(u)s" + active + " AND to_tsvector('simple', text) @@ "
            "websearch_to_tsquery('simple', %(q)s) ORDER BY ts_rank_cd(to_tsvector('simple', text), "
            "websearch_to_tsquery('simple', %(q)s)) DESC, id LIMIT %(k)s",
            {"u": user_id, "q": " or ".join(words), "k": int(k)},
        )
        ids = [int(r["id"]) for r in rows]
        return lambda: ids

    def explain(self, user_id: str, query: NDArray[np.float32], k: int, *, scan: str | None,
                include_inactive: bool, analyze: bool) -> str:
        """The server's plan of the vector search (``EXPLAIN``; ``analyze=True``: run it, with its times)."""
        scan, where, params = self._search_args(user_id, query, k, scan, include_inactive, ())
        explain = "EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN "
        with self._tx() as cur:
            self._search_settings(cur, scan)
            sql = self._search_sql(scan, where, "id", scan != "exact" and self._relaxed())
            rows = cur.execute(explain + sql, params).fetchall()  # type: ignore[call-overload]
        return "\n".join(str(next(iter(r.values()))) for r in rows)


def _without_password(dsn: str) -> str:
    """The DSN as it may be shown (a URL's password replaced by ``***``).

    Example:
        >>> _without_password("postgresql://alice:s3cret@db:5432/app"), _without_password("host=/tmp dbname=x")
        ('postgresql://alice:***@db:5432/app', 'host=/tmp dbname=x')
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    if not parts.scheme or parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


