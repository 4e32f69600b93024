"""The versioned memory store: the rules of :mod:`memlab.store.core` over a :class:`~memlab.store.backend.StoreBackend`.

One :class:`MemoryStore` serves both backends: an SQLite file with a FAISS index beside it (the default; a path or
``":memory:"``), or PostgreSQL with pgvector (a ``postgresql://`` URL). :func:`open_store` picks the backend by the
URL's scheme.

Conflict rule for keyed memories: a new item with the same ``(user_id, scope, type, key, project_id)`` as an active
item is a conflict. If the confidences differ by less than 0.1 the newer item wins; otherwise the higher confidence
wins. The loser is never deleted: it stays, inactive, linked by ``supersedes``/``superseded_by``, with
``superseded_at`` set, in a version chain that :meth:`MemoryStore.history` returns from any member.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

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
from memlab.errors import InvalidInputError, NotFoundError
from memlab.protocols import Embedder, VectorIndex
from memlab.records import MemoryItem
from memlab.store.backend import StoreBackend, StoreWrite
from memlab.store.core import (
    CONFIDENCE_TIE,
    DEFAULT_EMBEDDER,
    SEARCH_MODES,
    MemoryEvent,
    aware,
    format_context,
    item_specs,
    new_row,
    select_context,
    spec_vectors,
    validate_memory_spec,
    version_rule,
)
from memlab.store.lexical import fuse_with_cosines, search_depth
from memlab.store.sqlite import FLUSH_EVERY, FLUSH_SECONDS, SQLiteBackend

__all__ = [
    "CONFIDENCE_TIE",
    "DEFAULT_EMBEDDER",
    "SEARCH_MODES",
    "MemoryEvent",
    "MemoryStore",
    "format_context",
    "is_postgres_url",
    "select_context",
    "validate_memory_spec",
    "version_rule",
]

log = logging.getLogger(__name__)

#: URL schemes of a PostgreSQL database (libpq's).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``), not a file.

    Example:
        >>> is_postgres_url("postgresql://alice@127.0.0.1:5432/app"), is_postgres_url("memlab.db")
        (True, False)
    """
    return isinstance(location, str) and location.strip().lower().startswith(POSTGRES_SCHEMES)


def _utcnow() -> datetime:
    return utcnow()  # the wall clock, or a replayed message's time (memlab.clock)


