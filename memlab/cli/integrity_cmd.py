"""``memlab eval integrity`` (memory-level contradiction detection) and ``memlab bench integrity``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``eval integrity`` and ``bench integrity`` to the parser."""
    p = groups["eval"].add_parser(
        "integrity", help="memory-level contradiction detection on whole dialogues/profiles")
    p.add_argument("--dataset", required=True, choices=["decode", "cdconv", "ci_tod", "kvpi"])
    p.add_argument("--split", default=None, help="decode: human-bot|rct; others: test (default), dev, train")
    p.add_argument("--data-dir", default=None, help="another copy of the dataset files")
    p.add_argument("--judge", default="default",
                   help="judge name for load_judge (default), or 'none' to run the entities+patterns levels alone")
    p.add_argument("--levels", default=None, help="comma-separated subset of entities,patterns,judge")
    p.add_argument("--embedder", default=None,
                   help="embedder name (default: the product default, Settings().embedder, i.e. e5); "
                        "'fake' only with --exhaustive (vectors unused)")
    p.add_argument("--similarity-threshold", type=float, default=None,
                   help="candidate cosine threshold (default: Settings; 'embedder' calibration when unset there)")
    p.add_argument("--confidence-threshold", type=float, default=None, help="report at confidence >= this (default: Settings, 0.78)")
    p.add_argument("--exhaustive", action="store_true", help="compare with every memory (not only candidates)")
    p.add_argument("--lang", default=None, choices=["it", "en"], help="language of the explanations")
    _judge_bound_args(p)
    p.add_argument("--limit", type=int, default=None, help="seeded sample of N dialogues/profiles")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="run directory (default runs/<ts>_integrity_<id>)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch and FAISS (OpenMP) threads (on a shared, loaded machine 1 is often much faster than 2)")
    p.set_defaults(func=_eval)

    b = groups["bench"].add_parser("integrity", help="per-stage latency of the integrity check; FAISS index choice")
    b.add_argument("--memories", type=int, default=10_000, help="memories in the store (default 10000)")
    b.add_argument("--queries", type=int, default=200, help="checked items / FAISS queries (default 200)")
    b.add_argument("--judge", default="default", help="judge for the judge stage ('none' to skip it)")
    b.add_argument("--embedder", default=None, help="embedder name (default: Settings().embedder, i.e. e5)")
    b.add_argument("--store-limit", type=int, default=20_000,
                   help="above this N the real-store stages use this many memories and the FAISS stage uses "
                        "random unit vectors at full N (said in the output)")
    b.add_argument("--indexes", default="Flat;HNSW32;IVF1024,Flat",
                   help="FAISS factories, separated by ';' (factory strings contain commas), compared with recall@10 vs exact")
    b.add_argument("--large-indexes", default=None,
                   help="';'-separated FAISS factories for the random set at full N (default: --indexes)")
    b.add_argument("--users", type=int, default=None,
                   help="spread all --memories over N users in one real store (filler users get random unit "
                        "vectors, said in the output); reports FAISS and check p50/p95 and the process RSS")
    b.add_argument("--store-index", default="partitioned", choices=["partitioned", "global"],
                   help="with --users: the store's per-user index (default) or one index for all users (the "
                        "layout before partitions, for comparison)")
    b.add_argument("--backend", default="sqlite",
                   help="store backend(s): sqlite (default), postgres, or both side by side: 'sqlite,postgres' "
                        "(postgres: a throwaway PostgreSQL + pgvector server, bulk-loaded; HNSW recall vs exact)")
    b.add_argument("--pg-dsn", default=None, help="postgres backend: use this server instead of a throwaway one")
    b.add_argument("--no-hnsw", action="store_true", help="postgres backend: skip the HNSW build and recall")
    b.add_argument("--pg-maintenance-work-mem", default="1GB",
                   help="postgres backend: maintenance_work_mem of the HNSW build (default 1GB; ~3GB keeps 1M "
                        "384-d vectors in memory)")
    _judge_bound_args(b)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    b.add_argument("--threads", type=int, default=None, help="torch and FAISS (OpenMP) threads")
    b.set_defaults(func=_bench)


