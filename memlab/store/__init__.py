"""Persistence: the versioned :class:`MemoryStore` over a :class:`StoreBackend` (SQLite + FAISS, or PostgreSQL +
pgvector: :func:`open_store` picks by URL) and the shared SQLite :class:`Database`."""

from __future__ import annotations

from memlab.store.backend import StoreBackend
from memlab.store.core import CONFIDENCE_TIE, DEFAULT_EMBEDDER, SEARCH_MODES, MemoryEvent
from memlab.store.db import Database
from memlab.store.memory import MemoryStore, is_postgres_url
from memlab.store.opening import open_store
from memlab.store.sqlite import SQLiteBackend

__all__ = [
    "CONFIDENCE_TIE",
    "DEFAULT_EMBEDDER",
    "SEARCH_MODES",
    "Database",
    "MemoryEvent",
    "MemoryStore",
    "SQLiteBackend",
    "StoreBackend",
    "is_postgres_url",
    "open_store",
]
