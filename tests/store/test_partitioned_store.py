"""MemoryStore's default index: one FAISS index per user (PartitionedFaissIndex), a rebuildable cache of SQLite."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memlab.index import FaissIndex, NumpyIndex, PartitionedFaissIndex
from memlab.index.partitioned import MAGIC
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

TEXTS = {
    "alice": ["Abito a Roma", "Ho un cane di nome Fido", "Lavoro in banca", "Mi piace il caffè"],
    "bob": ["Abito a Milano", "Ho un gatto di nome Micio", "Lavoro in ospedale"],
}


def fill(store: MemoryStore) -> dict[str, list[int]]:
    return {u: [m.id for m in store.add_many(u, texts)] for u, texts in TEXTS.items()}


def test_default_index_is_partitioned_by_user_and_isolates_users(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder()) as store:
        ids = fill(store)
        assert isinstance(store.index, PartitionedFaissIndex)
        assert store.index.partitions() == ["alice", "bob"]
        for u, mine in ids.items():
            assert sorted(store.index.ids(u).tolist()) == mine
        for bob_id in ids["bob"]:  # alice searching with bob's exact vector never gets bob's memory
            hits = store.search_by_vector("alice", store.vectors([bob_id])[0], k=10)
            assert {m.user_id for m, _ in hits} == {"alice"} and len(hits) == len(TEXTS["alice"])
        for text in TEXTS["bob"]:
            assert all(m.user_id == "alice" for m, _ in store.search("alice", text, k=10))
            assert store.search("bob", text, k=1)[0][0].text == text
        assert store.search("carol", "Abito a Roma") == []


def test_index_round_trip_through_the_file_without_rebuilding(tmp_path: Path, caplog) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        ids = fill(store)
        before = {t: [m.id for m, _ in store.search(u, t, k=3)] for u, ts in TEXTS.items() for t in ts}
    path = Path(str(db) + ".faiss")
    assert path.read_bytes()[: len(MAGIC)] == MAGIC
    stamp = path.stat().st_mtime_ns
    caplog.set_level(logging.WARNING, logger="memlab.store.memory")
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        assert "rebuilding" not in caplog.text  # loaded and found consistent
        assert isinstance(store.index, PartitionedFaissIndex)
        assert {u: sorted(store.index.ids(u).tolist()) for u in TEXTS} == ids
        after = {t: [m.id for m, _ in store.search(u, t, k=3)] for u, ts in TEXTS.items() for t in ts}
    assert after == before
    assert path.stat().st_mtime_ns == stamp  # nothing changed: not written again


def test_an_old_single_index_file_is_rebuilt_per_user(tmp_path: Path, caplog) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        ids = fill(store)
        dim = store.embedder.dim
        all_ids = [i for u in TEXTS for i in ids[u]]
        vecs = store.vectors(all_ids)
    old = FaissIndex(dim)  # what memlab wrote before partitions: one IDMap2 index, same ids and vectors
    old.add(np.asarray(all_ids, dtype=np.int64), vecs)
    path = Path(str(db) + ".faiss")
    old.save(path)
    caplog.set_level(logging.WARNING, logger="memlab.store.memory")
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        assert "single-index format" in caplog.text
        assert isinstance(store.index, PartitionedFaissIndex)
        assert {u: sorted(store.index.ids(u).tolist()) for u in TEXTS} == ids
        assert store.search("bob", "Abito a Milano", k=1)[0][0].id == ids["bob"][0]
    assert PartitionedFaissIndex.is_partitioned_file(path)  # rewritten in the new format at once


def test_a_file_with_memories_in_the_wrong_user_is_rebuilt(tmp_path: Path, caplog) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        ids = fill(store)
        wrong = PartitionedFaissIndex(store.embedder.dim)
        all_ids = ids["alice"] + ids["bob"]
        wrong.add(np.asarray(all_ids, dtype=np.int64), store.vectors(all_ids), partition="alice")
    wrong.save(Path(str(db) + ".faiss"))  # right ids, right vectors, bob's memories in alice's partition
    caplog.set_level(logging.WARNING, logger="memlab.store.memory")
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        assert "inconsistent" in caplog.text
        assert sorted(store.index.ids("bob").tolist()) == ids["bob"]
        assert sorted(store.index.ids("alice").tolist()) == ids["alice"]


def test_deactivated_and_deleted_memories(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        ids = fill(store)
        fido = ids["alice"][1]
        store.deactivate(fido, "not true any more", user_id="alice")
        assert fido not in [m.id for m, _ in store.search("alice", "Ho un cane di nome Fido", k=10)]
        hits = store.search("alice", "Ho un cane di nome Fido", k=1, include_inactive=True)
        assert hits[0][0].id == fido and store.index.partition_of(fido) == "alice"  # kept, filtered out
        # another connection hard-deletes a row and adds memories of a new user
        con = sqlite3.connect(db)
        con.execute("DELETE FROM memories WHERE id = ?", (ids["bob"][2],))
        con.commit()
        con.close()
        with MemoryStore(db, embedder=FakeEmbedder()) as other:
            carol = other.add("carol", "Abito a Napoli")
        assert [m.id for m, _ in store.search("carol", "Abito a Napoli", k=5)] == [carol.id]  # synced in
        assert store.index.partition_of(carol.id) == "carol"
        assert store.index.partition_of(ids["bob"][2]) is None
        assert sorted(store.index.ids("bob").tolist()) == ids["bob"][:2]
        assert all(m.user_id == "bob" for m, _ in store.search("bob", "Abito a Napoli", k=5))


def test_rebuild_index_and_in_memory_store_are_partitioned(tmp_path: Path) -> None:
    with MemoryStore(":memory:", embedder=FakeEmbedder()) as store:
        ids = fill(store)
        assert isinstance(store.index, PartitionedFaissIndex)
        assert store.search("alice", "Abito a Milano", k=10)[0][0].user_id == "alice"
        before = store.index
        assert store.rebuild_index() is None  # one return on both backends: the index is store.index
        rebuilt = store.index
        assert isinstance(rebuilt, PartitionedFaissIndex) and rebuilt is not before
        assert {u: sorted(rebuilt.ids(u).tolist()) for u in TEXTS} == ids


@pytest.mark.parametrize(
    "make", [lambda d: NumpyIndex(d), lambda d: FaissIndex(d), lambda d: PartitionedFaissIndex(d)],
    ids=["numpy", "faiss-global", "partitioned"],
)
def test_a_given_index_still_works_and_is_never_saved(tmp_path: Path, make) -> None:
    db = tmp_path / "m.db"
    emb = FakeEmbedder()
    given = make(emb.dim)
    with MemoryStore(db, embedder=emb, index=given) as store:
        ids = fill(store)
        assert store.index is given
        for u in TEXTS:
            for text in TEXTS[u]:
                hits = store.search(u, text, k=10)
                assert hits[0][0].text == text and {m.user_id for m, _ in hits} == {u}
    assert not Path(str(db) + ".faiss").exists()
    if isinstance(given, PartitionedFaissIndex):  # a given partitioned index is routed by user too
        assert {u: sorted(given.ids(u).tolist()) for u in TEXTS} == ids
    fresh = make(emb.dim)
    with MemoryStore(db, embedder=emb, index=fresh) as store:  # refilled from SQLite
        assert sorted(fresh.ids().tolist()) == sorted(ids["alice"] + ids["bob"])
        assert store.search("bob", "Lavoro in ospedale", k=1)[0][0].id == ids["bob"][2]


def test_a_factory_that_needs_training_gets_one_index_for_all_users(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    emb = FakeEmbedder()
    with MemoryStore(db, embedder=emb) as store:
        store.add_many("alice", [f"Ricordo numero {i}" for i in range(60)])
        store.add_many("bob", [f"Nota numero {i}" for i in range(60)])
    with MemoryStore(db, embedder=emb, index_factory="IVF2,Flat") as store:  # a partitioned file, another factory
        assert isinstance(store.index, FaissIndex) and len(store.index) == 120
        hits = store.search("bob", "Nota numero 7", k=5)
        assert hits and {m.user_id for m, _ in hits} == {"bob"}
    with MemoryStore(db, embedder=emb, index_factory="HNSW16") as store:  # no training: partitioned HNSW
        assert isinstance(store.index, PartitionedFaissIndex) and store.index.factory == "HNSW16"
        assert {m.user_id for m, _ in store.search("alice", "Ricordo numero 3", k=5)} == {"alice"}
    with MemoryStore(db, embedder=emb) as store:  # back to Flat: the HNSW file is rebuilt
        assert isinstance(store.index, PartitionedFaissIndex) and store.index.factory == "Flat"
