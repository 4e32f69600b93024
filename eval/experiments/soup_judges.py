"""Interpolate the weights of two judges of one architecture (a "model soup", WiSE-FT style) for a dev comparison.

    .venv/bin/python eval/experiments/soup_judges.py A B --alpha 0.5 --out DIR

Writes ``DIR`` = (1 - alpha) * A + alpha * B for every floating-point tensor of ``model.safetensors`` (A's config,
tokenizer and ``judge.json``; the temperature and decision threshold are A's, with ``weights_sha256`` recomputed), so
``eval/experiments/score_judges_on_dev.py --match-fcr A DIR`` compares the two at A's pooled dev false-alarm rate,
which does not depend on the copied threshold. A and B must share a base (B continued from A, or both from one
judge): averaging weights of unrelated fine-tunes gives noise. An experiment, not a shipped path: dev splits only.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

from memlab.lab.judge_training import _file_sha256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="first judge directory (alpha = 0)")
    parser.add_argument("b", type=Path, help="second judge directory (alpha = 1)")
    parser.add_argument("--alpha", type=float, required=True, help="weight of B, in [0, 1]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not 0.0 <= args.alpha <= 1.0:
        parser.error(f"--alpha must be in [0, 1]; got {args.alpha}")
    wa, wb = load_file(args.a / "model.safetensors"), load_file(args.b / "model.safetensors")
    if wa.keys() != wb.keys() or any(wa[k].shape != wb[k].shape for k in wa):
        parser.error("the two judges do not share an architecture (tensor names or shapes differ)")
    soup = {}
    for name, ta in wa.items():
        tb = wb[name]
        if ta.is_floating_point():
            mixed = (1.0 - args.alpha) * ta.float() + args.alpha * tb.float()
            soup[name] = mixed.to(ta.dtype).contiguous()
        else:
            soup[name] = ta.clone()
    args.out.mkdir(parents=True, exist_ok=True)
    for f in args.a.iterdir():
        if f.is_file() and f.name not in {"model.safetensors", "judge.json", "train_report.json", "CARD.md"}:
            shutil.copy2(f, args.out / f.name)
    save_file(soup, args.out / "model.safetensors")
    meta = json.loads((args.a / "judge.json").read_text())
    meta["weights_sha256"] = _file_sha256(args.out / "model.safetensors")
    meta["soup"] = {"a": str(args.a), "b": str(args.b), "alpha": args.alpha}
    (args.out / "judge.json").write_text(json.dumps(meta, indent=2) + "\n")
    n = sum(t.numel() for t in soup.values())
    print(f"wrote {args.out}: {1.0 - args.alpha:g} x {args.a} + {args.alpha:g} x {args.b}, {n:,} parameters")


if __name__ == "__main__":
    main()
