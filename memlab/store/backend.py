"""The seam between the store's rules and where its rows live: :class:`StoreBackend` and :class:`StoreWrite`.

:class:`~memlab.store.memory.MemoryStore` holds the rules (validation, the version rule, events, the check outbox,
hybrid ranking, context selection: :mod:`memlab.store.core`) and calls a backend for storage only:

* :class:`~memlab.store.sqlite.SQLiteBackend`: one SQLite file, FAISS beside it (a rebuildable cache), FTS5, and
  the per-user caches that keep a user's search cheap;
* :class:`~memlab.store.postgres.PostgresBackend`: PostgreSQL with pgvector (exact scans or HNSW), ``tsvector``
  full-text search, advisory locks per keyed slot, binary ``COPY`` bulk loads.

Both hold the same tables under the same names (``memories``, ``memory_events``, ``memory_outbox``, ``memlab_meta``)
and both serve the app's other tables through :attr:`StoreBackend.db` (:mod:`memlab.store.db`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memlab.protocols import Embedder
from memlab.records import MemoryItem
from memlab.store.core import MemoryEvent

__all__ = ["SlotState", "StoreBackend", "StoreWrite"]


class SlotState(Protocol):
    """What :meth:`StoreWrite.slot` returns: the slot's active versions, its chain and its next version."""

    incumbents: Sequence[Mapping[str, Any]]
    chain_id: int | None
    next_version: int


class StoreWrite(Protocol):
    """The statements of one write transaction (``with backend.write() as w``). Every method runs inside it; the
    transaction commits when the block ends and rolls back on an exception (nothing of the call is kept)."""

    def slot(self, user_id: str, key: str, scope: str, type: str, project_id: str | None) -> SlotState:
        """Lock the keyed slot for this transaction (another writer of the same slot waits) and read it: its active
        versions (``id``, ``confidence``, ``chain_id``; oldest first), the chain of its newest row, the next
        version number of that chain."""
        ...

    def insert(self, row: Mapping[str, Any], vector: NDArray[np.float32]) -> int:
        """Insert a ``memories`` row (:func:`memlab.store.core.new_row`) with its vector and full-text entry; a
        ``chain_id`` of None becomes the new id. Returns the new id."""
        ...

    def update(self, ids: Sequence[int], **values: Any) -> None:
        """Set columns of the rows ``ids`` (``is_active``, ``superseded_at``, ``superseded_by``, ``key``,
        ``context``, ``updated_at``)."""
        ...

    def locked(self, id: int) -> MemoryItem | None:
        """The row ``id`` read for update (no other writer changes it before this transaction ends), or None."""
        ...

    def holder(self, item: MemoryItem) -> MemoryItem | None:
        """The active memory of ``item``'s keyed slot other than ``item`` (the slot locked as :meth:`slot` does)."""
        ...

    def event(self, memory_id: int, chain_id: int | None, user_id: str, event: str, actor: str, at: datetime,
              details: Mapping[str, Any]) -> None:
        """Append to the audit log."""
        ...

    def outbox(self, memory_id: int, user_id: str, at: datetime) -> None:
        """Put a memory in the check outbox (idempotent)."""
        ...

    def fetch(self, id: int) -> MemoryItem:
        """The row ``id`` as this transaction sees it."""
        ...

    def changed(self, user_id: str, *, new: Sequence[tuple[int, NDArray[np.float32]]] = (),
                activated: Sequence[tuple[int, str]] = (), deactivated: Sequence[int] = (),
                rekeyed: bool = False) -> None:
        """Tell the backend what this transaction changed (new rows with their vectors, rows that became active
        with their texts, rows that became inactive, a slot moved), for the indexes and caches it keeps beside the
        rows; applied when the transaction commits, never when it rolls back."""
        ...


@runtime_checkable
class StoreBackend(Protocol):
    """Where a :class:`~memlab.store.memory.MemoryStore` keeps its memories. See the module docstring."""

    #: ``"sqlite"`` or ``"postgresql"``.
    kind: str
    #: The database's location (a file path, ``":memory:"``, or a PostgreSQL URL without its password).
    location: str

    @property
    def db(self) -> Any:
        """The database of the app's other tables (chats, notifications, the agent's queue, API keys):
        a :class:`~memlab.store.db.Database` with this backend's dialect."""
        ...

    @property
    def closed(self) -> bool: ...

    def open(self, embedder: Embedder, *, reembed: bool) -> None:
        """Bind to ``embedder`` (a database built with another one is refused, or re-embedded when the backend can
        and ``reembed``) and make the vector search ready."""
        ...

    def close(self) -> None: ...

    def flush(self) -> None:
        """Write what the backend keeps outside the database (SQLite: the FAISS file)."""
        ...

    def rebuild_index(self) -> None:
        """Rebuild the vector index from the stored vectors."""
        ...

    def index_health(self) -> dict[str, Any]:
        """The vector index for ``/health``: ``ok`` (it serves the embedder's dimension), ``dim`` and what it is."""
        ...

    def write(self) -> AbstractContextManager[StoreWrite]: ...

    def items(self, ids: Sequence[int]) -> dict[int, MemoryItem]:
        """The rows of ``ids`` by id (unknown ids left out)."""
        ...

    def list(self, user_id: str, filters: Mapping[str, str], *, include_inactive: bool, limit: int | None,
             after_id: int = 0) -> list[MemoryItem]:
        """A user's memories in id order, ``id > after_id``, equal to ``filters`` (scope/type/key/project_id)."""
        ...

    def chain(self, chain_id: int) -> list[MemoryItem]: ...

    def events(self, memory_id: int, chain_id: int | None) -> list[MemoryEvent]:
        """The events of a memory, or of its whole chain with ``chain_id``, oldest first."""
        ...

    def count(self, user_id: str | None, *, include_inactive: bool) -> int: ...

    def active_ids(self, user_id: str, ids: Sequence[int]) -> set[int]: ...

    def active_in_slot(self, item: MemoryItem) -> MemoryItem | None: ...

    def unchecked(self, limit: int) -> list[tuple[int, str]]: ...

    def mark_checked_queued(self, memory_ids: Sequence[int]) -> None: ...

    def find_containing(self, user_id: str, terms: Sequence[str], *, exclude_id: int, limit: int) -> list[int]:
        """Ids of active memories whose lower-cased text contains a term, newest first."""
        ...

    def users(self) -> list[str]: ...

    def vectors(self, ids: Sequence[int]) -> dict[int, NDArray[np.float32]]: ...

    def dense(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
              exclude: Sequence[int]) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the user's ``k`` nearest memories to the unit vector ``query``, best first."""
        ...

    def dense_items(self, user_id: str, query: NDArray[np.float32], k: int, *, include_inactive: bool,
                    exclude: Sequence[int], scan: str | None = None) -> list[tuple[MemoryItem, float]]:
        """:meth:`dense` with the rows (``scan``: the backend's own way to scan, None for its default)."""
        ...

    def lexical(self, user_id: str, text: str, k: int, *, include_inactive: bool) -> Callable[[], list[int]]:
        """Start the user's full-text ranking of ``text`` (at most ``k`` ids, best first); the returned callable
        gives it (a backend may run it while the caller embeds the query)."""
        ...

    def probe(self) -> int:
        """Count all memories through the server or a fresh connection (a health check)."""
        ...
