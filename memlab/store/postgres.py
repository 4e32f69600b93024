"""The versioned memory store on PostgreSQL + pgvector (psycopg 3): same interface and rules as ``MemoryStore``.

Install with ``pip install 'memlab[postgres]'``. The records, the version rule and the errors are those of
:class:`~memlab.store.memory.MemoryStore`; what changes is where they live:

* ``memories`` holds the vectors in a ``vector(dim)`` column with an HNSW index
  (``USING hnsw (embedding vector_cosine_ops)``); there is no separate index file to keep in step.
* The version rule runs inside one SQL transaction per call: the slot ``(user, key, scope, type, project)`` is
  serialised by a transaction-level advisory lock (which also covers a slot with no row yet, where
  ``SELECT ... FOR UPDATE`` has nothing to lock), and its active versions are read ``FOR UPDATE``; a partial
  unique index keeps one active memory per keyed slot whatever the writer.
* ``memory_events`` is the audit log; ``memory_check_queue`` the durable queue of memories awaiting an integrity
  check (written in the memory's own transaction while :attr:`PostgresStore.track_checks` is on).
* ``chats`` mirrors :class:`~memlab.chats.store.Chat` (the Supabase-style chats table: uuid id, jsonb histories,
  ``summary_embedding vector(dim)``) and the SQL function ``search_chats_semantic`` ranks a user's chats by the
  cosine of their ``summary_embedding``.

Search is ``ORDER BY embedding <=> q LIMIT k`` under ``WHERE user_id = ... AND is_active``, in one of three modes:
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
searches at 1M (README, "Scale").
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlab._validation import (
    as_vectors,
    check_id,
    check_positive_int,
    check_text,
    check_unit_vectors,
    check_user_id,
    is_row_id,
)
from memlab.clock import utcnow
from memlab.config import MAX_TEXT_CHARS
from memlab.errors import BackendError, InvalidInputError, MissingDependencyError, NotFoundError
from memlab.protocols import Embedder
from memlab.records import MemoryItem
from memlab.store.memory import (
    DEFAULT_EMBEDDER,
    MemoryEvent,
    format_context,
    select_context,
    validate_memory_spec,
    version_rule,
)

if TYPE_CHECKING:
    import psycopg

    from memlab.chats.store import Chat

__all__ = ["ITERATIVE_SCANS", "SEARCH_MODES", "BulkLoadResult", "PostgresStore"]

#: How :meth:`PostgresStore.search_by_vector` may use the HNSW index.
SEARCH_MODES = ("auto", "exact", "hnsw")

#: pgvector >= 0.8 ``hnsw.iterative_scan``: continue an HNSW scan until ``k`` rows pass the user filter.
ITERATIVE_SCANS = ("strict_order", "relaxed_order", "off")

#: The indexes :meth:`PostgresStore.bulk_load` drops before its COPY and builds again after it (name -> DDL).
_BULK_INDEXES = {
    "memories_embedding_hnsw": "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories "
    "USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})",
    "memories_text_fts": "CREATE INDEX IF NOT EXISTS memories_text_fts ON memories "
    "USING gin (to_tsvector('simple', text))",
}

_COLUMNS = (
    "id, user_id, text, scope, type, key, value, confidence, project_id, source, keywords, topic, created_at, "
    "valid_from, valid_to, version, chain_id, supersedes, superseded_by, is_active, superseded_at, context"
)

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
    CREATE TABLE memory_events (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        memory_id bigint NOT NULL REFERENCES memories(id),
        chain_id bigint,
        user_id text NOT NULL,
        event text NOT NULL,
        actor text NOT NULL,
        at timestamptz NOT NULL,
        details jsonb NOT NULL DEFAULT '{{}}'
    );
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
    CREATE FUNCTION search_chats_semantic(
        query_embedding vector,
        match_user text,
        match_count integer DEFAULT 5,
        max_distance double precision DEFAULT NULL
    ) RETURNS TABLE (id uuid, similarity double precision)
    LANGUAGE sql STABLE AS $fn$
        SELECT c.id, 1 - (c.summary_embedding <=> query_embedding) AS similarity
        FROM chats c
        WHERE c.user_id = match_user
          AND c.summary_embedding IS NOT NULL
          AND (max_distance IS NULL OR (c.summary_embedding <=> query_embedding) <= max_distance)
        ORDER BY c.summary_embedding <=> query_embedding, c.last_activity_at DESC, c.id
        LIMIT match_count
    $fn$
    """,
]

SCHEMA.append(
    # 2: full-text index for hybrid search (PostgreSQL's own text search, 'simple' configuration: no language's
    # stemmer is imposed on Italian, English or Chinese text)
    """
    CREATE INDEX memories_text_fts ON memories USING gin (to_tsvector('simple', text));
    """
)

#: Advisory-lock key of schema migrations (any constant; the slot locks use ``hashtextextended`` keys).
_MIGRATION_LOCK = 0x6D656D6C6162  # "memlab"


def _import_psycopg() -> Any:
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise MissingDependencyError(
            exc.name or "psycopg", "postgres", detail="PostgresStore needs psycopg 3 and pgvector."
        ) from exc
    return psycopg, register_vector


def _utcnow() -> datetime:
    return utcnow()  # the wall clock, or a replayed message's time (memlab.clock)


