"""PostgreSQL + pgvector as a :class:`~memlab.store.memory.MemoryStore`: :class:`PostgresStore`, with the backend's
own operations (binary ``COPY`` bulk loads, the HNSW index, query plans, the ``chats`` table).

The rules are :class:`~memlab.store.memory.MemoryStore`'s; the storage is
:class:`~memlab.store.pg_backend.PostgresBackend` (see that module for the schema, the vector scans and their
measurements).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlab._validation import as_vectors, check_positive_int, check_unit_vectors, check_user_id
from memlab.config import MAX_TEXT_CHARS
from memlab.errors import InvalidInputError, NotFoundError
from memlab.protocols import Embedder
from memlab.store.core import DEFAULT_EMBEDDER, aware, item_specs, spec_vectors
from memlab.store.memory import MemoryStore
from memlab.store.pg_backend import _BULK_INDEXES, ITERATIVE_SCANS, VECTOR_SCANS, PostgresBackend, _PgWrite

if TYPE_CHECKING:
    import psycopg

    from memlab.chats.store import Chat

__all__ = ["ITERATIVE_SCANS", "VECTOR_SCANS", "BulkLoadResult", "PostgresBackend", "PostgresStore"]


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



class PostgresStore(MemoryStore):
    """A :class:`~memlab.store.memory.MemoryStore` on PostgreSQL + pgvector, with the backend's own operations
    (bulk loads, the HNSW index, query plans, the ``chats`` table).

    Args:
        dsn: a libpq connection string or URI (e.g. ``postgresql://user@host/db``).
        embedder: any :class:`~memlab.protocols.Embedder`; default: the packaged offline one. The database is
            bound to the first embedder's name and dimension (``vector(dim)``); another one is refused.
        clock, max_text_chars: as :class:`~memlab.store.memory.MemoryStore`.
        **backend: :class:`PostgresBackend`'s options (``scan``, ``ef_search``, ``hnsw_m``, ``hnsw_ef_construction``,
            ``iterative_scan``, ``max_scan_tuples``, ``connect_timeout``).

    Raises:
        MissingDependencyError: psycopg/pgvector are not installed.
        BackendError: the server cannot be reached, or the ``vector`` extension is not available.
        InvalidInputError: a bad option, or the database was built with another embedder.
    """

    backend: PostgresBackend

    def __init__(
        self,
        dsn: str,
        embedder: Embedder | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
        **backend: Any,
    ) -> None:
        pg = PostgresBackend(dsn, **backend)
        if embedder is None:
            from memlab.embedding import load_embedder

            embedder = load_embedder(DEFAULT_EMBEDDER)
        self._init(pg, embedder, clock=clock, max_text_chars=max_text_chars, reembed=False)

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The backend's connection (autocommit)."""
        return self.backend.conn

    @property
    def vector_version(self) -> str:
        """The server's pgvector version."""
        return self.backend.vector_version

    def has_hnsw_index(self) -> bool:
        """Whether the HNSW index of the memories exists (:meth:`bulk_load` with ``build_index=False`` drops it)."""
        return self.backend.has_hnsw_index()

    def drop_hnsw_index(self) -> None:
        """Drop the HNSW index (see :meth:`PostgresBackend.drop_hnsw_index`)."""
        self.backend.drop_hnsw_index()

    def build_hnsw_index(self, *, maintenance_work_mem: str = "1GB", parallel_workers: int | None = None) -> float:
        """Build the HNSW index when it is missing (see :meth:`PostgresBackend.build_hnsw_index`)."""
        return self.backend.build_hnsw_index(maintenance_work_mem=maintenance_work_mem,
                                             parallel_workers=parallel_workers)

    def explain_search(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 10,
        *,
        scan: Literal["exact", "auto", "hnsw"] | None = None,
        include_inactive: bool = False,
        analyze: bool = False,
    ) -> str:
        """The server's plan of the statement :meth:`search_by_vector` runs (``EXPLAIN``; ``analyze=True``: run it
        and show the actual times), e.g. to see whether the HNSW index is used."""
        owner = self._owner("search")
        user_id = check_user_id(user_id, owner=owner)
        k = check_positive_int(k, name="k", owner=owner)
        return self.backend.explain(user_id, self._query(vector), k, scan=scan, include_inactive=include_inactive,
                                    analyze=analyze)

    # ------------------------------------------------------------------ bulk load
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
        ``stated_as_correction`` when asked) and, while :attr:`track_checks` is on, a row in the check outbox;
        keyed memories go through the version rule, in order, exactly as in :meth:`add_many` (after their batch's
        unkeyed rows, so their ids come after them).

        Args:
            batches: ``(user_id, items, embeddings)`` triples, consumed lazily (e.g. one user at a time, so
                the vectors of 1M memories never sit in memory together). ``items`` are texts or mappings as
                in :meth:`add_many`; ``embeddings`` (``(len(items), dim)``, unit norm) or ``None`` to embed.
            build_index: build the HNSW index now (default); ``False`` leaves it out (the exact scan works
                without it) until :meth:`build_hnsw_index`.
            maintenance_work_mem, parallel_workers: see :meth:`build_hnsw_index`.
            progress: a progress bar over the batches.

        Returns:
            A :class:`BulkLoadResult`: the ids in input order, the rows, the COPY and index seconds.

        Raises:
            InvalidInputError: a bad batch (user, item, vector or count); nothing is stored.
        """
        b = self.backend
        workers = max(0, (os.cpu_count() or 1) - 1) if parallel_workers is None else int(parallel_workers)
        t0 = time.perf_counter()
        with b.write() as w:
            for name in _BULK_INDEXES:
                w.cur.execute(f"DROP INDEX IF EXISTS {name}")  # type: ignore[call-overload]
            ids = self._copy_batches(w, batches, progress)
            t1 = time.perf_counter()
            b._maintenance_settings(w.cur, maintenance_work_mem, workers)
            for name, ddl in _BULK_INDEXES.items():
                if build_index or name != "memories_embedding_hnsw":
                    w.cur.execute(ddl.format(m=b.hnsw_m, ef=b.hnsw_ef_construction))  # type: ignore[call-overload]
        t2 = time.perf_counter()
        b.analyze()
        t3 = time.perf_counter()
        return BulkLoadResult(ids=ids, rows=len(ids), copy_s=t1 - t0, index_s=t2 - t1, analyze_s=t3 - t2,
                              hnsw_built=build_index)

    def _copy_batches(self, w: _PgWrite, batches: Iterable[Any], progress: bool) -> list[int]:
        owner = self._owner("bulk_load")
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="bulk load", unit="batch")
        ids: list[int] = []
        for user_id, items, embeddings in batches:
            user_id = check_user_id(user_id, owner=owner)
            specs = item_specs(items, owner, self.max_text_chars, what=f"The items of a {owner} batch")
            if specs:
                vecs = spec_vectors(specs, embeddings, self.embedder, owner)
                ids.extend(self._copy_batch(w, user_id, specs, vecs))
        return ids

    def _copy_batch(self, w: _PgWrite, user_id: str, specs: list[dict[str, Any]], vecs: NDArray[np.float32]
                    ) -> list[int]:
        """COPY one batch's unkeyed rows (with their events and outbox rows); keyed ones through the version rule.
        Returns the ids in the batch's order."""
        now = aware(self.clock())
        plain = [i for i, sp in enumerate(specs) if sp["key"] is None]
        out: list[int] = [0] * len(specs)
        if plain:
            rows = w.cur.execute(
                "SELECT nextval(pg_get_serial_sequence('memories', 'id')) AS id FROM generate_series(1, %s)",
                (len(plain),)).fetchall()
            new_ids = [int(r["id"]) for r in rows]
            _copy_memories(w.cur, user_id, [specs[i] for i in plain], vecs[plain], new_ids, now)
            events = [(i, "created", "system", {"version": 1}) for i in new_ids]
            events += [(new_ids[j], "stated_as_correction", "user", {}) for j, i in enumerate(plain)
                       if specs[i].get("correction")]  # fmt: skip
            _copy_rows(w.cur, "memory_events (memory_id, chain_id, user_id, event, actor, at, details)",
                       ["int8", "int8", "text", "text", "text", "timestamptz", "jsonb"],
                       [(mid, mid, user_id, ev, actor, now, det) for mid, ev, actor, det in sorted(events,
                                                                                             key=lambda e: e[0])])
            if self.track_checks:
                _copy_rows(w.cur, "memory_outbox (memory_id, user_id, created_at)", ["int8", "text", "timestamptz"],
                           [(mid, user_id, now) for mid in new_ids])
            for i, new_id in zip(plain, new_ids, strict=True):
                out[i] = new_id
        for i, sp in enumerate(specs):
            if sp["key"] is not None:
                out[i] = self._insert(w, user_id, sp, vecs[i])
        return out

    # ------------------------------------------------------------------ chats: table and search_chats_semantic
    def put_chat(self, chat: Chat) -> None:
        """Insert or update the ``supabase_chats`` row of a :class:`~memlab.chats.store.Chat`: the Supabase-shaped
        table (histories as jsonb, the summary embedding as ``vector(dim)``) that ``search_chats_semantic`` ranks.

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
                as_vectors(chat.summary_embedding, self.embedder.dim, name="summary_embedding", owner="put_chat"),
                normalize=True, name="summary_embedding", owner="PostgresStore.put_chat")[0]
        with self.backend._tx() as cur:
            cur.execute(
                "INSERT INTO supabase_chats(id, user_id, title, full_history, assistant_history, summary_text, "
                "summary_embedding, last_activity_at, created_at) VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, "
                "%s, %s) ON CONFLICT (id) DO UPDATE SET title = excluded.title, full_history = excluded.full_history, "
                "assistant_history = excluded.assistant_history, summary_text = excluded.summary_text, "
                "summary_embedding = excluded.summary_embedding, last_activity_at = excluded.last_activity_at "
                "WHERE supabase_chats.user_id = excluded.user_id",
                (chat_uuid, user_id, chat.title, json.dumps(list(chat.full_history), ensure_ascii=False),
                 json.dumps(list(chat.assistant_history), ensure_ascii=False), chat.summary_text,
                 None if emb is None else np.ascontiguousarray(emb, dtype=np.float32),
                 aware(chat.last_activity_at), aware(chat.created_at)),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"No chat {chat.id!r} for user {user_id!r}.")

    def search_chats(
        self, user_id: str, vector: NDArray[np.float32], k: int = 5, *, max_distance: float | None = None
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
                    f"The 'max_distance' parameter of {owner} must be in [0, 2]. Got {max_distance}.")
        rows = self.backend._rows("SELECT id, similarity FROM search_chats_semantic(%s, %s, %s, %s)",
                                  (np.ascontiguousarray(q, dtype=np.float32), user_id, k, max_distance))
        return [(r["id"].hex, float(r["similarity"])) for r in rows]


_COPY_MEMORIES = ("memories (id, user_id, text, scope, type, value, confidence, project_id, source, keywords, topic, "
                  "created_at, valid_from, valid_to, version, chain_id, is_active, embedding, updated_at)")
_COPY_TYPES = ["int8", "text", "text", "text", "text", "text", "float8", "text", "text", "jsonb", "text",
               "timestamptz", "timestamptz", "timestamptz", "int4", "int8", "bool", "vector", "timestamptz"]


def _copy_rows(cur: psycopg.Cursor[Any], target: str, types: list[str], rows: Iterable[Sequence[Any]]) -> None:
    """Binary ``COPY target FROM STDIN`` of ``rows``."""
    with cur.copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as copy:  # type: ignore[arg-type]
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def _copy_memories(cur: psycopg.Cursor[Any], user_id: str, specs: Sequence[Mapping[str, Any]],
                   vecs: NDArray[np.float32], ids: Sequence[int], now: datetime | None) -> None:
    """COPY unkeyed memories (each its own chain, version 1, active) with the given ids."""
    _copy_rows(cur, _COPY_MEMORIES, _COPY_TYPES, (
        (new_id, user_id, sp["text"], sp["scope"], sp["type"], sp["value"], sp["confidence"], sp["project_id"],
         sp["source"], sp["keywords"], sp["topic"], now, sp["valid_from"], sp["valid_to"], 1, new_id, True, vec, now)
        for sp, vec, new_id in zip(specs, vecs, ids, strict=True)))
