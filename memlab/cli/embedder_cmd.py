"""``memlab calibrate-embedder NAME`` and ``memlab bench embedders``.

``calibrate-embedder`` measures an embedder's candidate and chat-search thresholds on train/dev pairs and writes
``runs/calibration/<name>.json`` (or ``--out``; never into the installed package: to ship a calibration, copy the
file to ``memlab/embedding/calibration/`` in a source checkout); ``bench embedders`` measures the candidate stage
(recall of contradicting memories in the top-10 above each embedder's threshold, share of unrelated memories
passing, speed) on held-out splits, to choose the default embedder by evidence.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]

_BENCH_SETS = "snli,decode,gu_dnli,rte3_ita,ocnli,cdconv,kvpi"


def register(groups: dict[str, Any]) -> None:
    """Add ``calibrate-embedder`` and ``bench embedders`` to the parser."""
    p = groups["top"].add_parser("calibrate-embedder",
                                 help="measure an embedder's similarity thresholds on train/dev pairs")
    p.add_argument("name", help="embedder name (minilm, e5, st:<path>)")
    p.add_argument("--out", default=None,
                   help="write the calibration JSON here (default: runs/calibration/<name>.json; copy it to "
                        "memlab/embedding/calibration/ in a source checkout to ship it)")
    p.add_argument("--data-dir", default=None, help="datasets folder (default: the repository's datasets/)")
    p.add_argument("--limit", type=int, default=400, help="max pairs per source and kind (default 400; 0 = all)")
    p.add_argument("--recall-target", type=float, default=0.95,
                   help="required recall of contradiction pairs (default 0.95)")
    p.add_argument("--chat-recall-target", type=float, default=0.90,
                   help="required recall of same-topic pairs for chat search (default 0.90)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="print the table, write nothing")
    p.add_argument("--fit-center", action="store_true",
                   help="(e5) refit the shipped mean vectors on train/dev texts first; changes every e5 vector")
    p.set_defaults(func=_calibrate)

    b = groups["bench"].add_parser("embedders", help="candidate-stage recall/noise and speed per embedder")
    b.add_argument("--embedders", default="minilm,e5", help="comma-separated names (default minilm,e5)")
    b.add_argument("--datasets", default=_BENCH_SETS, help=f"comma-separated (default {_BENCH_SETS})")
    b.add_argument("--data-dir", default=None, help="datasets folder (default: the repository's datasets/)")
    b.add_argument("--limit", type=int, default=200, help="max contradictions per dataset (default 200; 0 = all)")
    b.add_argument("--distractors", type=int, default=30, help="distractor memories per synthetic user (default 30)")
    b.add_argument("--k", type=int, default=10, help="top-k of the candidate stage (default 10)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    b.set_defaults(func=_bench)


def _calibrate(args: argparse.Namespace) -> int:
    from memlab.embedding import load_embedder
    from memlab.lab.calibrate import calibrate_embedder, save_calibration

    emb = load_embedder(args.name, shared=False)
    out = Path(args.out) if args.out else Path("runs") / "calibration" / f"{args.name.replace(':', '_')}.json"
    if args.fit_center:
        from memlab.lab.calibrate import fit_center

        if args.dry_run:
            print("--fit-center ignored with --dry-run", file=sys.stderr)
        else:
            center = fit_center(emb, data_dir=args.data_dir, limit=args.limit or None, seed=args.seed,
                                out=out.with_name(out.stem + ".center.json"))
            emb.center_file = center  # calibrate the re-centred model
            print(f"wrote {center}", file=sys.stderr)
    cal = calibrate_embedder(
        emb, data_dir=args.data_dir, recall_target=args.recall_target, chat_recall_target=args.chat_recall_target,
        limit=args.limit or None, seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
    print(cal.to_markdown())
    if not args.dry_run:
        path = save_calibration(cal, out)
        print(f"\nwrote {path}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from memlab.embedding import load_embedder
    from memlab.lab.calibrate import bench_candidates

    embs = [load_embedder(n.strip(), shared=False) for n in args.embedders.split(",") if n.strip()]
    res = bench_candidates(
        embs, [d.strip() for d in args.datasets.split(",") if d.strip()], data_dir=args.data_dir,
        limit=args.limit or None, n_distractors=args.distractors, k=args.k, seed=args.seed,
        progress=lambda m: print(m, file=sys.stderr))
    print(res.to_markdown())
    if args.out:
        command = (f"memlab bench embedders --embedders {args.embedders} --datasets {args.datasets} --limit {args.limit} "
                   f"--distractors {args.distractors} --k {args.k} --seed {args.seed}")
        out = res.write(args.out, command=command)
        print(f"\nwrote {out} (memlab eval show {out})")
    return 0
