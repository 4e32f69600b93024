"""``memlab bench peers``: memlab vs mem0 side by side, same sentences, same machine, same run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints such as 1000,10000. Got {text!r}.") from exc


def register(groups: dict[str, Any]) -> None:
    """Add ``bench peers`` to the parser."""
    p = groups["bench"].add_parser(
        "peers",
        help="memlab vs mem0 side by side: add/search p50/p95, RSS, disk, duplicates and updates",
        description="Put the same seeded facts into memlab and mem0 (add infer=False, same packaged MiniLM, FAISS), "
        "interleaved, each system in its own process, and report per size: add p50/p95 (memlab, memlab + "
        "integrity check, mem0), the embedding share, search top-10 p50/p95, peak RSS, disk size, ratios; plus "
        "duplicate/update behaviour. Needs mem0: pip install 'memlab[bench]'.",
    )
    p.add_argument("--sizes", type=_int_list, default=(1_000, 10_000, 100_000),
                   help="checkpoint store sizes (default 1000,10000,100000)")
    p.add_argument("--queries", type=int, default=200, help="timed searches per size (default 200)")
    p.add_argument("--probe-adds", type=int, default=100, help="timed single adds per size and system (default 100)")
    p.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    p.add_argument("--repeats", type=int, default=1, help="independent runs, reported as median [min-max] (default 1)")
    p.add_argument("--budget-s", type=float, default=1_200.0,
                   help="wall-time budget per system and repeat, in seconds (default 1200); sizes beyond it are "
                   "reported as not reached")
    p.add_argument("--mem0-fill", choices=("bulk", "add"), default="bulk",
                   help="how mem0 is filled between sizes: 'bulk' = its own batch-persist path (default), 'add' = one "
                   "public add(infer=False) per fact (O(N^2): use with --budget-s); timed adds always use add()")
    p.add_argument("--fill-vectors", choices=("precomputed", "embed"), default="precomputed",
                   help="'precomputed' (default): embed the fill corpus once and bulk-insert the same vectors into "
                   "every system; 'embed': each system embeds its own fill. Timed adds/searches always embed")
    p.add_argument("--no-mem0", action="store_true", help="run memlab alone (no comparison)")
    p.add_argument("--judge", default="default", help="judge of the integrity check (default: memlab's own)")
    p.add_argument("--no-check", action="store_true", help="skip the memlab add + integrity check variant")
    p.add_argument("--embedding-cache", action="store_true",
                   help="keep memlab's embedding cache on (off by default so both systems embed every text)")
    p.add_argument("--embedder-backend", choices=("fast", "sentence-transformers"), default="fast",
                   help="how memlab runs MiniLM: 'fast' = its own engine (default), 'sentence-transformers' = the "
                   "float32 path mem0 runs (shows what the engine buys)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch/FAISS threads per worker (default 1: stable on a shared machine; 0 = library default)")
    p.add_argument("--workdir", default=None, help="keep the stores here (default: a temp dir, removed)")
    p.add_argument("--out", default=None, help="write run.json, results.md and cost_vs_n.png here")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from memlab.config import Settings
    from memlab.errors import InvalidInputError
    from memlab.lab.bench.peers import PeersConfig, PeersResult, run_peers

    try:
        config = PeersConfig(
            sizes=args.sizes, queries=args.queries, probe_adds=args.probe_adds, seed=args.seed, repeats=args.repeats,
            budget_s=args.budget_s, systems=("memlab",) if args.no_mem0 else ("memlab", "mem0"),
            integrity=not args.no_check, embedding_cache=args.embedding_cache,
            threads=args.threads or None, mem0_fill=args.mem0_fill, judge=args.judge,
            fill_vectors=args.fill_vectors, embedder_backend=args.embedder_backend,
        )
    except ValidationError as exc:
        raise InvalidInputError(f"Invalid 'memlab bench peers' parameters: {exc}") from exc
    def save_partial(partial: PeersResult) -> None:
        if args.out:  # a stopped long run keeps what it measured
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "peers.partial.json").write_text(partial.model_dump_json(indent=2), encoding="utf-8")

    result = run_peers(config, settings=Settings(), workdir=args.workdir, on_checkpoint=save_partial,
                       progress=lambda msg: print(f"[bench peers] {msg}", file=sys.stderr, flush=True))
    if args.out:
        out = result.write(args.out)
        (out / "peers.partial.json").unlink(missing_ok=True)
        print(f"[bench peers] wrote {out}/run.json, results.md, cost_vs_n.png", file=sys.stderr)
    print(result.to_markdown())
    return 0
