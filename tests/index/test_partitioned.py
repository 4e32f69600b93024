"""PartitionedFaissIndex against the exact NumpyIndex oracle, its isolation, persistence and file-format checks."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memlab.errors import BackendError, DimensionMismatchError, InvalidInputError
from memlab.index import FaissIndex, NumpyIndex, PartitionedFaissIndex
from memlab.index.partitioned import MAGIC


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def filled(rng, d=16, users=("alice", "bob", "carol"), per=200):
    """A partitioned index, the oracle of each user, and each user's ids (ids interleave across users)."""
    idx = PartitionedFaissIndex(d)
    oracles, owned = {}, {}
    ids = rng.permutation(10 * per * len(users))[: per * len(users)].astype(np.int64)
    for j, u in enumerate(users):
        mine = ids[j :: len(users)]
        vecs = unit(rng, len(mine), d)
        idx.add(mine, vecs, partition=u)
        oracles[u] = NumpyIndex(d)
        oracles[u].add(mine, vecs)
        owned[u] = mine
    return idx, oracles, owned


def test_each_partition_equals_the_exact_oracle_with_and_without_allowed(rng):
    idx, oracles, owned = filled(rng)
    q = unit(rng, 12, 16)
    for u, oracle in oracles.items():
        s, i = idx.search(q, 10, partition=u)
        os_, oi = oracle.search(q, 10)
        np.testing.assert_array_equal(i, oi)
        np.testing.assert_allclose(s, os_, atol=1e-5)
        allowed = rng.choice(owned[u], 40, replace=False)
        s, i = idx.search(q, 10, allowed=allowed, partition=u)
        os_, oi = oracle.search(q, 10, allowed=allowed)
        np.testing.assert_array_equal(i, oi)
        assert set(i.ravel().tolist()) <= set(allowed.tolist())
    assert len(idx) == sum(len(v) for v in owned.values())
    assert idx.partitions() == ["alice", "bob", "carol"]


def test_a_partition_never_returns_another_partitions_ids(rng):
    idx, _, owned = filled(rng, per=50)
    bob_vec = np.stack([idx.reconstruct(int(owned["bob"][0]))])
    everyone = np.concatenate(list(owned.values()))
    _, i = idx.search(bob_vec, 50, allowed=everyone, partition="alice")  # even when allowed names bob's ids
    assert set(i.ravel().tolist()) - {-1} <= set(owned["alice"].tolist())
    assert int(owned["bob"][0]) not in i
    _, i = idx.search(bob_vec, 5, partition="nobody")
    assert (i == -1).all()


def test_no_partition_searches_all_and_merges_like_one_index(rng):
    idx, oracles, owned = filled(rng, per=80)
    one = NumpyIndex(16)
    for u in owned:
        one.add(owned[u], np.stack([idx.reconstruct(int(x)) for x in owned[u]]))
    q = unit(rng, 5, 16)
    s, i = idx.search(q, 7)
    os_, oi = one.search(q, 7)
    np.testing.assert_array_equal(i, oi)
    np.testing.assert_allclose(s, os_, atol=1e-5)
    allowed = np.concatenate([owned["alice"][:10], owned["carol"][:10]])
    _, i = idx.search(q, 7, allowed=allowed)
    _, oi = one.search(q, 7, allowed=allowed)
    np.testing.assert_array_equal(i, oi)


def test_replace_moves_an_id_and_remove_ignores_unknown_ids(rng):
    idx = PartitionedFaissIndex(8)
    v = unit(rng, 3, 8)
    idx.add(np.array([1, 2]), v[:2], partition="a")
    idx.add(np.array([2]), v[2:], partition="b")  # id 2 now lives in b, with the new vector
    assert len(idx) == 2 and idx.partition_of(2) == "b" and idx.ids("a").tolist() == [1]
    np.testing.assert_allclose(idx.reconstruct(2), v[2], atol=1e-6)
    idx.add(np.array([1]), v[2:], partition="a")  # replaced in place
    assert idx.ids("a").tolist() == [1] and len(idx) == 2
    np.testing.assert_allclose(idx.reconstruct(1), v[2], atol=1e-6)
    idx.remove(np.array([2, 999]))
    assert sorted(idx.ids().tolist()) == [1] and idx.partition_of(2) is None and idx.partitions() == ["a"]
    _, i = idx.search(v[2:], 3, partition="b")
    assert (i == -1).all()
    with pytest.raises(BackendError):
        idx.reconstruct(2)


