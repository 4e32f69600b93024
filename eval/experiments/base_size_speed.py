"""How fast would a bigger judge base be? Inference speed of cross-encoder shapes on this machine.

    .venv/bin/python eval/experiments/base_size_speed.py [--pairs 1000] [--threads 2]

For each shape, saves a randomly initialised BERT-style 3-way classifier beside the shipped English judge's tokenizer
and ``judge.json``, and times it with :func:`memlab.lab.bench.judge.run_judge_bench` (the same seeded short SNLI test
pairs, batching, length sorting and truncation as ``memlab bench judge``, fp32 and int8). No weights are needed to
time the arithmetic: speed depends on the shape, not on the values, so quality is not involved. Issue 4 asks for
>= 150 short pairs/s on 2 cores; this shows which bases can meet it.

Shapes: MiniLM-L6-H384 (the shipped English judge), 12 layers x 384 (multilingual-e5-small, MiniLM-L12), and
BERT-base, 12 x 768 (the size of mpnet-base / roberta-base, the smallest "strong" NLI bases).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification

from memlab.judges.default import DEFAULT_WEIGHTS
from memlab.lab.bench.judge import run_judge_bench

SHAPES = {
    "MiniLM-L6-H384": {"hidden_size": 384, "num_hidden_layers": 6, "intermediate_size": 1536},
    "12 x 384 (e5-small, MiniLM-L12)": {"hidden_size": 384, "num_hidden_layers": 12, "intermediate_size": 1536},
    "BERT-base 12 x 768 (mpnet/roberta-base)": {"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072},
}
#: what a shape needs besides its weights to load as a DefaultJudge: the tokenizer and the calibration file
_SIDE_FILES = ("tokenizer.json", "tokenizer_config.json", "judge.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(0)
    shipped = BertConfig.from_pretrained(str(DEFAULT_WEIGHTS))
    print(f"{args.pairs} short SNLI test pairs (seeded), batch 32, {args.threads} threads\n")
    print("| shape | parameters | fp32 pairs/s | int8 pairs/s |\n|---|---|---|---|")
    for name, shape in SHAPES.items():
        cfg = BertConfig(vocab_size=shipped.vocab_size, num_attention_heads=12, id2label=shipped.id2label,
                         label2id=shipped.label2id, **shape)
        model = BertForSequenceClassification(cfg)
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(tmp)
            for f in _SIDE_FILES:
                shutil.copy(Path(DEFAULT_WEIGHTS) / f, tmp)
            res = run_judge_bench(n=args.pairs, num_threads=args.threads, weights=tmp)
        n_params = sum(p.numel() for p in model.parameters()) / 1e6
        pps = res.pairs_per_second
        print(f"| {name} | {n_params:.0f}M | {pps['fp32']:.0f} | {pps['int8']:.0f} |")


if __name__ == "__main__":
    main()
