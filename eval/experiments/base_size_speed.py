"""How fast would a bigger judge base be? Inference speed of cross-encoder shapes on this machine.

    .venv/bin/python eval/experiments/base_size_speed.py [--pairs 1000] [--threads 2]

Builds randomly initialised BERT-style sequence classifiers of three shapes (no weights are needed to time the
arithmetic: speed depends on the shape, not on the values) and scores the first N short SNLI test pairs with the
shipped judge's tokenizer, sorted by length, batch 32, max 96 tokens, as ``DefaultJudge`` does. Quality is not
involved. Issue 4 asks for >= 150 short pairs/s on 2 cores; this shows which bases can meet it.

Shapes: MiniLM-L6-H384 (the shipped English judge), 12 layers x 384 (multilingual-e5-small, MiniLM-L12), and
BERT-base, 12 x 768 (the size of mpnet-base / roberta-base, the smallest "strong" NLI bases).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from memlab.datasets import load_pairs

SHAPES = {
    "MiniLM-L6-H384": {"hidden_size": 384, "num_hidden_layers": 6, "intermediate_size": 1536},
    "12 x 384 (e5-small, MiniLM-L12)": {"hidden_size": 384, "num_hidden_layers": 12, "intermediate_size": 1536},
    "BERT-base 12 x 768 (mpnet/roberta-base)": {"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    weights = Path(__file__).resolve().parents[2] / "memlab" / "judges" / "weights" / "default"
    tok = AutoTokenizer.from_pretrained(str(weights))
    pairs = sorted(load_pairs("snli", "test")[: args.pairs], key=lambda p: len(p.premise) + len(p.hypothesis))
    print(f"{len(pairs)} short SNLI test pairs, batch 32, {args.threads} threads\n")
    print("| shape | parameters | pairs/s |\n|---|---|---|")
    for name, shape in SHAPES.items():
        cfg = BertConfig(vocab_size=tok.vocab_size, num_attention_heads=12, num_labels=3, **shape)
        model = BertForSequenceClassification(cfg).eval()
        with torch.inference_mode():
            warm = tok([p.premise for p in pairs[:32]], [p.hypothesis for p in pairs[:32]], padding=True,
                       return_tensors="pt")
            model(**warm)
            t = time.perf_counter()
            for i in range(0, len(pairs), 32):
                batch = pairs[i : i + 32]
                enc = tok([p.premise for p in batch], [p.hypothesis for p in batch], padding=True, truncation=True,
                          max_length=96, return_tensors="pt")
                model(**enc)
            dt = time.perf_counter() - t
        n_params = sum(p.numel() for p in model.parameters()) / 1e6
        print(f"| {name} | {n_params:.0f}M | {len(pairs) / dt:.0f} |")


if __name__ == "__main__":
    main()
