"""Structural interfaces (``typing.Protocol``) for memlab's pluggable parts.

Protocols are synchronous and take batches: a sequence in, a list/array out, order and length kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

from memlab.records import Verdict

__all__ = ["LLM", "Embedder", "Judge", "VectorIndex"]

T = TypeVar("T", bound=BaseModel)

EmbedMode = Literal["passage", "query"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-norm float32 vectors.

    ``mode`` matters only for models trained with asymmetric prefixes (e5: ``query:``/``passage:``);
    symmetric models ignore it. Memory-vs-memory comparison uses ``passage`` on both sides.
    """

    name: str
    """Registry name (``minilm``, ``e5`` ...), recorded in stores and runs."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str], /, *, mode: EmbedMode = "passage") -> NDArray[np.float32]:
        """Embed a batch. Returns shape ``(len(texts), dim)``, float32, rows of unit norm."""
        ...

    @property
    def thresholds(self) -> Any:
        """This embedder's calibrated similarity thresholds (an
        :class:`~memlab.embedding.thresholds.EmbedderThresholds`; the seed defaults when never calibrated)."""
        ...

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (name, dim...), recorded in stores and eval runs."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """An id -> vector index searched by inner product (cosine on unit vectors)."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def __len__(self) -> int: ...

    def add(self, ids: NDArray[np.int64], vectors: NDArray[np.float32], /) -> None:
        """Add (or replace) vectors under integer ids."""
        ...

    def remove(self, ids: NDArray[np.int64], /) -> None:
        """Remove ids (unknown ids are ignored)."""
        ...

    def search(
        self, queries: NDArray[np.float32], k: int, /, *, allowed: NDArray[np.int64] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """Top-k by inner product, optionally restricted to ``allowed`` ids.

        Returns ``(scores, ids)`` of shape ``(n_queries, k)``; missing hits have id ``-1``.
        """
        ...

    def ids(self) -> NDArray[np.int64]:
        """All ids in the index."""
        ...


@runtime_checkable
class Judge(Protocol):
    """Pairwise contradiction judge: does the second statement contradict the first?"""

    name: str

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """One :class:`~memlab.records.Verdict` per pair, same order."""
        ...

    def get_params(self) -> dict[str, Any]:
        """JSON-able description, recorded in eval runs."""
        ...


@runtime_checkable
class LLM(Protocol):
    """A chat model. Messages are ``{"role": "system"|"user"|"assistant", "content": str}``."""

    name: str

    def chat(self, messages: Sequence[dict[str, Any]], /) -> str:
        """Return the assistant's reply text (any hidden ``thinking`` is dropped)."""
        ...

    def structured(self, messages: Sequence[dict[str, Any]], schema: type[T], /) -> T:
        """Return the reply parsed and validated as ``schema`` (raises ``LLMError`` if it does not validate)."""
        ...
