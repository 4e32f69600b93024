"""The memory tables' statements, written once in the SQL both backends take (``?`` placeholders, ``IN`` lists,
``is_active = TRUE``, ``ON CONFLICT``): the reads of :class:`SQLReads` and the write steps of :class:`SQLWrite`.

:class:`~memlab.store.sqlite.SQLiteBackend` and :class:`~memlab.store.pg_backend.PostgresBackend` inherit them and
add what differs: how a row is inserted (SQLite's FTS5 entry and BLOB vector; PostgreSQL's ``vector`` and jsonb), how
a slot is locked (SQLite's single writer; PostgreSQL's advisory lock and ``FOR UPDATE``), how a vector is read back,
and the search itself (FAISS + FTS5, or pgvector + ``tsvector``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.records import MemoryItem
from memlab.store.core import COLUMNS, MemoryEvent, event_from_row, item_from_row

__all__ = ["SLOT_SQL", "SQLReads", "SQLWrite", "SlotState"]

#: One keyed slot: user, key, scope, type and project (NULL-safe, as the unique index of active versions reads it).
SLOT_SQL = "user_id = ? AND key = ? AND scope = ? AND type = ? AND COALESCE(project_id, '') = COALESCE(?, '')"
#: The columns :meth:`SQLWrite.update` may set.
UPDATABLE = frozenset({"is_active", "superseded_at", "superseded_by", "key", "context", "updated_at"})
#: Most ids in one ``IN`` list (well below SQLite's and PostgreSQL's parameter limits).
_CHUNK = 10_000


def _in(ids: Sequence[int]) -> str:
    return ",".join("?" * len(ids))


def _chunks(ids: Sequence[int]) -> list[list[int]]:
    ids = [int(i) for i in ids]
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


@dataclass
class SlotState:
    """What :meth:`SQLWrite.slot` returns: the slot's active versions, its chain and its next version."""

    incumbents: list[Any]
    chain_id: int | None
    next_version: int


