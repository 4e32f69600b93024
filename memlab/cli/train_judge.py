"""``memlab train-judge`` (train, export and calibrate the default judge) and ``memlab bench judge``."""

from __future__ import annotations

import argparse
import json
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
