"""``memlab bench store``: add/search throughput of the memory store on N items."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``bench store`` to the parser."""
    p = groups["bench"].add_parser("store", help="store add/search throughput (real SQLite + FAISS + embedder)")
    p.add_argument("--memories", type=int, default=10_000, help="items to add (default 10000)")
    p.add_argument("--queries", type=int, default=200, help="search queries (default 200)")
    p.add_argument("--embedder", default="minilm", help="embedder name (default minilm)")
    p.add_argument("--db", default=None, help="SQLite path (default: a temp dir)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from memlab.lab.bench.store import run_store_bench

    result = run_store_bench(
        n=args.memories, n_queries=args.queries, embedder=args.embedder, db_path=args.db, seed=args.seed, out=args.out
    )
    print(result.to_markdown())
    if args.out:
        print(f"\nwrote {args.out} (memlab eval show {args.out})")
    return 0