class MemoryStore:
    """Versioned memories of many users: SQLite + FAISS by default, PostgreSQL + pgvector for a ``postgresql://``
    URL (or any :class:`~memlab.store.backend.StoreBackend`).

    Args:
        path: an SQLite file, ``":memory:"`` (nothing touches disk), a ``postgresql://`` URL, or a backend.
        embedder: any :class:`~memlab.protocols.Embedder`; default: the packaged offline one.
        index_factory, index, flush_every, flush_seconds: the SQLite backend's vector index (see
            :class:`~memlab.store.sqlite.SQLiteBackend`): a FAISS factory (``"Flat"`` exact by default), any
            :class:`~memlab.protocols.VectorIndex` kept as a cache of SQLite, and how often the FAISS file is
            written in the background.
        clock: returns "now" (tz-aware); injectable for tests.
        max_text_chars: longest accepted text.
        reembed: a database built with another embedder (name or dimension) holding memories is refused
            (``False``, default: :class:`~memlab.errors.InvalidInputError` naming the stored embedder, nothing
            changed); ``True`` re-embeds every memory with ``embedder`` and switches the file to it for good
            (SQLite; PostgreSQL refuses).

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
        path: str | os.PathLike[str] | StoreBackend = ":memory:",
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
        if isinstance(path, StoreBackend):
            backend = path
        elif is_postgres_url(path):
            from memlab.store.pg_backend import PostgresBackend

            if index is not None:
                raise InvalidInputError("The 'index' parameter of MemoryStore is for an SQLite file; PostgreSQL "
                                        "indexes the vectors itself (pgvector).")
            backend = PostgresBackend(str(path))
        else:
            backend = SQLiteBackend(path, index_factory=index_factory, index=index,  # type: ignore[arg-type]
                                    flush_every=flush_every, flush_seconds=flush_seconds)
        if embedder is None:
            from memlab.embedding import load_embedder

            embedder = load_embedder(DEFAULT_EMBEDDER)
        self._init(backend, embedder, clock=clock, max_text_chars=max_text_chars, reembed=reembed)

    def _init(self, backend: StoreBackend, embedder: Embedder, *, clock: Callable[[], datetime] | None,
              max_text_chars: int, reembed: bool) -> None:
        self.backend = backend
        self.embedder = embedder
        self.clock = clock or _utcnow
        self.max_text_chars = max_text_chars
        self.reembed = bool(reembed)
        #: Record each new memory in the check outbox, in its own transaction (set by the background agent).
        self.track_checks = False
        backend.open(embedder, reembed=self.reembed)

    # ------------------------------------------------------------------ what the backend holds
    @property
    def path(self) -> str:
        """The database's location: a file path, ``":memory:"``, or a PostgreSQL URL."""
        return self.backend.location

    @property
    def db(self) -> Any:
        """The database the app's other tables share (chats, notifications, the agent's queue, API keys)."""
        return self.backend.db

    @property
    def closed(self) -> bool:
        return self.backend.closed

    def _sqlite(self, what: str) -> SQLiteBackend:
        if not isinstance(self.backend, SQLiteBackend):
            raise InvalidInputError(f"MemoryStore.{what} is the SQLite backend's FAISS index; this store is on "
                                    f"{self.backend.kind}, whose vectors are indexed in the database itself.")
        return self.backend

    @property
    def index(self) -> VectorIndex:
        """The SQLite backend's vector index (a cache of the stored vectors).

        Raises:
            InvalidInputError: the store is on another backend.
        """
        return self._sqlite("index").index

    @property
    def index_opened(self) -> dict[str, Any]:
        """How the SQLite backend's index was opened (see :attr:`SQLiteBackend.index_opened`)."""
        return self._sqlite("index_opened").index_opened

    @property
    def index_rebuilds(self) -> int:
        """Full rebuilds of the SQLite backend's index."""
        return self._sqlite("index_rebuilds").index_rebuilds

    def _owner(self, method: str) -> str:
        return f"{type(self).__name__}.{method}"

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Persist what the backend keeps outside the database (the FAISS file) and close it (idempotent)."""
        self.backend.close()

    def flush(self) -> None:
        """Write the FAISS index file now when it has unwritten changes (a no-op on PostgreSQL).

        Raises:
            BackendError: the file cannot be written (no temporary file is left behind).
        """
        self.backend.flush()

    def rebuild_index(self) -> None:
        """Rebuild the vector index from the stored vectors (no re-embedding): a fresh FAISS index on SQLite (then
        :attr:`index`), a ``REINDEX`` (or the build a bulk load left out) on PostgreSQL."""
        self.backend.rebuild_index()

    def probe(self) -> int:
        """Count all memories through a fresh connection or the server (a health check)."""
        return self.backend.probe()

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
        spec = dict(text=text, scope=scope, type=type, key=key, value=value, confidence=confidence,
                    project_id=project_id, source=source, valid_from=valid_from, valid_to=valid_to,
                    keywords=keywords, topic=topic)
        vecs = None if embedding is None else np.asarray(embedding).reshape(1, -1)
        return self.add_many(user_id, [spec], embeddings=vecs)[0]

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
        so the version rule sees earlier items of the same call. Everything is validated (and embedded) before
        anything is written: one bad item rejects the whole call and the store is unchanged. ``embeddings``
        (optional, one row per item) must be finite unit-norm vectors of the embedder's dimension (see :meth:`add`).
        """
        owner = self._owner("add")
        user_id = check_user_id(user_id, owner=owner)
        specs = item_specs(items, owner, self.max_text_chars, what=f"The 'items' parameter of {owner}_many",
                           hint=f"; use {owner} for one memory")
        if not specs:
            return []
        vecs = spec_vectors(specs, embeddings, self.embedder, owner, progress=progress)
        with self.backend.write() as w:
            ids = [self._insert(w, user_id, spec, vec) for spec, vec in zip(specs, vecs, strict=True)]
            # the final state: a later item of the same call may supersede an earlier one
            return [w.fetch(i) for i in ids]

    def _insert(self, w: StoreWrite, user_id: str, spec: dict[str, Any], vec: NDArray[np.float32]) -> int:
        """One memory through the version rule, inside ``w``'s transaction: the slot's active version steps down
        first (one active per slot), then the row, its events and its outbox entry."""
        now = aware(self.clock())
        assert now is not None
        incumbents: Sequence[Mapping[str, Any]] = ()
        chain_id, version = None, 1
        if spec["key"] is not None:
            slot = w.slot(user_id, spec["key"], spec["scope"], spec["type"], spec["project_id"])
            incumbents, chain_id, version = slot.incumbents, slot.chain_id, slot.next_version
        wins, beaten_by = version_rule(spec["confidence"], incumbents[-1] if incumbents else None)
        stepping_down = [int(r["id"]) for r in incumbents] if wins else []
        if stepping_down:
            w.update(stepping_down, is_active=False, superseded_at=now, updated_at=now)
        row = new_row(user_id, spec, now, version=version, chain_id=chain_id,
                      supersedes=stepping_down[-1] if stepping_down else None, beaten_by=beaten_by)
        new_id = w.insert(row, vec)
        chain_id = new_id if chain_id is None else chain_id
        self._event(w, new_id, chain_id, user_id, "created", "system", version=version)
        if spec.get("correction"):  # the user said so explicitly ("anzi", "actually", "其实"): an update, not a doubt
            self._event(w, new_id, chain_id, user_id, "stated_as_correction", "user")
        if self.track_checks:
            w.outbox(new_id, user_id, now)
        for old in stepping_down:
            w.update([old], superseded_by=new_id)
            self._event(w, old, chain_id, user_id, "superseded", "version-rule", by=new_id)
        if beaten_by is not None:
            self._event(w, new_id, chain_id, user_id, "lost", "version-rule", to=beaten_by)
            log.info("memory %d of %s: existing memory %d retained (higher confidence); the new one is inactive",
                     new_id, user_id, beaten_by)
        w.changed(user_id, new=[(new_id, vec)], deactivated=stepping_down,
                  activated=[(new_id, spec["text"])] if wins else ())
        return new_id

    def _event(self, w: StoreWrite, memory_id: int, chain_id: int | None, user_id: str, event: str, actor: str,
               **details: Any) -> None:
        at = aware(self.clock())
        assert at is not None
        w.event(memory_id, chain_id, user_id, event, actor, at, details)

    def _locked(self, w: StoreWrite, id_: Any, user_id: str | None) -> MemoryItem:
        """The memory ``id_`` read for update in ``w`` (NotFoundError for an unknown id or another user's)."""
        id_ = check_id(id_, kind="memory")
        item = w.locked(id_)
        if item is None or (user_id is not None and item.user_id != user_id):
            raise NotFoundError(f"No memory with id {id_}" + (f" for user {user_id!r}" if user_id else "") + ".")
        return item

    def _set_active(
        self, id_: int, active: bool, *, event: str, actor: str, user_id: str | None, **details: Any
    ) -> MemoryItem:
        with self.backend.write() as w:
            item = self._locked(w, id_, user_id)
            if active and not item.is_active:
                holder = w.holder(item)
                if holder is not None:
                    raise InvalidInputError(
                        f"Memory {item.id} cannot become active: version {holder.id} is active in its slot "
                        f"({item.key!r}); deactivate that one first."
                    )
            now = aware(self.clock())
            if active:
                w.update([item.id], is_active=True, superseded_at=None, updated_at=now)
                w.changed(item.user_id, activated=[(item.id, item.text)])
            else:
                w.update([item.id], is_active=False, superseded_at=item.superseded_at or now, updated_at=now)
                w.changed(item.user_id, deactivated=[item.id])
            self._event(w, item.id, item.chain_id, item.user_id, event, actor, **details)
            return w.fetch(item.id)

    def deactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Mark a memory of ``user_id`` inactive (kept, never deleted); the reason goes to its event log.

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s (the owner is required).
        """
        user_id = check_user_id(user_id, owner=self._owner("deactivate"))
        return self._set_active(id, False, event="deactivated", actor=actor, user_id=user_id, reason=reason,
                                **details)

    def reactivate(
        self, id: int, reason: str, *, actor: str = "user", user_id: str, **details: Any
    ) -> MemoryItem:
        """Make an inactive memory of ``user_id`` active again (e.g. the user chose the older value).

        Raises:
            NotFoundError: unknown id, or not ``user_id``'s (the owner is required).
            InvalidInputError: another version is active in the slot.
        """
        user_id = check_user_id(user_id, owner=self._owner("reactivate"))
        return self._set_active(id, True, event="reactivated", actor=actor, user_id=user_id, reason=reason,
                                **details)

    def annotate(
        self, id: int, context: str, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Attach user-provided context to a memory (e.g. "both are true: one is my mother's birthday")."""
        context = check_text(context, name="context", owner=self._owner("annotate"), max_chars=self.max_text_chars)
        with self.backend.write() as w:
            item = self._locked(w, id, user_id)
            w.update([item.id], context=context, updated_at=aware(self.clock()))
            self._event(w, item.id, item.chain_id, item.user_id, "annotated", actor, context=context, **details)
            return w.fetch(item.id)

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
        if key is not None:
            key = check_text(key, name="key", owner=self._owner("set_key"), max_chars=512)
        with self.backend.write() as w:
            item = self._locked(w, id, user_id)
            if item.is_active and key is not None:
                holder = w.holder(replace(item, key=key))
                if holder is not None:
                    raise InvalidInputError(
                        f"Memory {item.id} cannot move into slot {key!r}: version {holder.id} is active there."
                    )
            w.update([item.id], key=key, updated_at=aware(self.clock()))
            self._event(w, item.id, item.chain_id, item.user_id, "key_changed", actor, old=item.key, new=key,
                        **details)
            w.changed(item.user_id, rekeyed=True)
            return w.fetch(item.id)

    def clear_context(
        self, id: int, *, actor: str = "user", user_id: str | None = None, **details: Any
    ) -> MemoryItem:
        """Remove the user-provided context of a memory (e.g. when a resolution is undone); logged as an event."""
        with self.backend.write() as w:
            item = self._locked(w, id, user_id)
            w.update([item.id], context=None, updated_at=aware(self.clock()))
            self._event(w, item.id, item.chain_id, item.user_id, "context_cleared", actor, previous=item.context,
                        **details)
            return w.fetch(item.id)

    def record_event(
        self, id: int, event: str, *, actor: str, user_id: str | None = None, **details: Any
    ) -> None:
        """Append an event to a memory's log (used by services, e.g. a contradiction resolution)."""
        with self.backend.write() as w:
            item = self._locked(w, id, user_id)
            self._event(w, item.id, item.chain_id, item.user_id, event, actor, **details)

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
        return self._get(id, user_id=check_user_id(user_id, owner=self._owner("get")))

    def _get(self, id: Any, *, user_id: str | None) -> MemoryItem:
        id = check_id(id, kind="memory")
        item = self.backend.items([id]).get(id)
        if item is None or (user_id is not None and item.user_id != user_id):
            raise NotFoundError(f"No memory with id {id}" + (f" for user {user_id!r}" if user_id else "") + ".")
        return item

    def get_many(self, ids: Sequence[int]) -> list[MemoryItem]:
        """Memories by id, in the given order (unknown ids raise)."""
        if not ids:
            return []
        bad = [i for i in ids if not is_row_id(i)]
        if bad:
            raise NotFoundError(f"No memories with ids {bad}.")
        by_id = self.backend.items([int(i) for i in ids])
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return [by_id[int(i)] for i in ids]

    def history(self, id: int, *, user_id: str | None = None) -> list[MemoryItem]:
        """The whole version chain of ``id`` (from any member), oldest first."""
        item = self._get(id, user_id=user_id)
        return self.backend.chain(int(item.chain_id if item.chain_id is not None else item.id))

    def events(self, id: int, *, user_id: str | None = None, chain: bool = True) -> list[MemoryEvent]:
        """The audit log of a memory (``chain=True``: of its whole version chain), oldest first."""
        item = self._get(id, user_id=user_id)
        return self.backend.events(item.id, item.chain_id if chain else None)

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
        owner = self._owner("list")
        user_id = check_user_id(user_id, owner=owner)
        filters = {c: v for c, v in (("scope", scope), ("type", type), ("key", key), ("project_id", project_id))
                   if v is not None}
        if limit is not None:
            limit = check_positive_int(limit, name="limit", owner=owner)
        return self.backend.list(user_id, filters, include_inactive=include_inactive, limit=limit)

    def iter_all(
        self, user_id: str, *, include_inactive: bool = False, batch: int = 1000
    ) -> Iterator[MemoryItem]:
        """Stream a user's memories in id order without loading them all."""
        last = 0
        while True:
            rows = self.backend.list(user_id, {}, include_inactive=include_inactive, limit=int(batch), after_id=last)
            if not rows:
                return
            yield from rows
            last = rows[-1].id

    def count(self, user_id: str | None = None, *, include_inactive: bool = False) -> int:
        """Number of memories (of one user, or of all users)."""
        return self.backend.count(user_id, include_inactive=include_inactive)

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
        return self.backend.active_ids(user_id, ids) if ids else set()

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
        return None if item.key is None else self.backend.active_in_slot(item)

    def unchecked(self, limit: int = 1000) -> list[tuple[int, str]]:
        """``(memory_id, user_id)`` of memories in the check outbox: stored while :attr:`track_checks` was on and
        not yet handed to the checker (:meth:`mark_checked_queued`), oldest first."""
        return self.backend.unchecked(int(limit))

    def mark_checked_queued(self, memory_ids: Sequence[int]) -> None:
        """Remove memories from the check outbox (call in the transaction that queues their checks)."""
        self.backend.mark_checked_queued([int(i) for i in memory_ids])

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
        exclude = int(exclude_id) if is_row_id(exclude_id) else -1
        return self.get_many(self.backend.find_containing(user_id, terms, exclude_id=exclude, limit=int(limit)))

    def users(self) -> list[str]:
        """All user ids with at least one memory."""
        return self.backend.users()

    def vectors(self, ids: Sequence[int]) -> NDArray[np.float32]:
        """Stored embeddings of ``ids`` (float32, ``(len(ids), dim)``), in order."""
        if not len(ids):
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        bad = [i for i in ids if not is_row_id(i)]
        if bad:
            raise NotFoundError(f"No memories with ids {bad}.")
        by_id = self.backend.vectors([int(i) for i in ids])
        missing = [i for i in ids if int(i) not in by_id]
        if missing:
            raise NotFoundError(f"No memories with ids {missing}.")
        return np.stack([by_id[int(i)] for i in ids]).astype(np.float32, copy=False)

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
        """The ``k`` memories of ``user_id`` that best match ``text``, best first.

        Args:
            mode: ``hybrid`` (default): the dense (cosine) and full-text rankings of the user's memories fused by
                reciprocal rank (:func:`memlab.store.lexical.hybrid_rank`), so a rare exact word ("Tokyo", a name,
                a date) finds its memory even when the sentence embedding does not; ``dense``: cosine only (what
                :meth:`search_by_vector` does). Full text is SQLite FTS5 BM25 (Chinese split into characters) or
                PostgreSQL's ``ts_rank_cd`` over ``to_tsvector('simple', text)``.
            min_score: drop hits whose cosine to ``text`` is below this.

        Returns:
            ``(memory, cosine)`` pairs in the chosen ranking's order (in ``hybrid`` mode a lexical hit can come
            before a memory with a higher cosine).

        Raises:
            InvalidInputError: empty/bad text, k < 1, or an unknown mode.
        """
        owner = self._owner("search")
        user_id = check_user_id(user_id, owner=owner)
        text = check_text(text, name="text", owner=owner, max_chars=self.max_text_chars)
        k = check_positive_int(k, name="k", owner=owner)
        if mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"The 'mode' parameter of {owner} must be one of {SEARCH_MODES}. Got {mode!r} instead."
            )
        if mode == "dense":
            vec = self.embedder.embed([text], mode="query")[0]
            return self.search_by_vector(user_id, vec, k, include_inactive=include_inactive, min_score=min_score)
        depth = search_depth(k)
        lexical = self.backend.lexical(user_id, text, depth, include_inactive=include_inactive)
        vec = self.embedder.embed([text], mode="query")[0]
        try:
            dense = self.backend.dense(user_id, self._query(vec), depth, include_inactive=include_inactive,
                                       exclude=())
        finally:
            lexical_ids = lexical()
        hits = fuse_with_cosines(dense, lexical_ids, vec, self.vectors, k=k, min_score=min_score)
        items = self.get_many([i for i, _ in hits])
        return [(m, c) for m, (_, c) in zip(items, hits, strict=True)]

    def _query(self, vector: Any) -> NDArray[np.float32]:
        owner = self._owner("search")
        q = as_vectors(vector, self.embedder.dim, name="vector", owner=owner)
        return np.ascontiguousarray(check_unit_vectors(q, normalize=True, name="vector", owner=owner)[0],
                                    dtype=np.float32)

    def search_by_vector(
        self,
        user_id: str,
        vector: NDArray[np.float32],
        k: int = 10,
        *,
        include_inactive: bool = False,
        min_score: float | None = None,
        exclude: Sequence[int] = (),
        scan: str | None = None,
    ) -> list[tuple[MemoryItem, float]]:
        """Like :meth:`search` with a precomputed vector (e.g. a stored memory's own embedding).

        The vector is scaled to unit norm first, so the scores are cosines whatever its length.

        Args:
            scan: PostgreSQL's vector scan for this call (``exact``, ``auto``, ``hnsw``; default: the store's). The
                SQLite backend's index is what it was built with: ``None`` only.

        Raises:
            InvalidInputError: k < 1; a vector of the wrong size, with NaN/inf, or zero; a scan the backend lacks.
        """
        user_id = check_user_id(user_id, owner=self._owner("search"))
        k = check_positive_int(k, name="k", owner=self._owner("search"))
        hits = self.backend.dense_items(user_id, self._query(vector), k, include_inactive=include_inactive,
                                        exclude=[int(i) for i in exclude if is_row_id(i)], scan=scan)
        return hits if min_score is None else [(m, s) for m, s in hits if s >= min_score]

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
        return select_context(self, self._owner("context_items"), user_id, query, project_id=project_id,
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
        items = select_context(self, self._owner("build_context"), user_id, query, project_id=project_id,
                               types=types, k=k)
        return format_context(items, lang=lang, agent_type=agent_type, awaiting=awaiting)
