"""Per-user vector search: which FAISS layout makes one user's query cost depend on that user's memories only?

Compares, on random unit vectors spread evenly over users, with single top-10 queries of one user each:

- ``global Flat + IDSelector``: one ``FaissIndex`` (IDMap2 over Flat) for everyone, searched with
  ``allowed=<the user's ids>`` (memlab's layout before the partitioned index);
- ``Flat per user``: one ``FaissIndex`` per user, searched with ``allowed=<the user's ids>`` (the IDSelector is
  kept: the store still filters inactive and excluded ids);
- ``IVF keyed by user``: one ``IndexIVFFlat`` whose inverted list number IS the user (``add_core`` with the
  user's list, ``search_preassigned`` with ``nprobe=1``).

Also times one add of a new vector (``FaissIndex.add`` replaces ids, so it calls ``remove_ids`` on the index it
adds to) and the process RSS after each build. Run::

    nice .venv/bin/python eval/experiments/partition_index.py --n 1000000 --users 1000

Results are written in the docstring of :class:`memlab.index.partitioned.PartitionedFaissIndex`.
"""

from __future__ import annotations

import argparse
import gc
import time

import faiss
import numpy as np

from memlab.index.faiss_index import FaissIndex


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def random_unit(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def pct(xs: list[float]) -> str:
    a = np.asarray(xs)
    return f"p50 {np.percentile(a, 50):8.3f} ms  p95 {np.percentile(a, 95):8.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n, users, dim = args.n, args.users, args.dim
    print(f"N={n:,} vectors, {users} users ({n // users} each), dim={dim}, {args.queries} single queries, k=10, "
          f"faiss {faiss.__version__}, {faiss.omp_get_max_threads()} OpenMP threads")
    vecs = random_unit(n, dim, args.seed)
    ids = np.arange(n, dtype=np.int64)
    owner = ids % users  # memories of all users interleave, as in a real store
    rng = np.random.default_rng(args.seed + 1)
    q_users = rng.integers(0, users, size=args.queries)
    queries = random_unit(args.queries, dim, args.seed + 2)
    per_user = {u: ids[owner == u] for u in range(users)}
    base = rss_mb()
    print(f"RSS with the vectors only: {base:,.0f} MB")
    results: dict[str, list[int]] = {}

    # 1. global Flat + IDSelector
    t = time.perf_counter()
    g = FaissIndex(dim)
    for s in range(0, n, 200_000):
        g.add(ids[s : s + 200_000], vecs[s : s + 200_000])
    build = time.perf_counter() - t
    lat, got = [], []
    for q, u in zip(queries, q_users, strict=True):
        t = time.perf_counter()
        _, i = g.search(q.reshape(1, -1), 10, allowed=per_user[int(u)])
        lat.append((time.perf_counter() - t) * 1000)
        got.append(i[0])
    results["global"] = got
    add_lat = []
    for j in range(20):
        t = time.perf_counter()
        g.add(np.array([n + j]), queries[j : j + 1])
        add_lat.append((time.perf_counter() - t) * 1000)
    print(f"global Flat + IDSelector : build {build:6.1f} s  search {pct(lat)}  add {pct(add_lat)}  "
          f"RSS +{rss_mb() - base:,.0f} MB")
    del g
    gc.collect()

    # 2. one Flat per user
    t = time.perf_counter()
    parts = {}
    for u in range(users):
        p = FaissIndex(dim)
        p.add(per_user[u], vecs[per_user[u]])
        parts[u] = p
    build = time.perf_counter() - t
    lat, got = [], []
    for q, u in zip(queries, q_users, strict=True):
        t = time.perf_counter()
        _, i = parts[int(u)].search(q.reshape(1, -1), 10, allowed=per_user[int(u)])
        lat.append((time.perf_counter() - t) * 1000)
        got.append(i[0])
    results["per_user"] = got
    add_lat = []
    for j in range(20):
        t = time.perf_counter()
        parts[j % users].add(np.array([n + j]), queries[j : j + 1])
        add_lat.append((time.perf_counter() - t) * 1000)
    print(f"Flat per user            : build {build:6.1f} s  search {pct(lat)}  add {pct(add_lat)}  "
          f"RSS +{rss_mb() - base:,.0f} MB")
    del parts
    gc.collect()

    # 3. IVF keyed by user: list number = user
    t = time.perf_counter()
    quant = faiss.IndexFlatIP(dim)
    quant.add(np.zeros((users, dim), dtype=np.float32))
    ivf = faiss.IndexIVFFlat(quant, dim, users, faiss.METRIC_INNER_PRODUCT)
    ivf.is_trained = True
    for s in range(0, n, 200_000):
        x = np.ascontiguousarray(vecs[s : s + 200_000])
        xi = np.ascontiguousarray(ids[s : s + 200_000])
        a = np.ascontiguousarray(owner[s : s + 200_000].astype(np.int64))
        ivf.add_core(len(x), faiss.swig_ptr(x), faiss.swig_ptr(xi), faiss.swig_ptr(a))
    build = time.perf_counter() - t
    ivf.nprobe = 1
    lat, got = [], []
    for q, u in zip(queries, q_users, strict=True):
        t = time.perf_counter()
        assign = np.array([[int(u)]], dtype=np.int64)
        cdis = np.zeros((1, 1), dtype=np.float32)
        qq = np.ascontiguousarray(q.reshape(1, -1))
        D = np.empty((1, 10), dtype=np.float32)
        Ii = np.empty((1, 10), dtype=np.int64)
        # the C++ call: the Python wrapper refuses params, and the store needs the IDSelector (inactive ids)
        params = faiss.SearchParametersIVF(sel=faiss.IDSelectorBatch(per_user[int(u)]), nprobe=1)
        ivf.search_preassigned_c(1, faiss.swig_ptr(qq), 10, faiss.swig_ptr(assign), faiss.swig_ptr(cdis),
                                 faiss.swig_ptr(D), faiss.swig_ptr(Ii), False, params)
        lat.append((time.perf_counter() - t) * 1000)
        got.append(Ii[0].copy())
    results["ivf"] = got
    print(f"IVF keyed by user        : build {build:6.1f} s  search {pct(lat)}  add n/a (add_core)  "
          f"RSS +{rss_mb() - base:,.0f} MB")
    same = all(np.array_equal(a, b) for a, b in zip(results["global"], results["per_user"], strict=True))
    same_ivf = all(np.array_equal(a, b) for a, b in zip(results["global"], results["ivf"], strict=True))
    print(f"same top-10 as the global filtered scan: per user {same}, IVF keyed {same_ivf}")


if __name__ == "__main__":
    main()
