"""Vector indexes (see :class:`memlab.protocols.VectorIndex`): FAISS for real use (one index per user in the store:
:class:`PartitionedFaissIndex`), numpy as the exact oracle."""

from __future__ import annotations

from memlab.index.faiss_index import FaissIndex
from memlab.index.numpy_index import NumpyIndex
from memlab.index.partitioned import PartitionedFaissIndex

__all__ = ["FaissIndex", "NumpyIndex", "PartitionedFaissIndex"]
