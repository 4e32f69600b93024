"""``memlab bench crash``: random kill -9 of ``memlab chat`` during contradicting turns, then one restart."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``bench crash`` to the parser."""
    p = groups["bench"].add_parser(
        "crash", help="kill -9 'memlab chat' at random moments; after one restart every acknowledged memory must "
        "be present and every memory checked")
    p.add_argument("--runs", type=int, default=50, help="chat processes to start and kill (default 50)")
    p.add_argument("--max-delay", type=float, default=12.0, help="kill after uniform [0, this] seconds (default 12)")
    p.add_argument("--embedder", default="minilm", help="embedder (default minilm)")
    p.add_argument("--judge", default="lexical", help="judge of the checks (default lexical)")
    p.add_argument("--db", default=None, help="SQLite path (default: a temp dir)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    p.add_argument("--restart", action="store_true",
                   help="measure instead the start time after a kill -9 at --memories memories, with the FAISS file "
                   "written at clean shutdown only (before: full rebuild) and in the background (after: catch-up)")
    p.add_argument("--memories", type=int, default=100_000, help="with --restart: memories (default 100000)")
    p.add_argument("--users", type=int, default=100, help="with --restart: users they belong to (default 100)")
    p.add_argument("--unflushed", type=int, default=500,
                   help="with --restart: rows the killed process wrote after the file's last write (default 500)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from memlab.errors import InvalidInputError
    from memlab.lab.bench.crash import run_crash_bench

    if args.restart:
        return _run_restart(args)
    if args.runs < 1 or not args.max_delay > 0:
        raise InvalidInputError("--runs must be >= 1 and --max-delay > 0.")
    res = run_crash_bench(runs=args.runs, max_delay_s=args.max_delay, embedder=args.embedder, judge=args.judge,
                          seed=args.seed, db_path=args.db, out=args.out)
    print(res.to_markdown())
    lost = res.acknowledged - res.acknowledged_present
    unchecked = res.memories - res.memories_checked
    print(f"\nacknowledged memories lost: {lost}; memories left unchecked after the restart: {unchecked}")
    return 0 if lost == 0 and unchecked == 0 and res.integrity_ok else 1


def _run_restart(args: argparse.Namespace) -> int:
    from memlab.errors import InvalidInputError
    from memlab.lab.bench.crash import run_restart_bench

    if args.memories < 1 or not 1 <= args.users <= args.memories or args.unflushed < 1:
        raise InvalidInputError("--memories and --unflushed must be >= 1, --users in [1, --memories].")
    res = run_restart_bench(memories=args.memories, users=args.users, unflushed=args.unflushed,
                            embedder=args.embedder, seed=args.seed, db_path=args.db)
    print(res.to_markdown())
    return 0 if res.after_source == "file" and res.after_caught_up == args.unflushed else 1
