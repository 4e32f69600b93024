"""FaissIndex against the exact NumpyIndex oracle (faiss TestComputeGT pattern)."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.errors import BackendError, DimensionMismatchError, InvalidInputError
from memlab.index import FaissIndex, NumpyIndex


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("impl", [FaissIndex, NumpyIndex])
def test_contract_shapes_missing_hits_and_replacement(impl, rng):
    idx = impl(8)
    assert len(idx) == 0
    s, i = idx.search(unit(rng, 2, 8), 3)
    assert s.shape == (2, 3) and (i == -1).all()
    v = unit(rng, 5, 8)
    idx.add(np.arange(10, 15), v)
    s, i = idx.search(v[:1], 10)
    assert i[0, 0] == 10 and (i[0, 5:] == -1).all() and set(i[0, :5]) == set(range(10, 15))
    idx.add(np.array([10]), v[1:2])  # replace id 10's vector
    assert len(idx) == 5
    idx.remove(np.array([11, 999]))
    assert sorted(idx.ids().tolist()) == [10, 12, 13, 14]
    with pytest.raises(DimensionMismatchError):
        idx.add(np.array([1]), np.ones((1, 3), dtype=np.float32))
    with pytest.raises(InvalidInputError):
        idx.search(v[:1], 0)


def test_faiss_equals_numpy_with_and_without_selector(rng):
    d, n = 32, 2000
    vecs = unit(rng, n, d)
    ids = rng.permutation(10 * n)[:n].astype(np.int64)
    f, o = FaissIndex(d), NumpyIndex(d)
    f.add(ids, vecs)
    o.add(ids, vecs)
    q = unit(rng, 25, d)
    fs, fi = f.search(q, 10)
    os_, oi = o.search(q, 10)
    np.testing.assert_array_equal(fi, oi)
    np.testing.assert_allclose(fs, os_, atol=1e-5)
    allowed = rng.choice(ids, 300, replace=False)
    fs, fi = f.search(q, 10, allowed=allowed)
    os_, oi = o.search(q, 10, allowed=allowed)
    np.testing.assert_array_equal(fi, oi)
    assert set(fi.ravel()) <= set(allowed.tolist())


def test_save_load_roundtrip_and_corrupt_file(tmp_path, rng):
    f = FaissIndex(4)
    f.add(np.array([3, 4]), unit(rng, 2, 4))
    f.save(tmp_path / "x.faiss")
    g = FaissIndex.load(tmp_path / "x.faiss")
    assert sorted(g.ids().tolist()) == [3, 4] and g.dim == 4
    (tmp_path / "bad.faiss").write_bytes(b"nope")
    with pytest.raises(BackendError):
        FaissIndex.load(tmp_path / "bad.faiss")


def test_bad_factory_string():
    with pytest.raises(InvalidInputError):
        FaissIndex(8, factory="NotAnIndex")


def test_hnsw_adds_in_chunks_and_refuses_to_replace(rng):
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    idx = FaissIndex(16, factory="HNSW32")
    idx.add(np.arange(0, 150), vecs[:150])
    idx.add(np.arange(150, 300), vecs[150:])  # HNSW cannot remove ids: adding new ones must still work
    assert len(idx) == 300
    _, got = idx.search(vecs[[7, 222]], 1)
    assert got[:, 0].tolist() == [7, 222]
    with pytest.raises(BackendError, match="cannot replace"):
        idx.add(np.array([5, 1000]), vecs[:2])
    assert len(idx) == 300  # nothing added, nothing lost
