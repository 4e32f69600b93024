"""memlab: a research and evaluation harness for the long-term memory of LLM assistants.

Quickstart:
    >>> from memlab import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
    >>> item = store.add("u1", "Abito a Roma", key="home_city")
    >>> item.is_active
    True
"""

from __future__ import annotations

from memlab.app import Memlab, open_memlab
from memlab.config import Settings
from memlab.embedding import load_embedder
from memlab.errors import (
    BackendError,
    DatasetFormatError,
    DimensionMismatchError,
    EmbedderError,
    InvalidInputError,
    JudgeError,
    LLMError,
    MemlabError,
    MissingDependencyError,
    NotFoundError,
    UnknownComponentError,
)
from memlab.ingest import ChunkStore
from memlab.judges.registry import load_judge
from memlab.protocols import LLM, Embedder, Judge, VectorIndex
from memlab.records import ConflictType, Contradiction, IntegrityResult, Label, MemoryItem, Urgency, Verdict
from memlab.store import MemoryStore, StoreBackend, open_store

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "ChunkStore",
    "ConflictType",
    "Contradiction",
    "DatasetFormatError",
    "DimensionMismatchError",
    "Embedder",
    "EmbedderError",
    "IntegrityResult",
    "InvalidInputError",
    "Judge",
    "JudgeError",
    "LLM",
    "LLMError",
    "Label",
    "Memlab",
    "MemlabError",
    "MemoryItem",
    "MemoryStore",
    "MissingDependencyError",
    "NotFoundError",
    "Settings",
    "StoreBackend",
    "UnknownComponentError",
    "Urgency",
    "VectorIndex",
    "Verdict",
    "load_embedder",
    "load_judge",
    "open_memlab",
    "open_store",
    "__version__",
]
