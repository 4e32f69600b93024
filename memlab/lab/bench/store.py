"""Store throughput benchmark: embedding, batched add, single add, search (p50/p95), on real parts.

With ``out`` the run is written as an eval run (``bench-store``: the figures as metrics, one example per timed single
add and per search), see :mod:`memlab.lab.bench.runs`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.lab.bench.corpus import fact_corpus

__all__ = ["StoreBenchResult", "run_store_bench"]


@dataclass
class StoreBenchResult:
    """Figures of one ``memlab bench store`` run."""

    n: int
    n_queries: int
    embedder: str
    seed: int = 0
    figures: dict[str, float] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per timed operation (``add_single``, ``search``): each call's milliseconds, in order."""

    def to_markdown(self) -> str:
        """The figures as a markdown table."""
        rows = ["| metric | value |", "|---|---|"]
        rows += [f"| {k} | {v:,.3f} |" for k, v in self.figures.items()]
        return f"store benchmark: N={self.n:,} memories, {self.n_queries} queries, embedder={self.embedder}\n\n" + "\n".join(rows)

    def write(self, out_dir: str | Path) -> Path:
        """Write the ``bench-store`` eval run (and ``bench.md``) into ``out_dir``; returns it."""
        from memlab.lab.bench.runs import write_bench_run

        examples: list[dict[str, Any]] = [
            {"id": f"{op}/{i}", "group": op, "latency_ms": ms}
            for op, lat in self.latencies_ms.items()
            for i, ms in enumerate(lat)
        ]
        write_bench_run(out_dir, "store", params={"embedder": self.embedder, "n_queries": self.n_queries},
                        seed=self.seed, n=self.n, metrics=self.figures, primary_metric="search_top10_p50_ms",
                        examples=examples, markdown=self.to_markdown())
        return Path(out_dir)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def run_store_bench(
    n: int = 10_000, n_queries: int = 200, *, embedder: str = "minilm", db_path: str | None = None, seed: int = 0,
    out: str | None = None,
) -> StoreBenchResult:
    """Add ``n`` corpus facts to a real on-disk store and time every stage.

    Embedding is timed on its own (``embed_texts_per_s``) so the store's own overhead is visible:
    ``add_many_items_per_s`` uses precomputed vectors. With ``out``, the ``bench-store`` eval run is written there
    (:meth:`StoreBenchResult.write`).
    """
    from memlab.embedding import load_embedder
    from memlab.store import MemoryStore

    emb = load_embedder(embedder)
    texts = fact_corpus(n, seed=seed)
    queries = fact_corpus(n_queries, seed=seed + 1)
    res = StoreBenchResult(n=n, n_queries=n_queries, embedder=emb.name, seed=seed)
    tmp = tempfile.TemporaryDirectory() if db_path is None else None
    path = db_path or str(Path(tmp.name) / "bench.db")  # type: ignore[union-attr]
    try:
        emb.embed(["warm-up"])
        before = getattr(emb, "n_encoded", None)
        t = time.perf_counter()
        vecs = emb.embed(texts)
        dt = time.perf_counter() - t
        # the corpus repeats facts and the embedder caches by text: report the rate over texts actually encoded
        encoded = (emb.n_encoded - before) if before is not None else n
        res.figures["distinct_texts_embedded"] = float(encoded)
        res.figures["embed_texts_per_s (distinct, uncached)"] = encoded / dt
        store = MemoryStore(path, embedder=emb)
        t = time.perf_counter()
        for start in range(0, n, 1000):
            store.add_many("bench-user", texts[start : start + 1000], embeddings=vecs[start : start + 1000])
        dt = time.perf_counter() - t
        res.figures["add_many_items_per_s (precomputed vectors)"] = n / dt
        # single adds, each a transaction (the typical chat path), embedding included
        lat = []
        extra = fact_corpus(200, seed=seed + 2)
        for txt in extra:
            t = time.perf_counter()
            store.add("bench-user", txt + " (single)")
            lat.append((time.perf_counter() - t) * 1000)
        res.figures["add_single_p50_ms (embed+sqlite+faiss)"] = _pct(lat, 50)
        res.figures["add_single_p95_ms (embed+sqlite+faiss)"] = _pct(lat, 95)
        res.latencies_ms["add_single"] = lat
        # the default (hybrid: dense + FTS5 BM25) and the dense path alone, alternated query by query so a busy
        # moment of the machine falls on both; the embedding cache is emptied before each call, so both embed
        clear = getattr(emb, "clear_cache", lambda: None)
        lat, lat_dense = [], []
        for q in queries:
            clear()
            t = time.perf_counter()
            store.search("bench-user", q, k=10)
            lat.append((time.perf_counter() - t) * 1000)
            clear()
            t = time.perf_counter()
            store.search("bench-user", q, k=10, mode="dense")
            lat_dense.append((time.perf_counter() - t) * 1000)
        res.figures["search_top10_p50_ms"] = _pct(lat, 50)
        res.figures["search_top10_p95_ms"] = _pct(lat, 95)
        res.figures["search_qps"] = 1000.0 / float(np.mean(lat))
        res.figures["search_dense_top10_p50_ms"] = _pct(lat_dense, 50)
        res.figures["search_dense_top10_p95_ms"] = _pct(lat_dense, 95)
        res.figures["search_p95_hybrid_over_dense"] = _pct(lat, 95) / _pct(lat_dense, 95)
        res.latencies_ms["search"] = lat
        res.latencies_ms["search_dense"] = lat_dense
        t = time.perf_counter()
        store.close()
        res.figures["close_flush_s"] = time.perf_counter() - t
        t = time.perf_counter()
        store = MemoryStore(path, embedder=emb)
        res.figures["reopen_s"] = time.perf_counter() - t
        store.close()
        res.figures["db_size_mb"] = sum(p.stat().st_size for p in Path(path).parent.glob(Path(path).name + "*")) / 1e6
    finally:
        if tmp is not None:
            tmp.cleanup()
    if out:
        res.write(out)
    return res
