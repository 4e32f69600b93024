"""The SQLite backend of the memory store: one file of records, a FAISS index beside it, FTS5 for full text.

The FAISS index is a rebuildable cache of the vectors stored in SQLite. At open it is loaded and compared with
SQLite (ids, each id's user, a sample of vectors), and rebuilt from the stored vectors when missing, inconsistent or
of another format (a single-index file of memlab before per-user partitions is rebuilt once). It is written on
``close``, ``flush``, and in the background ``flush_every`` changes or ``flush_seconds`` after a change (atomically:
a temp file, then a rename). A file older than SQLite (the process was killed after its last write) is not rebuilt:
the rows written after it are added from SQLite at the next open (:attr:`SQLiteBackend.index_opened`).

Per user, the backend keeps the sorted ids of the active (and of all) memories and the texts of the active ones
(:mod:`memlab.store.caches`), updated by its own writes and dropped when another connection commits.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import check_positive_float, check_positive_int
from memlab.errors import BackendError, InvalidInputError
from memlab.index.faiss_index import FaissIndex
from memlab.index.partitioned import PartitionedFaissIndex
from memlab.index.persist import IndexFlusher
from memlab.protocols import Embedder, VectorIndex
from memlab.records import MemoryItem
from memlab.store.caches import ActiveTexts, ascii_lower, in_sorted, like_free, sorted_minus, sorted_union
from memlab.store.core import events_table
from memlab.store.db import Database
from memlab.store.lexical import FTS_TOKENIZER, fts_query, lexical_text, owner_token
from memlab.store.sql import SQLReads, SQLWrite

__all__ = ["FLUSH_EVERY", "FLUSH_SECONDS", "SCHEMA", "SQLiteBackend"]

log = logging.getLogger(__name__)

#: The FAISS file is written in the background after this many changed vectors ...
FLUSH_EVERY = 1000
#: ... or this many seconds after a change (whichever comes first; see :class:`~memlab.index.persist.IndexFlusher`).
FLUSH_SECONDS = 5.0
#: Most memory texts ``find_containing`` keeps in memory, over all users (least recently used users are dropped
#: first; a dropped user's texts are read again on their next lookup).
_TEXTS_CACHE_ROWS = 200_000
#: Schema of the memory tables (its version is mirrored in ``PRAGMA user_version``).
SCHEMA: list[str] = [
    """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id TEXT NOT NULL,
        text TEXT NOT NULL,
        scope TEXT NOT NULL DEFAULT 'global',
        type TEXT NOT NULL DEFAULT 'fact',
        key TEXT,
        value TEXT,
        confidence REAL NOT NULL,
        project_id TEXT,
        source TEXT,
        keywords TEXT NOT NULL DEFAULT '[]',
        topic TEXT,
        created_at TEXT NOT NULL,
        valid_from TEXT,
        valid_to TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        chain_id INTEGER,
        supersedes INTEGER,
        superseded_by INTEGER,
        is_active INTEGER NOT NULL DEFAULT 1,
        superseded_at TEXT,
        context TEXT,
        embedding BLOB
    );
    CREATE INDEX idx_memories_user ON memories(user_id, is_active);
    CREATE INDEX idx_memories_slot ON memories(user_id, key, scope, type, project_id);
    CREATE INDEX idx_memories_chain ON memories(chain_id);
    """ + events_table("sqlite") + """;
    CREATE INDEX idx_events_memory ON memory_events(memory_id);
    CREATE INDEX idx_events_chain ON memory_events(chain_id);
    CREATE TABLE memlab_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    # 2: at most one active memory per keyed slot, enforced by SQLite (a repair first: earlier versions of
    # notification resolution could leave two; the newest stays active, the others become superseded), and the
    # outbox of memories whose integrity check is not queued yet (written in the memory's own transaction).
    """
    UPDATE memories SET is_active = 0, superseded_at = COALESCE(superseded_at, created_at)
    WHERE key IS NOT NULL AND is_active = 1 AND id NOT IN (
        SELECT MAX(id) FROM memories WHERE key IS NOT NULL AND is_active = 1
        GROUP BY user_id, key, scope, type, COALESCE(project_id, '')
    );
    CREATE UNIQUE INDEX idx_memories_active_slot ON memories(user_id, key, scope, type, COALESCE(project_id, ''))
    WHERE is_active = 1 AND key IS NOT NULL;
    CREATE TABLE memory_outbox (
        memory_id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        created_at TEXT NOT NULL
    )
    """,
    # 3: full-text index of memory texts for hybrid (BM25 + dense) search; rowid = memories.id, ``owner`` = a token
    # of the user id so a query only reads that user's posting lists. Filled by Python (lexical_text() splits CJK
    # characters, which SQL cannot); an older file is back-filled when opened.
    f"""
    CREATE VIRTUAL TABLE memories_fts USING fts5(owner, text, tokenize='{FTS_TOKENIZER}')
    """,
    # 4: ``updated_at``, the time of the memory's last change (created, superseded, lost, deactivated, reactivated,
    # annotated, moved to another slot, context cleared), written with each change; an older file takes it from the
    # events already logged.
    """
    ALTER TABLE memories ADD COLUMN updated_at TEXT;
    UPDATE memories SET updated_at = COALESCE(
        (SELECT MAX(e.at) FROM memory_events e WHERE e.memory_id = memories.id AND e.event IN (
            'created', 'superseded', 'lost', 'deactivated', 'reactivated', 'annotated', 'key_changed',
            'context_cleared')),
        superseded_at, created_at)
    """,
]