def test_bad_input_is_refused_and_nothing_is_added(rng):
    idx = PartitionedFaissIndex(8)
    with pytest.raises(InvalidInputError, match="partition"):
        idx.add(np.array([1]), unit(rng, 1, 8), partition=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        idx.add(np.array([1]), unit(rng, 1, 8))  # type: ignore[call-arg]  # the partition is required
    with pytest.raises(DimensionMismatchError):
        idx.add(np.array([1]), np.ones((1, 3), dtype=np.float32), partition="a")
    with pytest.raises(InvalidInputError, match="same id twice"):
        idx.add(np.array([4, 4]), unit(rng, 2, 8), partition="a")
    with pytest.raises(InvalidInputError, match="ids for"):
        idx.add(np.array([1, 2]), unit(rng, 1, 8), partition="a")
    assert len(idx) == 0
    with pytest.raises(InvalidInputError):
        idx.search(unit(rng, 1, 8), 0, partition="a")
    with pytest.raises(InvalidInputError, match="training"):
        PartitionedFaissIndex(8, factory="IVF4,Flat")
    with pytest.raises(InvalidInputError, match="factory"):
        PartitionedFaissIndex(8, factory="NoSuchIndex")


def test_save_load_round_trip_in_one_file(tmp_path: Path, rng):
    idx, oracles, owned = filled(rng, per=60, users=("alice", "bob", "李四"))
    idx.add(np.array([10**9]), unit(rng, 1, 16), partition="empty-later")
    idx.remove(np.array([10**9]))  # an emptied partition is not written
    path = tmp_path / "m.db.faiss"
    idx.save(path)
    assert path.read_bytes()[: len(MAGIC)] == MAGIC and PartitionedFaissIndex.is_partitioned_file(path)
    assert [p.name for p in tmp_path.iterdir()] == ["m.db.faiss"]  # no temporary file left
    back = PartitionedFaissIndex.load(path)
    assert back.dim == 16 and len(back) == len(idx) and back.partitions() == ["alice", "bob", "李四"]
    q = unit(rng, 4, 16)
    for u in oracles:
        np.testing.assert_array_equal(back.search(q, 5, partition=u)[1], idx.search(q, 5, partition=u)[1])
        assert sorted(back.ids(u).tolist()) == sorted(owned[u].tolist())
    back.add(np.array([10**9 + 1]), unit(rng, 1, 16), partition="bob")  # a loaded index is writable
    assert back.partition_of(10**9 + 1) == "bob"


def test_an_old_single_index_file_and_damaged_files_are_refused(tmp_path: Path, rng):
    old = FaissIndex(8)
    old.add(np.array([1, 2]), unit(rng, 2, 8))
    old.save(tmp_path / "old.faiss")  # memlab's format before partitions
    assert not PartitionedFaissIndex.is_partitioned_file(tmp_path / "old.faiss")
    with pytest.raises(BackendError, match="not a partitioned FAISS index"):
        PartitionedFaissIndex.load(tmp_path / "old.faiss")
    good = PartitionedFaissIndex(8)
    good.add(np.array([1, 2]), unit(rng, 2, 8), partition="a")
    good.save(tmp_path / "good.faiss")
    data = (tmp_path / "good.faiss").read_bytes()
    (tmp_path / "cut.faiss").write_bytes(data[: len(data) // 2])
    (tmp_path / "flip.faiss").write_bytes(data[:40] + bytes(b ^ 0xFF for b in data[40:80]) + data[80:])
    (tmp_path / "v9.faiss").write_bytes(MAGIC + (9).to_bytes(4, "little") + data[20:])
    for name in ("cut.faiss", "flip.faiss", "v9.faiss", "missing.faiss"):
        with pytest.raises(BackendError):
            PartitionedFaissIndex.load(tmp_path / name)


def test_save_into_a_missing_folder_raises_and_leaves_nothing(tmp_path: Path, rng):
    idx = PartitionedFaissIndex(4)
    idx.add(np.array([1]), unit(rng, 1, 4), partition="a")
    with pytest.raises(BackendError, match="Cannot write FAISS index"):
        idx.save(tmp_path / "no" / "such" / "m.faiss")
    assert list(tmp_path.iterdir()) == []


def test_concurrent_adds_and_searches_of_different_users(rng):
    idx = PartitionedFaissIndex(16)
    vecs = unit(rng, 4000, 16)
    errors: list[BaseException] = []

    def writer(user: str, offset: int) -> None:
        try:
            for s in range(0, 1000, 50):
                ids = np.arange(offset + s, offset + s + 50, dtype=np.int64)
                idx.add(ids, vecs[offset + s : offset + s + 50], partition=user)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader(user: str, offset: int) -> None:
        try:
            for j in range(200):
                _, i = idx.search(vecs[j : j + 1], 5, partition=user)
                hits = i[i >= 0]
                assert ((hits >= offset) & (hits < offset + 1000)).all()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=f, args=(u, o)) for u, o in (("a", 0), ("b", 1000), ("c", 2000))
               for f in (writer, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(idx) == 3000 and sorted(idx.ids("b").tolist()) == list(range(1000, 2000))
