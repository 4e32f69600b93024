"""What both halves of ``memlab bench integrity`` (SQLite in :mod:`memlab.lab.bench.integrity`, PostgreSQL in
:mod:`memlab.lab.bench.pg_integrity`) build their many-user store from, and how they summarise latencies."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from memlab.lab.bench.integrity import IntegrityBenchResult

__all__ = ["embed_corpus", "latency_stats", "random_unit", "user_layout"]


def latency_stats(xs: list[float]) -> dict[str, float]:
    """``p50``, ``p95`` and ``mean`` of ``xs`` (NaN for an empty list)."""
    a = np.asarray(xs, dtype=np.float64) if xs else np.asarray([np.nan])
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "mean": float(a.mean())}


def random_unit(n: int, dim: int, seed: int, chunk: int = 100_000) -> np.ndarray:
    """``n`` seeded random unit vectors of ``dim`` float32 (drawn ``chunk`` rows at a time)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, chunk):
        v = rng.standard_normal((min(chunk, n - s), dim), dtype=np.float32)
        out[s : s + len(v)] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def embed_corpus(emb: Any, texts: list[str], res: IntegrityBenchResult, rss_mb: Callable[[], float]) -> Any:
    """The corpus' real vectors (the embedding timed into ``res``), after one warm-up call."""
    emb.embed(["warm-up"])
    t = time.perf_counter()
    real_vecs = emb.embed(texts)
    res.figures["store_embed_s (unique texts, cached)"] = time.perf_counter() - t
    res.figures["rss_mb_before_store"] = rss_mb()
    return real_vecs


def user_layout(
    n: int, users: int, texts: list[str], real_vecs: Any, dim: int, seed: int
) -> Iterator[tuple[str, list[str], Any, bool, int]]:
    """The many-user bench store, user by user: ``(user, texts, vectors, real, rows so far)``.

    ``n`` memories over ``users`` users (``user-00000`` ...; sizes differ by at most one); the first users, whole,
    hold the corpus' real ``texts`` with their embedded ``real_vecs`` (``real`` True), the others corpus texts with
    seeded random unit vectors (filler). Both backends' benches build the same store from it.
    """
    per = [n // users + (1 if u < n % users else 0) for u in range(users)]
    rng = np.random.default_rng(seed + 7)
    done = 0
    for u, count in enumerate(per):
        if count == 0:
            continue
        if done + count <= len(texts):
            vecs, utexts, real = real_vecs[done : done + count], texts[done : done + count], True
        else:
            vecs, real = random_unit(count, dim, int(rng.integers(2**31))), False
            start = done % len(texts)
            utexts = (texts[start:] + texts * (count // len(texts) + 1))[:count]
        done += count
        yield f"user-{u:05d}", utexts, vecs, real, done
