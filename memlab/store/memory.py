"""The versioned memory store: SQLite records + a FAISS index that is a rebuildable cache.

Conflict rule for keyed memories: a new item with the same
``(user_id, scope, type, key, project_id)`` as an active item is a conflict. If the confidences differ by
less than 0.1 the newer item wins; otherwise the higher confidence wins. The loser is never deleted: it
stays, inactive, linked by ``supersedes``/``superseded_by``, with ``superseded_at`` set, in a version chain
that :meth:`MemoryStore.history` returns from any member.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import (
    as_vectors,
    check_id,
    check_positive_float,
    check_positive_int,
    check_text,
    check_unit_interval,
    check_unit_vectors,
    check_user_id,
    is_row_id,
)
from memlab.clock import utcnow
from memlab.config import MAX_KEYWORD_CHARS, MAX_KEYWORDS, MAX_SOURCE_CHARS, MAX_TEXT_CHARS
from memlab.errors import BackendError, InvalidInputError, NotFoundError
from memlab.index.faiss_index import FaissIndex
from memlab.index.partitioned import PartitionedFaissIndex
from memlab.index.persist import IndexFlusher
from memlab.prompting import quote_data
from memlab.protocols import Embedder, VectorIndex
from memlab.records import MemoryItem
from memlab.store.caches import ActiveTexts, ascii_lower, in_sorted, like_free, sorted_minus, sorted_union
from memlab.store.db import Database
from memlab.store.lexical import FTS_TOKENIZER, fts_query, fuse_with_cosines, lexical_text, owner_token
from memlab.text import messages

__all__ = ["CONFIDENCE_TIE", "DEFAULT_EMBEDDER", "MemoryEvent", "MemoryStore"]

log = logging.getLogger(__name__)

#: The FAISS file is written in the background after this many changed vectors ...
FLUSH_EVERY = 1000
#: ... or this many seconds after a change (whichever comes first; see :class:`~memlab.index.persist.IndexFlusher`).
FLUSH_SECONDS = 5.0
#: Below this |Δconfidence| the newer keyed item wins; above it, the more confident one.
CONFIDENCE_TIE = 0.1
#: Embedder used when a store is built without one: the multilingual e5 (chosen by ``memlab bench embedders``;
#: the English MiniLM ranks Italian/Chinese memories poorly). Keep in sync with ``Settings.embedder``.
DEFAULT_EMBEDDER = "e5"
#: Most memory texts :meth:`MemoryStore.find_containing` keeps in memory, over all users (least recently used
#: users are dropped first; a dropped user's texts are read again on their next lookup).
_TEXTS_CACHE_ROWS = 200_000
#: Schema version of the memory tables (mirrored in ``PRAGMA user_version``).
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
    CREATE TABLE memory_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id INTEGER NOT NULL,
        chain_id INTEGER,
        user_id TEXT NOT NULL,
        event TEXT NOT NULL,
        actor TEXT NOT NULL,
        at TEXT NOT NULL,
        details TEXT NOT NULL DEFAULT '{}'
    );
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

#: How ``MemoryStore.search`` ranks: ``hybrid`` (dense + BM25, reciprocal rank fusion) or ``dense`` (cosine only).
SEARCH_MODES = ("hybrid", "dense")

_COLUMNS = (
    "id, user_id, text, scope, type, key, value, confidence, project_id, source, keywords, topic, created_at, "
    "valid_from, valid_to, version, chain_id, supersedes, superseded_by, is_active, superseded_at, context, updated_at"
)


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One entry of a memory's audit log (creation, supersession, resolution, reactivation ...).

    Attributes:
        id: event id.
        memory_id: the memory the event is about.
        chain_id: its version chain.
        event: ``created``, ``superseded``, ``lost``, ``deactivated``, ``reactivated``, ``annotated`` ...
        actor: who did it (``system``, ``user``, ``version-rule`` ...).
        at: when (UTC).
        details: free JSON (reason, notification id, choice ...).
    """

    id: int
    memory_id: int
    chain_id: int | None
    event: str
    actor: str
    at: datetime
    details: Mapping[str, Any]


def _utcnow() -> datetime:
    return utcnow()  # the wall clock, or a replayed message's time (memlab.clock)


