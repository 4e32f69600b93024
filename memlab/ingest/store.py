"""ChunkStore: ingested document chunks of many users in Qdrant (embedded local mode, or a server URL).

``ingest`` = parse (:func:`~memlab.ingest.parse_document`) -> chunk with overlap (:func:`~memlab.ingest.chunk_text`)
-> embed with memlab's embedder -> upsert into one Qdrant collection. Every point carries its ``user_id`` and every
query filters on it (isolation is a security boundary, as in the memory store); ``tags`` filter too (a chunk must
carry all the requested tags). Re-ingesting a source replaces its chunks (ids are derived from user, source and
position; old chunks of the source are deleted first).

The embedded mode (``QdrantClient(path=...)``, or ``":memory:"``) needs no server but locks its folder: one
process at a time. For several processes (``memlab serve`` plus ``memlab mcp serve semantic``), run a Qdrant server
and give its ``url``.

Example:
    >>> from memlab.testing import FakeEmbedder
    >>> store = ChunkStore(path=":memory:", embedder=FakeEmbedder(dim=16, bag_of_words=True))
    >>> store.ingest_text("alice", "# Gatti\\n\\nIl mio gatto si chiama Miao.", fmt="markdown", source="gatti.md",
    ...                   tags=["casa"]).n_chunks
    1
    >>> [h.text for h in store.query("alice", "gatto Miao", k=1, tags=["casa"])]
    ['Il mio gatto si chiama Miao.']
    >>> store.query("bob", "gatto Miao")
    []
    >>> store.close()
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab._validation import check_positive_int, check_text, check_user_id
from memlab.errors import (
    BackendError,
    DimensionMismatchError,
    InvalidInputError,
    MissingDependencyError,
    NotFoundError,
)
from memlab.ingest.chunk import chunk_text
from memlab.ingest.parse import detect_format, parse_document

__all__ = ["ChunkHit", "ChunkStore", "IngestReport", "PathIngestReport"]

_NS = uuid.UUID("6f1c1a52-9a3e-4d7e-8f52-3d1f0c9b7a11")
_MAX_TAGS = 20


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """One query result.

    Attributes:
        text: the chunk.
        score: cosine similarity to the query.
        source: the document it came from (file name or given label).
        title: the document's title.
        heading: the section heading above the chunk.
        tags: the document's tags.
        chunk: position of the chunk in its document.
    """

    text: str
    score: float
    source: str
    title: str = ""
    heading: str = ""
    tags: tuple[str, ...] = ()
    chunk: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view."""
        return {"text": self.text, "score": round(self.score, 4), "source": self.source, "title": self.title,
                "heading": self.heading, "tags": list(self.tags), "chunk": self.chunk}


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one ingestion stored.

    Attributes:
        source: the document label.
        fmt: the format it was parsed as.
        title: its title.
        n_chunks: chunks stored (0 for an empty document).
        n_chars: characters of clean text.
        replaced: chunks of an earlier version of the same source that were removed.
        tags: the tags given.
    """

    source: str
    fmt: str
    title: str
    n_chunks: int
    n_chars: int
    replaced: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view."""
        return {"source": self.source, "fmt": self.fmt, "title": self.title, "n_chunks": self.n_chunks,
                "n_chars": self.n_chars, "replaced": self.replaced, "tags": list(self.tags)}


