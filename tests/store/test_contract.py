"""The store contract (memlab.store.contract.check_memory_store) on every backend: SQLite in memory, an SQLite file
with its FAISS index, and PostgreSQL + pgvector (the server from tests/store/conftest.py), through open_store."""

from __future__ import annotations

import pytest

from memlab.store import MemoryStore, open_store
from memlab.testing import FakeEmbedder, check_memory_store


def test_sqlite_in_memory_passes_the_contract() -> None:
    check_memory_store(lambda: MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)))


def test_sqlite_file_passes_the_contract(tmp_path) -> None:
    check_memory_store(lambda: open_store(tmp_path / "m.db", FakeEmbedder(dim=32)))
    assert (tmp_path / "m.db.faiss").exists()


def test_postgres_passes_the_contract(pg_dsn) -> None:
    from memlab.store.postgres import PostgresStore

    check_memory_store(lambda: PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=32)))


def test_the_contract_can_fail() -> None:
    """A store that breaks one rule (here: search returns other users' memories) is caught."""

    class Leaky(MemoryStore):
        def search_by_vector(self, user_id, vector, k=10, **kw):  # type: ignore[no-untyped-def]
            return [h for u in self.users() for h in MemoryStore.search_by_vector(self, u, vector, k, **kw)][:k]

    with pytest.raises(AssertionError, match="Leaky on sqlite"):
        check_memory_store(lambda: Leaky(":memory:", embedder=FakeEmbedder(dim=32)))


def test_open_store_picks_the_backend_by_url(pg_server) -> None:
    """A postgresql:// URL opens PostgreSQL (never an SQLite file in a folder named 'postgresql:')."""
    if pg_server is None:
        pytest.skip("PostgreSQL tests skipped: no server")
    pg_server.create_database("by_url")
    store = open_store(pg_server.url("by_url"), FakeEmbedder(dim=32))
    try:
        assert store.backend.kind == "postgresql" and store.add("u1", "ciao").id > 0
        assert store.path.startswith("postgresql://")
    finally:
        store.close()
    same = MemoryStore(pg_server.url("by_url"), embedder=FakeEmbedder(dim=32))  # MemoryStore reads the URL too
    try:
        assert [m.text for m in same.list("u1")] == ["ciao"]
    finally:
        same.close()
