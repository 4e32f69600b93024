"""Score several trained judges on the same dev sets, each at its own decision threshold (the ablation tables).

    .venv/bin/python eval/experiments/score_judges_on_dev.py --config eval/judge_e5_v2.yaml DIR [DIR ...]

Builds the dev sets of ``--config`` exactly as ``memlab train-judge`` does (:func:`memlab.lab.judge_training._load_data`:
the seeded holdouts, the dev sources, the synthetic dev pairs) and prints one Markdown row per judge directory (a
``memlab train-judge --out`` folder or a shipped ``memlab/judges/weights/*``): contradiction F1 / false-contradiction
rate per dev set at the ``decision_threshold`` of that judge's ``judge.json``. Runs that trained without a set (an
ablation) have no dev set of their own for it; here every run is scored on the same rows. Dev splits only.

``--orders`` also scores each pair the other way round (hypothesis, premise) and combines the two probabilities of
contradiction (a symmetric relation) by their mean, max or min: one row per rule. Measured on 2026-11-29 for the
shipped judges (``--config eval/judge_v3.yaml memlab/judges/weights/default --orders forward mean max min``, and the
same with ``--match-fcr``; the multilingual one with ``--config eval/judge_e5_v2.yaml``): no rule wins, see
docs/results/judges.md.
With several judges, ``--match-fcr`` also gives each judge after the first a one-order row at the first judge's
pooled dev false-alarm rate (the English judge card's v6 table: ``--config eval/judge_v6.yaml
memlab/judges/weights/default DIR --match-fcr``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from memlab.eval.metrics import false_contradiction_rate, per_class
from memlab.judges import load_judge
from memlab.lab.judge_training import _load_data, load_config
from memlab.records import Label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="training config whose dev sets are used")
    parser.add_argument("--orders", nargs="+", default=["forward"], choices=sorted(_COMBINE),
                        help="how the two orders of a pair are combined (forward: the premise first only)")
    parser.add_argument("--match-fcr", action="store_true",
                        help="give each rule the threshold at which its false-contradiction rate over every dev set "
                             "together equals the one-order judge's at its own threshold (a fair comparison), and "
                             "each judge after the first a one-order row at the first judge's rate")
    parser.add_argument("judges", nargs="+", help="judge directories (judge.json + weights)")
    args = parser.parse_args()
    dev = _load_data(load_config(args.config)).dev
    golds = [np.array([r.label is Label.CONTRADICTION for r in rows]) for rows in dev.values()]
    print("| judge | orders | threshold | " + " | ".join(dev) + " |")
    print("|---|---|---|" + "---|" * len(dev))
    reference = None  # the first judge's one-order pooled dev false-contradiction rate
    for folder in args.judges:
        judge = load_judge("default", weights=folder)
        column = judge.labels.index(Label.CONTRADICTION)
        threshold = json.loads((Path(folder) / "judge.json").read_text())["decision_threshold"]
        both = [(judge.probabilities([(r.premise, r.hypothesis) for r in rows])[:, column],
                 judge.probabilities([(r.hypothesis, r.premise) for r in rows])[:, column]
                 if args.orders != ["forward"] else None) for rows in dev.values()]
        target = np.mean(np.concatenate([f[~g] for (f, _), g in zip(both, golds, strict=True)]) >= threshold)
        rows = [(rule, rule, _matched(rule, both, golds, target) if args.match_fcr and rule != "forward"
                 else threshold) for rule in args.orders]
        if reference is None:
            reference = target
        elif args.match_fcr:  # a later judge also at the first one's false-alarm rate: judges compared fairly
            rows.append(("forward", "forward, first judge's fcr", _matched("forward", both, golds, reference)))
        for rule, name, cut in rows:
            cells = []
            for g, (forward, backward) in zip(golds, both, strict=True):
                gold = g.tolist()
                pred = list(_COMBINE[rule](forward, backward) >= cut)
                f1 = f"{per_class(gold, pred, labels=[True])['True'].f1:.3f}" if any(gold) else "—"
                cells.append(f"{f1} / {false_contradiction_rate(gold, pred, positive=True):.3f}")
            print(f"| {Path(folder).name} | {name} | {cut:.3f} | " + " | ".join(cells) + " |", flush=True)


def _matched(rule: str, both: list[tuple[Any, Any]], golds: list[Any], target: float) -> float:
    """The threshold at which ``rule``'s false-contradiction rate over every dev set together is ``target``."""
    negatives = np.concatenate([_COMBINE[rule](f, b)[~g] for (f, b), g in zip(both, golds, strict=True)])
    return float(np.quantile(negatives, 1 - target, method="higher"))


_COMBINE = {
    "forward": lambda f, b: f,
    "mean": lambda f, b: (f + b) / 2,
    "max": np.maximum,
    "min": np.minimum,
}


if __name__ == "__main__":
    main()