@dataclass(frozen=True, slots=True)
class PathIngestReport:
    """What ingesting a file or a folder stored (:meth:`ChunkStore.ingest_files`), with the seed's statistics.

    Attributes:
        documents: one report per document stored.
        failed: ``(source, reason)`` of every file that could not be ingested (unsupported type, too large,
            unreadable); the others were stored all the same.
    """

    documents: tuple[IngestReport, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> int:
        """Files stored."""
        return len(self.documents)

    @property
    def chunks(self) -> int:
        """Chunks stored, over every file."""
        return sum(d.n_chunks for d in self.documents)

    @property
    def errors(self) -> int:
        """Files that failed."""
        return len(self.failed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view: ``files``, ``chunks``, ``errors``, ``documents`` and ``failed`` (``{source, error}``)."""
        return {"files": self.files, "chunks": self.chunks, "errors": self.errors,
                "documents": [d.to_dict() for d in self.documents],
                "failed": [{"source": src, "error": why} for src, why in self.failed]}


def _check_tags(tags: Iterable[str] | None, owner: str) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise InvalidInputError(f"The 'tags' parameter of {owner} must be a list of str, not a single str.")
    out = []
    for t in tags:
        t = check_text(t, name="tags[]", owner=owner, max_chars=64).strip().lower()
        if t not in out:
            out.append(t)
    if len(out) > _MAX_TAGS:
        raise InvalidInputError(f"The 'tags' parameter of {owner} must have at most {_MAX_TAGS} tags. Got {len(out)}.")
    return tuple(out)


def _with_headings(title: str, heading: str, text: str) -> str:
    path = [h for h in dict.fromkeys((title, heading)) if h and h not in text[:200]]
    return (" > ".join(path) + "\n" + text) if path else text


class ChunkStore:
    """Document chunks in a Qdrant collection, per user.

    Args:
        path: embedded Qdrant folder, or ``":memory:"`` (default when no ``url``).
        url: a Qdrant server URL (then ``path`` must be ``None``).
        api_key: the server's API key, if it needs one.
        embedder: memlab embedder (default: the packaged multilingual ``e5``, memlab's product default: on Italian
            notes it ranks better than MiniLM, see ``tests/ingest/test_store.py``).
        collection: collection name.
        chunk_size: characters per chunk.
        overlap: characters repeated between consecutive chunks.

    Raises:
        InvalidInputError: both or a bad ``path``/``url``, or bad chunking parameters.
        MissingDependencyError: ``qdrant-client`` is not installed (``pip install 'memlab[ingest]'``).
        DimensionMismatchError: the collection exists with another vector size (another embedder).
    """

    def __init__(
        self,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        embedder: Any = None,
        collection: str = "memlab_chunks",
        chunk_size: int = 800,
        overlap: int = 120,
    ) -> None:
        try:
            from qdrant_client import QdrantClient, models
        except ImportError as exc:  # pragma: no cover - installed with memlab[ingest]
            raise MissingDependencyError("qdrant-client", "ingest") from exc
        if path is not None and url is not None:
            raise InvalidInputError("ChunkStore takes 'path' (embedded Qdrant) or 'url' (a Qdrant server), not both.")
        chunk_text("x" * 30, size=chunk_size, overlap=overlap)  # validates the two parameters
        if not isinstance(collection, str) or not collection.strip() or len(collection) > 128:
            raise InvalidInputError(f"The 'collection' parameter of ChunkStore must be a non-empty str. "
                                    f"Got {collection!r} instead.")
        if embedder is None:
            from memlab.embedding import load_embedder

            embedder = load_embedder("e5")
        self.embedder = embedder
        self.collection = collection
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.url = url
        self.path = None if url is not None else str(path if path is not None else ":memory:")
        self._models = models
        self._lock = threading.RLock()
        try:
            if url is not None:
                self._client = QdrantClient(url=url, api_key=api_key, timeout=30)
            elif self.path == ":memory:":
                self._client = QdrantClient(location=":memory:")
            else:
                Path(self.path).mkdir(parents=True, exist_ok=True)
                self._client = QdrantClient(path=self.path)
        except RuntimeError as exc:  # the embedded store's folder is locked by another process
            raise BackendError(f"Cannot open the Qdrant store at {self.path or url}: {exc}") from exc
        self._ensure_collection()

    # ------------------------------------------------------------------ lifecycle
    def _ensure_collection(self) -> None:
        m = self._models
        dim = int(self.embedder.dim)
        with self._lock:
            try:
                if not self._client.collection_exists(self.collection):
                    self._client.create_collection(
                        self.collection, vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE))
                    if self.url is not None:  # payload indexes only matter on a server
                        for key in ("user_id", "source", "tags"):
                            self._client.create_payload_index(self.collection, key, m.PayloadSchemaType.KEYWORD)
                    return
                info = self._client.get_collection(self.collection)
            except Exception as exc:  # noqa: BLE001 - qdrant raises transport and HTTP errors of many kinds
                raise BackendError(f"Qdrant at {self.url or self.path}: {exc}") from exc
        size = getattr(info.config.params.vectors, "size", None)
        if size is not None and int(size) != dim:
            raise DimensionMismatchError(
                f"Qdrant collection {self.collection!r} holds {size}-d vectors but the embedder "
                f"{getattr(self.embedder, 'name', '?')!r} gives {dim}-d ones; use another collection or the same embedder.")

    def close(self) -> None:
        """Close the client (releases the embedded store's folder lock)."""
        with self._lock:
            self._client.close()

    def __enter__(self) -> ChunkStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_params(self) -> dict[str, Any]:
        """JSON-able description."""
        return {"backend": "qdrant", "mode": "server" if self.url else "embedded", "collection": self.collection,
                "chunk_size": self.chunk_size, "overlap": self.overlap,
                "embedder": getattr(self.embedder, "name", type(self.embedder).__name__)}

    # ------------------------------------------------------------------ writes
    def _filter(self, user_id: str, *, source: str | None = None, tags: Sequence[str] = ()) -> Any:
        m = self._models
        must = [m.FieldCondition(key="user_id", match=m.MatchValue(value=user_id))]
        if source is not None:
            must.append(m.FieldCondition(key="source", match=m.MatchValue(value=source)))
        must += [m.FieldCondition(key="tags", match=m.MatchValue(value=t)) for t in tags]
        return m.Filter(must=must)

    def ingest_text(
        self,
        user_id: str,
        content: str | bytes,
        *,
        fmt: str = "text",
        source: str,
        tags: Iterable[str] | None = None,
    ) -> IngestReport:
        """Parse, chunk, embed and store one document of ``user_id`` (replacing an earlier one with this source).

        Args:
            user_id: owner.
            content: the document.
            fmt: ``text``, ``markdown`` or ``html``.
            source: a label for the document (file name, URL); the key for replacing it later.
            tags: labels to filter queries with (lower-cased).

        Raises:
            InvalidInputError: bad user, source, format or tags.
            BackendError: Qdrant failed.
        """
        owner = "ChunkStore.ingest_text"
        user_id = check_user_id(user_id, owner=owner)
        source = check_text(source, name="source", owner=owner, max_chars=1000)
        tag_t = _check_tags(tags, owner)
        doc = parse_document(content, fmt=fmt)
        pieces: list[tuple[str, str]] = []  # (heading, chunk text)
        for sec in doc.sections:
            pieces += [(sec.heading, c.text) for c in chunk_text(sec.text, size=self.chunk_size, overlap=self.overlap)]
        m = self._models
        flt = self._filter(user_id, source=source)
        # the heading path goes into the embedded text (not the stored one): a chunk under "Carbonara" is about it
        embedded = [_with_headings(doc.title, heading, text) for heading, text in pieces]
        vectors = self.embedder.embed(embedded, mode="passage") if pieces else None
        now = datetime.now(UTC).isoformat(timespec="seconds")
        points = [
            m.PointStruct(
                id=str(uuid.uuid5(_NS, f"{user_id}\x00{source}\x00{i}")),
                vector=vectors[i].tolist(),  # type: ignore[index]
                payload={"user_id": user_id, "source": source, "title": doc.title, "heading": heading, "text": text,
                         "tags": list(tag_t), "chunk": i, "fmt": fmt, "ingested_at": now,
                         "sha1": hashlib.sha1(text.encode("utf-8")).hexdigest()},
            )
            for i, (heading, text) in enumerate(pieces)
        ]
        with self._lock:
            try:
                old = self._client.count(self.collection, count_filter=flt, exact=True).count
                if old:
                    self._client.delete(self.collection, points_selector=m.FilterSelector(filter=flt), wait=True)
                if points:
                    self._client.upsert(self.collection, points=points, wait=True)
            except Exception as exc:  # noqa: BLE001
                raise BackendError(f"Qdrant at {self.url or self.path} failed to store {source!r}: {exc}") from exc
        return IngestReport(source=source, fmt=fmt, title=doc.title, n_chunks=len(points), n_chars=len(doc.text),
                            replaced=int(old), tags=tag_t)

    def ingest_path(
        self, user_id: str, path: str | Path, *, tags: Iterable[str] | None = None, pattern: str = "**/*",
    ) -> list[IngestReport]:
        """Ingest a file, or every supported file under a folder (``pattern`` relative to it), sorted by path.

        Sources are the paths relative to the folder (the file name for a single file).

        Raises:
            InvalidInputError: the path does not exist, or a single file has an unsupported type.
        """
        root = Path(path)
        if root.is_file():
            return [self.ingest_text(user_id, root.read_bytes(), fmt=detect_format(root), source=root.name, tags=tags)]
        if not root.is_dir():
            raise InvalidInputError(f"Cannot ingest {str(path)!r}: no such file or folder.")
        reports = []
        for f in sorted(p for p in root.glob(pattern) if p.is_file()):
            try:
                fmt = detect_format(f)
            except InvalidInputError:
                continue  # a folder may hold other files: skip them
            reports.append(self.ingest_text(user_id, f.read_bytes(), fmt=fmt, source=f.relative_to(root).as_posix(),
                                            tags=tags))
        return reports

    def ingest_files(
        self, user_id: str, path: str | Path, *, tags: Iterable[str] | None = None, pattern: str = "**/*",
        max_file_bytes: int = 5_000_000, within: str | Path | None = None,
    ) -> PathIngestReport:
        """Ingest a file, or every file under a folder (``pattern`` relative to it, hidden files left out), counting
        what failed instead of stopping at it (the seed's ``{files, chunks, errors}``): a file of an unsupported type,
        larger than ``max_file_bytes``, unreadable, or (with ``within``) resolving outside ``within`` is reported in
        ``failed`` and the others are stored. Sources are the paths relative to the folder (the file name for a single
        file).

        Raises:
            NotFoundError: the path does not exist, or (with ``within``) is not inside that folder (it does not exist
                for this caller).
            InvalidInputError: bad user or tags.
            BackendError: Qdrant failed.
        """
        owner = "ChunkStore.ingest_files"
        user_id = check_user_id(user_id, owner=owner)
        tag_t = _check_tags(tags, owner)
        root = Path(path).expanduser()
        try:
            fence = Path(within).expanduser().resolve() if within is not None else None
            if fence is not None and not root.resolve().is_relative_to(fence):
                raise NotFoundError(f"Cannot ingest {str(path)!r}: no such file or folder under {str(fence)!r}.")
            if root.is_file():
                files, base = [root], root.parent
            elif root.is_dir():
                base = root
                files = sorted(p for p in root.glob(pattern)
                               if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))
            else:
                raise NotFoundError(f"Cannot ingest {str(path)!r}: no such file or folder.")
        except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop: not a file that can be read
            raise NotFoundError(f"Cannot ingest {str(path)!r}: {exc}") from exc
        done: list[IngestReport] = []
        failed: list[tuple[str, str]] = []
        for f in files:
            source = f.relative_to(base).as_posix()
            try:
                if fence is not None and not f.resolve().is_relative_to(fence):
                    raise InvalidInputError(f"{source!r} links outside {str(fence)!r}.")
                fmt = detect_format(f)
                size = f.stat().st_size
                if size > max_file_bytes:
                    raise InvalidInputError(f"{source!r} has {size} bytes, more than {max_file_bytes}.")
                done.append(self.ingest_text(user_id, f.read_bytes(), fmt=fmt, source=source, tags=tag_t))
            except (InvalidInputError, OSError) as exc:
                failed.append((source, str(exc)))
        return PathIngestReport(tuple(done), tuple(failed))

    def delete_source(self, user_id: str, source: str) -> int:
        """Remove one document's chunks; returns how many were removed."""
        user_id = check_user_id(user_id, owner="ChunkStore.delete_source")
        flt = self._filter(user_id, source=source)
        with self._lock:
            n = self._client.count(self.collection, count_filter=flt, exact=True).count
            if n:
                self._client.delete(self.collection, points_selector=self._models.FilterSelector(filter=flt), wait=True)
        return int(n)

    # ------------------------------------------------------------------ reads
    def query(self, user_id: str, text: str, *, k: int = 5, tags: Iterable[str] | None = None) -> list[ChunkHit]:
        """The ``k`` chunks of ``user_id`` most similar to ``text`` (carrying all ``tags``), best first.

        Raises:
            InvalidInputError: bad user, empty text, k < 1 or bad tags.
            BackendError: Qdrant failed.
        """
        owner = "ChunkStore.query"
        user_id = check_user_id(user_id, owner=owner)
        text = check_text(text, name="text", owner=owner, max_chars=10_000)
        k = check_positive_int(k, name="k", owner=owner)
        tag_t = _check_tags(tags, owner)
        vec = self.embedder.embed([text], mode="query")[0]
        with self._lock:
            try:
                res = self._client.query_points(self.collection, query=vec.tolist(), limit=k,
                                                query_filter=self._filter(user_id, tags=tag_t), with_payload=True)
            except Exception as exc:  # noqa: BLE001
                raise BackendError(f"Qdrant at {self.url or self.path} failed to query: {exc}") from exc
        out = []
        for p in res.points:
            pl = p.payload or {}
            if pl.get("user_id") != user_id:  # belt and braces: the filter already guarantees it
                continue
            out.append(ChunkHit(text=str(pl.get("text", "")), score=float(p.score), source=str(pl.get("source", "")),
                                title=str(pl.get("title", "")), heading=str(pl.get("heading", "")),
                                tags=tuple(pl.get("tags", ())), chunk=int(pl.get("chunk", 0))))
        return out

    def sources(self, user_id: str) -> list[str]:
        """The sources ``user_id`` has ingested, sorted."""
        user_id = check_user_id(user_id, owner="ChunkStore.sources")
        seen: set[str] = set()
        offset = None
        with self._lock:
            while True:
                points, offset = self._client.scroll(self.collection, scroll_filter=self._filter(user_id), limit=256,
                                                     offset=offset, with_payload=["source"], with_vectors=False)
                seen.update(str((p.payload or {}).get("source", "")) for p in points)
                if offset is None:
                    break
        return sorted(seen)

    def count(self, user_id: str | None = None) -> int:
        """Chunks stored (of one user, or in total)."""
        with self._lock:
            flt = self._filter(check_user_id(user_id, owner="ChunkStore.count")) if user_id is not None else None
            return int(self._client.count(self.collection, count_filter=flt, exact=True).count)

    def stats(self) -> dict[str, Any]:
        """Health numbers: total chunks, collection, mode."""
        return {"chunks": self.count(), "collection": self.collection, "mode": "server" if self.url else "embedded"}
