"""The PostgreSQL + pgvector half of ``memlab bench integrity --backend postgres``.

:class:`PgBench` fills a :class:`~memlab.store.postgres.PostgresStore` with ``n`` memories over ``users`` users
(the same layout as the SQLite bench: the real embedded corpus in whole users first, the other users' memories
filler texts with random unit vectors) through :meth:`~memlab.store.postgres.PostgresStore.bulk_load` (binary
COPY, the HNSW index left out), so the integrity checks run on the exact search (the store's default) first;
then it builds the HNSW index once and measures recall@10 of HNSW against the exact search on the same queries
(real users with the checked facts' vectors, filler users with random unit vectors), for a few ``ef_search`` /
``hnsw.iterative_scan`` settings, and the cost of one add with the HNSW index in place.

Recall "with ties": an HNSW hit counts when its distance is at most the exact 10th distance (+1e-6), so a hit
that ties the exact 10th is not counted as a miss (random float vectors rarely tie; the figure is reported
beside the plain set overlap).

Memory: the server's processes (the postmaster and its children: RSS summed, and PSS, which counts the shared
buffers once), this process's RSS, the data directory's size and the table/index sizes from
``pg_relation_size``. Without a local server (``dsn`` given) only the sizes are reported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memlab.lab.bench.integrity_layout import embed_corpus, latency_stats, random_unit, user_layout

__all__ = ["HNSW_SETTINGS", "PgBench", "recall_at_k", "server_memory_mb"]

#: (ef_search, iterative_scan) pairs measured after the HNSW build.
HNSW_SETTINGS: tuple[tuple[int, str], ...] = (
    (40, "off"),
    (100, "off"),
    (100, "strict_order"),
    (100, "relaxed_order"),
    (200, "relaxed_order"),
)


def recall_at_k(exact: list[list[tuple[int, float]]], approx: list[list[tuple[int, float]]]) -> tuple[float, float]:
    """Mean recall of ``approx`` against ``exact`` (lists of ``(id, distance)`` per query, best first):
    ``(set overlap, with ties)``; "with ties" counts an approximate hit whose distance is at most the exact
    last distance (+1e-6). Queries with no exact hit are skipped."""
    plain, ties = [], []
    for e, a in zip(exact, approx, strict=True):
        if not e:
            continue
        want = {i for i, _ in e}
        plain.append(len(want & {i for i, _ in a}) / len(e))
        ties.append(min(len(e), sum(1 for _, d in a if d <= e[-1][1] + 1e-6)) / len(e))
    return (float(np.mean(plain)) if plain else float("nan"), float(np.mean(ties)) if ties else float("nan"))


def _proc_children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def server_memory_mb(datadir: Path) -> dict[str, float]:
    """RSS and PSS (MB) of the server whose data directory is ``datadir`` (postmaster + children), from
    ``/proc/<pid>/smaps_rollup``; empty where that cannot be read."""
    try:
        pid = int((datadir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    rss = pss = 0.0
    pids = [pid, *_proc_children(pid)]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) / 1024
        except OSError:
            continue
    return {"rss_mb": rss, "pss_mb": pss, "processes": float(len(pids))}


def _dir_mb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total / 2**20


class PgBench:
    """One PostgreSQL bench store: a throwaway server (or ``dsn``), filled, measured, stopped by :meth:`close`."""

    def __init__(self, emb: Any, res: Any, users: int, seed: int, *, dsn: str | None = None,
                 maintenance_work_mem: str = "1GB", log: Callable[[str], None] | None = None) -> None:
        from memlab.store.pg_server import TempPostgres

        self.emb, self.res, self.users, self.seed = emb, res, users, seed
        self.maintenance_work_mem = maintenance_work_mem
        self.log = log or (lambda _msg: None)
        self.server: Any = None
        self.store: Any = None
        if dsn is None:
            self.server = TempPostgres().start()
            self.dsn = self.server.create_database("bench")
            res.figures["pg_server"] = self.server.origin
        else:
            self.dsn = dsn
            res.figures["pg_server"] = "given DSN"
        self.filler_users: list[str] = []

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.server is not None:
            self.server.stop()

    # ------------------------------------------------------------------ fill
    def fill(self, texts: list[str], rss_mb: Callable[[], float]) -> tuple[Any, list[str]]:
        """Bulk-load ``res.n`` memories over the users (HNSW left out); returns the store and the real users."""
        from memlab.store.postgres import PostgresStore

        res, emb, users = self.res, self.emb, self.users
        n = res.n
        real_vecs = embed_corpus(emb, texts, res, rss_mb)
        self.store = store = PostgresStore(self.dsn, embedder=emb)
        res.figures["pgvector"] = store.vector_version
        real_users: list[str] = []

        def batches() -> Iterator[tuple[str, list[str], np.ndarray]]:
            layout = user_layout(n, users, texts, real_vecs, emb.dim, self.seed)
            for k, (name, utexts, vecs, real, done) in enumerate(layout):
                (real_users if real else self.filler_users).append(name)
                if k % max(1, users // 10) == 0:
                    self.log(f"  bulk load: user {k + 1:,}/{users:,}, {done:,} rows")
                yield name, utexts, vecs

        self.log(f"PostgreSQL bulk load of {n:,} memories over {users:,} users (binary COPY, HNSW left out)")
        loaded = store.bulk_load(batches(), build_index=False, maintenance_work_mem=self.maintenance_work_mem)
        res.figures["pg_copy_s"] = loaded.copy_s
        res.figures["pg_copy_rows_per_s"] = loaded.rows / loaded.copy_s if loaded.copy_s > 0 else float("nan")
        res.figures["pg_fts_index_s"] = loaded.index_s
        res.figures["pg_analyze_s"] = loaded.analyze_s
        res.figures["store_fill_s"] = loaded.copy_s + loaded.index_s + loaded.analyze_s
        self.log(f"  loaded {loaded.rows:,} rows: COPY {loaded.copy_s:.1f} s, full-text index {loaded.index_s:.1f} s")
        if not real_users:
            real_users.append("user-00000")
        res.figures["users"] = users
        res.figures["memories_per_user"] = n // users
        res.figures["users_with_real_memories"] = len(real_users)
        res.figures["store_index"] = "PostgreSQL exact (user_id index)"
        self.memory("loaded", rss_mb)
        return store, real_users

    # ------------------------------------------------------------------ memory
    def memory(self, when: str, rss_mb: Callable[[], float]) -> None:
        """Server RSS/PSS, client RSS, data directory and relation sizes, as ``res.figures[..._<when>]``."""
        f = self.res.figures
        f[f"client_rss_mb_{when}"] = rss_mb()
        if self.server is not None:
            mem = server_memory_mb(self.server.datadir)
            if mem:
                f[f"pg_server_rss_mb_{when}"] = mem["rss_mb"]
                f[f"pg_server_pss_mb_{when}"] = mem["pss_mb"]
            f[f"pg_datadir_mb_{when}"] = _dir_mb(self.server.datadir)
        if self.store is not None and not self.store.closed:
            row = self.store.conn.execute(
                "SELECT pg_table_size('memories'), pg_indexes_size('memories'), "
                "COALESCE(pg_relation_size(to_regclass('memories_embedding_hnsw')), 0)").fetchone()
            f[f"pg_table_mb_{when}"] = row[0] / 2**20
            f[f"pg_indexes_mb_{when}"] = row[1] / 2**20
            f[f"pg_hnsw_mb_{when}"] = row[2] / 2**20

    # ------------------------------------------------------------------ HNSW
    def hnsw(self, real_queries: np.ndarray, real_users: list[str], rss_mb: Callable[[], float],
             settings: tuple[tuple[int, str], ...] = HNSW_SETTINGS) -> None:
        """Build the HNSW index, then recall@10 vs exact (and latency) per setting, and add with HNSW in place."""
        store, res = self.store, self.res
        n_q = len(real_queries)
        self.log(f"building the HNSW index on {res.n:,} vectors (maintenance_work_mem {self.maintenance_work_mem})")
        res.figures["pg_hnsw_build_s"] = store.build_hnsw_index(maintenance_work_mem=self.maintenance_work_mem)
        self.log(f"  HNSW built in {res.figures['pg_hnsw_build_s']:.1f} s")
        self.memory("hnsw_built", rss_mb)
        sets = [("real", real_queries, real_users)]
        if self.filler_users:
            sets.append(("random", random_unit(n_q, self.emb.dim, self.seed + 11), self.filler_users))
        defaults = (store.backend.ef_search, store.backend.iterative_scan)
        for label, queries, users in sets:
            who = [users[i % len(users)] for i in range(n_q)]
            for _ in range(3):  # warm the caches
                store.search_by_vector(who[0], queries[0], 10, scan="exact")
            exact, ms = _timed_searches(store, who, queries, "exact")
            st = latency_stats(ms)  # the exact search alone, queries back to back (the checks interleave other work)
            res.indexes.append({
                "vectors": f"pg {label} ({len(users)} users)", "n": res.n, "factory": "PostgreSQL exact (user_id index)",
                "build_s": 0.0, "p50_ms": st["p50"], "p95_ms": st["p95"], "recall_at_10": 1.0,
                "recall_at_10_ties": 1.0, "short_results": 0,
            })  # fmt: skip
            self.log(f"  {label} exact: p50 {st['p50']:.2f} / p95 {st['p95']:.2f} ms")
            for ef, scan in settings:
                store.backend.ef_search, store.backend.iterative_scan = ef, scan
                store.search_by_vector(who[0], queries[0], 10, scan="hnsw")
                got, ms = _timed_searches(store, who, queries, "hnsw")
                plain, ties = recall_at_k(exact, got)
                st = latency_stats(ms)
                res.indexes.append({
                    "vectors": f"pg {label} ({len(users)} users)", "n": res.n,
                    "factory": f"pgvector HNSW ef_search={ef} iterative_scan={scan}",
                    "build_s": res.figures["pg_hnsw_build_s"], "p50_ms": st["p50"], "p95_ms": st["p95"],
                    "recall_at_10": plain, "recall_at_10_ties": ties,
                    "short_results": int(sum(len(g) < len(e) for g, e in zip(got, exact, strict=True))),
                })  # fmt: skip
                self.log(f"  {label} ef={ef} {scan}: recall@10 {plain:.3f} (ties {ties:.3f}), "
                         f"p50 {st['p50']:.2f} / p95 {st['p95']:.2f} ms")
        store.backend.ef_search, store.backend.iterative_scan = defaults
        # one add with the HNSW index in place (the checks above ran before it was built)
        add_ms = []
        vecs = random_unit(n_q, self.emb.dim, self.seed + 13)
        for i, v in enumerate(vecs):
            t = time.perf_counter()
            store.add(real_users[i % len(real_users)], f"hnsw add probe {i}", embedding=v)
            add_ms.append((time.perf_counter() - t) * 1000)
        res.stages["store_add (HNSW in place)"] = latency_stats(add_ms)


def _timed_searches(
    store: Any, users: list[str], queries: np.ndarray, mode: str
) -> tuple[list[list[tuple[int, float]]], list[float]]:
    """Top-10 ``(id, cosine distance)`` of each query on its user's memories in ``mode``, and each search's ms."""
    hits_per_query, ms = [], []
    for u, q in zip(users, queries, strict=True):
        t = time.perf_counter()
        hits = store.search_by_vector(u, q, 10, scan=mode)
        ms.append((time.perf_counter() - t) * 1000)
        hits_per_query.append([(m.id, 1.0 - s) for m, s in hits])
    return hits_per_query, ms