#: The columns of a new row, in the INSERT's order (the vector is appended as ``embedding``).
_INSERTED = ("user_id", "text", "scope", "type", "key", "value", "confidence", "project_id", "source", "keywords",
             "topic", "created_at", "valid_from", "valid_to", "version", "chain_id", "supersedes", "superseded_by",
             "is_active", "superseded_at", "updated_at")


def _sql_value(value: Any) -> Any:
    """A Python value as SQLite stores it: times as ISO text, booleans as 0/1, lists as JSON."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list | tuple):
        return json.dumps(list(value), ensure_ascii=False)
    return value


@dataclass
class _Changes:
    """What a write transaction changed, per user, applied to the index and caches after the commit: new rows with
    their vectors, and each touched row's final state (its text when it ended active, None when inactive)."""

    new: dict[str, list[tuple[int, NDArray[np.float32]]]] = field(default_factory=dict)
    status: dict[str, dict[int, str | None]] = field(default_factory=dict)
    rekeyed: set[str] = field(default_factory=set)

    def users(self) -> set[str]:
        return set(self.new) | set(self.status) | self.rekeyed


class _SQLiteWrite(SQLWrite):
    """:class:`~memlab.store.backend.StoreWrite` on SQLite (inside ``Database.transaction``, under its lock: one
    writer at a time, so nothing more to lock)."""

    def __init__(self, backend: SQLiteBackend) -> None:
        super().__init__(backend)
        self.changes = _Changes()

    def _time(self, at: datetime) -> Any:
        return at.isoformat()

    def insert(self, row: Mapping[str, Any], vector: NDArray[np.float32]) -> int:
        cols = ", ".join(_INSERTED)
        cur = self.db.execute(
            f"INSERT INTO memories({cols}, embedding) VALUES ({', '.join('?' * (len(_INSERTED) + 1))})",
            [*(_sql_value(row[c]) for c in _INSERTED), np.asarray(vector, dtype=np.float32).tobytes()],
        )
        new_id = int(cur.lastrowid or 0)
        self.db.execute("INSERT INTO memories_fts(rowid, owner, text) VALUES (?, ?, ?)",
                        (new_id, owner_token(row["user_id"]), lexical_text(row["text"])))
        if row["chain_id"] is None:
            self.db.execute("UPDATE memories SET chain_id = ? WHERE id = ?", (new_id, new_id))
        return new_id

    def changed(self, user_id: str, *, new: Sequence[tuple[int, NDArray[np.float32]]] = (),
                activated: Sequence[tuple[int, str]] = (), deactivated: Sequence[int] = (),
                rekeyed: bool = False) -> None:
        c = self.changes
        if new:
            c.new.setdefault(user_id, []).extend(new)
        status = c.status.setdefault(user_id, {})
        for i in deactivated:  # in call order: a row deactivated later in the transaction ends inactive
            status[int(i)] = None
        for i, text in activated:
            status[int(i)] = text
        if rekeyed:
            c.rekeyed.add(user_id)


