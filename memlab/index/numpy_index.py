"""Exact numpy index: the oracle FAISS results are checked against."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memlab._validation import as_vectors, check_positive_int
from memlab.errors import InvalidInputError

__all__ = ["NumpyIndex"]


class NumpyIndex:
    """Brute-force inner-product search over a dict of vectors (small data, tests, oracles)."""

    def __init__(self, dim: int) -> None:
        self._dim = check_positive_int(dim, name="dim", owner="NumpyIndex")
        self._vecs: dict[int, NDArray[np.float32]] = {}

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    def __len__(self) -> int:
        return len(self._vecs)

    def add(self, ids: NDArray[np.int64], vectors: NDArray[np.float32], /) -> None:
        """Add or replace vectors."""
        vecs = as_vectors(vectors, self._dim, owner="NumpyIndex.add")
        ids_l = [int(i) for i in np.asarray(ids).reshape(-1)]
        if len(ids_l) != len(vecs):
            raise InvalidInputError(f"NumpyIndex.add got {len(ids_l)} ids for {len(vecs)} vectors.")
        for i, v in zip(ids_l, vecs, strict=True):
            self._vecs[i] = v.copy()

    def remove(self, ids: NDArray[np.int64], /) -> None:
        """Remove ids; unknown ids are ignored."""
        for i in np.asarray(ids).reshape(-1):
            self._vecs.pop(int(i), None)

    def search(
        self, queries: NDArray[np.float32], k: int, /, *, allowed: NDArray[np.int64] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """Exact top-k (ties broken by smaller id)."""
        q = as_vectors(queries, self._dim, name="queries", owner="NumpyIndex.search")
        k = check_positive_int(k, name="k", owner="NumpyIndex.search")
        keys = sorted(self._vecs) if allowed is None else sorted(set(int(i) for i in allowed) & set(self._vecs))
        out_s = np.full((len(q), k), -np.inf, dtype=np.float32)
        out_i = np.full((len(q), k), -1, dtype=np.int64)
        if not keys or not len(q):
            return out_s, out_i
        mat = np.stack([self._vecs[i] for i in keys])
        sims = q @ mat.T
        key_arr = np.asarray(keys, dtype=np.int64)
        for r in range(len(q)):
            order = np.lexsort((key_arr, -sims[r]))[:k]
            out_s[r, : len(order)] = sims[r, order]
            out_i[r, : len(order)] = key_arr[order]
        return out_s, out_i

    def ids(self) -> NDArray[np.int64]:
        """All ids."""
        return np.asarray(sorted(self._vecs), dtype=np.int64)