def _ts(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        raise InvalidInputError(f"Datetimes must be timezone-aware (UTC). Got naive {dt!r}.")
    return dt.astimezone(UTC).isoformat()


def _parse_ts(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


def _norm_opt(value: Any, name: str, owner: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be a str or None. Got {value!r} instead."
        )
    return check_text(value, name=name, owner=owner, max_chars=512)


def validate_memory_spec(
    it: str | Mapping[str, Any], owner: str, max_text_chars: int = MAX_TEXT_CHARS
) -> dict[str, Any]:
    """One item of ``add_many`` checked and normalised (shared by every store backend).

    Raises:
        InvalidInputError: unknown field, bad text, confidence, keywords or validity interval.
    """
    spec: dict[str, Any] = {"text": it} if isinstance(it, str) else dict(it)
    allowed = {
        "text",
        "scope",
        "type",
        "key",
        "value",
        "confidence",
        "project_id",
        "source",
        "valid_from",
        "valid_to",
        "keywords",
        "topic",
        "correction",
    }
    unknown = set(spec) - allowed
    if unknown:
        raise InvalidInputError(
            f"{owner} got unknown fields {sorted(unknown)}; allowed: {sorted(allowed)}."
        )
    spec["text"] = check_text(spec.get("text"), name="text", owner=owner, max_chars=max_text_chars)
    spec["scope"] = check_text(spec.get("scope", "global"), name="scope", owner=owner, max_chars=64)
    spec["type"] = check_text(spec.get("type", "fact"), name="type", owner=owner, max_chars=64)
    spec["key"] = _norm_opt(spec.get("key"), "key", owner)
    spec["value"] = (
        None
        if spec.get("value") is None
        else check_text(str(spec["value"]), name="value", owner=owner, max_chars=max_text_chars)
    )
    spec["project_id"] = _norm_opt(spec.get("project_id"), "project_id", owner)
    for f in ("source", "topic"):
        spec[f] = (
            None
            if spec.get(f) is None
            else check_text(spec[f], name=f, owner=owner, max_chars=MAX_SOURCE_CHARS)
        )
    spec["confidence"] = check_unit_interval(spec.get("confidence", 1.0), name="confidence", owner=owner)
    kws = spec.get("keywords") or ()
    if isinstance(kws, str):
        raise InvalidInputError(
            f"The 'keywords' parameter of {owner} must be a sequence of str, not a str."
        )
    kws = list(kws)
    if len(kws) > MAX_KEYWORDS:
        raise InvalidInputError(
            f"The 'keywords' parameter of {owner} must have at most {MAX_KEYWORDS} items. Got {len(kws)} instead."
        )
    spec["keywords"] = [
        check_text(k, name="keywords", owner=owner, max_chars=MAX_KEYWORD_CHARS) for k in kws
    ]
    spec["correction"] = bool(spec.get("correction", False))
    for f in ("valid_from", "valid_to"):
        v = spec.get(f)
        if v is not None and not isinstance(v, datetime):
            raise InvalidInputError(
                f"The {f!r} parameter of {owner} must be a datetime or None. Got {v!r}."
            )
        spec[f] = _ts(v)
    if spec.get("valid_from") is not None and spec.get("valid_to") is not None:
        if datetime.fromisoformat(spec["valid_from"]) > datetime.fromisoformat(spec["valid_to"]):
            raise InvalidInputError(
                f"The 'valid_from' parameter of {owner} must not be after 'valid_to'. "
                f"Got valid_from={spec['valid_from']} and valid_to={spec['valid_to']}."
            )
    return spec



def version_rule(confidence: float, champion: Mapping[str, Any] | None) -> tuple[bool, int | None]:
    """The version rule between a new keyed memory and its slot's active version (``champion``: a row with ``id``
    and ``confidence``, or None for an empty slot): ``(wins, beaten_by)``. When the confidences differ by less than
    :data:`CONFIDENCE_TIE` the newer wins; otherwise the higher confidence wins (rounding guards 0.9 - 0.8 =
    0.0999..). ``beaten_by`` is the champion's id when the new memory loses. Both stores apply it.

    Example:
        >>> version_rule(0.85, {"id": 3, "confidence": 0.9}), version_rule(0.5, {"id": 3, "confidence": 0.9})
        ((True, None), (False, 3))
    """
    if champion is None:
        return True, None
    delta = confidence - float(champion["confidence"])
    wins = round(abs(delta), 9) < CONFIDENCE_TIE or delta > 0
    return wins, None if wins else int(champion["id"])


def select_context(
    store: Any, owner: str, user_id: str, query: str | None, *, project_id: str | None,
    types: Sequence[str] | None, k: int,
) -> list[MemoryItem]:
    """The memories a prompt context lists (``build_context``/``context_items`` of either store): with ``query``, the
    best of ``store.search`` (3k deep, so filters still leave k), else the newest; project and type filters; active
    only; at most ``k``."""
    user_id = check_user_id(user_id, owner=owner)
    k = check_positive_int(k, name="k", owner=owner)
    if query is not None:
        # the query is a user's message (a turn may be 100,000 characters): its head is searched, never refused
        query = query.strip()[: store.max_text_chars] if isinstance(query, str) else query
        items = [m for m, _ in store.search(user_id, query, k=max(k * 3, k))]
    else:
        items = store.list(user_id)[::-1]
    if project_id is not None:
        items = [m for m in items if m.project_id in (None, project_id)]
    if types is not None:
        items = [m for m in items if m.type in set(types)]
    return [m for m in items if m.is_active][:k]


#: A slot key shown as it is in a prompt (a vocabulary name); any other key is quoted like the memory's text.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def format_context(
    items: Sequence[MemoryItem], *, lang: str = "it", agent_type: str | None = None, awaiting: Collection[int] = ()
) -> str:
    """The prompt block of ``build_context``: a heading and one line per memory (``""`` when there are none)."""
    if not items:
        return ""
    head = messages(lang)["context_head"]
    if agent_type:
        head += f" ({agent_type})"
    lines = [head]
    for m in items:
        slot = "" if not m.key else f"[{m.key}] " if _PLAIN_KEY.fullmatch(m.key) else f"[{quote_data(m.key)}] "
        extra = f" ({quote_data(m.context)})" if m.context else ""
        if m.id in awaiting:
            extra += f" [{messages(lang)['provisional']}]"
        # the texts in the prompt's data form (memlab.prompting), one line each: no memory can open a section
        lines.append(f"- {slot}{quote_data(m.text)}{extra}")
    return "\n".join(lines)


class MemoryStore:
    """Versioned memories of many users in one SQLite file, with a FAISS index beside it.

    Args:
        path: SQLite file, or ``":memory:"`` (nothing touches disk).
        embedder: any :class:`~memlab.protocols.Embedder`; default: the packaged offline one.
        index_factory: inner FAISS index of each user's partition (``"Flat"`` exact by default; see
            ``memlab bench integrity``). A factory that needs training (``"IVF..."``) gets one FAISS index for
            all users instead (searched with the user's ids as a filter: the cost grows with the whole store).
        index: any :class:`~memlab.protocols.VectorIndex` of the embedder's dimension (e.g.
            :class:`~memlab.index.NumpyIndex`, a FAISS index with another factory, a client of a vector server).
            It is treated as a cache of SQLite like the default: filled from the stored vectors at open when
            its ids differ, kept in step on every write, never saved by the store. ``None`` (default): a
            :class:`~memlab.index.PartitionedFaissIndex` (one FAISS index per user, so a user's search costs
            what that user's memories cost) persisted in ``<path>.faiss``. A given
            :class:`~memlab.index.PartitionedFaissIndex` is partitioned by user too.
        clock: returns "now" (tz-aware); injectable for tests.
        max_text_chars: longest accepted text.
        reembed: a file built with another embedder (name or dimension) holding memories is refused
            (``False``, default: :class:`~memlab.errors.InvalidInputError` naming the stored embedder, nothing
            changed); ``True`` re-embeds every memory with ``embedder`` and switches the file to it for good.
        flush_every, flush_seconds: the FAISS file is written by a background thread after ``flush_every``
            changed vectors, or ``flush_seconds`` after a change, whichever comes first (never more often than ten
            times the last write's duration apart). A file-less store (``":memory:"``, ``index=``) has no thread.

    The FAISS file is ``<path>.faiss``. It is a cache: at open it is loaded and compared with SQLite (ids,
    each id's user, a sample of vectors), and rebuilt from the stored vectors when missing, inconsistent or of
    another format (a single-index file of memlab before per-user partitions is rebuilt once). It is written on
    :meth:`close`, :meth:`flush`, and in the background ``flush_every`` changes or ``flush_seconds`` after a change
    (atomically: a temp file, then a rename). A file older than SQLite (the process was killed after its last write)
    is not rebuilt: the rows written after it are added from SQLite at the next open (:attr:`index_opened`).

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
        >>> v1 = store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
        >>> v2 = store.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)
        >>> v2.is_active, store.get(v1.id, user_id="u1").superseded_by == v2.id
        (True, True)
        >>> [m.version for m in store.history(v1.id)]
        [1, 2]
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        embedder: Embedder | None = None,
        *,
        index_factory: str = "Flat",
        index: VectorIndex | None = None,
        clock: Callable[[], datetime] | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
        reembed: bool = False,
        flush_every: int = FLUSH_EVERY,
        flush_seconds: float = FLUSH_SECONDS,
    ) -> None:
        if index is not None and not isinstance(index, VectorIndex):
            raise InvalidInputError(
                f"The 'index' parameter of MemoryStore must be a VectorIndex or None. Got {type(index).__name__} instead."
            )
        flush_every = check_positive_int(flush_every, name="flush_every", owner="MemoryStore")
        flush_seconds = check_positive_float(flush_seconds, name="flush_seconds", owner="MemoryStore")
        if embedder is None:
            from memlab.embedding import load_embedder

            embedder = load_embedder(DEFAULT_EMBEDDER)
        self.embedder = embedder
        self.path = str(path)
        self.index_factory = index_factory
        self.clock = clock or _utcnow
        self.max_text_chars = max_text_chars
        self.db = Database(self.path)
        self.db.migrate("memories", SCHEMA)
        if self.db.user_version() != len(SCHEMA):  # no write when already set (a read-only file still opens)
            self.db.set_user_version(len(SCHEMA))
        self._backfill_fts()
        self._custom_index = index
        self._index_path = None if (self.db.in_memory or index is not None) else Path(self.path + ".faiss")
        #: How the index was opened: ``source`` ``"file"`` (loaded, then ``caught_up`` rows written after the file's
        #: last write added from SQLite), ``"rebuilt"`` (from every stored vector) or ``"custom"``; ``watermark``:
        #: the highest memory id the file held.
        self.index_opened: dict[str, Any] = {"source": "custom" if index is not None else "rebuilt",
                                             "caught_up": 0, "watermark": None}
        #: Full rebuilds of the index done by this store (at open or by :meth:`rebuild_index`).
        self.index_rebuilds = 0
        self._flush_lock = threading.Lock()
        self._flusher = None if self._index_path is None else IndexFlusher(
            self.flush, every=flush_every, seconds=flush_seconds)
        # per user, kept up to date by this store's own writes (see _note_change), all under self.db.lock:
        # (user, include_inactive) -> sorted read-only ids (FaissIndex caches its id selector per such array),
        # user -> ActiveTexts (find_containing), least recently used first
        self._user_ids_cache: dict[tuple[str, bool], NDArray[np.int64]] = {}
        self._texts_cache: OrderedDict[str, ActiveTexts] = OrderedDict()
        self._ascii_like: bool | None = None
        self._worker: Any = None  # a one-thread executor: the full-text query runs there while the query is embedded
        self._dirty = False
        self._reembedded = False
        self.reembed = bool(reembed)
        #: Record each new memory in the check outbox, in its own transaction (set by the background agent).
        self.track_checks = False
        try:
            self._check_embedder()
        except BaseException:
            self.db.close()
            raise
        self.index = self._open_index()
        self._data_version = None if self.db.in_memory else self.db.data_version()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Persist the FAISS index and close the database (idempotent).

        The index is a cache of SQLite: when it cannot be written (read-only folder, full disk) a warning is
        logged, no temporary file is left, and the database is closed anyway (the next open rebuilds the index).
        """
        if self.db.closed:
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
            self.db.close()

    def flush(self) -> None:
        """Write the FAISS index file now, when it has unwritten changes (atomically: a temp file, then a rename).

        Besides :meth:`close`, a background thread calls it ``flush_every`` changes or ``flush_seconds`` after a
        change (see :class:`~memlab.index.persist.IndexFlusher`).

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

    def _changed_index(self, n: int) -> None:
        """``n`` vectors of the index changed: the file is stale until the next (scheduled) write."""
        self._dirty = True
        if self._flusher is not None and n:
            self._flusher.note(n)

    def _meta(self, key: str) -> str | None:
        row = self.db.query_one("SELECT value FROM memlab_meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO memlab_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _check_embedder(self) -> None:
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        stored = self._meta("embedder")
        stored_dim = self._meta("dim")
        if stored is None:
            self._set_meta("embedder", name)
            self._set_meta("dim", str(self.embedder.dim))
            return
        if stored != name or int(stored_dim or 0) != self.embedder.dim:
            n = self.db.query_one("SELECT COUNT(*) AS n FROM memories")
            count = int(n["n"]) if n else 0
            if count and not self.reembed:
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
                    stacklevel=3,
                )
            self._reembed_all()
            self._set_meta("embedder", name)
            self._set_meta("dim", str(self.embedder.dim))

    def _reembed_all(self) -> None:
        from tqdm.auto import tqdm

        rows = self.db.query("SELECT id, text FROM memories ORDER BY id")
        with self.db.transaction():
            for start in tqdm(range(0, len(rows), 256), desc="re-embedding", disable=len(rows) < 2048):
                chunk = rows[start : start + 256]
                vecs = self.embedder.embed([r["text"] for r in chunk])
                self.db.executemany(
                    "UPDATE memories SET embedding = ? WHERE id = ?",
                    [(v.astype(np.float32).tobytes(), r["id"]) for v, r in zip(vecs, chunk, strict=True)],
                )
        self._reembedded = True  # every cached vector is stale now
        if self._index_path is not None and self._index_path.exists():
            self._index_path.unlink()

    def _open_index(self) -> VectorIndex:
        dim = self.embedder.dim
        if self._custom_index is not None:
            if self._custom_index.dim != dim:
                raise InvalidInputError(
                    f"The 'index' parameter of MemoryStore must have the embedder's dimension {dim}. "
                    f"Got an index of dimension {self._custom_index.dim} instead."
                )
            fresh = not self._reembedded and self._consistent(self._custom_index)
            return self._custom_index if fresh else self.rebuild_index()
        if self._index_path is not None and self._index_path.exists():
            try:
                idx: VectorIndex
                if self._default_partitioned():
                    if not PartitionedFaissIndex.is_partitioned_file(self._index_path):
                        log.warning("FAISS index %s is of the single-index format: rebuilding it per user",
                                    self._index_path)
                        return self.rebuild_index()
                    idx = PartitionedFaissIndex.load(self._index_path)
                    same = idx.factory == self.index_factory
                else:
                    idx = FaissIndex.load(self._index_path, factory=self.index_factory)
                    same = True
                if same and idx.dim == dim and self._catch_up(idx):
                    return idx
                log.warning("FAISS index %s is inconsistent with SQLite: rebuilding", self._index_path)
            except Exception as exc:  # a corrupt cache is rebuilt, never fatal
                log.warning("FAISS index %s unreadable (%s): rebuilding", self._index_path, exc)
        return self.rebuild_index()

    def _default_partitioned(self) -> bool:
        """The default index is one FAISS index per user unless the factory needs training (IVF, PQ)."""
        try:
            return FaissIndex(self.embedder.dim, factory=self.index_factory).is_trained
        except InvalidInputError:
            return True  # a bad factory string is reported by PartitionedFaissIndex itself

    def _consistent(self, idx: VectorIndex, *, sample: int = 64) -> bool:
        """Same ids as SQLite, and (when the index can give vectors back) the same vectors on a sample of them:
        a file with the right ids and wrong vectors, or an old index beside a copied database, is rebuilt."""
        rows = self.db.query("SELECT id, user_id FROM memories WHERE embedding IS NOT NULL ORDER BY id")
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
        return bool(np.allclose(got, stored, atol=1e-4))

    def _catch_up(self, idx: VectorIndex) -> bool:
        """Bring an index loaded from the file up to SQLite by adding the rows it lacks (those written after its
        last write: a killed process loses only them); ``False`` when it cannot be trusted and must be rebuilt.

        Trusted: every id it holds is a stored memory (ids are never reused: AUTOINCREMENT), in its owner's
        partition, and a sample of its vectors equals the stored ones. A memory row is never deleted and its
        vector never changes (re-embedding deletes the file), so the rows it lacks are all that is missing. The
        ids and owners are read from the covering index of ``(user_id, is_active)``, not from the rows (which hold
        the vectors: at 1M memories that pass read 2.3 GB).
        """
        rows = self.db.query("SELECT id, user_id FROM memories")
        db_ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
        owners = np.empty(len(rows), dtype=object)
        owners[:] = [r["user_id"] for r in rows]
        order = np.argsort(db_ids, kind="stable")
        db_ids, owners = db_ids[order], owners[order]
        have = np.sort(idx.ids())
        if len(have):
            pos = np.minimum(np.searchsorted(db_ids, have), max(len(db_ids) - 1, 0))
            if not len(db_ids) or not np.array_equal(db_ids[pos], have):
                return False  # a row SQLite does not have: another database's index
            if isinstance(idx, PartitionedFaissIndex) and any(
                    not (owners[np.searchsorted(db_ids, idx.ids(key))] == key).all() for key in idx.partitions()):
                return False  # every memory must sit in its owner's partition
            if not self._sample_matches(idx, have):
                return False
        missing = np.setdiff1d(db_ids, have, assume_unique=True)
        self.index = idx
        added = self._add_stored(missing.tolist()) if len(missing) else 0
        watermark = int(have[-1]) if len(have) else None
        self.index_opened = {"source": "file", "caught_up": added, "watermark": watermark}
        log.info("FAISS index %s loaded (%d vectors up to memory id %s); %d rows written after it added from SQLite",
                 self._index_path, len(have), watermark, added)
        return True

    def _add_stored(self, ids: Sequence[int], *, chunk: int = 10_000) -> int:
        """Add the stored vectors of the memories ``ids`` (those that have one) to the index; how many were added."""
        added = 0
        for start in range(0, len(ids), chunk):
            part = list(ids[start : start + chunk])
            rows = self.db.query(
                f"SELECT id, user_id, embedding FROM memories WHERE embedding IS NOT NULL AND id IN "
                f"({','.join('?' * len(part))}) ORDER BY id", part)
            by_user: dict[str, list[sqlite3.Row]] = {}
            for r in rows:
                by_user.setdefault(r["user_id"], []).append(r)
            for uid, urows in by_user.items():
                vecs = np.frombuffer(b"".join(r["embedding"] for r in urows), dtype=np.float32).reshape(
                    len(urows), self.embedder.dim)
                self._index_add(uid, np.fromiter((r["id"] for r in urows), dtype=np.int64, count=len(urows)), vecs)
            added += len(rows)
        if added:
            self._changed_index(added)
        return added

    def _sync(self) -> None:
        """Catch up with commits of other connections (another process, another ``MemoryStore`` on the file).

        ``PRAGMA data_version`` changes when another connection commits: then the active-id caches are dropped
        and the vector index gets the vectors it is missing (and loses those of deleted rows) from SQLite.
        """
        if self.db.in_memory:
            return
        version = self.db.data_version()
        if version == self._data_version:
            return
        self._data_version = version
        with self.db.lock:
            self._user_ids_cache.clear()
            self._texts_cache.clear()
        rows = self.db.query("SELECT id, user_id FROM memories WHERE embedding IS NOT NULL")
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
            self._index_add(uid, np.asarray(ids, dtype=np.int64), self.vectors(ids))
        if gone or new:
            self._changed_index(len(gone) + len(new))
            log.info("store: %d new and %d removed memories written by another connection", len(new), len(gone))

    def _index_add(self, user_id: str, ids: NDArray[np.int64], vecs: NDArray[np.float32]) -> None:
        """Add the vectors of ``user_id``'s memories ``ids`` to the index (into the user's partition if any)."""
        if isinstance(self.index, PartitionedFaissIndex):
            self.index.add(ids, vecs, partition=user_id)
        else:
            self.index.add(ids, vecs)

    def rebuild_index(self) -> VectorIndex:
        """Rebuild the vector index from the vectors stored in SQLite (no re-embedding).

        The default FAISS index is replaced by a fresh one; an index given as ``index=`` is emptied and refilled.
        """
        dim = self.embedder.dim
        idx: Any
        if self._custom_index is not None:
            idx = self._custom_index
            if len(idx):
                idx.remove(idx.ids())
        elif self._default_partitioned():
            idx = PartitionedFaissIndex(dim, factory=self.index_factory)
        else:
            idx = FaissIndex(dim, factory=self.index_factory)
        if isinstance(idx, PartitionedFaissIndex):  # one user at a time: one user's vectors in memory at once
            users = self.db.query("SELECT DISTINCT user_id FROM memories WHERE embedding IS NOT NULL")
            for u in users:
                urows = self.db.query(
                    "SELECT id, embedding FROM memories WHERE user_id = ? AND embedding IS NOT NULL ORDER BY id",
                    (u["user_id"],),
                )
                ids = np.fromiter((r["id"] for r in urows), dtype=np.int64, count=len(urows))
                vecs = np.frombuffer(b"".join(r["embedding"] for r in urows), dtype=np.float32).reshape(
                    len(urows), dim
                )
                idx.add(ids, vecs, partition=u["user_id"])
            rows = []
        else:
            rows = self.db.query("SELECT id, embedding FROM memories WHERE embedding IS NOT NULL ORDER BY id")
        if rows:
            ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype=np.float32).reshape(
                len(rows), dim
            )
            if not getattr(idx, "is_trained", True):
                idx.train(vecs)
            idx.add(ids, vecs)
        self.index = idx
        self.index_rebuilds += 1
        self.index_opened = {"source": "custom" if self._custom_index is not None else "rebuilt", "caught_up": 0,
                             "watermark": None}
        self._dirty = True
        self.flush()
        return idx

    # ------------------------------------------------------------------ rows -> records
    @staticmethod
    def _row_to_item(row: sqlite3.Row) -> MemoryItem:
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
            keywords=tuple(json.loads(row["keywords"] or "[]")),
            topic=row["topic"],
            created_at=_parse_ts(row["created_at"]),
            valid_from=_parse_ts(row["valid_from"]),
            valid_to=_parse_ts(row["valid_to"]),
            version=int(row["version"]),
            chain_id=row["chain_id"],
            supersedes=row["supersedes"],
            superseded_by=row["superseded_by"],
            is_active=bool(row["is_active"]),
            superseded_at=_parse_ts(row["superseded_at"]),
            context=row["context"],
            updated_at=_parse_ts(row["updated_at"]),
        )

    def _event(
        self, item_id: int, chain_id: int | None, user_id: str, event: str, actor: str, **details: Any
    ) -> None:
        self.db.execute(
            "INSERT INTO memory_events(memory_id, chain_id, user_id, event, actor, at, details) VALUES (?,?,?,?,?,?,?)",
            (item_id, chain_id, user_id, event, actor, _ts(self.clock()), json.dumps(details, default=str)),
        )

    def _invalidate(self, user_id: str) -> None:
        with self.db.lock:
            self._user_ids_cache.pop((user_id, True), None)
            self._user_ids_cache.pop((user_id, False), None)
            self._texts_cache.pop(user_id, None)

    def _note_change(self, user_id: str, *, new_ids: Sequence[int] = (),
                     activated: Sequence[tuple[int, str]] = (), deactivated: Sequence[int] = ()) -> None:
        """Bring the caches of ``user_id`` up to date with a committed write (call holding ``self.db.lock``, so
        no other thread sees the database and the caches disagree): ``new_ids`` are new rows, ``activated``
        ``(id, text)`` became active, ``deactivated`` ids became inactive (applied before ``activated``).
        Inside an outer transaction (which may still roll back) the user's caches are dropped instead."""
        if self.db.in_transaction:
            self._invalidate(user_id)
            return
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
        """Store one memory, applying the version rule when ``key`` is set.

        Args:
            user_id: owner.
            text: plain text (non-empty, no control characters, at most ``max_text_chars``).
            scope, type, key, value, project_id: the slot; items conflict when all five match and key is set.
            confidence: in [0, 1].
            source: provenance (chat/turn ids), at most ``MAX_SOURCE_CHARS`` (512) characters.
            valid_from, valid_to: when the fact is true in the world (tz-aware; ``valid_from <= valid_to``).
            keywords, topic: extraction metadata: at most ``MAX_KEYWORDS`` (32) keywords of at most
                ``MAX_KEYWORD_CHARS`` (64) characters each; a topic of at most 512 characters
                (limits in :mod:`memlab.config`).
            embedding: a precomputed vector (skips the embedder): finite, of the embedder's dimension and of unit
                norm (within ``memlab._validation.UNIT_NORM_TOLERANCE``), like the embedder's own vectors.

        Returns:
            The stored item. ``is_active`` says whether it won; ``supersedes`` names the item it replaced. When the
            existing value wins (the seed's "Returns id1 (existing memory retained)"), the new item is stored
            inactive and its ``retained_id`` (also ``lost_to``) is id1; the store logs it (INFO).

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
        """Store many memories of one user in one transaction, embedding them in batches.

        ``items`` are texts or mappings with :meth:`add`'s keyword arguments. Items are applied in order,
        so the version rule sees earlier items of the same call. Everything is validated before anything
        is written: one bad item rejects the whole call and the store is unchanged. ``embeddings`` (optional,
        one row per item) must be finite unit-norm vectors of the embedder's dimension (see :meth:`add`).
        """
        owner = "MemoryStore.add"
        user_id = check_user_id(user_id, owner=owner)
        if isinstance(items, str | bytes | Mapping):
            # iterating would store one memory per character (or per field name)
            raise InvalidInputError(
                f"The 'items' parameter of MemoryStore.add_many must be a list of texts or mappings. "
                f"Got a single {type(items).__name__} instead; use MemoryStore.add for one memory."
            )
        specs = [self._validate_spec(it, owner) for it in items]
        if not specs:
            return []
        if embeddings is None:
            from tqdm.auto import tqdm

            vec_chunks = []
            for start in tqdm(range(0, len(specs), 512), desc="embedding", disable=not progress):
                vec_chunks.append(self.embedder.embed([s["text"] for s in specs[start : start + 512]]))
            vecs = np.concatenate(vec_chunks)
        else:
            vecs = as_vectors(embeddings, self.embedder.dim, name="embedding", owner=owner)
            if len(vecs) != len(specs):
                raise InvalidInputError(f"{owner} got {len(vecs)} embeddings for {len(specs)} items.")
            vecs = check_unit_vectors(vecs, normalize=False, name="embedding", owner=owner)
        out: list[MemoryItem] = []
        stepped_down: list[int] = []
        with self.db.lock:
            with self.db.transaction():
                for spec, vec in zip(specs, vecs, strict=True):
                    out.append(self._insert(user_id, spec, vec, stepped_down))
            self._index_add(user_id, np.asarray([m.id for m in out], dtype=np.int64), vecs)
            self._changed_index(len(out))
            gone = set(stepped_down)
            self._note_change(user_id, new_ids=[m.id for m in out], deactivated=stepped_down,
                              activated=[(m.id, m.text) for m in out if m.is_active and m.id not in gone])
        # the returned items reflect the final state (a later item of the same call may supersede an earlier one)
        return [self.get(m.id, user_id=user_id) for m in out] if len(out) > 1 else out

    def _validate_spec(self, it: str | Mapping[str, Any], owner: str) -> dict[str, Any]:
        return validate_memory_spec(it, owner, self.max_text_chars)

    def _slot_state(self, user_id: str, spec: dict[str, Any]) -> tuple[list[sqlite3.Row], int | None, int]:
        """The slot's active versions, its chain id and the next version number (unkeyed: none, None, 1)."""
        if spec["key"] is None:
            return [], None, 1
        slot = (user_id, spec["key"], spec["scope"], spec["type"], spec["project_id"])
        slot_sql = "user_id = ? AND key = ? AND scope = ? AND type = ? AND project_id IS ?"
        incumbents = self.db.query(
            f"SELECT id, confidence, chain_id FROM memories WHERE {slot_sql} AND is_active = 1 ORDER BY id", slot
        )
        latest = self.db.query_one(f"SELECT chain_id FROM memories WHERE {slot_sql} ORDER BY id DESC LIMIT 1", slot)
        if latest is None:
            return incumbents, None, 1
        row = self.db.query_one("SELECT MAX(version) AS v FROM memories WHERE chain_id = ?", (latest["chain_id"],))
        return incumbents, latest["chain_id"], (int(row["v"]) + 1 if row and row["v"] is not None else 1)

    def _insert(self, user_id: str, spec: dict[str, Any], vec: NDArray[np.float32],
                stepped_down: list[int] | None = None) -> MemoryItem:
        """Insert one memory (inside the caller's transaction); the ids of the versions it supersedes are appended
        to ``stepped_down``."""
        now = _ts(self.clock())
        incumbents, chain_id, version = self._slot_state(user_id, spec)
        wins, beaten_by = version_rule(spec["confidence"], incumbents[-1] if incumbents else None)
        if incumbents and wins:  # the slot's active version steps down first: one active per slot (unique index)
            self.db.executemany(
                "UPDATE memories SET is_active = 0, superseded_at = ?, updated_at = ? WHERE id = ?",
                [(now, now, int(inc["id"])) for inc in incumbents],
            )
            if stepped_down is not None:
                stepped_down.extend(int(inc["id"]) for inc in incumbents)
        cur = self.db.execute(
            "INSERT INTO memories(user_id, text, scope, type, key, value, confidence, project_id, source, keywords, "
            "topic, created_at, valid_from, valid_to, version, chain_id, supersedes, superseded_by, is_active, "
            "superseded_at, embedding, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
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
                spec["valid_from"],
                spec["valid_to"],
                version,
                chain_id,
                int(incumbents[-1]["id"]) if (incumbents and wins) else None,
                beaten_by,
                0 if not wins else 1,
                None if wins else now,
                np.asarray(vec, dtype=np.float32).tobytes(),
                now,
            ),
        )
        new_id = int(cur.lastrowid or 0)
        self.db.execute(
            "INSERT INTO memories_fts(rowid, owner, text) VALUES (?, ?, ?)",
            (new_id, owner_token(user_id), lexical_text(spec["text"])),
        )
        if chain_id is None:
            chain_id = new_id
            self.db.execute("UPDATE memories SET chain_id = ? WHERE id = ?", (chain_id, new_id))
        self._event(new_id, chain_id, user_id, "created", "system", version=version)
        if spec.get("correction"):  # the user said so explicitly ("anzi", "actually", "其实"): an update, not a doubt
            self._event(new_id, chain_id, user_id, "stated_as_correction", "user")
        if self.track_checks:
            self.db.execute(
                "INSERT OR IGNORE INTO memory_outbox(memory_id, user_id, created_at) VALUES (?, ?, ?)",
                (new_id, user_id, now),
            )
        if incumbents and wins:
            for inc in incumbents:
                self.db.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (new_id, int(inc["id"])))
                self._event(int(inc["id"]), chain_id, user_id, "superseded", "version-rule", by=new_id)
        elif beaten_by is not None:
            self._event(new_id, chain_id, user_id, "lost", "version-rule", to=beaten_by)
            log.info("memory %d of %s: existing memory %d retained (higher confidence); the new one is inactive",
                     new_id, user_id, beaten_by)
        row = self.db.query_one(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (new_id,))
        assert row is not None
        return self._row_to_item(row)

    def _set_active(
        self, id_: int, active: bool, *, event: str, actor: str, user_id: str | None, **details: Any
    ) -> MemoryItem:
        item = self._get(id_, user_id=user_id)
        with self.db.lock:  # the caches follow the commit before any other thread reads
            with self.db.transaction():
                if active and not item.is_active:
                    holder = self.active_in_slot(item)
                    if holder is not None:
                        raise InvalidInputError(
                            f"Memory {item.id} cannot become active: version {holder.id} is active in its slot "
                            f"({item.key!r}); deactivate that one first."
                        )
                now = _ts(self.clock())
                if active:
                    self.db.execute(
                        "UPDATE memories SET is_active = 1, superseded_at = NULL, updated_at = ? WHERE id = ?",
                        (now, item.id),
                    )
                else:
                    self.db.execute(
                        "UPDATE memories SET is_active = 0, superseded_at = COALESCE(superseded_at, ?), updated_at = ? "
                        "WHERE id = ?",
                        (now, now, item.id),
                    )
                self._event(item.id, item.chain_id, item.user_id, event, actor, **details)
            if active:
                self._note_change(item.user_id, activated=[(item.id, item.text)])
            else:
                self._note_change(item.user_id, deactivated=[item.id])
        return self.get(item.id, user_id=item.user_id)

    def deactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Mark a memory of ``user_id`` inactive (kept, never deleted); the reason goes to its event log.

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s (the owner is required).
        """
        user_id = check_user_id(user_id, owner="MemoryStore.deactivate")
        return self._set_active(
            id, False, event="deactivated", actor=actor, user_id=user_id, reason=reason, **details
        )

    def reactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Make an inactive memory of ``user_id`` active again (e.g. the user chose the older value).

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s (the owner is required).
        """
        user_id = check_user_id(user_id, owner="MemoryStore.reactivate")
        return self._set_active(
            id, True, event="reactivated", actor=actor, user_id=user_id, reason=reason, **details
        )

    def annotate(
        self, id: int, context: str, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Attach user-provided context to a memory (e.g. "both are true: one is my mother's birthday")."""
        item = self._get(id, user_id=user_id)
        context = check_text(
            context, name="context", owner="MemoryStore.annotate", max_chars=self.max_text_chars
        )
        with self.db.transaction():
            self.db.execute("UPDATE memories SET context = ?, updated_at = ? WHERE id = ?",
                            (context, _ts(self.clock()), item.id))
            self._event(item.id, item.chain_id, item.user_id, "annotated", actor, context=context, **details)
        return self.get(item.id, user_id=item.user_id)

    def set_key(
        self, id: int, key: str | None, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Move a memory into another keyed slot, or out of any (``key=None``: a free fact); logged as an event.

        Used when the user says two versions of one slot are both true: the newer leaves the slot and both stay
        active.

        Raises:
            NotFoundError: unknown id (or not ``user_id``'s).
            InvalidInputError: the memory is active and the target slot already has an active version.
        """
        item = self._get(id, user_id=user_id)
        if key is not None:
            key = check_text(key, name="key", owner="MemoryStore.set_key", max_chars=512)
        with self.db.transaction():
            if item.is_active and key is not None:
                holder = self.active_in_slot(replace(item, key=key))
                if holder is not None:
                    raise InvalidInputError(
                        f"Memory {item.id} cannot move into slot {key!r}: version {holder.id} is active there."
                    )
            self.db.execute("UPDATE memories SET key = ?, updated_at = ? WHERE id = ?", (key, _ts(self.clock()), item.id))
            self._event(item.id, item.chain_id, item.user_id, "key_changed", actor, old=item.key, new=key, **details)
        self._invalidate(item.user_id)
        return self.get(item.id, user_id=item.user_id)

    def clear_context(
        self, id: int, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Remove the user-provided context of a memory (e.g. when a resolution is undone); logged as an event."""
        item = self._get(id, user_id=user_id)
        with self.db.transaction():
            self.db.execute("UPDATE memories SET context = NULL, updated_at = ? WHERE id = ?",
                            (_ts(self.clock()), item.id))
            self._event(
                item.id,
                item.chain_id,
                item.user_id,
                "context_cleared",
                actor,
                previous=item.context,
                **details,
            )
        return self.get(item.id, user_id=item.user_id)

    def record_event(
        self, id: int, event: str, *, actor: str, user_id: str | None = None, **details: Any
    ) -> None:
        """Append an event to a memory's log (used by services, e.g. a contradiction resolution)."""
        item = self._get(id, user_id=user_id)
        with self.db.transaction():
            self._event(item.id, item.chain_id, item.user_id, event, actor, **details)

    # ------------------------------------------------------------------ reads
    def get(self, id: int, *, user_id: str) -> MemoryItem:
        """The memory with this id (active or not) of ``user_id``.

        Args:
            id: memory id.
            user_id: the owner (required): an id owned by another user raises :class:`NotFoundError`, exactly
                like an unknown one. Code that already knows the owner (the agent, the checker) passes it.

        Raises:
            NotFoundError: unknown id, or another user's.
            InvalidInputError: bad ``user_id``.
        """
        return self._get(id, user_id=check_user_id(user_id, owner="MemoryStore.get"))

    def _get(self, id: int, *, user_id: str | None) -> MemoryItem:
        id = check_id(id, kind="memory")
        row = self.db.query_one(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (id,))
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
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(ids))})", [int(i) for i in ids]
        )
        by_id = {int(r["id"]): r for r in rows}
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return [self._row_to_item(by_id[int(i)]) for i in ids]

    def history(self, id: int, *, user_id: str | None = None) -> list[MemoryItem]:
        """The whole version chain of ``id`` (from any member), oldest first."""
        item = self._get(id, user_id=user_id)
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM memories WHERE chain_id = ? ORDER BY version, id", (item.chain_id,)
        )
        return [self._row_to_item(r) for r in rows]

    def events(self, id: int, *, user_id: str | None = None, chain: bool = True) -> list[MemoryEvent]:
        """The audit log of a memory (``chain=True``: of its whole version chain), oldest first."""
        item = self._get(id, user_id=user_id)
        if chain:
            rows = self.db.query(
                "SELECT * FROM memory_events WHERE chain_id = ? OR memory_id = ? ORDER BY id",
                (item.chain_id, item.id),
            )
        else:
            rows = self.db.query("SELECT * FROM memory_events WHERE memory_id = ? ORDER BY id", (item.id,))
        return [
            MemoryEvent(
                id=r["id"],
                memory_id=r["memory_id"],
                chain_id=r["chain_id"],
                event=r["event"],
                actor=r["actor"],
                at=datetime.fromisoformat(r["at"]),
                details=json.loads(r["details"]),
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
        user_id = check_user_id(user_id, owner="MemoryStore.list")
        where, params = ["user_id = ?"], [user_id]
        for col, val in (("scope", scope), ("type", type), ("key", key), ("project_id", project_id)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if not include_inactive:
            where.append("is_active = 1")
        sql = f"SELECT {_COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {check_positive_int(limit, name='limit', owner='MemoryStore.list')}"
        return [self._row_to_item(r) for r in self.db.query(sql, params)]

    def iter_all(
        self, user_id: str, *, include_inactive: bool = False, batch: int = 1000
    ) -> Iterator[MemoryItem]:
        """Stream a user's memories in id order without loading them all."""
        last = 0
        active = "" if include_inactive else " AND is_active = 1"
        while True:
            rows = self.db.query(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND id > ?{active} ORDER BY id LIMIT ?",
                (user_id, last, batch),
            )
            if not rows:
                return
            for r in rows:
                yield self._row_to_item(r)
            last = int(rows[-1]["id"])

    def count(self, user_id: str | None = None, *, include_inactive: bool = False) -> int:
        """Number of memories (of one user, or of all users)."""
        where, params = [], []
        if user_id is not None:
            where.append("user_id = ?")
            params.append(user_id)
        if not include_inactive:
            where.append("is_active = 1")
        sql = "SELECT COUNT(*) AS n FROM memories" + (f" WHERE {' AND '.join(where)}" if where else "")
        row = self.db.query_one(sql, params)
        return int(row["n"]) if row else 0

    def active_ids(self, user_id: str, ids: Sequence[int]) -> set[int]:
        """Which of ``ids`` are active memories of ``user_id`` (others' ids and unknown ids are left out).

        Example:
            >>> from memlab.testing import FakeEmbedder
            >>> st = MemoryStore(":memory:", embedder=FakeEmbedder())
            >>> a = st.add("u1", "Abito a Roma", key="city"); b = st.add("u1", "Abito a Milano", key="city")
            >>> st.active_ids("u1", [a.id, b.id, 99]) == {b.id}, st.active_ids("u2", [b.id])
            (True, set())
        """
        ids = [int(i) for i in ids if is_row_id(i)]  # an id no row can have is simply not active
        if not ids:
            return set()
        rows = self.db.query(
            f"SELECT id FROM memories WHERE is_active = 1 AND user_id = ? AND id IN ({','.join('?' * len(ids))})",
            [user_id, *(int(i) for i in ids)],
        )
        return {int(r["id"]) for r in rows}

    def is_correction(self, id: int, *, user_id: str | None = None) -> bool:
        """Whether the memory was stored from an explicit correction ("Anzi, chiamami Li Si", "actually ...").

        Raises:
            NotFoundError: unknown id (or not ``user_id``'s).
        """
        return any(e.event == "stated_as_correction" for e in self.events(id, user_id=user_id, chain=False))

    def active_in_slot(self, item: MemoryItem) -> MemoryItem | None:
        """The active memory of ``item``'s keyed slot other than ``item`` itself (``None`` for unkeyed items).

        Example:
            >>> from memlab.testing import FakeEmbedder
            >>> st = MemoryStore(":memory:", embedder=FakeEmbedder())
            >>> a = st.add("u1", "Abito a Roma", key="city"); b = st.add("u1", "Abito a Milano", key="city")
            >>> st.active_in_slot(st.get(a.id, user_id="u1")).id == b.id, st.active_in_slot(st.get(b.id, user_id="u1"))
            (True, None)
        """
        if item.key is None:
            return None
        row = self.db.query_one(
            f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND key = ? AND scope = ? AND type = ? "
            "AND COALESCE(project_id, '') = COALESCE(?, '') AND is_active = 1 AND id != ?",
            (item.user_id, item.key, item.scope, item.type, item.project_id, item.id),
        )
        return None if row is None else self._row_to_item(row)

    def unchecked(self, limit: int = 1000) -> list[tuple[int, str]]:
        """``(memory_id, user_id)`` of memories in the check outbox: stored while :attr:`track_checks` was on and
        not yet handed to the checker (:meth:`mark_checked_queued`), oldest first."""
        rows = self.db.query(
            "SELECT memory_id, user_id FROM memory_outbox ORDER BY memory_id LIMIT ?", (int(limit),)
        )
        return [(int(r["memory_id"]), str(r["user_id"])) for r in rows]

    def mark_checked_queued(self, memory_ids: Sequence[int]) -> None:
        """Remove memories from the check outbox (call in the transaction that queues their checks)."""
        self.db.executemany("DELETE FROM memory_outbox WHERE memory_id = ?", [(int(i),) for i in memory_ids])

    def find_containing(
        self, user_id: str, terms: Sequence[str], *, exclude_id: int | None = None, limit: int = 20
    ) -> list[MemoryItem]:
        """Active memories of ``user_id`` whose lower-cased text contains any of ``terms``, newest first.

        A lexical lookup that needs no vectors (the integrity checker uses it to find memories about the same
        attribute that the embedding search would miss).

        Example:
            >>> from memlab.testing import FakeEmbedder
            >>> st = MemoryStore(":memory:", embedder=FakeEmbedder())
            >>> _ = st.add("u1", "Sono nato a Torino"); _ = st.add("u1", "Mi piace il tè")
            >>> [m.text for m in st.find_containing("u1", ["nato", "nata"])]
            ['Sono nato a Torino']
        """
        if not terms:
            return []
        if self._texts_usable(terms):
            with self.db.lock:
                texts = self._active_texts(user_id)
                ids = texts.containing([t.lower() for t in terms],
                                       exclude_id=int(exclude_id) if is_row_id(exclude_id) else None, limit=int(limit))
            return self.get_many(ids)
        where = " OR ".join("lower(text) LIKE ?" for _ in terms)
        rows = self.db.query(
            f"SELECT id FROM memories WHERE user_id = ? AND is_active = 1 AND id != ? AND ({where}) "
            f"ORDER BY id DESC LIMIT ?",
            (user_id, int(exclude_id) if is_row_id(exclude_id) else -1, *[f"%{t.lower()}%" for t in terms], int(limit)),
        )
        return self.get_many([int(r["id"]) for r in rows])

    def _texts_usable(self, terms: Sequence[str]) -> bool:
        """The cached texts answer ``find_containing`` for these terms exactly as SQL does: no ``LIKE`` wildcard
        or empty term, and SQLite's ``lower()`` folds ASCII letters only (no ICU build)."""
        if self._ascii_like is None:
            row = self.db.query_one("SELECT lower('ÀB') AS x")
            self._ascii_like = row is not None and row["x"] == ascii_lower("ÀB")
        return self._ascii_like and all(t and like_free(t.lower()) for t in terms)

    def _active_texts(self, user_id: str) -> ActiveTexts:
        """The cached texts of ``user_id``'s active memories (loaded on first use; at most
        ``_TEXTS_CACHE_ROWS`` rows over all users, least recently used users dropped first)."""
        self._sync()
        texts = self._texts_cache.get(user_id)
        if texts is None:
            rows = self.db.query("SELECT id, text FROM memories WHERE user_id = ? AND is_active = 1", (user_id,))
            texts = self._texts_cache[user_id] = ActiveTexts((int(r["id"]), r["text"]) for r in rows)
            total = sum(len(t) for t in self._texts_cache.values())
            while total > _TEXTS_CACHE_ROWS and len(self._texts_cache) > 1:
                _, dropped = self._texts_cache.popitem(last=False)
                total -= len(dropped)
        self._texts_cache.move_to_end(user_id)
        return texts

    def probe(self) -> int:
        """Count all memories through a fresh read-only connection (``:memory:``: the store's own).

        A health check: a file that went missing or became unreadable fails here even while this store's
        connection still has pages cached.

        Raises:
            sqlite3.Error: the file cannot be read.
        """
        if self.db.in_memory:
            return self.count(include_inactive=True)
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0)
        try:
            return int(con.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        finally:
            con.close()

    def users(self) -> list[str]:
        """All user ids with at least one memory."""
        return [r["user_id"] for r in self.db.query("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]

    def vectors(self, ids: Sequence[int]) -> NDArray[np.float32]:
        """Stored embeddings of ``ids`` (float32, ``(len(ids), dim)``), in order."""
        if not ids:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        bad = [i for i in ids if not is_row_id(i)]
        if bad:
            raise NotFoundError(f"No memories with ids {bad}.")
        rows = self.db.query(
            f"SELECT id, embedding FROM memories WHERE id IN ({','.join('?' * len(ids))})",
            [int(i) for i in ids],
        )
        by_id = {int(r["id"]): r["embedding"] for r in rows}
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return np.stack([np.frombuffer(by_id[int(i)], dtype=np.float32) for i in ids])

    def _allowed_ids(self, user_id: str, include_inactive: bool) -> NDArray[np.int64]:
        """The ids of ``user_id``'s memories (active only unless ``include_inactive``), sorted, read-only, cached:
        the same array object until the next change, so the FAISS index reuses its id selector."""
        self._sync()
        key = (user_id, include_inactive)
        with self.db.lock:
            ids = self._user_ids_cache.get(key)
            if ids is None:
                active = "" if include_inactive else " AND is_active = 1"
                rows = self.db.query(f"SELECT id FROM memories WHERE user_id = ?{active} ORDER BY id", (user_id,))
                ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
                ids.flags.writeable = False
                self._user_ids_cache[key] = ids
        return ids

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
        """The ``k`` memories of ``user_id`` that best match ``text``, best first.

        Args:
            mode: ``hybrid`` (default): dense (cosine) and lexical (SQLite FTS5 BM25) rankings of the user's
                memories fused by reciprocal rank (:mod:`memlab.store.lexical`), so a rare exact word ("Tokyo",
                a name, a date) finds its memory even when the sentence embedding does not; ``dense``: cosine
                only (what :meth:`search_by_vector` does; the pure path kept for comparison).
            min_score: drop hits whose cosine to ``text`` is below this.

        Returns:
            ``(memory, cosine)`` pairs in the chosen ranking's order (in ``hybrid`` mode a lexical hit can come
            before a memory with a higher cosine).

        Raises:
            InvalidInputError: empty/bad text, k < 1, or an unknown mode.
        """
        user_id = check_user_id(user_id, owner="MemoryStore.search")
        text = check_text(text, name="text", owner="MemoryStore.search", max_chars=self.max_text_chars)
        k = check_positive_int(k, name="k", owner="MemoryStore.search")
        if mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"The 'mode' parameter of MemoryStore.search must be one of {SEARCH_MODES}. Got {mode!r} instead."
            )
        if mode == "dense":
            vec = self.embedder.embed([text], mode="query")[0]
            return self.search_by_vector(user_id, vec, k, include_inactive=include_inactive, min_score=min_score)
        depth = max(4 * k, 40)
        # the full-text query needs no vector: it runs on the store's worker thread while the query is embedded
        # (SQLite and torch both release the GIL); inline inside an open transaction, whose lock it would wait on
        allowed = self._allowed_ids(user_id, include_inactive)
        n_other = 0 if include_inactive else len(self._allowed_ids(user_id, True)) - len(allowed)
        if self.db.in_transaction:
            lexical_job = None
            lexical = self._lexical_ids(user_id, text, depth, allowed, n_other)
        else:
            lexical_job = self._executor().submit(self._lexical_ids, user_id, text, depth, allowed, n_other)
        try:
            vec = self.embedder.embed([text], mode="query")[0]
            dense = self._dense_hits(user_id, vec, depth, allowed=allowed)
        finally:
            if lexical_job is not None:
                lexical = lexical_job.result()
        hits = fuse_with_cosines(dense, lexical, vec, self.vectors, k=k, min_score=min_score)
        items = self.get_many([i for i, _ in hits])
        return [(m, c) for m, (_, c) in zip(items, hits, strict=True)]

    def _executor(self) -> Any:
        if self._worker is None:
            from concurrent.futures import ThreadPoolExecutor

            with self.db.lock:
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
            rows = self.db.query(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT ?",
                (match, limit),
            )
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            kept = ids[in_sorted(allowed, ids)][:k].tolist()
            if len(kept) >= k or len(rows) < limit:
                return kept
            limit *= 2

    def _backfill_fts(self) -> None:
        """Index in ``memories_fts`` the memories written before it existed (an older file; a no-op after)."""
        row = self.db.query_one("SELECT COALESCE(MAX(rowid), 0) AS n FROM memories_fts")
        last = int(row["n"]) if row else 0
        rows = self.db.query("SELECT id, user_id, text FROM memories WHERE id > ? ORDER BY id", (last,))
        if not rows:
            return
        try:
            with self.db.transaction():
                self.db.executemany(
                    "INSERT INTO memories_fts(rowid, owner, text) VALUES (?, ?, ?)",
                    [(int(r["id"]), owner_token(r["user_id"]), lexical_text(r["text"])) for r in rows],
                )
        except BackendError as exc:  # a read-only file: lexical search sees only what was indexed before
            log.warning("%s: full-text index not back-filled (%s); hybrid search is partly dense-only", self.path, exc)

    def search_by_vector(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 10,
        *,
        include_inactive: bool = False,
        min_score: float | None = None,
        exclude: Sequence[int] = (),
    ) -> list[tuple[MemoryItem, float]]:
        """Like :meth:`search` with a precomputed vector (e.g. a stored memory's own embedding).

        The vector is scaled to unit norm first, so the scores are cosines whatever its length.

        Raises:
            InvalidInputError: k < 1; a vector of the wrong size, with NaN/inf, or zero.
        """
        hits = self._dense_hits(user_id, vector, k, include_inactive=include_inactive, exclude=exclude)
        if min_score is not None:
            hits = [(i, s) for i, s in hits if s >= min_score]
        items = self.get_many([i for i, _ in hits])
        return [(it, s) for it, (_, s) in zip(items, hits, strict=True)]

    def _dense_hits(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int,
        *,
        include_inactive: bool = False,
        exclude: Sequence[int] = (),
        allowed: NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the user's ``k`` nearest memories (the vector index only; no rows read), among
        ``allowed`` when given (else the user's active ids, or all of them with ``include_inactive``)."""
        k = check_positive_int(k, name="k", owner="MemoryStore.search")
        q = as_vectors(vector, self.embedder.dim, name="vector", owner="MemoryStore.search")
        q = check_unit_vectors(q, normalize=True, name="vector", owner="MemoryStore.search")
        if allowed is None:
            allowed = self._allowed_ids(user_id, include_inactive)
        drop = np.unique(np.asarray([int(i) for i in exclude if is_row_id(i)], dtype=np.int64))
        drop = drop[in_sorted(allowed, drop)]  # the excluded ids that are allowed
        n = min(k, len(allowed) - len(drop))
        if n <= 0:
            return []
        if isinstance(self.index, PartitionedFaissIndex):  # only this user's vectors are scanned
            # the cached ``allowed`` (and the selector the index keeps for it) serve every call; excluded ids
            # are a small selector of their own: the same search as over ``allowed`` minus them
            scores, ids = self.index.search(q, n, allowed=allowed, partition=user_id, exclude=drop)
        elif isinstance(self.index, FaissIndex):
            scores, ids = self.index.search(q, n, allowed=allowed, exclude=drop)
        else:
            scores, ids = self.index.search(q, n, allowed=np.setdiff1d(allowed, drop, assume_unique=True))
        return [(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def context_items(
        self,
        user_id: str,
        query: str | None = None,
        *,
        project_id: str | None = None,
        types: Sequence[str] | None = None,
        k: int = 20,
    ) -> list[MemoryItem]:
        """The memories :meth:`build_context` lists, in its order (the user's **active** memories only).

        Args:
            user_id: owner.
            query: when given, the ``k`` most relevant memories; otherwise the ``k`` most recent.
            project_id: keep global memories plus this project's (a project-scoped context).
            types: keep only these memory types.
            k: max memories (an int >= 1).

        Raises:
            InvalidInputError: bad user id or k < 1.
        """
        return select_context(self, "MemoryStore.context_items", user_id, query, project_id=project_id, types=types,
                              k=k)

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
        """Prompt text with the user's **active** memories (superseded items never appear).

        Args:
            user_id: owner.
            query: when given, the ``k`` most relevant memories; otherwise the ``k`` most recent.
            project_id: keep global memories plus this project's (a project-scoped context).
            agent_type: names the consuming agent in the heading.
            types: keep only these memory types.
            k: max memories listed (an int >= 1).
            lang: ``it``, ``en`` or ``zh`` heading.
            awaiting: ids of memories whose version is provisional (an open contradiction the user has not answered
                yet): marked so, so the model does not present them as settled.

        Raises:
            InvalidInputError: bad user id or k < 1.
        """
        items = select_context(self, "MemoryStore.build_context", user_id, query, project_id=project_id, types=types,
                               k=k)
        return format_context(items, lang=lang, agent_type=agent_type, awaiting=awaiting)
