"""``memlab eval contradiction|suite|gate|show|compare`` and ``memlab datasets``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def _repo_file(rel: str) -> str:
    """``rel`` if it exists in the working directory, else the repository's copy."""
    if Path(rel).exists():
        return rel
    repo = Path(__file__).resolve().parents[2] / rel
    return str(repo) if repo.exists() else rel


def register(groups: dict[str, Any]) -> None:
    """Add the eval commands to the parser."""
    ev = groups["eval"]

    p = ev.add_parser("contradiction", help="score a pairwise judge on a labelled dataset; writes run.json")
    p.add_argument(
        "--dataset",
        required=True,
        help="snli, gu_dnli, ci_tod, decode, anli, sick, control, kvpi, cdconv, ocnli, rte3_ita",
    )
    p.add_argument(
        "--data-dir", default=None, help="another copy of the dataset's files (default: datasets/NAME)"
    )
    p.add_argument("--split", default=None, help="split (default: the dataset's default split, usually test)")
    p.add_argument(
        "--judge", default="default", help="judge name for memlab.judges.load_judge (default: default)"
    )
    p.add_argument("--limit", type=int, default=None, help="score a seeded sample of N units (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    p.add_argument("--out", default=None, help="run directory (default runs/<ts>_contradiction_<id>)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--max-error-rate", type=float, default=0.05, help="fail the run past this share of failed pairs"
    )
    p.add_argument(
        "--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs (default 1000)"
    )
    p.set_defaults(func=_contradiction)

    sc = ev.add_parser(
        "scenarios",
        help="score the integrity checker on memlab's hand-written it/en/zh memory pairs (datasets/scenarios)",
    )
    sc.add_argument(
        "--judge", default="default", help="judge name for memlab.judges.load_judge, or none (default: default)"
    )
    sc.add_argument("--limit", type=int, default=None, help="score a seeded sample of N pairs (default: all)")
    sc.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    sc.add_argument("--data-dir", default=None, help="another copy of pairs.jsonl (default: datasets/scenarios)")
    sc.add_argument("--out", default=None, help="run directory (default runs/<ts>_scenarios_<id>)")
    sc.set_defaults(func=_scenarios)

    s = ev.add_parser("suite", help="run every task of eval/suite.yaml and print one summary table")
    s.add_argument("--suite", default="eval/suite.yaml", help="suite definition (default eval/suite.yaml)")
    s.add_argument("--out", default="runs/suite", help="output directory (default runs/suite)")
    s.add_argument("--full", action="store_true", help="ignore every limit: score whole splits (slow)")
    s.add_argument("--only", nargs="*", default=None, help="run only these tasks or datasets")
    s.add_argument("--judges", nargs="*", default=None, help="override the judges of every entry")
    s.set_defaults(func=_suite)

    g = ev.add_parser("gate", help="CI regression gate: seeded smoke vs a committed baseline")
    g.add_argument("--baseline", default="eval/baselines/ci_smoke.json")
    g.add_argument("--out", default="runs/ci_gate")
    g.add_argument("--judge", default=None, help="override the baseline's judge (informative only)")
    g.add_argument(
        "--update", action="store_true", help="rewrite the baseline numbers with the measured ones"
    )
    g.set_defaults(func=_gate)

    sh = ev.add_parser("show", help="print a run directory as markdown")
    sh.add_argument("run", help="run directory")
    sh.set_defaults(func=_show)

    c = ev.add_parser("compare", help="compare run directories side by side (markdown)")
    c.add_argument("runs", nargs="+", help="run directories")
    c.set_defaults(func=_compare)

    d = groups["top"].add_parser("datasets", help="list the datasets, splits, languages and license classes")
    d.set_defaults(func=_datasets)


def _command(args: argparse.Namespace) -> str:
    """The equivalent command line (from the parsed arguments, not sys.argv, so programmatic calls record it too)."""
    parts = ["memlab", "eval", "contradiction"]
    for key in (
        "dataset",
        "data_dir",
        "split",
        "judge",
        "limit",
        "seed",
        "out",
        "batch_size",
        "max_error_rate",
        "bootstrap",
    ):
        value = getattr(args, key, None)
        if value is not None:
            parts += [f"--{key.replace('_', '-')}", shlex.quote(str(value))]
    return " ".join(parts)


def _contradiction(args: argparse.Namespace) -> int:
    from memlab.eval.contradiction import evaluate_contradiction

    run = evaluate_contradiction(
        args.dataset,
        args.split,
        judge=args.judge,
        data_dir=args.data_dir,
        limit=args.limit,
        seed=args.seed,
        out_dir=args.out,
        batch_size=args.batch_size,
        max_error_rate=args.max_error_rate,
        n_resamples=args.bootstrap,
        command=_command(args),
        progress=sys.stderr.isatty(),
    )
    print(run.to_markdown())
    print(f"\nrun written to {run.path}")
    return 0 if run.status == "ok" else 1


def _scenarios(args: argparse.Namespace) -> int:
    from memlab.config import Settings
    from memlab.eval.scenarios import evaluate_scenarios

    parts = ["memlab", "eval", "scenarios"]
    for key in ("judge", "limit", "seed", "data_dir", "out"):
        value = getattr(args, key, None)
        if value is not None:
            parts += [f"--{key.replace('_', '-')}", shlex.quote(str(value))]
    run = evaluate_scenarios(
        judge=args.judge,
        data_dir=args.data_dir,
        limit=args.limit,
        seed=args.seed,
        out_dir=args.out,
        settings=Settings(),  # the checker a user runs: MEMLAB_INTEGRITY_* and the rest of the environment apply
        command=" ".join(parts),
        progress=sys.stderr.isatty(),
    )
    print(run.to_markdown())
    print(f"\nrun written to {run.path}")
    return 0 if run.status == "ok" else 1


def _suite(args: argparse.Namespace) -> int:
    from memlab.eval.suite import run_suite

    result = run_suite(
        _repo_file(args.suite),
        out=args.out,
        full=args.full,
        only=args.only,
        judges=args.judges,
        echo=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(result.to_markdown())
    print(f"\nruns written under {args.out} (suite.json, suite.md)")
    return 0 if result.ok else 1


def _gate(args: argparse.Namespace) -> int:
    from memlab.eval.suite import run_gate

    result = run_gate(_repo_file(args.baseline), out=args.out, judge=args.judge, update=args.update)
    print(result.to_markdown())
    return 0 if result.passed or args.update else 1


def _show(args: argparse.Namespace) -> int:
    from memlab.eval.runs import load_run

    print(load_run(args.run).to_markdown())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from memlab.eval.runs import compare_runs, load_run
    from memlab.eval.suite import suite_table

    runs = [load_run(p) for p in args.runs]
    rows = compare_runs(runs).to_dict("records")
    for run, r in zip(runs, rows, strict=True):  # each run's own headline (benchmarks have their own)
        r["primary"], r["primary_metric"] = r.get(run.primary_metric), run.primary_metric
    print(suite_table(rows))
    return 0


def _datasets(args: argparse.Namespace) -> int:
    from memlab.datasets import DATASETS
    from memlab.eval.runs import markdown_table

    rows = [
        [d.name, d.kind, d.language, d.label_space, ", ".join(d.splits), d.license_class, d.license]
        for d in DATASETS.values()
    ]
    print(markdown_table(["name", "kind", "lang", "labels", "splits", "class", "license"], rows))
    return 0
