"""``memlab train-judge`` (train, export and calibrate the default judge) and ``memlab bench judge``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``train-judge`` and ``bench judge`` to the parser."""
    p = groups["top"].add_parser(
        "train-judge",
        help="train the offline contradiction judge (allowed train/dev splits only) and write it to --out",
        description=(
            "Fine-tune the packaged MiniLM-L6 as a 3-way NLI cross-encoder on permissively licensed train/dev "
            "splits (+ seeded synthetic persona pairs), calibrate it on a held-out dev set, and write the "
            "weights, judge.json and train_report.json (data hashes, sizes, hyper-parameters, wall time, dev "
            "metrics) into --out. Use the result with load_judge('default', weights=DIR) or copy it to "
            "memlab/judges/weights/default/."
        ),
    )
    p.add_argument(
        "--config", default=None, help="YAML config (default: built-in defaults = eval/judge.yaml)"
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=None, help="override the config's seed")
    p.add_argument("--max-steps", type=int, default=None, help="stop after N optimisation steps (smoke runs)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--calibrate-only",
        action="store_true",
        help="keep the weights already in --out and redo only the calibration (e.g. after changing quantize)",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="keep a resumable training state here (outside the repo); rerunning the same command resumes",
    )
    p.set_defaults(func=_run)

    t = groups["top"].add_parser(
        "tune-detector",
        help="choose the detector's candidate and confidence thresholds on DECODE dev dialogues (never on test)",
        description=(
            "Run the integrity checker once with both thresholds open on a dev split, replay its decision rule "
            "over a grid of (candidate cosine, confidence) thresholds and print the best dev F1 whose dev "
            "false-contradiction rate is within --max-fcr. Test and blind splits (human-bot, rct, test) are refused."
        ),
    )
    t.add_argument("--dataset", default="decode", choices=["decode", "ci_tod", "cdconv"])
    t.add_argument("--split", default="dev")
    t.add_argument("--judge", default="default", help="judge name or weights directory (default: the shipped one)")
    t.add_argument("--embedder", default=None, help="embedder name (default: Settings().embedder)")
    t.add_argument("--limit", type=int, default=None, help="seeded sample of N units")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-fcr", type=float, default=0.10, help="cap on the dev false-contradiction rate")
    t.add_argument(
        "--rct-split",
        default=None,
        help="also run this split of RCT-like consistent units (decode: 'dev-rct') and cap their false alarms",
    )
    t.add_argument("--max-rct-fcr", type=float, default=0.10, help="cap on the --rct-split false-contradiction rate")
    t.add_argument("--out", default=None, help="write the grid and the choice to this JSON file")
    t.set_defaults(func=_tune)

    b = groups["bench"].add_parser("judge", help="default judge throughput: fp32 vs int8 on short SNLI pairs")
    b.add_argument("--pairs", type=int, default=1000, help="pairs to judge per variant (default 1000)")
    b.add_argument("--batch-size", type=int, default=32)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--weights", default=None, help="judge weights directory (default: the shipped weights)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    b.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from memlab.lab.bench.judge import run_judge_bench

    result = run_judge_bench(
        n=args.pairs,
        batch_size=args.batch_size,
        num_threads=args.threads,
        weights=args.weights,
        seed=args.seed,
    )
    print(result.to_markdown())
    if args.out:
        command = (f"memlab bench judge --pairs {args.pairs} --batch-size {args.batch_size} --threads {args.threads} "
                   f"--seed {args.seed}" + (f" --weights {args.weights}" if args.weights else ""))
        out = result.write(args.out, command=command)
        print(f"\nwrote {out} (memlab eval show {out})")
    return 0


def _tune(args: argparse.Namespace) -> int:
    from memlab.lab.detector_tuning import collect_traces, tune_detector

    judge: Any = args.judge
    if Path(judge).is_dir():  # a weights directory written by memlab train-judge
        from memlab.judges import DefaultJudge

        judge = DefaultJudge(judge)
    traces = collect_traces(
        args.dataset, args.split, judge=judge, embedder=args.embedder, limit=args.limit, seed=args.seed
    )
    negatives = (
        collect_traces(
            args.dataset, args.rct_split, judge=judge, embedder=args.embedder, limit=args.limit, seed=args.seed
        )
        if args.rct_split
        else []
    )
    best, grid = tune_detector(
        traces,
        max_false_contradiction_rate=args.max_fcr,
        negatives=negatives,
        max_rct_false_contradiction_rate=args.max_rct_fcr,
        out=args.out,
    )
    top = sorted(grid, key=lambda g: -g.f1)[:8]
    print(f"{len(traces)} units ({sum(t.gold for t in traces)} contradictions), dev fcr cap {args.max_fcr}"
          + (f"; {len(negatives)} {args.rct_split} units, fcr cap {args.max_rct_fcr}" if negatives else ""))
    print("| cosine > | confidence >= | F1 | P | R | fcr | RCT-like fcr |")
    print("|---|---|---|---|---|---|---|")
    for g in [best, *top]:
        rct = "—" if g.rct_false_contradiction_rate is None else f"{g.rct_false_contradiction_rate:.3f}"
        print(f"| {g.similarity_threshold} | {g.confidence_threshold} | {g.f1:.3f} | {g.precision:.3f} | "
              f"{g.recall:.3f} | {g.false_contradiction_rate:.3f} | {rct} |")
    print(f"chosen: similarity_threshold={best.similarity_threshold} confidence_threshold={best.confidence_threshold}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from memlab.lab.judge_training import load_config, train_judge

    config = load_config(args.config)
    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    if overrides:
        config = config.model_copy(update=overrides)
        config = type(config).model_validate(config.model_dump())
    report = train_judge(
        config,
        args.out,
        progress=not args.no_progress,
        echo=print,
        calibrate_only=args.calibrate_only,
        checkpoint_dir=args.checkpoint_dir,
    )
    print(
        json.dumps(
            {
                "out": args.out,
                "steps": report.steps,
                "wall_time_s": report.wall_time_s,
                "temperature": round(report.temperature, 4),
                "dev_f1": {k: round(v["f1"], 4) for k, v in report.dev_metrics.items()},
            },
            indent=2,
        )
    )
    return 0