def _aware(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        raise InvalidInputError(f"Datetimes must be timezone-aware (UTC). Got naive {dt!r}.")
    return dt.astimezone(UTC)


def _as_utc(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.astimezone(UTC)


def _to_numpy(v: Any) -> NDArray[np.float32]:
    """A ``vector`` value as float32 (pgvector's loader gives a ``Vector``, or an array in older versions)."""
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)


def _slot_lock_key(user_id: str, key: str, scope: str, type_: str, project_id: str | None) -> str:
    return json.dumps([user_id, key, scope, type_, project_id], ensure_ascii=False)


@dataclass(frozen=True)
class BulkLoadResult:
    """What :meth:`PostgresStore.bulk_load` did."""

    ids: list[int]
    """The new memories' ids, in input order."""
    rows: int
    copy_s: float
    """Seconds of validation + COPY (events and keyed rows included)."""
    index_s: float
    """Seconds building the indexes (full-text, and HNSW when ``hnsw_built``)."""
    analyze_s: float
    hnsw_built: bool


class PostgresStore:
    """Versioned memories of many users in PostgreSQL, with their vectors in pgvector (HNSW, cosine).

    Args:
        dsn: a libpq connection string or URI (e.g. ``postgresql://user@host/db``). The database must have the
            ``vector`` extension or let this user create it.
        embedder: any :class:`~memlab.protocols.Embedder`; default: the packaged offline one. The database is
            bound to the first embedder's name and dimension (``vector(dim)``); another one is refused.
        search: ``"exact"`` (default: the same answers as ``MemoryStore``'s exact FAISS index), ``"auto"`` or
            ``"hnsw"`` (see the module docstring).
        ef_search: HNSW candidate list at query time (``hnsw.ef_search``; pgvector's default is 40).
        hnsw_m, hnsw_ef_construction: HNSW build parameters (used when the schema is created, and by
            :meth:`build_hnsw_index`).
        iterative_scan: pgvector >= 0.8's ``hnsw.iterative_scan`` for the ``auto``/``hnsw`` modes: with a user
            filter the scan goes on until ``k`` rows pass it. ``strict_order`` (default) keeps the distance order
            inside the scan; ``relaxed_order`` may return them slightly out of order (re-sorted here) and
            finds more of the true top-k under a selective filter; ``off``: one pass of ``ef_search`` candidates.
        max_scan_tuples: ``hnsw.max_scan_tuples`` of the iterative scan (pgvector's default 20,000).
        clock: returns "now" (tz-aware); injectable for tests.
        max_text_chars: longest accepted text.
        connect_timeout: seconds to wait for the server.

    Raises:
        MissingDependencyError: psycopg/pgvector are not installed.
        BackendError: the server cannot be reached, or the ``vector`` extension is not available.
        InvalidInputError: the database was built with another embedder.
    """

    def __init__(
        self,
        dsn: str,
        embedder: Embedder | None = None,
        *,
        search: Literal["auto", "exact", "hnsw"] = "exact",
        ef_search: int = 100,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        iterative_scan: Literal["strict_order", "relaxed_order", "off"] = "strict_order",
        max_scan_tuples: int | None = None,
        clock: Callable[[], datetime] | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
        connect_timeout: int = 10,
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise InvalidInputError(
                f"The 'dsn' parameter of PostgresStore must be a non-empty str. Got {dsn!r}."
            )
        if search not in SEARCH_MODES:
            raise InvalidInputError(
                f"The 'search' parameter of PostgresStore must be one of {SEARCH_MODES}. Got {search!r} instead."
            )
        self.ef_search = check_positive_int(ef_search, name="ef_search", owner="PostgresStore")
        self.hnsw_m = check_positive_int(hnsw_m, name="hnsw_m", owner="PostgresStore")
        self.hnsw_ef_construction = check_positive_int(
            hnsw_ef_construction, name="hnsw_ef_construction", owner="PostgresStore"
        )
        psycopg, register_vector = _import_psycopg()
        if embedder is None:
            from memlab.embedding import load_embedder

            embedder = load_embedder(DEFAULT_EMBEDDER)
        self.embedder = embedder
        self.search_mode = search
        if iterative_scan not in ITERATIVE_SCANS:
            raise InvalidInputError(
                f"The 'iterative_scan' parameter of PostgresStore must be one of {ITERATIVE_SCANS}. "
                f"Got {iterative_scan!r} instead."
            )
        self.iterative_scan = iterative_scan
        self.max_scan_tuples = (
            None
            if max_scan_tuples is None
            else check_positive_int(max_scan_tuples, name="max_scan_tuples", owner="PostgresStore")
        )
        self.clock = clock or _utcnow
        self.max_text_chars = max_text_chars
        #: Record each new memory in the check queue, in its own transaction (set by the background agent).
        self.track_checks = False
        self._lock = threading.RLock()
        try:
            self.conn: psycopg.Connection[Any] = psycopg.connect(
                dsn, autocommit=True, connect_timeout=int(connect_timeout)
            )
        except psycopg.Error as exc:
            raise BackendError(f"PostgresStore cannot connect: {exc}".strip()) from exc
        try:
            self.conn.execute("SET TIME ZONE 'UTC'")
            self._ensure_vector(psycopg)
            register_vector(self.conn)
            self._migrate()
            self._check_embedder()
        except BaseException:
            self.conn.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return bool(self.conn.closed)

    def close(self) -> None:
        """Close the connection (idempotent). Every write is already committed."""
        if not self.conn.closed:
            self.conn.close()

    def flush(self) -> None:
        """Nothing to write: the vectors and their index live in the database (kept for interface parity)."""

    def rebuild_index(self) -> None:
        """``REINDEX`` the HNSW index (it is never out of step with the rows; this only re-packs it), or build it
        when a :meth:`bulk_load` left it out."""
        if not self.has_hnsw_index():
            self.build_hnsw_index()
            return
        with self._lock:
            self.conn.execute("REINDEX INDEX memories_embedding_hnsw")

    def has_hnsw_index(self) -> bool:
        """Whether the HNSW index of the memories exists (:meth:`bulk_load` with ``build_index=False`` drops it)."""
        with self._tx() as cur:
            row = cur.execute("SELECT to_regclass('memories_embedding_hnsw') IS NOT NULL AS ok").fetchone()
        return bool(row and row["ok"])

    def drop_hnsw_index(self) -> None:
        """Drop the HNSW index (idempotent): the exact search (the default) never reads it, and every write pays for
        it (measured at 1M memories: add p50 1.5 ms without it, 32 ms with it). The ``auto`` mode then scans the
        user's rows and ``hnsw`` has no index to force; :meth:`build_hnsw_index` brings it back."""
        with self._tx() as cur:
            cur.execute("DROP INDEX IF EXISTS memories_embedding_hnsw")

    def build_hnsw_index(
        self, *, maintenance_work_mem: str = "1GB", parallel_workers: int | None = None
    ) -> float:
        """Build the HNSW index of the memories when it is missing (after ``bulk_load(..., build_index=False)``).

        Args:
            maintenance_work_mem: the build's memory (``SET LOCAL maintenance_work_mem``); pgvector builds much
                faster while the whole graph fits (about 1.7 GB for 1M 384-d vectors with ``m=16``).
            parallel_workers: ``max_parallel_maintenance_workers`` (default: CPUs - 1).

        Returns:
            The build's seconds (0.0 when the index was already there).
        """
        import time

        if self.has_hnsw_index():
            return 0.0
        workers = max(0, (os.cpu_count() or 1) - 1) if parallel_workers is None else int(parallel_workers)
        t = time.perf_counter()
        with self._tx() as cur:
            self._maintenance_settings(cur, maintenance_work_mem, workers)
            cur.execute(  # type: ignore[call-overload]
                _BULK_INDEXES["memories_embedding_hnsw"].format(m=self.hnsw_m, ef=self.hnsw_ef_construction)
            )
        with self._lock:
            self.conn.execute("ANALYZE memories")
        return time.perf_counter() - t

    @staticmethod
    def _maintenance_settings(cur: psycopg.Cursor[Any], maintenance_work_mem: str, workers: int) -> None:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (str(maintenance_work_mem),))
        cur.execute(
            "SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(max(0, int(workers))),)
        )

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
        """One transaction and a dict-row cursor, under the store's lock (the store's own errors pass through;
        a database error, e.g. a lost connection, rolls the transaction back and becomes a BackendError)."""
        import psycopg
        from psycopg.rows import dict_row

        try:
            with self._lock, self.conn.transaction(), self.conn.cursor(row_factory=dict_row) as cur:
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
                raise BackendError(
                    f"The database has memlab schema version {current}; this memlab knows {len(SCHEMA)}. "
                    "Upgrade memlab."
                )
            for sql in SCHEMA[current:]:
                cur.execute(  # type: ignore[call-overload]
                    sql.format(dim=int(self.embedder.dim), m=self.hnsw_m, ef=self.hnsw_ef_construction)
                )
            if current < len(SCHEMA):
                cur.execute(
                    "INSERT INTO memlab_meta(key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(len(SCHEMA)),),
                )

    def _check_embedder(self) -> None:
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT key, value FROM memlab_meta WHERE key IN ('embedder', 'dim')"
            ).fetchall()
            meta = {r["key"]: r["value"] for r in rows}
            if "embedder" not in meta:
                cur.executemany(
                    "INSERT INTO memlab_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                    [("embedder", name), ("dim", str(self.embedder.dim))],
                )
                return
            if meta["embedder"] != name or int(meta.get("dim", 0)) != self.embedder.dim:
                n = cur.execute("SELECT COUNT(*) AS n FROM memories").fetchone()
                raise InvalidInputError(
                    f"This database was built with embedder {meta['embedder']!r} (dim {meta.get('dim')}, "
                    f"{n['n'] if n else 0} memories); refusing to open it with {name!r} (dim {self.embedder.dim}). "
                    "Open it with the same embedder; PostgresStore does not re-embed."
                )

    # ------------------------------------------------------------------ rows -> records
    @staticmethod
    def _row_to_item(row: Mapping[str, Any]) -> MemoryItem:
        return MemoryItem(
            id=int(row["id"]),
            user_id=row["user_id"],
            text=row["text"],
            scope=row["scope"],
            type=row["type"],
            key=row["key"],
            value=row["value"],
            confidence=float(row["confidence"]),
            project_id=row["project_id"],
            source=row["source"],
            keywords=tuple(row["keywords"] or ()),
            topic=row["topic"],
            created_at=_as_utc(row["created_at"]),
            valid_from=_as_utc(row["valid_from"]),
            valid_to=_as_utc(row["valid_to"]),
            version=int(row["version"]),
            chain_id=int(row["chain_id"]),
            supersedes=row["supersedes"],
            superseded_by=row["superseded_by"],
            is_active=bool(row["is_active"]),
            superseded_at=_as_utc(row["superseded_at"]),
            context=row["context"],
        )

    def _event(
        self,
        cur: psycopg.Cursor[Any],
        item_id: int,
        chain_id: int | None,
        user_id: str,
        event: str,
        actor: str,
        **details: Any,
    ) -> None:
        cur.execute(
            "INSERT INTO memory_events(memory_id, chain_id, user_id, event, actor, at, details) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)",
            (
                item_id,
                chain_id,
                user_id,
                event,
                actor,
                _aware(self.clock()),
                json.dumps(details, default=str),
            ),
        )

    def _fetch(self, cur: psycopg.Cursor[Any], id_: int) -> MemoryItem:
        row = cur.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = %s", (id_,)).fetchone()
        assert row is not None
        return self._row_to_item(row)

    # ------------------------------------------------------------------ writes
    def add(
        self,
        user_id: str,
        text: str,
        *,
        scope: str = "global",
        type: str = "fact",
        key: str | None = None,
        value: str | None = None,
        confidence: float = 1.0,
        project_id: str | None = None,
        source: str | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        keywords: Sequence[str] = (),
        topic: str | None = None,
        embedding: NDArray[np.float32] | None = None,
    ) -> MemoryItem:
        """Store one memory, applying the version rule when ``key`` is set (see :meth:`MemoryStore.add`).

        Raises:
            InvalidInputError: bad text, confidence or vector; nothing is stored.
        """
        return self.add_many(
            user_id,
            [
                dict(
                    text=text,
                    scope=scope,
                    type=type,
                    key=key,
                    value=value,
                    confidence=confidence,
                    project_id=project_id,
                    source=source,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    keywords=keywords,
                    topic=topic,
                )
            ],
            embeddings=None if embedding is None else np.asarray(embedding).reshape(1, -1),
        )[0]

    def add_many(
        self,
        user_id: str,
        items: Iterable[str | Mapping[str, Any]],
        *,
        embeddings: NDArray[np.float32] | None = None,
        progress: bool = False,
    ) -> list[MemoryItem]:
        """Store many memories of one user in one transaction (see :meth:`MemoryStore.add_many`).

        Everything is validated (and embedded) before the transaction starts: one bad item rejects the call
        and the database is unchanged.
        """
        owner = "PostgresStore.add"
        user_id = check_user_id(user_id, owner=owner)
        specs = self._item_specs(items, owner, "The 'items' parameter of PostgresStore.add_many",
                                 "; use PostgresStore.add for one memory")
        if not specs:
            return []
        if embeddings is None:
            from tqdm.auto import tqdm

            chunks = []
            for start in tqdm(range(0, len(specs), 512), desc="embedding", disable=not progress):
                chunks.append(self.embedder.embed([s["text"] for s in specs[start : start + 512]]))
            vecs = np.concatenate(chunks)
        else:
            vecs = as_vectors(embeddings, self.embedder.dim, name="embedding", owner=owner)
            if len(vecs) != len(specs):
                raise InvalidInputError(f"{owner} got {len(vecs)} embeddings for {len(specs)} items.")
            vecs = check_unit_vectors(vecs, normalize=False, name="embedding", owner=owner)
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        with self._tx() as cur:
            ids = [self._insert(cur, user_id, spec, vec) for spec, vec in zip(specs, vecs, strict=True)]
            # the final state: a later item of the same call may supersede an earlier one
            return [self._fetch(cur, i) for i in ids]

    def bulk_load(
        self,
        batches: Iterable[tuple[str, Sequence[str | Mapping[str, Any]], NDArray[np.float32] | None]],
        *,
        build_index: bool = True,
        maintenance_work_mem: str = "1GB",
        parallel_workers: int | None = None,
        progress: bool = False,
    ) -> BulkLoadResult:
        """Load many memories fast: binary ``COPY`` of the rows, the indexes built once at the end.

        ``add_many`` inserts row by row with the HNSW index in place (each insert walks the graph: ~40 rows/s past
        100k rows on 2 cores); this method drops the HNSW and full-text indexes, streams the rows with psycopg's
        binary ``COPY ... FROM STDIN`` (vectors through pgvector's adapter) and builds the full-text index and,
        unless ``build_index=False``, the HNSW index once afterwards (``maintenance_work_mem`` and
        ``max_parallel_maintenance_workers`` raised for the build), then ``ANALYZE`` s the table. Everything runs
        in ONE transaction: an error anywhere leaves the database as it was, indexes included. While it runs the
        table is locked (``DROP INDEX`` takes an exclusive lock): other sessions wait, as during any index
        rebuild, so load before serving.

        The store's invariants hold as with :meth:`add_many`: each row belongs to its batch's user only; an
        unkeyed memory is its own version chain (version 1, ``chain_id = id``) with its ``created`` event (and
        ``stated_as_correction`` when asked) in ``memory_events`` and, while :attr:`track_checks` is on, a row
        in the check queue; keyed memories go through the version rule, in order, with the same statements as
        :meth:`add_many` (after their batch's unkeyed rows, so their ids come after them). The full-text column
        is an expression index over ``text``: rebuilt, nothing to fill.

        Args:
            batches: ``(user_id, items, embeddings)`` triples, consumed lazily (e.g. one user at a time, so
                the vectors of 1M memories never sit in memory together). ``items`` are texts or mappings as
                in :meth:`add_many`; ``embeddings`` (``(len(items), dim)``, unit norm) or ``None`` to embed.
            build_index: build the HNSW index now (default); ``False`` leaves it out (exact search works
                without it) until :meth:`build_hnsw_index`, e.g. to measure before the long build.
            maintenance_work_mem, parallel_workers: see :meth:`build_hnsw_index`.
            progress: a progress bar over the batches.

        Returns:
            A :class:`BulkLoadResult`: the ids in input order, the rows, the COPY and index seconds.

        Raises:
            InvalidInputError: a bad batch (user, item, vector or count); nothing is stored.
        """
        import time

        from psycopg.rows import dict_row

        owner = "PostgresStore.bulk_load"
        workers = max(0, (os.cpu_count() or 1) - 1) if parallel_workers is None else int(parallel_workers)
        ids: list[int] = []
        t0 = time.perf_counter()
        copy_sql = (
            "COPY memories (id, user_id, text, scope, type, value, confidence, project_id, source, keywords, "
            "topic, created_at, valid_from, valid_to, version, chain_id, is_active, embedding) "
            "FROM STDIN (FORMAT BINARY)"
        )
        types = ["int8", "text", "text", "text", "text", "text", "float8", "text", "text", "jsonb", "text",
                 "timestamptz", "timestamptz", "timestamptz", "int4", "int8", "bool", "vector"]  # fmt: skip
        import psycopg

        try:
            with self._lock, self.conn.transaction(), self.conn.cursor(row_factory=dict_row) as cur:
                for name in _BULK_INDEXES:
                    cur.execute(f"DROP INDEX IF EXISTS {name}")  # type: ignore[call-overload]
                if progress:
                    from tqdm.auto import tqdm

                    batches = tqdm(batches, desc="bulk load", unit="batch")
                for user_id, items, embeddings in batches:
                    user_id = check_user_id(user_id, owner=owner)
                    specs = self._item_specs(items, owner, f"The items of a {owner} batch")
                    if not specs:
                        continue
                    vecs = self._batch_vectors(specs, embeddings, owner)
                    ids.extend(self._copy_batch(cur, copy_sql, types, user_id, specs, vecs))
                t1 = time.perf_counter()
                self._maintenance_settings(cur, maintenance_work_mem, workers)
                for name, ddl in _BULK_INDEXES.items():
                    if build_index or name != "memories_embedding_hnsw":
                        cur.execute(ddl.format(m=self.hnsw_m, ef=self.hnsw_ef_construction))  # type: ignore[call-overload]
            t2 = time.perf_counter()
            with self._lock:
                self.conn.execute("ANALYZE memories")
        except psycopg.Error as exc:
            raise BackendError(f"PostgreSQL error in {owner}: {exc}".strip()) from exc
        t3 = time.perf_counter()
        return BulkLoadResult(
            ids=ids, rows=len(ids), copy_s=t1 - t0, index_s=t2 - t1, analyze_s=t3 - t2, hnsw_built=build_index
        )

    def _item_specs(self, items: Any, owner: str, what: str, hint: str = "") -> list[dict[str, Any]]:
        """Validated specs of ``items`` (a list of texts or mappings; a single one is refused with ``hint``)."""
        if isinstance(items, str | bytes | Mapping):
            raise InvalidInputError(
                f"{what} must be a list of texts or mappings. Got a single {type(items).__name__} instead{hint}."
            )
        return [validate_memory_spec(it, owner, self.max_text_chars) for it in items]

    def _batch_vectors(
        self, specs: list[dict[str, Any]], embeddings: Any, owner: str
    ) -> NDArray[np.float32]:
        """The batch's unit vectors (embedded when ``embeddings`` is None), checked as :meth:`add_many` does."""
        if embeddings is None:
            return np.ascontiguousarray(self.embedder.embed([s["text"] for s in specs]), dtype=np.float32)
        vecs = as_vectors(embeddings, self.embedder.dim, name="embedding", owner=owner)
        if len(vecs) != len(specs):
            raise InvalidInputError(f"{owner} got {len(vecs)} embeddings for {len(specs)} items.")
        vecs = check_unit_vectors(vecs, normalize=False, name="embedding", owner=owner)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def _copy_batch(
        self,
        cur: psycopg.Cursor[Any],
        copy_sql: str,
        types: list[str],
        user_id: str,
        specs: list[dict[str, Any]],
        vecs: NDArray[np.float32],
    ) -> list[int]:
        """COPY one batch's unkeyed rows (with their events and queue rows); keyed ones through the version rule.
        Returns the ids in the batch's order."""
        now = _aware(self.clock())
        plain = [i for i, sp in enumerate(specs) if sp["key"] is None]
        out: list[int] = [0] * len(specs)
        if plain:
            rows = cur.execute(
                "SELECT nextval(pg_get_serial_sequence('memories', 'id')) AS id FROM generate_series(1, %s)",
                (len(plain),),
            ).fetchall()
            new_ids = [int(r["id"]) for r in rows]
            with cur.copy(copy_sql) as copy:  # type: ignore[arg-type]
                copy.set_types(types)
                for i, new_id in zip(plain, new_ids, strict=True):
                    sp = specs[i]
                    copy.write_row((
                        new_id, user_id, sp["text"], sp["scope"], sp["type"], sp["value"], sp["confidence"],
                        sp["project_id"], sp["source"], sp["keywords"], sp["topic"], now,
                        None if sp["valid_from"] is None else datetime.fromisoformat(sp["valid_from"]),
                        None if sp["valid_to"] is None else datetime.fromisoformat(sp["valid_to"]),
                        1, new_id, True, vecs[i],
                    ))  # fmt: skip
                    out[i] = new_id
            events = [(i, "created", "system", {"version": 1}) for i in new_ids]
            events += [(new_ids[j], "stated_as_correction", "user", {}) for j, i in enumerate(plain)
                       if specs[i].get("correction")]  # fmt: skip
            with cur.copy(
                "COPY memory_events (memory_id, chain_id, user_id, event, actor, at, details) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "text", "text", "text", "timestamptz", "jsonb"])
                for mid, event, actor, details in sorted(events, key=lambda e: e[0]):
                    copy.write_row((mid, mid, user_id, event, actor, now, details))
            if self.track_checks:
                with cur.copy(
                    "COPY memory_check_queue (memory_id, user_id, queued_at) FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(["int8", "text", "timestamptz"])
                    for mid in new_ids:
                        copy.write_row((mid, user_id, now))
        for i, sp in enumerate(specs):
            if sp["key"] is not None:
                out[i] = self._insert(cur, user_id, sp, vecs[i])
        return out

    def _insert(
        self, cur: psycopg.Cursor[Any], user_id: str, spec: dict[str, Any], vec: NDArray[np.float32]
    ) -> int:
        now = _aware(self.clock())
        incumbents: list[dict[str, Any]] = []
        chain_id: int | None = None
        version = 1
        if spec["key"] is not None:
            slot = (user_id, spec["key"], spec["scope"], spec["type"], spec["project_id"])
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_slot_lock_key(*slot),))
            slot_sql = "user_id = %s AND key = %s AND scope = %s AND type = %s AND project_id IS NOT DISTINCT FROM %s"
            incumbents = cur.execute(
                f"SELECT id, confidence, chain_id FROM memories WHERE {slot_sql} AND is_active ORDER BY id "
                "FOR UPDATE",
                slot,
            ).fetchall()
            latest = cur.execute(
                f"SELECT chain_id FROM memories WHERE {slot_sql} ORDER BY id DESC LIMIT 1", slot
            ).fetchone()
            if latest is not None:
                chain_id = int(latest["chain_id"])
                row = cur.execute(
                    "SELECT MAX(version) AS v FROM memories WHERE chain_id = %s", (chain_id,)
                ).fetchone()
                version = int(row["v"]) + 1 if row and row["v"] is not None else 1
        wins, beaten_by = version_rule(spec["confidence"], incumbents[-1] if incumbents else None)
        if incumbents and wins:  # the slot's active version steps down first (partial unique index)
            cur.execute(
                "UPDATE memories SET is_active = false, superseded_at = %s WHERE id = ANY(%s)",
                (now, [int(r["id"]) for r in incumbents]),
            )
        new_id = int(
            cur.execute("SELECT nextval(pg_get_serial_sequence('memories', 'id')) AS id").fetchone()["id"]
        )
        chain_id = new_id if chain_id is None else chain_id
        cur.execute(
            "INSERT INTO memories(id, user_id, text, scope, type, key, value, confidence, project_id, source, "
            "keywords, topic, created_at, valid_from, valid_to, version, chain_id, supersedes, superseded_by, "
            "is_active, superseded_at, embedding) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                new_id,
                user_id,
                spec["text"],
                spec["scope"],
                spec["type"],
                spec["key"],
                spec["value"],
                spec["confidence"],
                spec["project_id"],
                spec["source"],
                json.dumps(spec["keywords"], ensure_ascii=False),
                spec["topic"],
                now,
                None if spec["valid_from"] is None else datetime.fromisoformat(spec["valid_from"]),
                None if spec["valid_to"] is None else datetime.fromisoformat(spec["valid_to"]),
                version,
                chain_id,
                int(incumbents[-1]["id"]) if (incumbents and wins) else None,
                beaten_by,
                wins,
                None if wins else now,
                vec,
            ),
        )
        self._event(cur, new_id, chain_id, user_id, "created", "system", version=version)
        if spec.get("correction"):
            self._event(cur, new_id, chain_id, user_id, "stated_as_correction", "user")
        if self.track_checks:
            cur.execute(
                "INSERT INTO memory_check_queue(memory_id, user_id, queued_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (memory_id) DO NOTHING",
                (new_id, user_id, now),
            )
        if incumbents and wins:
            for inc in incumbents:
                cur.execute("UPDATE memories SET superseded_by = %s WHERE id = %s", (new_id, int(inc["id"])))
                self._event(cur, int(inc["id"]), chain_id, user_id, "superseded", "version-rule", by=new_id)
        elif beaten_by is not None:
            self._event(cur, new_id, chain_id, user_id, "lost", "version-rule", to=beaten_by)
        return new_id

    def _locked(self, cur: psycopg.Cursor[Any], id_: Any, user_id: str | None) -> MemoryItem:
        """The row of ``id_`` locked ``FOR UPDATE`` (NotFoundError for an unknown id or another user's)."""
        id_ = check_id(id_, kind="memory")
        row = cur.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = %s FOR UPDATE", (id_,)).fetchone()
        if row is None or (user_id is not None and row["user_id"] != user_id):
            raise NotFoundError(
                f"No memory with id {id_}" + (f" for user {user_id!r}" if user_id else "") + "."
            )
        return self._row_to_item(row)

    def _holder(self, cur: psycopg.Cursor[Any], item: MemoryItem) -> MemoryItem | None:
        """The active memory of ``item``'s slot other than ``item``, with the slot's advisory lock taken."""
        if item.key is None:
            return None
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (_slot_lock_key(item.user_id, item.key, item.scope, item.type, item.project_id),),
        )
        row = cur.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE user_id = %s AND key = %s AND scope = %s AND type = %s "
            "AND project_id IS NOT DISTINCT FROM %s AND is_active AND id != %s",
            (item.user_id, item.key, item.scope, item.type, item.project_id, item.id),
        ).fetchone()
        return None if row is None else self._row_to_item(row)

    def _set_active(
        self, id_: int, active: bool, *, event: str, actor: str, user_id: str, **details: Any
    ) -> MemoryItem:
        with self._tx() as cur:
            item = self._locked(cur, id_, user_id)
            if active and not item.is_active:
                holder = self._holder(cur, item)
                if holder is not None:
                    raise InvalidInputError(
                        f"Memory {item.id} cannot become active: version {holder.id} is active in its slot "
                        f"({item.key!r}); deactivate that one first."
                    )
            if active:
                cur.execute(
                    "UPDATE memories SET is_active = true, superseded_at = NULL WHERE id = %s", (item.id,)
                )
            else:
                cur.execute(
                    "UPDATE memories SET is_active = false, superseded_at = COALESCE(superseded_at, %s) WHERE id = %s",
                    (_aware(self.clock()), item.id),
                )
            self._event(cur, item.id, item.chain_id, item.user_id, event, actor, **details)
            return self._fetch(cur, item.id)

    def deactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Mark a memory of ``user_id`` inactive (kept, never deleted); the reason goes to its event log.

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s (the owner is required).
        """
        user_id = check_user_id(user_id, owner="PostgresStore.deactivate")
        return self._set_active(
            id, False, event="deactivated", actor=actor, user_id=user_id, reason=reason, **details
        )

    def reactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Make an inactive memory of ``user_id`` active again (its slot must have no other active version).

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s.
            InvalidInputError: another version is active in the slot.
        """
        user_id = check_user_id(user_id, owner="PostgresStore.reactivate")
        return self._set_active(
            id, True, event="reactivated", actor=actor, user_id=user_id, reason=reason, **details
        )

    def annotate(
        self, id: int, context: str, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Attach user-provided context to a memory (logged as an event)."""
        context = check_text(
            context, name="context", owner="PostgresStore.annotate", max_chars=self.max_text_chars
        )
        with self._tx() as cur:
            item = self._locked(cur, id, user_id)
            cur.execute("UPDATE memories SET context = %s WHERE id = %s", (context, item.id))
            self._event(
                cur, item.id, item.chain_id, item.user_id, "annotated", actor, context=context, **details
            )
            return self._fetch(cur, item.id)

    def set_key(
        self, id: int, key: str | None, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Move a memory into another keyed slot, or out of any (``key=None``); logged as an event.

        Raises:
            NotFoundError: unknown id (or not ``user_id``'s).
            InvalidInputError: the memory is active and the target slot already has an active version.
        """
        if key is not None:
            key = check_text(key, name="key", owner="PostgresStore.set_key", max_chars=512)
        with self._tx() as cur:
            item = self._locked(cur, id, user_id)
            if item.is_active and key is not None:
                holder = self._holder(cur, replace(item, key=key))
                if holder is not None:
                    raise InvalidInputError(
                        f"Memory {item.id} cannot move into slot {key!r}: version {holder.id} is active there."
                    )
            cur.execute("UPDATE memories SET key = %s WHERE id = %s", (key, item.id))
            self._event(
                cur,
                item.id,
                item.chain_id,
                item.user_id,
                "key_changed",
                actor,
                old=item.key,
                new=key,
                **details,
            )
            return self._fetch(cur, item.id)

    def clear_context(
        self, id: int, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Remove the user-provided context of a memory; logged as an event."""
        with self._tx() as cur:
            item = self._locked(cur, id, user_id)
            cur.execute("UPDATE memories SET context = NULL WHERE id = %s", (item.id,))
            self._event(
                cur,
                item.id,
                item.chain_id,
                item.user_id,
                "context_cleared",
                actor,
                previous=item.context,
                **details,
            )
            return self._fetch(cur, item.id)

    def record_event(
        self, id: int, event: str, *, actor: str, user_id: str | None = None, **details: Any
    ) -> None:
        """Append an event to a memory's log (used by services, e.g. a contradiction resolution)."""
        with self._tx() as cur:
            item = self._locked(cur, id, user_id)
            self._event(cur, item.id, item.chain_id, item.user_id, event, actor, **details)

    # ------------------------------------------------------------------ reads
    def get(self, id: int, *, user_id: str) -> MemoryItem:
        """The memory with this id (active or not) of ``user_id``.

        Raises:
            NotFoundError: unknown id, or another user's.
            InvalidInputError: bad ``user_id``.
        """
        return self._get(id, user_id=check_user_id(user_id, owner="PostgresStore.get"))

    def _get(self, id: Any, *, user_id: str | None) -> MemoryItem:
        id = check_id(id, kind="memory")
        with self._tx() as cur:
            row = cur.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = %s", (id,)).fetchone()
        if row is None or (user_id is not None and row["user_id"] != user_id):
            raise NotFoundError(
                f"No memory with id {id}" + (f" for user {user_id!r}" if user_id else "") + "."
            )
        return self._row_to_item(row)

    def get_many(self, ids: Sequence[int]) -> list[MemoryItem]:
        """Memories by id, in the given order (unknown ids raise)."""
        if not ids:
            return []
        bad = [i for i in ids if not is_row_id(i)]
        if bad:
            raise NotFoundError(f"No memories with ids {bad}.")
        with self._tx() as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ANY(%s)", ([int(i) for i in ids],)
            ).fetchall()
        by_id = {int(r["id"]): r for r in rows}
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return [self._row_to_item(by_id[int(i)]) for i in ids]

    def history(self, id: int, *, user_id: str | None = None) -> list[MemoryItem]:
        """The whole version chain of ``id`` (from any member), oldest first."""
        item = self._get(id, user_id=user_id)
        with self._tx() as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE chain_id = %s ORDER BY version, id", (item.chain_id,)
            ).fetchall()
        return [self._row_to_item(r) for r in rows]

    def events(self, id: int, *, user_id: str | None = None, chain: bool = True) -> list[MemoryEvent]:
        """The audit log of a memory (``chain=True``: of its whole version chain), oldest first."""
        item = self._get(id, user_id=user_id)
        with self._tx() as cur:
            if chain:
                rows = cur.execute(
                    "SELECT * FROM memory_events WHERE chain_id = %s OR memory_id = %s ORDER BY id",
                    (item.chain_id, item.id),
                ).fetchall()
            else:
                rows = cur.execute(
                    "SELECT * FROM memory_events WHERE memory_id = %s ORDER BY id", (item.id,)
                ).fetchall()
        return [
            MemoryEvent(
                id=int(r["id"]),
                memory_id=int(r["memory_id"]),
                chain_id=r["chain_id"],
                event=r["event"],
                actor=r["actor"],
                at=r["at"].astimezone(UTC),
                details=r["details"],
            )
            for r in rows
        ]

    def list(
        self,
        user_id: str,
        *,
        scope: str | None = None,
        type: str | None = None,
        key: str | None = None,
        project_id: str | None = None,
        include_inactive: bool = False,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """A user's memories (active only unless ``include_inactive``), oldest first, optionally filtered."""
        user_id = check_user_id(user_id, owner="PostgresStore.list")
        where, params = ["user_id = %s"], [user_id]
        for col, val in (("scope", scope), ("type", type), ("key", key), ("project_id", project_id)):
            if val is not None:
                where.append(f"{col} = %s")
                params.append(val)
        if not include_inactive:
            where.append("is_active")
        sql = f"SELECT {_COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {check_positive_int(limit, name='limit', owner='PostgresStore.list')}"
        with self._tx() as cur:
            return [self._row_to_item(r) for r in cur.execute(sql, params).fetchall()]  # type: ignore[call-overload]

    def iter_all(
        self, user_id: str, *, include_inactive: bool = False, batch: int = 1000
    ) -> Iterator[MemoryItem]:
        """Stream a user's memories in id order without loading them all."""
        last = 0
        active = "" if include_inactive else " AND is_active"
        while True:
            with self._tx() as cur:
                rows = cur.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE user_id = %s AND id > %s{active} ORDER BY id LIMIT %s",
                    (user_id, last, int(batch)),
                ).fetchall()
            if not rows:
                return
            for r in rows:
                yield self._row_to_item(r)
            last = int(rows[-1]["id"])

    def count(self, user_id: str | None = None, *, include_inactive: bool = False) -> int:
        """Number of memories (of one user, or of all users)."""
        where: list[str] = []
        params: list[Any] = []
        if user_id is not None:
            where.append("user_id = %s")
            params.append(user_id)
        if not include_inactive:
            where.append("is_active")
        sql = "SELECT COUNT(*) AS n FROM memories" + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._tx() as cur:
            row = cur.execute(sql, params).fetchone()  # type: ignore[call-overload]
        return int(row["n"]) if row else 0

    def active_ids(self, user_id: str, ids: Sequence[int]) -> set[int]:
        """Which of ``ids`` are active memories of ``user_id`` (others' ids and unknown ids are left out)."""
        ids = [int(i) for i in ids if is_row_id(i)]
        if not ids:
            return set()
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT id FROM memories WHERE is_active AND user_id = %s AND id = ANY(%s)", (user_id, ids)
            ).fetchall()
        return {int(r["id"]) for r in rows}

    def is_correction(self, id: int, *, user_id: str | None = None) -> bool:
        """Whether the memory was stored from an explicit correction."""
        return any(e.event == "stated_as_correction" for e in self.events(id, user_id=user_id, chain=False))

    def active_in_slot(self, item: MemoryItem) -> MemoryItem | None:
        """The active memory of ``item``'s keyed slot other than ``item`` itself (``None`` for unkeyed items)."""
        if item.key is None:
            return None
        with self._tx() as cur:
            row = cur.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = %s AND key = %s AND scope = %s AND type = %s "
                "AND project_id IS NOT DISTINCT FROM %s AND is_active AND id != %s",
                (item.user_id, item.key, item.scope, item.type, item.project_id, item.id),
            ).fetchone()
        return None if row is None else self._row_to_item(row)

    def unchecked(self, limit: int = 1000) -> list[tuple[int, str]]:
        """``(memory_id, user_id)`` of memories in the check queue (stored while :attr:`track_checks` was on and
        not yet handed to the checker), oldest first."""
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT memory_id, user_id FROM memory_check_queue ORDER BY memory_id LIMIT %s", (int(limit),)
            ).fetchall()
        return [(int(r["memory_id"]), str(r["user_id"])) for r in rows]

    def mark_checked_queued(self, memory_ids: Sequence[int]) -> None:
        """Remove memories from the check queue."""
        with self._tx() as cur:
            cur.execute(
                "DELETE FROM memory_check_queue WHERE memory_id = ANY(%s)", ([int(i) for i in memory_ids],)
            )

    def find_containing(
        self, user_id: str, terms: Sequence[str], *, exclude_id: int | None = None, limit: int = 20
    ) -> list[MemoryItem]:
        """Active memories of ``user_id`` whose lower-cased text contains any of ``terms``, newest first."""
        if not terms:
            return []
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT id FROM memories WHERE user_id = %s AND is_active AND id != %s "
                "AND lower(text) LIKE ANY(%s) ORDER BY id DESC LIMIT %s",
                (
                    user_id,
                    int(exclude_id) if is_row_id(exclude_id) else -1,
                    [f"%{t.lower()}%" for t in terms],
                    int(limit),
                ),
            ).fetchall()
        return self.get_many([int(r["id"]) for r in rows])

    def probe(self) -> int:
        """Count all memories (a health check of the connection and the server)."""
        return self.count(include_inactive=True)

    def users(self) -> list[str]:
        """All user ids with at least one memory."""
        with self._tx() as cur:
            return [
                r["user_id"] for r in cur.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id")
            ]

    def vectors(self, ids: Sequence[int]) -> NDArray[np.float32]:
        """Stored embeddings of ``ids`` (float32, ``(len(ids), dim)``), in order."""
        if not ids:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        bad = [i for i in ids if not is_row_id(i)]
        if bad:
            raise NotFoundError(f"No memories with ids {bad}.")
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT id, embedding FROM memories WHERE id = ANY(%s)", ([int(i) for i in ids],)
            ).fetchall()
        by_id = {int(r["id"]): r["embedding"] for r in rows}
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return np.stack([_to_numpy(by_id[int(i)]) for i in ids])

    # ------------------------------------------------------------------ search
    def search(
        self,
        user_id: str,
        text: str,
        k: int = 10,
        *,
        include_inactive: bool = False,
        min_score: float | None = None,
        mode: str = "hybrid",
    ) -> list[tuple[MemoryItem, float]]:
        """The ``k`` memories of ``user_id`` that best match ``text``, best first (as :meth:`MemoryStore.search`).

        Args:
            mode: ``hybrid`` (default): the dense ranking and PostgreSQL full-text search (``ts_rank_cd`` over a
                GIN index of ``to_tsvector('simple', text)``) fused by reciprocal rank; ``dense``: cosine only.
                Chinese words inside a sentence are found by the dense half only here (the SQLite store splits
                CJK characters for its FTS5 index; PostgreSQL's parser keeps a run of them as one word).
            min_score: drop hits whose cosine to ``text`` is below this.

        Returns:
            ``(memory, cosine)`` pairs in the chosen ranking's order.

        Raises:
            InvalidInputError: empty/bad text, k < 1, or an unknown mode.
        """
        from memlab.store.lexical import fuse_with_cosines, query_terms

        owner = "PostgresStore.search"
        user_id = check_user_id(user_id, owner=owner)
        text = check_text(text, name="text", owner=owner, max_chars=self.max_text_chars)
        k = check_positive_int(k, name="k", owner=owner)
        if mode not in ("hybrid", "dense"):
            raise InvalidInputError(f"The 'mode' parameter of {owner} must be 'hybrid' or 'dense'. Got {mode!r} instead.")
        vec = self.embedder.embed([text], mode="query")[0]
        if mode == "dense":
            return self.search_by_vector(user_id, vec, k, include_inactive=include_inactive, min_score=min_score)
        depth = max(4 * k, 40)
        dense = self.search_by_vector(user_id, vec, depth, include_inactive=include_inactive)
        words = [t for t in query_terms(text) if " " not in t]
        lexical: list[int] = []
        if words:
            active = "" if include_inactive else " AND is_active"
            sql = (
                "SELECT id FROM memories WHERE user_id = %(u)s" + active + " AND to_tsvector('simple', text) @@ "
                "websearch_to_tsquery('simple', %(q)s) ORDER BY ts_rank_cd(to_tsvector('simple', text), "
                "websearch_to_tsquery('simple', %(q)s)) DESC, id LIMIT %(k)s"
            )
            with self._tx() as cur:
                rows = cur.execute(sql, {"u": user_id, "q": " or ".join(words), "k": depth}).fetchall()
            lexical = [int(r["id"]) for r in rows]
        hits = fuse_with_cosines([(m.id, c) for m, c in dense], lexical, vec, self.vectors, k=k, min_score=min_score)
        known = {m.id: m for m, _ in dense}
        fetched = iter(self.get_many([i for i, _ in hits if i not in known]))
        return [(known[i] if i in known else next(fetched), c) for i, c in hits]

    def _search_settings(self, cur: psycopg.Cursor[Any], mode: str) -> None:
        """``SET LOCAL`` the HNSW and planner settings of one search (they end with its transaction)."""
        cur.execute(f"SET LOCAL hnsw.ef_search = {int(self.ef_search)}")
        if mode != "exact" and self._iterative_scan:
            cur.execute(f"SET LOCAL hnsw.iterative_scan = {self.iterative_scan}")
            if self.max_scan_tuples is not None:
                cur.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(self.max_scan_tuples)}")
        if mode == "hnsw":
            for knob in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cur.execute(f"SET LOCAL {knob} = off")

    @staticmethod
    def _search_sql(mode: str, where: str, columns: str, relaxed: bool = False) -> str:
        """The search statement of ``mode``. Each mode has its own text: psycopg prepares a statement after a few
        runs and the server may keep a generic plan for it, planned under the settings of the first mode that
        ran it; distinct texts keep each mode's plan. ``exact`` orders by ``(embedding <=> q) + 0``, an
        expression no index can give, so it is exact whatever the planner settings."""
        order = "(embedding <=> %(q)s) + 0" if mode == "exact" else "embedding <=> %(q)s"
        sql = (
            f"SELECT /* memlab search: {mode} */ {columns}, embedding <=> %(q)s AS distance FROM memories "
            f"WHERE {where} ORDER BY {order} LIMIT %(k)s"
        )
        if relaxed:  # pgvector's relaxed_order may return the rows slightly out of order: sort them again
            sql = f"WITH hits AS MATERIALIZED ({sql}) SELECT * FROM hits ORDER BY distance"
        return sql

    def _relaxed(self) -> bool:
        return self._iterative_scan and self.iterative_scan == "relaxed_order"

    def _one_statement(self, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Rows of ONE statement in autocommit (one round trip: no BEGIN/SET/COMMIT), e.g. the exact search, which
        needs no session setting (its ``ORDER BY`` expression keeps every index but ``user_id``'s out)."""
        import psycopg
        from psycopg.rows import dict_row

        try:
            with self._lock, self.conn.cursor(row_factory=dict_row) as cur:
                return cur.execute(sql, params).fetchall()  # type: ignore[call-overload]
        except psycopg.Error as exc:
            raise BackendError(f"PostgreSQL error in PostgresStore: {exc}".strip()) from exc

    def _search_args(
        self,
        user_id: str,
        vector: Any,
        k: int,
        mode: str | None,
        include_inactive: bool,
        exclude: Sequence[int],
    ) -> tuple[str, str, dict[str, Any]]:
        owner = "PostgresStore.search"
        user_id = check_user_id(user_id, owner=owner)
        k = check_positive_int(k, name="k", owner=owner)
        mode = self.search_mode if mode is None else mode
        if mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"The 'mode' parameter of {owner} must be one of {SEARCH_MODES}. Got {mode!r}."
            )
        q = as_vectors(vector, self.embedder.dim, name="vector", owner=owner)
        q = check_unit_vectors(q, normalize=True, name="vector", owner=owner)[0]
        where = "user_id = %(u)s" + ("" if include_inactive else " AND is_active")
        params: dict[str, Any] = {"u": user_id, "q": np.ascontiguousarray(q, dtype=np.float32), "k": k}
        drop = sorted({int(i) for i in exclude if is_row_id(i)})
        if drop:
            where += " AND NOT (id = ANY(%(drop)s))"
            params["drop"] = drop
        return mode, where, params

    def search_by_vector(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 10,
        *,
        include_inactive: bool = False,
        min_score: float | None = None,
        exclude: Sequence[int] = (),
        mode: Literal["auto", "exact", "hnsw"] | None = None,
    ) -> list[tuple[MemoryItem, float]]:
        """Like :meth:`search` with a precomputed vector; scores are cosines (the vector is scaled to unit norm).

        Args:
            mode: this call's search mode (default: the store's ``search``).

        Raises:
            InvalidInputError: k < 1; a vector of the wrong size, with NaN/inf, or zero.
        """
        mode, where, params = self._search_args(user_id, vector, k, mode, include_inactive, exclude)
        if mode == "exact":
            rows = self._one_statement(self._search_sql(mode, where, _COLUMNS), params)
        else:
            with self._tx() as cur:
                self._search_settings(cur, mode)
                sql = self._search_sql(mode, where, _COLUMNS, self._relaxed())
                rows = cur.execute(sql, params).fetchall()  # type: ignore[call-overload]
        hits = [(self._row_to_item(r), 1.0 - float(r["distance"])) for r in rows]
        if min_score is not None:
            hits = [(m, s) for m, s in hits if s >= min_score]
        return hits

    def explain_search(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 10,
        *,
        mode: Literal["auto", "exact", "hnsw"] | None = None,
        include_inactive: bool = False,
        analyze: bool = False,
    ) -> str:
        """The server's plan of the statement :meth:`search_by_vector` runs (``EXPLAIN``; ``analyze=True``: run it
        and show the actual times), e.g. to see whether the HNSW index is used."""
        mode, where, params = self._search_args(user_id, vector, k, mode, include_inactive, ())
        explain = "EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN "
        with self._tx() as cur:
            self._search_settings(cur, mode)
            sql = self._search_sql(mode, where, "id", mode != "exact" and self._relaxed())
            rows = cur.execute(explain + sql, params).fetchall()  # type: ignore[operator]
        return "\n".join(str(next(iter(r.values()))) for r in rows)

    def context_items(
        self,
        user_id: str,
        query: str | None = None,
        *,
        project_id: str | None = None,
        types: Sequence[str] | None = None,
        k: int = 20,
    ) -> list[MemoryItem]:
        """The memories :meth:`build_context` lists (see :meth:`MemoryStore.context_items`)."""
        return select_context(self, "PostgresStore.context_items", user_id, query, project_id=project_id,
                              types=types, k=k)

    def build_context(
        self,
        user_id: str,
        query: str | None = None,
        *,
        project_id: str | None = None,
        agent_type: str | None = None,
        types: Sequence[str] | None = None,
        k: int = 20,
        lang: str = "it",
        awaiting: Collection[int] = (),
    ) -> str:
        """Prompt text with the user's **active** memories (see :meth:`MemoryStore.build_context`)."""
        items = select_context(self, "PostgresStore.build_context", user_id, query, project_id=project_id,
                               types=types, k=k)
        return format_context(items, lang=lang, agent_type=agent_type, awaiting=awaiting)

    # ------------------------------------------------------------------ chats: table and search_chats_semantic
    def put_chat(self, chat: Chat) -> None:
        """Insert or update the ``chats`` row of a :class:`~memlab.chats.store.Chat` (histories as jsonb, the
        summary embedding as ``vector(dim)``).

        Raises:
            InvalidInputError: the chat id is not a uuid, or its embedding has the wrong dimension.
        """
        try:
            chat_uuid = uuid.UUID(str(chat.id))
        except ValueError as exc:
            raise InvalidInputError(f"PostgresStore.put_chat needs a uuid chat id. Got {chat.id!r}.") from exc
        user_id = check_user_id(chat.user_id, owner="PostgresStore.put_chat")
        emb = None
        if chat.summary_embedding is not None:
            emb = check_unit_vectors(
                as_vectors(
                    chat.summary_embedding, self.embedder.dim, name="summary_embedding", owner="put_chat"
                ),
                normalize=True,
                name="summary_embedding",
                owner="PostgresStore.put_chat",
            )[0]
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO chats(id, user_id, title, full_history, assistant_history, summary_text, "
                "summary_embedding, last_activity_at, created_at) VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET title = excluded.title, full_history = excluded.full_history, "
                "assistant_history = excluded.assistant_history, summary_text = excluded.summary_text, "
                "summary_embedding = excluded.summary_embedding, last_activity_at = excluded.last_activity_at "
                "WHERE chats.user_id = excluded.user_id",
                (
                    chat_uuid,
                    user_id,
                    chat.title,
                    json.dumps(list(chat.full_history), ensure_ascii=False),
                    json.dumps(list(chat.assistant_history), ensure_ascii=False),
                    chat.summary_text,
                    None if emb is None else np.ascontiguousarray(emb, dtype=np.float32),
                    _aware(chat.last_activity_at),
                    _aware(chat.created_at),
                ),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"No chat {chat.id!r} for user {user_id!r}.")

    def search_chats(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 5,
        *,
        max_distance: float | None = None,
    ) -> list[tuple[str, float]]:
        """``search_chats_semantic`` in SQL: ``(chat id, cosine similarity)`` of ``user_id``'s chats, best first.

        Args:
            vector: the query embedding (scaled to unit norm).
            k: at most this many chats.
            max_distance: keep chats whose cosine distance (``1 - similarity``) is at most this.

        Raises:
            InvalidInputError: bad user, vector or k.
        """
        owner = "PostgresStore.search_chats"
        user_id = check_user_id(user_id, owner=owner)
        k = check_positive_int(k, name="k", owner=owner)
        q = check_unit_vectors(as_vectors(vector, self.embedder.dim, name="vector", owner=owner), normalize=True,
                               name="vector", owner=owner)[0]  # fmt: skip
        if max_distance is not None:
            max_distance = float(max_distance)
            if not (0.0 <= max_distance <= 2.0):
                raise InvalidInputError(
                    f"The 'max_distance' parameter of {owner} must be in [0, 2]. Got {max_distance}."
                )
        with self._tx() as cur:
            rows = cur.execute(
                "SELECT id, similarity FROM search_chats_semantic(%s, %s, %s, %s)",
                (np.ascontiguousarray(q, dtype=np.float32), user_id, k, max_distance),
            ).fetchall()
        return [(r["id"].hex, float(r["similarity"])) for r in rows]
