"""The English ensemble judge on dev data: each trained judge alone vs the mean of their calibrated probabilities.

    .venv/bin/python eval/experiments/ensemble_judge.py

Dev sets only (the ones `eval/judge_v2.yaml` builds: SNLI dev holdout, gu_dnli dev, DECODE dev pairs, a LingNLI dev
sample, synthetic dev pairs). Prints ROC AUC and F1 / false-contradiction rate per set for `english`,
`multilingual` and their mean, and the decision threshold of each by the shipped cards' rule (best pooled F1 over
SNLI holdout + gu_dnli dev + synthetic with pooled false-contradiction rate <= 0.07): the mean's threshold is
`memlab.judges.ensemble.ENSEMBLE_THRESHOLD`. Takes ~20 min on 2 cores (the multilingual judge is the slow one).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from memlab.eval.metrics import false_contradiction_rate, per_class
from memlab.judges import load_judge
from memlab.lab.judge_training import _load_data, fit_threshold, load_config
from memlab.records import Label

SETS = ["snli/dev-holdout", "gu_dnli/dev", "decode_pairs/dev", "lingnli/dev", "synthetic"]
POOLED = ["snli/dev-holdout", "gu_dnli/dev", "synthetic"]
ORDER = (Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL)


def main() -> None:
    data = _load_data(load_config("eval/judge_v2.yaml"))
    probs: dict[tuple[str, str], np.ndarray] = {}
    for name in ("english", "multilingual"):
        judge = load_judge(name)
        cols = [judge.labels.index(x) for x in ORDER]
        for ds in SETS:
            rows = data.dev[ds]
            probs[(name, ds)] = judge.probabilities([(r.premise, r.hypothesis) for r in rows])[:, cols]
    gold = {ds: np.array([r.label is Label.CONTRADICTION for r in data.dev[ds]]) for ds in SETS}
    variants = {
        "english": lambda ds: probs[("english", ds)],
        "multilingual": lambda ds: probs[("multilingual", ds)],
        "mean": lambda ds: (probs[("english", ds)] + probs[("multilingual", ds)]) / 2,
    }
    print("| judge | threshold | " + " | ".join(f"{ds} AUC / F1 / fcr" for ds in SETS) + " |")
    print("|---|---|" + "---|" * len(SETS))
    for name, get in variants.items():
        t = fit_threshold(np.concatenate([get(ds) for ds in POOLED]), np.concatenate([gold[ds] for ds in POOLED]),
                          0.07)
        cells = []
        for ds in SETS:
            p, y = get(ds)[:, 0], gold[ds]
            pred = list(p >= t)
            auc = roc_auc_score(y, p) if 0 < y.sum() < len(y) else float("nan")
            f1 = per_class(list(y), pred, labels=[True])["True"].f1
            cells.append(f"{auc:.3f} / {f1:.3f} / {false_contradiction_rate(list(y), pred, positive=True):.3f}")
        print(f"| {name} | {t:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