class SQLiteBackend(SQLReads):
    """Memories in one SQLite file (or ``":memory:"``), vectors in a FAISS index beside it (``<path>.faiss``).

    Args:
        path: SQLite file, or ``":memory:"`` (nothing touches disk).
        index_factory: inner FAISS index of each user's partition (``"Flat"`` exact by default). A factory that
            needs training (``"IVF..."``) gets one FAISS index for all users instead (searched with the user's ids
            as a filter: the cost grows with the whole store).
        index: any :class:`~memlab.protocols.VectorIndex` of the embedder's dimension, treated as a cache of SQLite
            like the default (filled from the stored vectors at open when its ids differ, kept in step on every
            write, never saved). ``None`` (default): a :class:`~memlab.index.PartitionedFaissIndex` persisted in
            ``<path>.faiss``.
        flush_every, flush_seconds: the FAISS file is written by a background thread after ``flush_every``
            changed vectors, or ``flush_seconds`` after a change (see the module docstring).

    Raises:
        InvalidInputError: a bad path or a file that is not an SQLite database; an index that is no VectorIndex.
        BackendError: the file cannot be opened.
    """

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        index_factory: str = "Flat",
        index: VectorIndex | None = None,
        flush_every: int = FLUSH_EVERY,
        flush_seconds: float = FLUSH_SECONDS,
    ) -> None:
        if index is not None and not isinstance(index, VectorIndex):
            raise InvalidInputError(
                "The 'index' parameter of MemoryStore must be a VectorIndex or None. "
                f"Got {type(index).__name__} instead."
            )
        self._flush_every = check_positive_int(flush_every, name="flush_every", owner="MemoryStore")
        self._flush_seconds = check_positive_float(flush_seconds, name="flush_seconds", owner="MemoryStore")
        self.path = self.location = str(path)
        self.index_factory = index_factory
        self._db = Database(self.path)
        self._custom_index = index
        self._index_path = None if (self._db.in_memory or index is not None) else Path(self.path + ".faiss")
        #: How the index was opened: ``source`` ``"file"`` (loaded, then ``caught_up`` rows written after the file's
        #: last write added from SQLite), ``"rebuilt"`` (from every stored vector) or ``"custom"``; ``watermark``:
        #: the highest memory id the file held.
        self.index_opened: dict[str, Any] = {"source": "custom" if index is not None else "rebuilt",
                                             "caught_up": 0, "watermark": None}
        #: Full rebuilds of the index done by this backend (at open or by :meth:`rebuild_index`).
        self.index_rebuilds = 0
        self.index: VectorIndex = None  # type: ignore[assignment]  # set by open()
        self.embedder: Embedder = None  # type: ignore[assignment]
        self._flush_lock = threading.Lock()
        self._flusher: IndexFlusher | None = None
        # per user, kept up to date by this backend's own writes (see _apply), all under self.db.lock:
        # (user, include_inactive) -> sorted read-only ids (FaissIndex caches its id selector per such array),
        # user -> ActiveTexts (find_containing), least recently used first
        self._user_ids_cache: dict[tuple[str, bool], NDArray[np.int64]] = {}
        self._texts_cache: OrderedDict[str, ActiveTexts] = OrderedDict()
        self._ascii_like: bool | None = None
        self._worker: Any = None  # a one-thread executor: the full-text query runs there while the query is embedded
        self._dirty = False
        self._reembedded = False
        self._data_version: int | None = None

    @property
    def db(self) -> Database:
        """The SQLite database (the app's other tables live in the same file)."""
        return self._db

    @property
    def closed(self) -> bool:
        return self._db.closed

    # ------------------------------------------------------------------ lifecycle
    def open(self, embedder: Embedder, *, reembed: bool) -> None:
        """Create or upgrade the tables, bind the file to ``embedder`` and open the vector index.

        Raises:
            InvalidInputError: the file holds memories of another embedder and ``reembed`` is False.
        """
        self.embedder = embedder
        try:
            self._db.migrate("memories", SCHEMA)
            if self._db.user_version() != len(SCHEMA):  # no write when already set (a read-only file still opens)
                self._db.set_user_version(len(SCHEMA))
            self._backfill_fts()
            self._check_embedder(reembed)
        except BaseException:
            self._db.close()
            raise
        if self._index_path is not None:
            self._flusher = IndexFlusher(self.flush, every=self._flush_every, seconds=self._flush_seconds)
        self.index = self._open_index()
        self._data_version = None if self._db.in_memory else self._db.data_version()

    def close(self) -> None:
        """Persist the FAISS index and close the database (idempotent).

        The index is a cache of SQLite: when it cannot be written (read-only folder, full disk) a warning is
        logged, no temporary file is left, and the database is closed anyway (the next open rebuilds the index).
        """
        if self._db.closed:
            return
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        if self._flusher is not None:
            self._flusher.stop()
        try:
            self.flush()
        except BackendError as exc:
            log.warning("%s; it will be rebuilt from SQLite at the next open", exc)
        finally:
            self._db.close()

    def flush(self) -> None:
        """Write the FAISS index file now, when it has unwritten changes (atomically: a temp file, then a rename).

        Raises:
            BackendError: the file cannot be written (no temporary file is left behind).
        """
        if self._index_path is None or not isinstance(self.index, PartitionedFaissIndex | FaissIndex):
            return
        with self._flush_lock:
            if not self._dirty:
                return
            self._dirty = False  # before the write: a change made during it sets it again (written next time)
            try:
                self.index.save(self._index_path)
            except BaseException:
                self._dirty = True
                raise

    def probe(self) -> int:
        """Count all memories through a fresh read-only connection (``:memory:``: the backend's own).

        A file that went missing or became unreadable fails here even while this connection still has pages cached.

        Raises:
            sqlite3.Error: the file cannot be read.
        """
        if self._db.in_memory:
            return self.count(None, include_inactive=True)
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0)
        try:
            return int(con.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        finally:
            con.close()

    def _changed_index(self, n: int) -> None:
        """``n`` vectors of the index changed: the file is stale until the next (scheduled) write."""
        self._dirty = True
        if self._flusher is not None and n:
            self._flusher.note(n)

    def _meta(self, key: str) -> str | None:
        row = self._db.query_one("SELECT value FROM memlab_meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO memlab_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _check_embedder(self, reembed: bool) -> None:
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        stored, stored_dim = self._meta("embedder"), self._meta("dim")
        if stored is None:
            self._set_meta("embedder", name)
            self._set_meta("dim", str(self.embedder.dim))
            return
        if stored == name and int(stored_dim or 0) == self.embedder.dim:
            return
        count = self.count(None, include_inactive=True)
        if count and not reembed:
            raise InvalidInputError(
                f"{self.path} was built with embedder {stored!r} (dim {stored_dim}); refusing to open it with "
                f"{name!r} (dim {self.embedder.dim}): its {count} memories would be re-embedded and the "
                f"database switched for good. Open it with {stored!r} (or no embedder), or pass reembed=True "
                f"(CLI: --reembed)."
            )
        if count:
            warnings.warn(
                f"{self.path} was built with embedder {stored!r} (dim {stored_dim}); re-embedding {count} "
                f"memories with {name!r} (dim {self.embedder.dim}).",
                stacklevel=4,
            )
        self._reembed_all()
        self._set_meta("embedder", name)
        self._set_meta("dim", str(self.embedder.dim))

    def _reembed_all(self) -> None:
        from tqdm.auto import tqdm

        rows = self._db.query("SELECT id, text FROM memories ORDER BY id")
        with self._db.transaction():
            for start in tqdm(range(0, len(rows), 256), desc="re-embedding", disable=len(rows) < 2048):
                chunk = rows[start : start + 256]
                vecs = self.embedder.embed([r["text"] for r in chunk])
                self._db.executemany(
                    "UPDATE memories SET embedding = ? WHERE id = ?",
                    [(v.astype(np.float32).tobytes(), r["id"]) for v, r in zip(vecs, chunk, strict=True)],
                )
        self._reembedded = True  # every cached vector is stale now
        if self._index_path is not None and self._index_path.exists():
            self._index_path.unlink()

    def _backfill_fts(self) -> None:
        """Index in ``memories_fts`` the memories written before it existed (an older file; a no-op after).

        Another process may add memories (each indexed in its own transaction) while this one opens the file: the
        rows to index are read again under the write lock, or a memory committed between the two reads would be
        indexed twice (FTS5: "constraint failed", and the store would not open)."""
        missing = (
            "SELECT id, user_id, text FROM memories "
            "WHERE id > (SELECT COALESCE(MAX(rowid), 0) FROM memories_fts) ORDER BY id"
        )
        if not self._db.query(f"{missing} LIMIT 1"):  # the usual case: no write lock taken
            return
        try:
            with self._db.transaction():
                rows = self._db.query(missing)
                self._db.executemany(
                    "INSERT INTO memories_fts(rowid, owner, text) VALUES (?, ?, ?)",
                    [(int(r["id"]), owner_token(r["user_id"]), lexical_text(r["text"])) for r in rows],
                )
        except BackendError as exc:  # a read-only file: lexical search sees only what was indexed before
            log.warning("%s: full-text index not back-filled (%s); hybrid search is partly dense-only", self.path, exc)

    # ------------------------------------------------------------------ the vector index (a cache of SQLite)
    def _open_index(self) -> VectorIndex:
        dim = self.embedder.dim
        if self._custom_index is not None:
            if self._custom_index.dim != dim:
                raise InvalidInputError(
                    f"The 'index' parameter of MemoryStore must have the embedder's dimension {dim}. "
                    f"Got an index of dimension {self._custom_index.dim} instead."
                )
            fresh = not self._reembedded and self._consistent(self._custom_index)
            return self._custom_index if fresh else self._rebuild_index()
        if self._index_path is not None and self._index_path.exists():
            try:
                idx = self._load_index_file()
                if idx is not None and idx.dim == dim and self._catch_up(idx):
                    return idx
                log.warning("FAISS index %s is inconsistent with SQLite: rebuilding", self._index_path)
            except Exception as exc:  # a corrupt cache is rebuilt, never fatal
                log.warning("FAISS index %s unreadable (%s): rebuilding", self._index_path, exc)
        return self._rebuild_index()

    def _load_index_file(self) -> VectorIndex | None:
        """The index in ``<path>.faiss``, or None when it is of another format or factory (then rebuilt)."""
        assert self._index_path is not None
        if not self._default_partitioned():
            return FaissIndex.load(self._index_path, factory=self.index_factory)
        if not PartitionedFaissIndex.is_partitioned_file(self._index_path):
            log.warning("FAISS index %s is of the single-index format: rebuilding it per user", self._index_path)
            return None
        idx = PartitionedFaissIndex.load(self._index_path)
        return idx if idx.factory == self.index_factory else None

    def _default_partitioned(self) -> bool:
        """The default index is one FAISS index per user unless the factory needs training (IVF, PQ)."""
        try:
            return FaissIndex(self.embedder.dim, factory=self.index_factory).is_trained
        except InvalidInputError:
            return True  # a bad factory string is reported by PartitionedFaissIndex itself

    def _consistent(self, idx: VectorIndex, *, sample: int = 64) -> bool:
        """Same ids as SQLite, and (when the index can give vectors back) the same vectors on a sample of them:
        a file with the right ids and wrong vectors, or an old index beside a copied database, is rebuilt."""
        rows = self._db.query("SELECT id, user_id FROM memories WHERE embedding IS NOT NULL ORDER BY id")
        db_ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
        if not np.array_equal(np.sort(idx.ids()), db_ids):
            return False
        if isinstance(idx, PartitionedFaissIndex) and any(idx.partition_of(r["id"]) != r["user_id"] for r in rows):
            return False  # every memory must sit in its owner's partition
        return self._sample_matches(idx, db_ids, sample=sample)

    def _sample_matches(self, idx: VectorIndex, ids: NDArray[np.int64], *, sample: int = 64) -> bool:
        """The vectors of ``idx`` equal the stored ones on ``sample`` of ``ids`` (sorted; True when ``idx`` cannot
        give vectors back)."""
        reconstruct = getattr(idx, "reconstruct", None)
        if not callable(reconstruct) or len(ids) == 0:
            return True
        pick = ids[np.linspace(0, len(ids) - 1, num=min(sample, len(ids))).astype(int)]
        stored = self.vectors(pick.tolist())
        got = np.stack([reconstruct(int(i)) for i in pick])
        return bool(np.allclose(got, np.stack([stored[int(i)] for i in pick]), atol=1e-4))

    def _trusted(self, idx: VectorIndex, db_ids: NDArray[np.int64], owners: NDArray[Any],
                 have: NDArray[np.int64]) -> bool:
        """Every id ``idx`` holds (``have``, sorted) is a stored memory (``db_ids``, sorted, with their
        ``owners``), in its owner's partition, and a sample of its vectors equals the stored ones."""
        if not len(have):
            return True
        pos = np.minimum(np.searchsorted(db_ids, have), max(len(db_ids) - 1, 0))
        if not len(db_ids) or not np.array_equal(db_ids[pos], have):
            return False  # a row SQLite does not have: another database's index
        if isinstance(idx, PartitionedFaissIndex) and any(
                not (owners[np.searchsorted(db_ids, idx.ids(key))] == key).all() for key in idx.partitions()):
            return False  # every memory must sit in its owner's partition
        return self._sample_matches(idx, have)

    def _catch_up(self, idx: VectorIndex) -> bool:
        """Bring an index loaded from the file up to SQLite by adding the rows it lacks (those written after its
        last write: a killed process loses only them); ``False`` when it cannot be trusted and must be rebuilt.

        A memory row is never deleted and its vector never changes (re-embedding deletes the file), and ids are
        never reused (AUTOINCREMENT), so the rows it lacks are all that is missing. The ids and owners are read from
        the covering index of ``(user_id, is_active)``, not from the rows (which hold the vectors: at 1M memories
        that pass read 2.3 GB).
        """
        rows = self._db.query("SELECT id, user_id FROM memories")
        db_ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
        owners = np.empty(len(rows), dtype=object)
        owners[:] = [r["user_id"] for r in rows]
        order = np.argsort(db_ids, kind="stable")
        db_ids, owners = db_ids[order], owners[order]
        have = np.sort(idx.ids())
        if not self._trusted(idx, db_ids, owners, have):
            return False
        missing = np.setdiff1d(db_ids, have, assume_unique=True)
        self.index = idx
        added = self._add_stored(missing.tolist()) if len(missing) else 0
        watermark = int(have[-1]) if len(have) else None
        self.index_opened = {"source": "file", "caught_up": added, "watermark": watermark}
        log.info("FAISS index %s loaded (%d vectors up to memory id %s); %d rows written after it added from SQLite",
                 self._index_path, len(have), watermark, added)
        return True

    def _stacked(self, rows: Sequence[sqlite3.Row]) -> NDArray[np.float32]:
        return np.frombuffer(b"".join(r["embedding"] for r in rows), dtype=np.float32).reshape(
            len(rows), self.embedder.dim)

    def _add_stored(self, ids: Sequence[int], *, chunk: int = 10_000) -> int:
        """Add the stored vectors of the memories ``ids`` (those that have one) to the index; how many were added."""
        added = 0
        for start in range(0, len(ids), chunk):
            part = list(ids[start : start + chunk])
            rows = self._db.query(
                f"SELECT id, user_id, embedding FROM memories WHERE embedding IS NOT NULL AND id IN "
                f"({','.join('?' * len(part))}) ORDER BY id", part)
            by_user: dict[str, list[sqlite3.Row]] = {}
            for r in rows:
                by_user.setdefault(r["user_id"], []).append(r)
            for uid, urows in by_user.items():
                ids_ = np.fromiter((r["id"] for r in urows), dtype=np.int64, count=len(urows))
                self._index_add(uid, ids_, self._stacked(urows))
            added += len(rows)
        if added:
            self._changed_index(added)
        return added

    def _sync(self) -> None:
        """Catch up with commits of other connections (another process, another store on the file).

        ``PRAGMA data_version`` changes when another connection commits: then the active-id caches are dropped
        and the vector index gets the vectors it is missing (and loses those of deleted rows) from SQLite.
        """
        if self._db.in_memory:
            return
        version = self._db.data_version()
        if version == self._data_version:
            return
        self._data_version = version
        with self._db.lock:
            self._user_ids_cache.clear()
            self._texts_cache.clear()
        rows = self._db.query("SELECT id, user_id FROM memories WHERE embedding IS NOT NULL")
        owner = {int(r["id"]): r["user_id"] for r in rows}
        have = set(self.index.ids().tolist())
        gone = sorted(have - owner.keys())
        if gone:
            self.index.remove(np.asarray(gone, dtype=np.int64))
        new = sorted(owner.keys() - have)
        by_user: dict[str, list[int]] = {}
        for i in new:
            by_user.setdefault(owner[i], []).append(i)
        for uid, ids in by_user.items():
            vecs = self.vectors(ids)
            self._index_add(uid, np.asarray(ids, dtype=np.int64), np.stack([vecs[i] for i in ids]))
        if gone or new:
            self._changed_index(len(gone) + len(new))
            log.info("store: %d new and %d removed memories written by another connection", len(new), len(gone))

    def _index_add(self, user_id: str, ids: NDArray[np.int64], vecs: NDArray[np.float32]) -> None:
        """Add the vectors of ``user_id``'s memories ``ids`` to the index (into the user's partition if any)."""
        if isinstance(self.index, PartitionedFaissIndex):
            self.index.add(ids, vecs, partition=user_id)
        else:
            self.index.add(ids, vecs)

    def rebuild_index(self) -> None:
        """Rebuild the vector index from the vectors stored in SQLite (no re-embedding).

        The default FAISS index is replaced by a fresh one; an index given as ``index=`` is emptied and refilled.
        """
        self._rebuild_index()

    def _rebuild_index(self) -> VectorIndex:
        idx: Any
        if self._custom_index is not None:
            idx = self._custom_index
            if len(idx):
                idx.remove(idx.ids())
        elif self._default_partitioned():
            idx = PartitionedFaissIndex(self.embedder.dim, factory=self.index_factory)
        else:
            idx = FaissIndex(self.embedder.dim, factory=self.index_factory)
        if isinstance(idx, PartitionedFaissIndex):  # one user at a time: one user's vectors in memory at once
            for u in self._db.query("SELECT DISTINCT user_id FROM memories WHERE embedding IS NOT NULL"):
                urows = self._db.query(
                    "SELECT id, embedding FROM memories WHERE user_id = ? AND embedding IS NOT NULL ORDER BY id",
                    (u["user_id"],))
                ids = np.fromiter((r["id"] for r in urows), dtype=np.int64, count=len(urows))
                idx.add(ids, self._stacked(urows), partition=u["user_id"])
        else:
            rows = self._db.query("SELECT id, embedding FROM memories WHERE embedding IS NOT NULL ORDER BY id")
            if rows:
                vecs = self._stacked(rows)
                if not getattr(idx, "is_trained", True):
                    idx.train(vecs)
                idx.add(np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows)), vecs)
        self.index = idx
        self.index_rebuilds += 1
        self.index_opened = {"source": "custom" if self._custom_index is not None else "rebuilt", "caught_up": 0,
                             "watermark": None}
        self._dirty = True
        self.flush()
        return idx

    def index_health(self) -> dict[str, Any]:
        """The FAISS index for ``/health``: ``ok`` when it has the embedder's dimension, its vectors and dim."""
        dim = int(self.index.dim)
        return {"ok": dim == int(self.embedder.dim), "vectors": len(self.index), "dim": dim}

    # ------------------------------------------------------------------ writes
    @contextmanager
    def write(self) -> Iterator[_SQLiteWrite]:
        """One write transaction; the index and caches follow its commit under the database lock (no other thread
        sees the database and the caches disagree)."""
        with self._db.lock:
            w = _SQLiteWrite(self)
            with self._db.transaction():
                yield w
            self._apply(w.changes)

    def _apply(self, c: _Changes) -> None:
        for user_id, new in c.new.items():
            if new:
                self._index_add(user_id, np.asarray([i for i, _ in new], dtype=np.int64),
                                np.stack([v for _, v in new]).astype(np.float32, copy=False))
                self._changed_index(len(new))
        for user_id in c.users():
            if user_id in c.rekeyed or self._db.in_transaction:
                self._invalidate(user_id)  # inside an outer transaction (which may still roll back): dropped
            else:
                status = c.status.get(user_id, {})
                self._note_change(user_id, new_ids=[i for i, _ in c.new.get(user_id, ())],
                                  activated=[(i, t) for i, t in status.items() if t is not None],
                                  deactivated=[i for i, t in status.items() if t is None])

    def _invalidate(self, user_id: str) -> None:
        with self._db.lock:
            self._user_ids_cache.pop((user_id, True), None)
            self._user_ids_cache.pop((user_id, False), None)
            self._texts_cache.pop(user_id, None)

    def _note_change(self, user_id: str, *, new_ids: Sequence[int] = (),
                     activated: Sequence[tuple[int, str]] = (), deactivated: Sequence[int] = ()) -> None:
        """Bring the caches of ``user_id`` up to date with a committed write: ``new_ids`` are new rows,
        ``activated`` ``(id, text)`` became active, ``deactivated`` ids became inactive (applied before
        ``activated``)."""
        all_ids = self._user_ids_cache.get((user_id, True))
        if all_ids is not None and new_ids:
            self._user_ids_cache[(user_id, True)] = sorted_union(all_ids, new_ids)
        act = self._user_ids_cache.get((user_id, False))
        if act is not None:
            if deactivated:
                act = sorted_minus(act, deactivated)
            if activated:
                act = sorted_union(act, [i for i, _ in activated])
            self._user_ids_cache[(user_id, False)] = act
        texts = self._texts_cache.get(user_id)
        if texts is not None:
            texts.remove(deactivated)
            texts.add(activated)

    # ------------------------------------------------------------------ reads (the rest: memlab.store.sql)
    def _vector(self, value: Any) -> NDArray[np.float32]:
        return np.frombuffer(value, dtype=np.float32)

    def find_containing(self, user_id: str, terms: Sequence[str], *, exclude_id: int, limit: int) -> list[int]:
        """From the cached texts of the user's active memories when they answer as SQL would, else in SQL."""
        if self._texts_usable(terms):
            with self._db.lock:
                return self._active_texts(user_id).containing([t.lower() for t in terms], exclude_id=exclude_id,
                                                              limit=limit)
        return super().find_containing(user_id, terms, exclude_id=exclude_id, limit=limit)

    def _texts_usable(self, terms: Sequence[str]) -> bool:
        """The cached texts answer ``find_containing`` for these terms exactly as SQL does: no ``LIKE`` wildcard
        or empty term, and SQLite's ``lower()`` folds ASCII letters only (no ICU build)."""
        if self._ascii_like is None:
            row = self._db.query_one("SELECT lower('ÀB') AS x")
            self._ascii_like = row is not None and row["x"] == ascii_lower("ÀB")
        return self._ascii_like and all(t and like_free(t.lower()) for t in terms)

    def _active_texts(self, user_id: str) -> ActiveTexts:
        """The cached texts of ``user_id``'s active memories (loaded on first use; at most ``_TEXTS_CACHE_ROWS``
        rows over all users, least recently used users dropped first)."""
        self._sync()
        texts = self._texts_cache.get(user_id)
        if texts is None:
            rows = self._db.query("SELECT id, text FROM memories WHERE user_id = ? AND is_active = 1", (user_id,))
            texts = self._texts_cache[user_id] = ActiveTexts((int(r["id"]), r["text"]) for r in rows)
            total = sum(len(t) for t in self._texts_cache.values())
            while total > _TEXTS_CACHE_ROWS and len(self._texts_cache) > 1:
                _, dropped = self._texts_cache.popitem(last=False)
                total -= len(dropped)
        self._texts_cache.move_to_end(user_id)
        return texts

    # ------------------------------------------------------------------ search
    def _allowed_ids(self, user_id: str, include_inactive: bool) -> NDArray[np.int64]:
        """The ids of ``user_id``'s memories (active only unless ``include_inactive``), sorted, read-only, cached:
        the same array object until the next change, so the FAISS index reuses its id selector."""
        self._sync()
        key = (user_id, include_inactive)
        with self._db.lock:
            ids = self._user_ids_cache.get(key)
            if ids is None:
                active = "" if include_inactive else " AND is_active = 1"
                rows = self._db.query(f"SELECT id FROM memories WHERE user_id = ?{active} ORDER BY id", (user_id,))
                ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
                ids.flags.writeable = False
                self._user_ids_cache[key] = ids
        return ids

    def dense(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
              exclude: Sequence[int]) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the user's ``k`` nearest memories (the vector index only; no rows read)."""
        allowed = self._allowed_ids(user_id, include_inactive)
        drop = np.unique(np.asarray(list(exclude), dtype=np.int64))
        drop = drop[in_sorted(allowed, drop)]  # the excluded ids that are allowed
        n = min(k, len(allowed) - len(drop))
        if n <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        if isinstance(self.index, PartitionedFaissIndex):  # only this user's vectors are scanned
            # the cached ``allowed`` (and the selector the index keeps for it) serve every call; excluded ids
            # are a small selector of their own: the same search as over ``allowed`` minus them
            scores, ids = self.index.search(q, n, allowed=allowed, partition=user_id, exclude=drop)
        elif isinstance(self.index, FaissIndex):
            scores, ids = self.index.search(q, n, allowed=allowed, exclude=drop)
        else:
            scores, ids = self.index.search(q, n, allowed=np.setdiff1d(allowed, drop, assume_unique=True))
        return [(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def dense_items(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
                    exclude: Sequence[int], scan: str | None = None) -> list[tuple[MemoryItem, float]]:
        if scan is not None:
            raise InvalidInputError(f"The 'scan' parameter is PostgreSQL's; the SQLite store's index is "
                                    f"{self.index_factory!r}. Got {scan!r}.")
        hits = self.dense(user_id, query, k, include_inactive=include_inactive, exclude=exclude)
        items = self.items([i for i, _ in hits])
        return [(items[i], s) for i, s in hits]

    def lexical(self, user_id: str, text: str, k: int, *, include_inactive: bool) -> Callable[[], list[int]]:
        """The FTS5 BM25 ranking, run on the backend's worker thread while the caller embeds the query (SQLite and
        torch both release the GIL); inline inside an open transaction, whose lock it would wait on."""
        allowed = self._allowed_ids(user_id, include_inactive)
        n_other = 0 if include_inactive else len(self._allowed_ids(user_id, True)) - len(allowed)
        if self._db.in_transaction:
            ids = self._lexical_ids(user_id, text, k, allowed, n_other)
            return lambda: ids
        return self._executor().submit(self._lexical_ids, user_id, text, k, allowed, n_other).result

    def _executor(self) -> Any:
        if self._worker is None:
            from concurrent.futures import ThreadPoolExecutor

            with self._db.lock:
                if self._worker is None:
                    self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-store")
        return self._worker

    def _lexical_ids(self, user_id: str, text: str, k: int, allowed: NDArray[np.int64], n_other: int) -> list[int]:
        """Ids of the user's memories ranked by FTS5 BM25 against ``text`` (best first, at most ``k``), kept to
        ``allowed`` (sorted ids: the user's active memories, or all of them).

        The full-text rows carry only the owner's token, not the activity flag: the query reads rowids alone (no
        join with ``memories``, which costs a row lookup per match) and asks for ``k`` plus the user's
        ``n_other`` memories outside ``allowed`` (inactive ones), so the ``k`` best allowed ones are among them;
        should fewer come back (rows of another owner with the same token), it asks again for more.
        """
        expr = fts_query(text)
        if expr is None or len(allowed) == 0:
            return []
        match = f'owner : "{owner_token(user_id)}" AND ({expr})'
        limit = int(k) + max(int(n_other), 0)
        while True:
            rows = self._db.query(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT ?",
                (match, limit),
            )
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            kept = ids[in_sorted(allowed, ids)][:k].tolist()
            if len(kept) >= k or len(rows) < limit:
                return kept
            limit *= 2
