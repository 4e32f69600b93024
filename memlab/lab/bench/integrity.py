"""``memlab bench integrity``: per-stage latency of the integrity check, and the FAISS index choice.

Stages, per new fact (p50/p95 over ``n_queries`` facts): ``embed`` (the embedder on one new text, cache
bypassed by unique texts), ``store_add`` (SQLite + FAISS add with the precomputed vector), ``faiss`` (top-10
search restricted to the user's active ids), ``candidates`` (all candidate sources: FAISS + same key +
version links + the attribute pull in SQL), split into ``candidates.search`` (language detection for the
threshold + FAISS + rows), ``candidates.attribute_sql`` (the ``LIKE`` prefilter), ``candidates.attribute_facts``
(entity extraction of the pulled rows; cached per memory, so cold in a fresh process) and ``candidates.other``,
``entities`` and ``patterns`` (extraction + rules), ``judge`` (the undecided pairs of one fact, in one batch, after
the checker's early exit and cap: ``mean_judged_pairs``), and the end-to-end ``check``; ``facts_per_s``
is new facts fully processed (embed + add + check) per second. The checker is warmed up first
(:meth:`~memlab.integrity.SemanticIntegrityChecker.warm_up`: language detector, date parser, every judge model),
so the stages are steady-state figures; ``checker_overrides`` (CLI ``--max-judged-pairs``, ``--judge-after-hit``)
change the judge bounds.

The real-store stages use a real on-disk store with ``min(n, store_limit)`` memories of ONE user (the worst
case: every memory is a candidate pool) from the seeded fact corpus, embedded with the real embedder.
Above ``store_limit`` the FAISS stage is ALSO measured at the full ``n`` on **random unit vectors** (a
1M-memory store cannot be embedded on 2 cores in a benchmark's time; the search cost does not depend on
the values, but the recall of approximate indexes does: random vectors are a pessimistic case for them).

Many users (``users=N``, CLI ``--users N``): the real on-disk store holds all ``n`` memories spread evenly over
``N`` users (``n // N`` each, in blocks). The first ``min(n, store_limit)`` memories are the real embedded corpus
(whole users); the other users' memories are **filler**: corpus texts with **random unit vectors** (embedding 1M
texts does not fit a benchmark on 2 cores; one user's search cost does not depend on the other users' values).
The checked facts are added round-robin to the users holding real memories, so ``faiss`` (the store's
``search_by_vector``: partition lookup, active-id filter, FAISS search, rows) and ``check`` run against a store of
the full size. The figures add the fill, index save (close) and reopen times (reopen = load + consistency check
against SQLite), the index file size and the process RSS (``rss_mb_*``: before the store, before the reopen (after
the filled store is closed and its freed heap returned to the OS), with the store reopened and their difference
(``rss_mb_of_the_open_store``: what the open store costs), after the checks; ``peak_rss_mb``: the process maximum,
reached while filling). ``store_index="global"`` (CLI ``--store-index global``)
runs the same on one FAISS index for all users (memlab's layout before per-user partitions) for comparison.
In this mode the index comparison runs on the real corpus only (not on a second random set of size ``n``).

Index comparison: each FAISS factory (``FaissIndex(dim, factory=...)``) is built on the same vectors (the
real embedded store, and the random set when ``n > store_limit``) and searched with single queries;
recall@10 is measured against exact search (``Flat``). Parameters: HNSW ``efSearch=64``, IVF
``nprobe=16`` (set with ``faiss.ParameterSpace``).

With ``out`` the run is written as an eval run (``bench-integrity``: ``metrics.stages.<stage>.p50|p95|mean`` and
``metrics.figures``; one example per checked fact and per index configuration), see :mod:`memlab.lab.bench.runs`.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.lab.bench.corpus import fact_corpus
from memlab.lab.bench.integrity_layout import embed_corpus, latency_stats, random_unit, user_layout

__all__ = ["BACKENDS", "IntegrityBenchResult", "compare_markdown", "run_integrity_bench"]

#: Store backends of the bench.
BACKENDS = ("sqlite", "postgres")


@dataclass
class IntegrityBenchResult:
    """Figures of one ``memlab bench integrity`` run."""

    n: int
    n_queries: int
    store_n: int
    embedder: str
    judge: str
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    indexes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seed: int = 0
    facts: list[dict[str, Any]] = field(default_factory=list)
    """Per checked fact: its stage milliseconds, candidates and whether a contradiction was found."""

    def to_markdown(self) -> str:
        """Per-stage table, index comparison and notes, as markdown."""
        lines = [f"integrity benchmark: N={self.n:,} memories (real store: {self.store_n:,}), "
                 f"{self.n_queries} new facts, embedder={self.embedder}, judge={self.judge}", "",
                 "| stage | p50 ms | p95 ms | mean ms |", "|---|---|---|---|"]
        for k, v in self.stages.items():
            lines.append(f"| {k} | {v['p50']:.3f} | {v['p95']:.3f} | {v['mean']:.3f} |")
        lines += ["", "| figure | value |", "|---|---|"]
        for k, v in self.figures.items():
            lines.append(f"| {k} | {v:,.3f} |" if isinstance(v, float) else f"| {k} | {v} |")
        if self.indexes:
            lines += ["", "| vectors | N | index | build s | search p50 ms | search p95 ms | recall@10 vs exact "
                      "| recall@10 with ties |", "|---|---|---|---|---|---|---|---|"]
            for r in self.indexes:
                ties = r.get("recall_at_10_ties")
                lines.append(f"| {r['vectors']} | {r['n']:,} | {r['factory']} | {r['build_s']:.2f} | "
                             f"{r['p50_ms']:.3f} | {r['p95_ms']:.3f} | {r['recall_at_10']:.3f} | "
                             + ("–" if ties is None else f"{ties:.3f}") + " |")
        lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines)

    def write(self, out_dir: str | Path) -> Path:
        """Write the ``bench-integrity`` eval run (and ``bench.md``) into ``out_dir``; returns it."""
        from memlab.lab.bench.runs import write_bench_run

        examples = [
            {"id": f"fact/{f['i']}", "group": "check", "latency_ms": f["check_ms"],
             "pred": "contradiction" if f["has_contradiction"] else "none", "meta": f}
            for f in self.facts
        ] + [
            {"id": f"index/{r['vectors']}/{r['factory']}", "group": "index", "latency_ms": r["p50_ms"],
             "error": r.get("skipped"), "meta": r}
            for r in self.indexes
        ]
        params = {"embedder": self.embedder, "judge": self.judge, "n_queries": self.n_queries,
                  "store_n": self.store_n, "indexes": sorted({r["factory"] for r in self.indexes})}
        write_bench_run(out_dir, "integrity", params=params, seed=self.seed, n=self.n,
                        metrics={"stages": self.stages, "figures": self.figures}, primary_metric="stages.check.p50",
                        examples=examples, notes=self.notes, markdown=self.to_markdown(), judge=self.judge)
        return Path(out_dir)


def _compare_indexes(vecs: np.ndarray, queries: np.ndarray, factories: list[str], label: str, seed: int,
                     k: int = 10) -> list[dict[str, Any]]:
    import faiss

    from memlab.index.faiss_index import FaissIndex

    n, dim = vecs.shape
    ids = np.arange(n, dtype=np.int64)
    rows: list[dict[str, Any]] = []
    exact: np.ndarray | None = None
    order = ["Flat"] + [f for f in factories if f != "Flat"]
    for fac in order:
        if fac.upper().startswith("IVF"):
            nlist = int("".join(ch for ch in fac[3:].split(",")[0] if ch.isdigit()) or 1024)
            if n < 39 * nlist:  # faiss wants ~39 points per centroid
                rows.append({"vectors": label, "n": n, "factory": fac, "build_s": float("nan"), "p50_ms": float("nan"),
                             "p95_ms": float("nan"), "recall_at_10": float("nan"), "skipped": f"N < 39*{nlist}"})
                continue
        t = time.perf_counter()
        idx = FaissIndex(dim, factory=fac)
        if not idx.is_trained:
            sample = vecs[np.random.default_rng(seed).choice(n, size=min(n, 100_000), replace=False)]
            idx.train(sample)
        for s in range(0, n, 200_000):
            idx.add(ids[s : s + 200_000], vecs[s : s + 200_000])
        build = time.perf_counter() - t
        ps = faiss.ParameterSpace()
        if fac.upper().startswith("HNSW"):
            ps.set_index_parameter(idx._index, "efSearch", 64)
        elif fac.upper().startswith("IVF"):
            ps.set_index_parameter(idx._index, "nprobe", 16)
        lat, found = [], []
        for q in queries:
            t = time.perf_counter()
            _, got = idx.search(q.reshape(1, -1), k)
            lat.append((time.perf_counter() - t) * 1000)
            found.append(got[0])
        got_all = np.stack(found)
        if exact is None:
            exact = got_all
        recall = float(np.mean([len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(got_all, exact, strict=True)]))
        st = latency_stats(lat)
        rows.append({"vectors": label, "n": n, "factory": fac, "build_s": build, "p50_ms": st["p50"],
                     "p95_ms": st["p95"], "recall_at_10": recall})
        del idx
    return rows


def _resolve_judge(judge: Any, notes: list[str]) -> tuple[Any, str]:
    """The judge (warmed up) and its name; one that does not load is ``None`` with a note saying why."""
    from memlab.errors import MemlabError

    judge_obj: Any = None
    judge_name = "none"
    if judge is not None:
        from memlab.judges import resolve_judge

        try:
            judge_obj, judge_name = resolve_judge(judge)
            if judge_obj is not None:  # every model of the judge: the routed default loads its second on Italian
                from memlab.integrity.checker import WARM_UP_PAIRS

                judge_obj.judge(list(WARM_UP_PAIRS))
        except (MemlabError, ImportError) as exc:
            notes.append(f"judge stage n/a: load_judge({judge!r}) failed: {type(exc).__name__}: {exc}")
            judge_obj, judge_name = None, f"{judge} (n/a)"
    return judge_obj, judge_name


def _rss_mb() -> float:
    """Resident set size of this process now, in MB (NaN where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _release_freed_memory() -> None:
    """Give the heap that freed objects left behind back to the OS (glibc ``malloc_trim``; a no-op elsewhere).

    Filling a store frees many faiss buffers that glibc keeps mapped: without this the RSS measured after the
    reopen counts the filled store's index twice (measured: 200k memories, 416 MB RSS with the store open in the
    filling process vs 88 + 328 MB after the trim, the same as a fresh process opening the file)."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


def _multi_user_store(emb: Any, path: Path, texts: list[str], res: IntegrityBenchResult, users: int,
                      store_index: str, seed: int) -> tuple[Any, list[str]]:
    """A real store of ``res.n`` memories over ``users`` users: real embedded ``texts`` first (whole users), the
    rest corpus texts with random unit vectors. Returns the reopened store and the users holding real memories."""
    from memlab.index import FaissIndex
    from memlab.store import MemoryStore

    real_vecs = embed_corpus(emb, texts, res, _rss_mb)

    def open_store() -> Any:
        idx = FaissIndex(emb.dim) if store_index == "global" else None
        return MemoryStore(path, embedder=emb, index=idx)

    store = open_store()
    real_users: list[str] = []
    t = time.perf_counter()
    for name, utexts, vecs, real, _done in user_layout(res.n, users, texts, real_vecs, emb.dim, seed):
        if real:
            real_users.append(name)
        for s in range(0, len(utexts), 2000):
            store.add_many(name, utexts[s : s + 2000], embeddings=vecs[s : s + 2000])
    res.figures["store_fill_s"] = time.perf_counter() - t
    t = time.perf_counter()
    store.close()
    res.figures["store_close_s (index saved)"] = time.perf_counter() - t
    index_file = Path(str(path) + ".faiss")
    res.figures["index_file_mb"] = index_file.stat().st_size / 2**20 if index_file.exists() else 0.0
    res.figures["store_files_mb"] = sum(f.stat().st_size for f in path.parent.glob(path.name + "*")) / 2**20
    del store
    _release_freed_memory()
    res.figures["rss_mb_before_reopen"] = _rss_mb()
    t = time.perf_counter()
    store = open_store()
    res.figures["store_reopen_s (load + consistency check)"] = time.perf_counter() - t
    res.figures["rss_mb_store_open"] = _rss_mb()
    res.figures["rss_mb_of_the_open_store"] = res.figures["rss_mb_store_open"] - res.figures["rss_mb_before_reopen"]
    if not real_users:  # fewer real texts than one user's share: the first user is checked anyway
        real_users.append("user-00000")
    res.figures["users"] = users
    res.figures["memories_per_user"] = res.n // users
    res.figures["users_with_real_memories"] = len(real_users)
    res.figures["store_index"] = type(store.index).__name__ + (" (one for all users)" if store_index == "global"
                                                               else "")
    return store, real_users


def _filled_store(emb: Any, path: Path, texts: list[str], res: IntegrityBenchResult) -> Any:
    """A real store holding ``texts`` for one user (embedding and fill times go into ``res.figures``)."""
    from memlab.store import MemoryStore

    emb.embed(["warm-up"])
    t = time.perf_counter()
    vecs = emb.embed(texts)
    res.figures["store_embed_s (unique texts, cached)"] = time.perf_counter() - t
    store = MemoryStore(path, embedder=emb)
    t = time.perf_counter()
    for s in range(0, len(texts), 2000):
        store.add_many("bench-user", texts[s : s + 2000], embeddings=vecs[s : s + 2000])
    res.figures["store_fill_s"] = time.perf_counter() - t
    return store


def _time_checks(emb: Any, store: Any, checker: Any, new_texts: list[str], res: IntegrityBenchResult,
                 users: list[str] | None = None) -> bool:
    """Embed, add and check each new fact (round-robin over ``users``, default the one bench user), timing every
    stage; fill ``res``. True when the judge stage ran."""
    users = users or ["bench-user"]
    lat: dict[str, list[float]] = {k: [] for k in ("embed", "store_add", "faiss", "candidates", "candidates.search",
                                                    "candidates.attribute_sql", "candidates.attribute_facts",
                                                    "candidates.other", "entities", "patterns", "judge", "check",
                                                    "total")}
    n_cands: list[int] = []
    n_judged: list[int] = []
    n_found = 0
    t_all = time.perf_counter()
    for i, txt in enumerate(new_texts):
        t0 = time.perf_counter()
        v = emb.embed([txt])
        t1 = time.perf_counter()
        user = users[i % len(users)]
        item = store.add(user, txt, embedding=v[0])
        t2 = time.perf_counter()
        store.search_by_vector(user, v[0], 10, exclude=[item.id])
        t3 = time.perf_counter()
        r = checker.check(item)
        t4 = time.perf_counter()
        lat["embed"].append((t1 - t0) * 1000)
        lat["store_add"].append((t2 - t1) * 1000)
        lat["faiss"].append((t3 - t2) * 1000)
        lat["check"].append((t4 - t3) * 1000)
        lat["total"].append((t4 - t3 + t2 - t0) * 1000)
        for k in lat:
            if k in r.stage_ms:
                lat[k].append(float(r.stage_ms[k]))
        n_cands.append(r.n_candidates)
        n_judged.append(r.n_judged)
        n_found += int(r.has_contradiction)
        res.facts.append({"i": i, "user": user, "text": txt, "check_ms": lat["check"][-1], "total_ms": lat["total"][-1],
                          "stage_ms": {k: float(v) for k, v in r.stage_ms.items()}, "n_candidates": r.n_candidates,
                          "n_judged": r.n_judged,
                          "has_contradiction": bool(r.has_contradiction)})
    elapsed = time.perf_counter() - t_all - sum(lat["faiss"]) / 1000  # the extra FAISS probe is not product work
    res.stages = {k: latency_stats(v) for k, v in lat.items() if v}
    res.figures["facts_per_s (embed+add+check)"] = len(new_texts) / elapsed if elapsed > 0 else float("nan")
    res.figures["mean_candidates"] = float(np.mean(n_cands)) if n_cands else 0.0
    res.figures["mean_judged_pairs"] = float(np.mean(n_judged)) if n_judged else 0.0
    res.figures["max_judged_pairs_of_a_fact"] = int(max(n_judged, default=0))
    res.figures["facts_with_contradiction"] = n_found
    res.figures["candidate_threshold"] = checker.candidate_threshold
    return bool(lat["judge"])


def _random_indexes(emb: Any, res: IntegrityBenchResult, factories: list[str], seed: int, notes: list[str]) -> None:
    """The index comparison at the full ``n`` on random unit vectors (and the Flat search as a stage)."""
    n, store_n = res.n, res.store_n
    notes.append(f"FAISS at N={n:,}: RANDOM unit vectors (seed {seed}), not embedded texts; the real-store "
                 f"stages above use N={store_n:,} real memories.")
    rnd = random_unit(n, emb.dim, seed)
    q_rnd = random_unit(res.n_queries, emb.dim, seed + 1)
    res.indexes += _compare_indexes(rnd, q_rnd, factories, "random unit", seed)
    flat = [r for r in res.indexes if r["vectors"] == "random unit" and r["factory"] == "Flat"]
    if flat:
        res.stages[f"faiss@{n:,} (random, Flat)"] = {"p50": flat[0]["p50_ms"], "p95": flat[0]["p95_ms"],
                                                    "mean": float("nan")}
    del rnd


def _machine_note(res: IntegrityBenchResult, notes: list[str]) -> None:
    try:
        res.figures["load_average_1m"] = os.getloadavg()[0]
        notes.append(f"machine: {os.cpu_count()} CPUs, 1-min load average {os.getloadavg()[0]:.1f} at the end "
                     "(shared machine: latencies include contention).")
    except OSError:
        pass


def _run_postgres(emb: Any, res: IntegrityBenchResult, texts: list[str], new_texts: list[str], users: int,
                  seed: int, judge_obj: Any, levels: tuple[str, ...], checker_overrides: dict[str, Any] | None,
                  notes: list[str], dsn: str | None, hnsw: bool, maintenance_work_mem: str, say: Any) -> None:
    """The postgres backend: bulk load, checks on the exact search, then HNSW build + recall (see the module)."""
    from memlab.integrity import SemanticIntegrityChecker
    from memlab.lab.bench.pg_integrity import PgBench

    pg = PgBench(emb, res, users, seed, dsn=dsn, maintenance_work_mem=maintenance_work_mem, log=say)
    try:
        store, checked = pg.fill(texts, _rss_mb)
        notes.append(f"{res.n:,} memories over {users:,} users in PostgreSQL + pgvector {res.figures['pgvector']} "
                     f"(bulk_load: binary COPY, one user's rows contiguous): {len(checked)} users hold the embedded "
                     "corpus and get the checked facts; the other users' memories are filler with RANDOM unit "
                     "vectors. The checks ran on the exact search BEFORE the HNSW index was built (their "
                     "store_add has no HNSW insert; `store_add (HNSW in place)` is measured after the build).")
        checker = SemanticIntegrityChecker(store, judge_obj, levels=levels, **(checker_overrides or {}))
        checker.warm_up()
        say(f"checking {len(new_texts)} new facts (exact search)")
        judged = _time_checks(emb, store, checker, new_texts, res, checked)
        pg.memory("after_checks", _rss_mb)
        if not judged:
            notes.append("judge stage not measured (no judge).")
        say("figures so far (exact search):\n" + res.to_markdown())
        if hnsw:
            pg.hnsw(np.asarray(emb.embed(new_texts), dtype=np.float32), checked, _rss_mb)
        else:
            notes.append("HNSW not built (pg_hnsw=False): no recall figures.")
        res.figures["peak_client_rss_mb"] = _peak_rss_mb()
    finally:
        pg.close()


def _checked_args(n: int, users: int | None, store_index: str, backend: str) -> int | None:
    """Validate the arguments of :func:`run_integrity_bench` that combine; returns ``users`` (checked).

    Raises:
        InvalidInputError: ``users`` is not a positive int or exceeds ``n``, or ``store_index`` / ``backend`` is
            unknown or does not apply.
    """
    from memlab._validation import check_positive_int
    from memlab.errors import InvalidInputError

    if users is not None:
        users = check_positive_int(users, name="users", owner="run_integrity_bench")
        if users > n:
            raise InvalidInputError(f"run_integrity_bench got users={users} for only n={n} memories.")
    if store_index not in ("partitioned", "global"):
        raise InvalidInputError(
            f"The 'store_index' parameter of run_integrity_bench must be 'partitioned' or 'global'. "
            f"Got {store_index!r} instead.")
    if backend not in BACKENDS:
        raise InvalidInputError(
            f"The 'backend' parameter of run_integrity_bench must be one of {BACKENDS}. Got {backend!r} instead.")
    if backend == "postgres" and store_index != "partitioned":
        raise InvalidInputError("run_integrity_bench: store_index applies to the sqlite backend only.")
    return users


def _run_sqlite(emb: Any, res: IntegrityBenchResult, texts: list[str], new_texts: list[str], users: int | None,
                store_index: str, seed: int, judge_obj: Any, levels: tuple[str, ...],
                checker_overrides: dict[str, Any] | None, notes: list[str], indexes: list[str] | None,
                large_indexes: list[str] | None, store_limit: int) -> None:
    """The sqlite backend: a real store in a temporary directory, the timed checks, then the index comparison on
    its vectors (and on random unit vectors at the full ``n`` above ``store_limit``, one user only)."""
    from memlab.integrity import SemanticIntegrityChecker

    n, store_n = res.n, res.store_n
    tmp = tempfile.TemporaryDirectory()
    try:
        if users is None:
            store = _filled_store(emb, Path(tmp.name) / "bench.db", texts, res)
            checked = ["bench-user"]
        else:
            store, checked = _multi_user_store(emb, Path(tmp.name) / "bench.db", texts, res, users, store_index,
                                               seed)
            notes.append(f"{n:,} memories over {users:,} users in one real store ({store_index} index): "
                         f"{res.figures['users_with_real_memories']} users hold the embedded corpus and get the "
                         f"checked facts; the other users' memories are filler with RANDOM unit vectors.")
        checker = SemanticIntegrityChecker(store, judge_obj, levels=levels, **(checker_overrides or {}))
        checker.warm_up()  # one-off loads (language detector, date parser, both models of the routed judge)
        judged = _time_checks(emb, store, checker, new_texts, res, checked)
        if users is not None:
            res.figures["rss_mb_after_checks"] = _rss_mb()
            res.figures["peak_rss_mb"] = max(_peak_rss_mb(), res.figures["rss_mb_after_checks"])
        real = np.asarray(store.vectors([m.id for u in checked for m in store.list(u, limit=store_n)][:store_n]),
                          dtype=np.float32)
        store.close()
        if not judged:
            notes.append("judge stage not measured (no judge).")
        q_real = emb.embed(new_texts)
        facs = indexes or ["Flat", "HNSW32", "IVF1024,Flat"]
        res.indexes += _compare_indexes(real, q_real, facs, f"real {res.embedder} corpus", seed)
        if n > store_limit and users is None:
            _random_indexes(emb, res, large_indexes or facs, seed, notes)
    finally:
        tmp.cleanup()


def run_integrity_bench(
    n: int = 10_000,
    n_queries: int = 200,
    *,
    judge: Any = "default",
    embedder: Any = None,
    store_limit: int = 20_000,
    indexes: list[str] | None = None,
    large_indexes: list[str] | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    users: int | None = None,
    store_index: str = "partitioned",
    checker_overrides: dict[str, Any] | None = None,
    backend: str = "sqlite",
    pg_dsn: str | None = None,
    pg_hnsw: bool = True,
    pg_maintenance_work_mem: str = "1GB",
    log: Any = None,
) -> IntegrityBenchResult:
    """Run the benchmark (see the module docs for what each figure means).

    Args:
        n: memories in the store (above ``store_limit``, the FAISS stage at ``n`` uses random unit vectors).
        n_queries: new facts checked (and FAISS queries in the index comparison).
        judge: judge name, instance, or ``"none"``; a name that does not load is reported as n/a with the reason.
        embedder: embedder name or instance; ``None`` (default) is the product's default, ``Settings().embedder``.
        store_limit: largest real (embedded) store.
        indexes: FAISS factories to compare (``Flat`` is always the exact reference).
        large_indexes: factories for the random set at ``n`` (default: ``indexes``); building HNSW on 1M vectors
            takes long on 2 cores.
        seed: corpus / vector seed.
        out: directory for the ``bench-integrity`` eval run (:meth:`IntegrityBenchResult.write`).
        users: spread all ``n`` memories over this many users in one real store (see the module docs);
            ``None`` (default): one user holding ``min(n, store_limit)`` real memories.
        store_index: ``"partitioned"`` (the store's default: one FAISS index per user) or ``"global"`` (one
            FAISS index for all users, the layout before partitions), with ``users``.
        checker_overrides: :class:`~memlab.integrity.IntegrityConfig` fields for the checker (e.g.
            ``max_judged_pairs=None, judge_after_hit=True`` for the unbounded judge stage).
        backend: ``"sqlite"`` (default: SQLite + FAISS) or ``"postgres"`` (:class:`~memlab.store.postgres.PostgresStore`
            on a throwaway server, or ``pg_dsn``; see :mod:`memlab.lab.bench.pg_integrity`): the store is
            bulk-loaded, the checks run on the exact search, then the HNSW index is built (``pg_hnsw``) and its
            recall@10 vs exact measured. ``users=None`` means one user.
        pg_maintenance_work_mem: memory of the HNSW build.
        log: called with a progress line (e.g. ``print``); the postgres backend also logs its figures so far
            before the long HNSW build.

    Returns:
        An :class:`IntegrityBenchResult`.
    """
    from memlab.embedding import resolve_embedder

    users = _checked_args(n, users, store_index, backend)
    say = log or (lambda _msg: None)
    emb = resolve_embedder(embedder)
    store_n = min(n, store_limit)
    notes: list[str] = []
    judge_obj, judge_name = _resolve_judge(judge, notes)
    levels = ("entities", "patterns", "judge") if judge_obj is not None else ("entities", "patterns")
    res = IntegrityBenchResult(n=n, n_queries=n_queries, store_n=store_n, embedder=getattr(emb, "name", "?"),
                               judge=judge_name, seed=seed)
    texts = fact_corpus(store_n, seed=seed)
    new_texts = [f"{t} ({i})" for i, t in enumerate(fact_corpus(n_queries, seed=seed + 1))]
    if backend == "postgres":
        res.figures["backend"] = "postgres"
        _run_postgres(emb, res, texts, new_texts, users or 1, seed, judge_obj, levels, checker_overrides, notes,
                      pg_dsn, pg_hnsw, pg_maintenance_work_mem, say)
    else:
        res.figures["backend"] = "sqlite"
        _run_sqlite(emb, res, texts, new_texts, users, store_index, seed, judge_obj, levels, checker_overrides,
                    notes, indexes, large_indexes, store_limit)
    _machine_note(res, notes)
    res.notes = notes
    if out:
        res.write(out)
    return res


def compare_markdown(results: list[IntegrityBenchResult]) -> str:
    """One row per backend: the vector stage, the check, the add, HNSW's best recall and the memory."""

    def fig(r: IntegrityBenchResult, *keys: str) -> str:
        for k in keys:
            v = r.figures.get(k)
            if isinstance(v, int | float) and v == v:
                return f"{v:,.0f}"
        return "–"

    def stage(r: IntegrityBenchResult, name: str) -> str:
        st = r.stages.get(name)
        return "–" if st is None else f"{st['p50']:.2f} / {st['p95']:.2f}"

    lines = ["| backend | N / users | vector stage p50 / p95 ms | check p50 / p95 ms | store add p50 / p95 ms | "
             "approximate index: recall@10 (ties) at p95 ms | client RSS MB | server PSS MB | on disk MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        approx = [x for x in r.indexes if x["factory"] not in ("Flat", "PostgreSQL exact (user_id index)")
                  and x.get("recall_at_10") == x.get("recall_at_10")]
        if r.figures.get("backend") == "postgres":
            approx = [x for x in approx if x["vectors"].startswith("pg real")]
        best = max(approx, key=lambda x: x["recall_at_10"], default=None)
        best_s = "–" if best is None else (f"{best['recall_at_10']:.3f} ({best.get('recall_at_10_ties', float('nan')):.3f}) "
                                           f"at {best['p95_ms']:.1f}: {best['factory']}")
        add = stage(r, "store_add (HNSW in place)") if "store_add (HNSW in place)" in r.stages else stage(r, "store_add")
        lines.append(
            f"| {r.figures.get('backend', 'sqlite')} | {r.n:,} / {r.figures.get('users', 1)} | {stage(r, 'faiss')} | "
            f"{stage(r, 'check')} | {add} | {best_s} | "
            f"{fig(r, 'client_rss_mb_after_checks', 'rss_mb_after_checks')} | "
            f"{fig(r, 'pg_server_pss_mb_hnsw_built', 'pg_server_pss_mb_after_checks')} | "
            f"{fig(r, 'pg_datadir_mb_hnsw_built', 'pg_datadir_mb_after_checks', 'store_files_mb')} |")
    return "\n".join(lines)
