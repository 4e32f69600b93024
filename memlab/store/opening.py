"""Open a store by URL: :func:`open_store`."""

from __future__ import annotations

import os
from typing import Any

from memlab.protocols import Embedder
from memlab.store.memory import MemoryStore, is_postgres_url

__all__ = ["open_store"]


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
