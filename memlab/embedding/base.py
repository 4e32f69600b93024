"""Shared embedder machinery: validation, batching, a text-hash cache, normalisation."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memlab.embedding.thresholds import EmbedderThresholds, load_thresholds
from memlab.errors import EmbedderError, InvalidInputError
from memlab.protocols import EmbedMode

__all__ = ["BaseEmbedder", "EmbedderThresholds"]


class BaseEmbedder:
    """Base class: subclasses implement :meth:`_encode` on a clean batch.

    Adds input validation, batching, an LRU cache keyed by ``sha256(mode + text)`` (the same text is never
    embedded twice while cached), and a float32 unit-norm guarantee.
    """

    name: str = "base"

    def __init__(self, *, batch_size: int = 64, cache_size: int = 50_000) -> None:
        if batch_size < 1:
            raise InvalidInputError(f"The 'batch_size' parameter of {type(self).__name__} must be >= 1. Got {batch_size}.")
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, NDArray[np.float32]] = OrderedDict()
        self._thresholds: EmbedderThresholds | None = None
        self.n_encoded = 0  # texts actually sent to the model (cache misses)

    @property
    def thresholds(self) -> EmbedderThresholds:
        """This embedder's calibrated thresholds (``memlab/embedding/calibration/<name>.json``), read on first use.

        An embedder that was never calibrated gets the seed defaults (candidate 0.7, chat search 0.3).
        Assign an :class:`EmbedderThresholds` to override.
        """
        if self._thresholds is None:
            self._thresholds = load_thresholds(self.name)
        return self._thresholds

    @thresholds.setter
    def thresholds(self, value: EmbedderThresholds) -> None:
        self._thresholds = value

    @property
    def dim(self) -> int:
        """Vector dimension."""
        raise NotImplementedError

    def _encode(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        raise NotImplementedError

    def get_params(self) -> dict[str, object]:
        """JSON-able description, recorded in eval runs."""
        return {"name": self.name, "dim": self.dim, "batch_size": self.batch_size}

    def embed(self, texts: Sequence[str], /, *, mode: EmbedMode = "passage") -> NDArray[np.float32]:
        """Embed ``texts``; returns float32 ``(len(texts), dim)`` with unit-norm rows.

        Raises:
            InvalidInputError: ``texts`` is a bare string or holds a non-string.
            EmbedderError: the model failed.
        """
        if isinstance(texts, str):
            raise InvalidInputError("The 'texts' parameter of embed must be a sequence of str, not a single str.")
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InvalidInputError(f"texts[{i}] must be a str. Got {type(t).__name__} instead.")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        keys = [hashlib.sha256(f"{mode}\x00{t}".encode()).digest() for t in texts]
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._cache and k not in missing:
                missing[k] = t
        if missing:
            miss_keys = list(missing)
            miss_texts = [missing[k] for k in miss_keys]
            for start in range(0, len(miss_texts), self.batch_size):
                chunk = miss_texts[start : start + self.batch_size]
                try:
                    vecs = np.asarray(self._encode(chunk, mode), dtype=np.float32)
                except Exception as exc:  # wrap any backend failure
                    raise EmbedderError(f"Embedder {self.name!r} failed on a batch of {len(chunk)}: {exc}") from exc
                if vecs.shape != (len(chunk), self.dim):
                    raise EmbedderError(f"Embedder {self.name!r} returned shape {vecs.shape}, expected {(len(chunk), self.dim)}.")
                norms = np.linalg.norm(vecs, axis=1, keepdims=True)
                vecs = vecs / np.maximum(norms, 1e-12)
                self.n_encoded += len(chunk)
                for k, v in zip(miss_keys[start : start + self.batch_size], vecs, strict=True):
                    self._cache[k] = v
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        for i, k in enumerate(keys):
            v = self._cache.get(k)
            if v is None:  # evicted within this call (batch larger than the cache): encode directly
                v = self._encode([texts[i]], mode)[0]
                v = v / max(float(np.linalg.norm(v)), 1e-12)
            else:
                self._cache.move_to_end(k)
            out[i] = v
        return out

    def clear_cache(self) -> None:
        """Forget every cached embedding (benchmarks that time the model itself call this)."""
        self._cache.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
