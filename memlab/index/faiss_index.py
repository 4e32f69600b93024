"""FAISS index: ``IndexIDMap2`` over inner product on unit vectors, persisted to one file."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from numpy.typing import NDArray

from memlab._validation import as_vectors, check_positive_int
from memlab.errors import BackendError, InvalidInputError

__all__ = ["FaissIndex"]

# Batched queries are much faster through BLAS (measured here: 64 queries x 100k vectors, 350 ms -> 48 ms).
faiss.cvar.distance_compute_blas_threshold = 4


@contextmanager
def atomic_index_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Write an index file atomically: yields a temp path unique to this process and thread, renamed over ``path``
    when the block succeeds; a failed write leaves the previous file in place and no temp file.

    Raises:
        BackendError: the file cannot be written (read-only folder, disk full, a FAISS write error ...).
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except (RuntimeError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendError(f"Cannot write FAISS index {path}: {first}") from exc
    finally:
        tmp.unlink(missing_ok=True)


class FaissIndex:
    """An id -> vector index searched by inner product.

    Args:
        dim: vector dimension.
        factory: a ``faiss.index_factory`` description of the inner index with inner-product metric,
            e.g. ``"Flat"`` (exact, the default) or ``"HNSW32"``. The outer ``IndexIDMap2`` gives
            stable integer ids and lets the index be rebuilt from SQLite.

    Example:
        >>> import numpy as np
        >>> idx = FaissIndex(2)
        >>> idx.add(np.array([7, 9]), np.array([[1, 0], [0, 1]], dtype=np.float32))
        >>> scores, ids = idx.search(np.array([[1, 0]], dtype=np.float32), 1)
        >>> int(ids[0, 0])
        7
    """

    def __init__(self, dim: int, *, factory: str = "Flat") -> None:
        self._dim = check_positive_int(dim, name="dim", owner="FaissIndex")
        self.factory = factory
        try:
            inner = faiss.index_factory(self._dim, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as exc:
            raise InvalidInputError(f"Invalid faiss factory string {factory!r}: {exc}") from exc
        self._index = faiss.IndexIDMap2(inner)
        # add/remove resize faiss' buffers while a search may read them from another thread (the background
        # agent searches while the chat thread adds): one re-entrant lock per index.
        self._lock = threading.RLock()
        self._selectors: dict[int, tuple[Any, Any, Any]] = {}  # id(array) -> (weakref, selector, params)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def is_trained(self) -> bool:
        """False for index types (IVF) that must be trained before adding."""
        return bool(self._index.is_trained)

    def train(self, vectors: NDArray[np.float32]) -> None:
        """Train the inner index (needed for IVF/PQ factories; a no-op for Flat/HNSW)."""
        self._index.train(as_vectors(vectors, self._dim, owner="FaissIndex.train"))

    def add(self, ids: NDArray[np.int64], vectors: NDArray[np.float32], /) -> None:
        """Add vectors under ``ids``; an id already present is replaced.

        Raises:
            BackendError: an id is already present and the index type cannot remove ids (HNSW), so it cannot
                be replaced; nothing is added.
        """
        vecs = as_vectors(vectors, self._dim, owner="FaissIndex.add")
        ids_arr = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        if len(ids_arr) != len(vecs):
            raise InvalidInputError(f"FaissIndex.add got {len(ids_arr)} ids for {len(vecs)} vectors.")
        if len(ids_arr) == 0:
            return
        with self._lock:
            if len(self):
                try:
                    self.remove(ids_arr)
                except BackendError:  # HNSW cannot remove: adding NEW ids is still fine (faiss left the index as it was)
                    clash = ids_arr[np.isin(ids_arr, self.ids())]
                    if len(clash):
                        raise BackendError(
                            f"This faiss index ({self.factory}) cannot replace ids that are already present "
                            f"(e.g. {int(clash[0])}): use a Flat or IVF factory, or rebuild the index."
                        ) from None
            self._index.add_with_ids(vecs, ids_arr)

    def _add_new(self, ids: NDArray[np.int64], vectors: NDArray[np.float32], /) -> None:
        """Add vectors under ids the caller knows are absent (validated int64 ids, float32 vectors): no
        ``remove_ids`` pass over the index, which costs a scan of every stored id."""
        with self._lock:
            self._index.add_with_ids(vectors, ids)

    def remove(self, ids: NDArray[np.int64], /) -> None:
        """Remove ``ids``; unknown ids are ignored."""
        ids_arr = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        if len(ids_arr) and len(self):
            try:
                with self._lock:
                    self._index.remove_ids(faiss.IDSelectorBatch(ids_arr))
            except RuntimeError as exc:  # HNSW does not support removal
                raise BackendError(f"This faiss index ({self.factory}) cannot remove ids: {exc}") from exc

    def search(
        self, queries: NDArray[np.float32], k: int, /, *, allowed: NDArray[np.int64] | None = None,
        exclude: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """Top-``k`` ids by inner product, optionally restricted to the ``allowed`` ids minus the ``exclude`` ids
        (the same search as with ``allowed`` minus ``exclude``, without building a selector of that difference).

        Returns:
            ``(scores, ids)``, both shape ``(n_queries, k)``; slots with no hit have id ``-1``.
        """
        q = as_vectors(queries, self._dim, name="queries", owner="FaissIndex.search")
        k = check_positive_int(k, name="k", owner="FaissIndex.search")
        n = len(q)
        if n == 0 or len(self) == 0 or (allowed is not None and len(allowed) == 0):
            return np.full((n, k), -np.inf, dtype=np.float32), np.full((n, k), -1, dtype=np.int64)
        drop = None if exclude is None else np.ascontiguousarray(np.asarray(exclude, dtype=np.int64).reshape(-1))
        with self._lock:
            if allowed is None and (drop is None or len(drop) == 0):
                scores, ids = self._index.search(q, k)
            elif drop is None or len(drop) == 0:
                sel, params = self._selector(allowed)  # type: ignore[arg-type]
                scores, ids = self._index.search(q, k, params=params)
            else:
                # every selector object stays referenced here until the search returns (faiss keeps raw pointers)
                drop_sel = faiss.IDSelectorBatch(drop)
                not_drop = faiss.IDSelectorNot(drop_sel)
                base = None if allowed is None else self._selector(allowed)[0]
                sel = not_drop if base is None else faiss.IDSelectorAnd(base, not_drop)
                scores, ids = self._index.search(q, k, params=_params_for(self.factory, sel))
        return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)

    def _selector(self, allowed: NDArray[np.int64]) -> tuple[Any, faiss.SearchParameters]:
        """The id selector of ``allowed`` and search parameters using it. Building the id selector costs a pass over the
        ids (4-5 ms for 100k), so for a read-only int64 array (a caller's cached id list, which cannot change in
        place) it is kept, per array object, while the array lives; any other array gets a fresh selector."""
        cacheable = isinstance(allowed, np.ndarray) and allowed.dtype == np.int64 and not allowed.flags.writeable
        if cacheable:
            hit = self._selectors.get(id(allowed))
            if hit is not None and hit[0]() is allowed:
                return hit[1], hit[2]
        arr = np.ascontiguousarray(np.asarray(allowed, dtype=np.int64))
        sel = faiss.IDSelectorBatch(arr)
        params = _params_for(self.factory, sel)
        if cacheable:
            for key in [k for k, (ref, _, _) in self._selectors.items() if ref() is None]:
                del self._selectors[key]  # arrays that are gone
            self._selectors[id(allowed)] = (weakref.ref(allowed), sel, params)
        return sel, params

    def ids(self) -> NDArray[np.int64]:
        """All ids in the index."""
        with self._lock:
            return faiss.vector_to_array(self._index.id_map).astype(np.int64)

    def reconstruct(self, id_: int) -> NDArray[np.float32]:
        """The stored vector of ``id_``."""
        with self._lock:
            return np.asarray(self._index.reconstruct(int(id_)), dtype=np.float32)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index atomically: a temp file unique to this process and thread, then a rename.

        Two processes flushing one database each write their own temp file, so neither can move the other's
        away; a failed write removes its temp file and leaves the previous index in place.

        Raises:
            BackendError: the file cannot be written (read-only folder, disk full ...).
        """
        with atomic_index_file(path) as tmp, self._lock:
            faiss.write_index(self._index, str(tmp))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, factory: str = "Flat") -> FaissIndex:
        """Read an index written by :meth:`save`.

        Raises:
            BackendError: the file is not a readable FAISS IDMap2 index.
        """
        try:
            raw = faiss.read_index(str(path))
        except RuntimeError as exc:
            raise BackendError(f"Cannot read FAISS index {path}: {exc}") from exc
        return cls._wrap(raw, path, factory=factory)

    @classmethod
    def _wrap(cls, raw: faiss.Index, path: str | os.PathLike[str], *, factory: str) -> FaissIndex:
        """A :class:`FaissIndex` around a deserialised faiss index (``path`` names it in errors)."""
        if not isinstance(raw, faiss.IndexIDMap2):
            try:
                raw = faiss.downcast_index(raw)
            except Exception as exc:  # pragma: no cover - defensive
                raise BackendError(f"{path} is not an IndexIDMap2 index") from exc
            if not isinstance(raw, faiss.IndexIDMap2):
                raise BackendError(f"{path} is not an IndexIDMap2 index")
        obj = cls.__new__(cls)
        obj._dim = int(raw.d)
        obj.factory = factory
        obj._index = raw
        obj._lock = threading.RLock()
        obj._selectors = {}
        return obj


def _params_for(factory: str, sel: faiss.IDSelector) -> faiss.SearchParameters:
    if factory.upper().startswith("HNSW"):
        return faiss.SearchParametersHNSW(sel=sel)
    if factory.upper().startswith("IVF"):
        return faiss.SearchParametersIVF(sel=sel)
    return faiss.SearchParameters(sel=sel)
