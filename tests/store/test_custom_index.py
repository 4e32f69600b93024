"""MemoryStore(index=...) takes any VectorIndex: it is a cache of SQLite, filled at open and kept in step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlab.errors import InvalidInputError
from memlab.index import FaissIndex, NumpyIndex
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder


@pytest.mark.parametrize(
    "make", [lambda d: NumpyIndex(d), lambda d: FaissIndex(d, factory="Flat")], ids=["numpy", "faiss"]
)
def test_store_runs_on_a_given_index(tmp_path: Path, make) -> None:
    emb = FakeEmbedder(dim=16)
    db = tmp_path / "m.sqlite"
    idx = make(emb.dim)
    with MemoryStore(db, embedder=emb, index=idx) as store:
        assert store.index is idx
        a = store.add("u1", "Abito a Roma", key="city")
        b = store.add("u1", "Abito a Milano", key="city")
        store.add("u2", "Abito a Torino", key="city")
        assert sorted(idx.ids().tolist()) == sorted([a.id, b.id, b.id + 1])
        hits = store.search("u1", "Abito a Milano", k=5)
        assert [m.id for m, _ in hits] == [b.id]  # active only, u1 only
    assert not (tmp_path / "m.sqlite.faiss").exists()  # a given index is never saved by the store
    fresh = make(emb.dim)
    with MemoryStore(db, embedder=emb, index=fresh) as store:
        assert sorted(fresh.ids().tolist()) == sorted(idx.ids().tolist())  # refilled from SQLite vectors
        v = store.db.query_one("SELECT embedding FROM memories WHERE id = ?", (b.id,))["embedding"]
        _, got = fresh.search(np.frombuffer(v, dtype=np.float32)[None, :], 1)
        assert got[0, 0] == b.id
        assert [m.text for m, _ in store.search("u1", "Milano", k=3)] == ["Abito a Milano"]


def test_stale_given_index_is_refilled(tmp_path: Path) -> None:
    emb = FakeEmbedder(dim=8)
    stale = NumpyIndex(emb.dim)
    stale.add(np.array([999], dtype=np.int64), np.ones((1, emb.dim), dtype=np.float32) / np.sqrt(emb.dim))
    with MemoryStore(tmp_path / "m.sqlite", embedder=emb) as store:
        m = store.add("u1", "Mi piace il caffè")
    with MemoryStore(tmp_path / "m.sqlite", embedder=emb, index=stale) as store:
        assert stale.ids().tolist() == [m.id]


def test_wrong_index_is_refused_and_nothing_is_lost(tmp_path: Path) -> None:
    emb = FakeEmbedder(dim=8)
    with MemoryStore(tmp_path / "m.sqlite", embedder=emb) as store:
        store.add("u1", "Ho un cane di nome Fido")
    with pytest.raises(InvalidInputError, match="dimension 8"):
        MemoryStore(tmp_path / "m.sqlite", embedder=emb, index=NumpyIndex(4))
    with pytest.raises(InvalidInputError, match="VectorIndex"):
        MemoryStore(tmp_path / "m.sqlite", embedder=emb, index="flat")  # type: ignore[arg-type]
    with MemoryStore(tmp_path / "m.sqlite", embedder=emb) as store:
        assert [m.text for m in store.list("u1")] == ["Ho un cane di nome Fido"]
