"""Embedder registry: build an embedder by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memlab.embedding.base import BaseEmbedder
from memlab.errors import UnknownComponentError

if TYPE_CHECKING:
    from memlab.config import Settings
    from memlab.protocols import Embedder

__all__ = ["available_embedders", "load_embedder", "register_embedder", "resolve_embedder"]

_FACTORIES: dict[str, Callable[[], BaseEmbedder]] = {}
_SHARED: dict[str, BaseEmbedder] = {}


def register_embedder(name: str, factory: Callable[[], BaseEmbedder]) -> None:
    """Register ``factory`` under ``name`` (overrides an existing entry)."""
    _FACTORIES[name] = factory


def available_embedders() -> list[str]:
    """Registered names (plus the ``st:<path>`` form)."""
    _register_defaults()
    return sorted(_FACTORIES)


def load_embedder(name: str = "minilm", *, shared: bool = True) -> BaseEmbedder:
    """Build (or reuse) the embedder registered as ``name``.

    Args:
        name: a registered name, or ``st:<local path or hub id>`` for a sentence-transformers model.
        shared: reuse one instance per name in this process (models are big; the cache is shared too).

    Raises:
        UnknownComponentError: the name is not registered.
    """
    _register_defaults()
    if shared and name in _SHARED:
        return _SHARED[name]
    if name.startswith("st:"):
        from memlab.embedding.sentence_transformers import SentenceTransformerEmbedder

        emb: BaseEmbedder = SentenceTransformerEmbedder(name[3:], name=name)
    elif name in _FACTORIES:
        emb = _FACTORIES[name]()
    else:
        raise UnknownComponentError("embedder", name, [*_FACTORIES, "st:<path>"])
    if shared:
        _SHARED[name] = emb
    return emb


def _register_defaults() -> None:
    if "minilm" not in _FACTORIES:
        from memlab.embedding.sentence_transformers import MiniLMEmbedder

        register_embedder("minilm", MiniLMEmbedder)
    if "e5" not in _FACTORIES:
        from memlab.embedding.e5 import E5Embedder

        register_embedder("e5", E5Embedder)
        register_embedder("e5-raw", lambda: E5Embedder(center=False))


def resolve_embedder(embedder: Embedder | str | None = None, *, settings: Settings | None = None) -> Embedder:
    """The embedder to use: an instance as given, a name loaded with :func:`load_embedder`, or ``None`` for the
    product default (``settings.embedder``; ``Settings().embedder`` when no settings are given, i.e. ``e5``).

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> fake = FakeEmbedder(dim=8)
        >>> resolve_embedder(fake) is fake
        True
    """
    if embedder is None:
        from memlab.config import Settings

        embedder = (settings or Settings()).embedder
    return load_embedder(embedder) if isinstance(embedder, str) else embedder
