"""Open a store, or the app's database, by URL: :func:`open_store`, :func:`open_database`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memlab.protocols import Embedder
from memlab.store.memory import MemoryStore, is_postgres_url

__all__ = ["default_qdrant_path", "open_database", "open_store"]


def open_store(url: str | os.PathLike[str] = ":memory:", embedder: Embedder | None = None, **kwargs: Any
               ) -> MemoryStore:
    """A :class:`MemoryStore` on the backend ``url`` names: ``postgresql://…`` (or ``postgres://…``) opens
    PostgreSQL + pgvector (:class:`~memlab.store.postgres.PostgresStore`, which takes its own keyword arguments),
    anything else an SQLite file (``":memory:"``: nothing on disk).

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> store = open_store(":memory:", embedder=FakeEmbedder())
        >>> store.backend.kind
        'sqlite'

    Raises:
        InvalidInputError: a bad path or URL.
        MissingDependencyError: a PostgreSQL URL without ``memlab[postgres]`` installed.
        BackendError: the database cannot be opened or reached.
    """
    if is_postgres_url(url):
        from memlab.store.postgres import PostgresStore

        return PostgresStore(str(url), embedder, **kwargs)
    return MemoryStore(url, embedder, **kwargs)


def open_database(location: str | os.PathLike[str]) -> Any:
    """The app's database alone (API keys, for ``memlab users``), without the memory store: a
    :class:`~memlab.store.db.Database` for an SQLite file, a :class:`~memlab.store.pg_db.PgDatabase` for a
    ``postgresql://`` URL.

    Example:
        >>> open_database(":memory:").dialect
        'sqlite'
    """
    if is_postgres_url(location):
        from memlab.store.pg_backend import _without_password
        from memlab.store.pg_db import PgDatabase

        return PgDatabase(str(location), location=_without_password(str(location)))
    from memlab.store.db import Database

    return Database(location)


def default_qdrant_path(location: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> Path:
    """Where ``/v1/ingest`` keeps its embedded Qdrant store by default: beside an SQLite file (``<db>.qdrant``),
    or ``<data_dir>/memlab.qdrant`` for a PostgreSQL database (which has no folder of its own).

    Example:
        >>> str(default_qdrant_path("data/app.db", "data")), str(default_qdrant_path("postgresql://h/app", "data"))
        ('data/app.db.qdrant', 'data/memlab.qdrant')
    """
    if is_postgres_url(location):
        return Path(data_dir) / "memlab.qdrant"
    return Path(str(location) + ".qdrant")