class SQLReads:
    """The reads of :class:`~memlab.store.backend.StoreBackend` over ``self.db`` (either database)."""

    db: Any

    def _vector(self, value: Any) -> NDArray[np.float32]:
        """A stored vector as float32 (SQLite: a BLOB; PostgreSQL: a ``vector``)."""
        raise NotImplementedError

    def items(self, ids: Sequence[int]) -> dict[int, MemoryItem]:
        out: dict[int, MemoryItem] = {}
        for part in _chunks(ids):
            for r in self.db.query(f"SELECT {COLUMNS} FROM memories WHERE id IN ({_in(part)})", part):
                out[int(r["id"])] = item_from_row(r)
        return out

    def list(self, user_id: str, filters: Mapping[str, str], *, include_inactive: bool, limit: int | None,
             after_id: int = 0) -> list[MemoryItem]:
        where, params = ["user_id = ?", "id > ?"], [user_id, int(after_id)]
        for col, val in filters.items():
            where.append(f"{col} = ?")
            params.append(val)
        if not include_inactive:
            where.append("is_active = TRUE")
        sql = f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [item_from_row(r) for r in self.db.query(sql, params)]

    def chain(self, chain_id: int) -> list[MemoryItem]:
        rows = self.db.query(f"SELECT {COLUMNS} FROM memories WHERE chain_id = ? ORDER BY version, id", (chain_id,))
        return [item_from_row(r) for r in rows]

    def events(self, memory_id: int, chain_id: int | None) -> list[MemoryEvent]:
        if chain_id is not None:
            rows = self.db.query("SELECT * FROM memory_events WHERE chain_id = ? OR memory_id = ? ORDER BY id",
                                 (chain_id, memory_id))
        else:
            rows = self.db.query("SELECT * FROM memory_events WHERE memory_id = ? ORDER BY id", (memory_id,))
        return [event_from_row(r) for r in rows]

    def count(self, user_id: str | None, *, include_inactive: bool) -> int:
        where, params = [], []
        if user_id is not None:
            where.append("user_id = ?")
            params.append(user_id)
        if not include_inactive:
            where.append("is_active = TRUE")
        row = self.db.query_one("SELECT COUNT(*) AS n FROM memories" + (f" WHERE {' AND '.join(where)}" if where
                                                                        else ""), params)
        return int(row["n"]) if row else 0

    def active_ids(self, user_id: str, ids: Sequence[int]) -> set[int]:
        out: set[int] = set()
        for part in _chunks(ids):
            rows = self.db.query(
                f"SELECT id FROM memories WHERE is_active = TRUE AND user_id = ? AND id IN ({_in(part)})",
                [user_id, *part])
            out.update(int(r["id"]) for r in rows)
        return out

    def active_in_slot(self, item: MemoryItem) -> MemoryItem | None:
        row = self.db.query_one(f"SELECT {COLUMNS} FROM memories WHERE {SLOT_SQL} AND is_active = TRUE AND id != ?",
                                (item.user_id, item.key, item.scope, item.type, item.project_id, item.id))
        return None if row is None else item_from_row(row)

    def unchecked(self, limit: int) -> list[tuple[int, str]]:
        rows = self.db.query("SELECT memory_id, user_id FROM memory_outbox ORDER BY memory_id LIMIT ?", (int(limit),))
        return [(int(r["memory_id"]), str(r["user_id"])) for r in rows]

    def mark_checked_queued(self, memory_ids: Sequence[int]) -> None:
        for part in _chunks(memory_ids):
            self.db.execute(f"DELETE FROM memory_outbox WHERE memory_id IN ({_in(part)})", part)

    def find_containing(self, user_id: str, terms: Sequence[str], *, exclude_id: int, limit: int) -> list[int]:
        where = " OR ".join("lower(text) LIKE ?" for _ in terms)
        rows = self.db.query(
            f"SELECT id FROM memories WHERE user_id = ? AND is_active = TRUE AND id != ? AND ({where}) "
            f"ORDER BY id DESC LIMIT ?",
            (user_id, exclude_id, *[f"%{t.lower()}%" for t in terms], int(limit)),
        )
        return [int(r["id"]) for r in rows]

    def users(self) -> list[str]:
        return [r["user_id"] for r in self.db.query("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]

    def vectors(self, ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        out: dict[int, NDArray[np.float32]] = {}
        for part in _chunks(ids):
            for r in self.db.query(f"SELECT id, embedding FROM memories WHERE id IN ({_in(part)})", part):
                out[int(r["id"])] = self._vector(r["embedding"])
        return out


class SQLWrite:
    """The steps of one write transaction (:class:`~memlab.store.backend.StoreWrite`) over ``backend.db``; a backend
    adds :meth:`insert` and, where it locks, :meth:`_lock_slot` and :attr:`for_update`."""

    #: Appended to the reads of rows this transaction will change (PostgreSQL: ``" FOR UPDATE"``).
    for_update = ""

    def __init__(self, backend: SQLReads) -> None:
        self.b = backend
        self.db = backend.db

    def _lock_slot(self, user_id: str, key: str, scope: str, type: str, project_id: str | None) -> None:
        """Serialise the writers of one keyed slot (nothing to do with SQLite's single writer)."""

    def _time(self, at: datetime) -> Any:
        """A time as the backend stores it."""
        return at

    def _json(self) -> str:
        """The placeholder of a JSON value."""
        return "?"

    def slot(self, user_id: str, key: str, scope: str, type: str, project_id: str | None) -> SlotState:
        slot = (user_id, key, scope, type, project_id)
        self._lock_slot(*slot)
        incumbents = self.db.query(
            f"SELECT id, confidence, chain_id FROM memories WHERE {SLOT_SQL} AND is_active = TRUE ORDER BY id"
            + self.for_update, slot)
        latest = self.db.query_one(f"SELECT chain_id FROM memories WHERE {SLOT_SQL} ORDER BY id DESC LIMIT 1", slot)
        if latest is None:
            return SlotState(list(incumbents), None, 1)
        row = self.db.query_one("SELECT MAX(version) AS v FROM memories WHERE chain_id = ?", (latest["chain_id"],))
        return SlotState(list(incumbents), int(latest["chain_id"]),
                         int(row["v"]) + 1 if row and row["v"] is not None else 1)

    def update(self, ids: Sequence[int], **values: Any) -> None:
        bad = set(values) - UPDATABLE
        if bad:
            raise ValueError(f"{type(self.b).__name__} cannot update the columns {sorted(bad)}.")
        sets = ", ".join(f"{c} = ?" for c in values)
        params = [self._time(v) if isinstance(v, datetime) else v for v in values.values()]
        for part in _chunks(ids):
            self.db.execute(f"UPDATE memories SET {sets} WHERE id IN ({_in(part)})", [*params, *part])

    def locked(self, id: int) -> MemoryItem | None:
        row = self.db.query_one(f"SELECT {COLUMNS} FROM memories WHERE id = ?" + self.for_update, (id,))
        return None if row is None else item_from_row(row)

    def holder(self, item: MemoryItem) -> MemoryItem | None:
        if item.key is None:
            return None
        self._lock_slot(item.user_id, item.key, item.scope, item.type, item.project_id)
        return self.b.active_in_slot(item)

    def event(self, memory_id: int, chain_id: int | None, user_id: str, event: str, actor: str, at: datetime,
              details: Mapping[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO memory_events(memory_id, chain_id, user_id, event, actor, at, details) "
            f"VALUES (?, ?, ?, ?, ?, ?, {self._json()})",
            (memory_id, chain_id, user_id, event, actor, self._time(at), json.dumps(dict(details), default=str)),
        )

    def outbox(self, memory_id: int, user_id: str, at: datetime) -> None:
        self.db.execute("INSERT INTO memory_outbox(memory_id, user_id, created_at) VALUES (?, ?, ?) "
                        "ON CONFLICT (memory_id) DO NOTHING", (memory_id, user_id, self._time(at)))

    def fetch(self, id: int) -> MemoryItem:
        row = self.db.query_one(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (id,))
        assert row is not None
        return item_from_row(row)

    def changed(self, user_id: str, *, new: Sequence[tuple[int, NDArray[np.float32]]] = (),
                activated: Sequence[tuple[int, str]] = (), deactivated: Sequence[int] = (),
                rekeyed: bool = False) -> None:
        """Nothing to follow unless the backend keeps indexes or caches beside the rows."""
