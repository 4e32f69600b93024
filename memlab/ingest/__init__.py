"""Ingestion: text, Markdown and HTML -> boundary-aware chunks with overlap -> memlab's embedder ->
Qdrant (embedded local mode by default, a server URL when configured). Needs ``memlab[ingest]``.

- :func:`parse_document` / :func:`detect_format`: clean sections of a document.
- :func:`chunk_text`: fixed-size chunks with overlap, cut at paragraph, sentence or word boundaries.
- :class:`ChunkStore`: per-user chunks with tags; ``ingest_text``, ``ingest_path``, ``ingest_files`` (with the
  seed's files/chunks/errors counts), ``query``. The ``semantic``
  MCP server (``vector.query``) and ``POST /v1/ingest`` use it.
"""

from __future__ import annotations

from memlab.ingest.chunk import Chunk, chunk_text
from memlab.ingest.parse import FORMATS, Document, Section, detect_format, parse_document
from memlab.ingest.store import ChunkHit, ChunkStore, IngestReport, PathIngestReport

__all__ = [
    "FORMATS",
    "Chunk",
    "ChunkHit",
    "ChunkStore",
    "Document",
    "IngestReport",
    "PathIngestReport",
    "Section",
    "chunk_text",
    "detect_format",
    "parse_document",
]