def _max_pairs(value: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1 or 'none', got {value!r}")
    return n


def _judge_bound_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-judged-pairs", type=_max_pairs, default=argparse.SUPPRESS, metavar="N|none",
                   help="most pairs of one checked memory sent to the judge (default: Settings, 4; 'none': no cap)")
    p.add_argument("--judge-after-hit", action="store_true", default=None,
                   help="also judge a memory whose entities/patterns levels already found a contradiction "
                        "(default: Settings, early exit)")


def _bound_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if hasattr(args, "max_judged_pairs"):
        out["max_judged_pairs"] = args.max_judged_pairs
    if args.judge_after_hit:
        out["judge_after_hit"] = True
    return out


def _set_threads(n: int | None) -> None:
    if n is not None:
        import faiss
        import torch

        torch.set_num_threads(max(1, n))
        faiss.omp_set_num_threads(max(1, n))


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.similarity_threshold is not None:
        out["similarity_threshold"] = args.similarity_threshold
    if args.confidence_threshold is not None:
        out["confidence_threshold"] = args.confidence_threshold
    if args.exhaustive:
        out["exhaustive"] = True
    if args.lang is not None:
        out["lang"] = args.lang
    return {**out, **_bound_overrides(args)}


def _eval(args: argparse.Namespace) -> int:
    from memlab.config import Settings
    from memlab.eval.integrity import evaluate_integrity

    _set_threads(args.threads)
    levels = [x.strip() for x in args.levels.split(",")] if args.levels else None
    run = evaluate_integrity(
        args.dataset, args.split, judge=args.judge, levels=levels, embedder=args.embedder, data_dir=args.data_dir,
        limit=args.limit, seed=args.seed, out_dir=args.out, settings=Settings(), command=shlex.join(sys.argv),
        **_overrides(args))
    print(run.to_markdown())
    m = run.metrics
    rows = [("units", run.spec.n), ("f1 (contradiction)", m["contradiction"]["f1"]),
            ("precision", m["contradiction"]["precision"]), ("recall", m["contradiction"]["recall"]),
            ("false_contradiction_rate", m.get("false_contradiction_rate")),
            ("evidence_accuracy", m.get("evidence_accuracy")), ("units/s", m.get("units_per_second")),
            ("mean candidates", m.get("mean_candidates"))]
    print("\n| metric | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |")
    print("\n| level (top decision) | units | predicted | tp | fp |\n|---|---|---|---|---|")
    for lvl, s in sorted(run.per_level.get("top", {}).items()):
        print(f"| {lvl} | {s['n']} | {s['predicted_contradiction']} | {s['tp']} | {s['fp']} |")
    print(f"\nrun written to {run.path}")
    return 0 if run.status == "ok" else 1


def _bench(args: argparse.Namespace) -> int:
    from memlab.lab.bench.integrity import BACKENDS, compare_markdown, run_integrity_bench

    _set_threads(args.threads)
    backends = [x.strip() for x in args.backend.split(",") if x.strip()]
    if not backends or any(b not in BACKENDS for b in backends):
        print(f"--backend must be one or more of {', '.join(BACKENDS)} separated by ','; got {args.backend!r}",
              file=sys.stderr)
        return 2
    results = []
    for backend in backends:
        out = args.out if args.out is None or len(backends) == 1 else str(Path(args.out) / backend)
        print(f"## backend: {backend}", flush=True)
        result = run_integrity_bench(
            n=args.memories, n_queries=args.queries, judge=args.judge, embedder=args.embedder,
            store_limit=args.store_limit, indexes=[x.strip() for x in args.indexes.split(";") if x.strip()],
            large_indexes=[x.strip() for x in args.large_indexes.split(";") if x.strip()] if args.large_indexes else None,
            seed=args.seed, out=out, users=args.users,
            store_index=args.store_index if backend == "sqlite" else "partitioned",
            checker_overrides=_bound_overrides(args) or None, backend=backend, pg_dsn=args.pg_dsn,
            pg_hnsw=not args.no_hnsw, pg_maintenance_work_mem=args.pg_maintenance_work_mem,
            log=lambda msg: print(msg, flush=True))
        print(result.to_markdown(), flush=True)
        results.append(result)
    if len(results) > 1:
        print("\n## side by side\n\n" + compare_markdown(results))
    return 0
