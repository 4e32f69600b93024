"""Persistence: the versioned :class:`MemoryStore` and the shared SQLite :class:`Database`."""

from __future__ import annotations

from memlab.store.db import Database
from memlab.store.memory import CONFIDENCE_TIE, DEFAULT_EMBEDDER, MemoryEvent, MemoryStore

__all__ = ["CONFIDENCE_TIE", "DEFAULT_EMBEDDER", "Database", "MemoryEvent", "MemoryStore"]
