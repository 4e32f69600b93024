"""Does embedding MiniLM *queries* with ONNX Runtime int8 keep retrieval quality? Dev data only.

    .venv/bin/python eval/experiments/minilm_int8_queries.py [--split dev] [--corpus 10000] [--queries 300]

1. LoCoMo (the two dev conversations by default): ``memlab eval memory-recall`` with ``MiniLMEmbedder()`` (stored
   vectors from the bfloat16/float32 engine, queries int8) against ``MiniLMEmbedder(query_backend="same")`` (queries
   on the same engine as the stored vectors): evidence recall@10 per memory and category, MRR, chat switch.
2. The seeded bench corpus (``fact_corpus``: English, Italian, Chinese facts): for each query, the overlap of its exact
   top-10 over ``--corpus`` stored facts with int8 vs float queries, the share with the same top-1, and the cosine of
   the two query vectors.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import faiss
import numpy as np

from memlab.embedding import MiniLMEmbedder
from memlab.eval.memory_recall import evaluate_memory_recall, recall_table
from memlab.lab.bench.corpus import fact_corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--corpus", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--skip-locomo", action="store_true")
    args = ap.parse_args()

    int8, same = MiniLMEmbedder(), MiniLMEmbedder(query_backend="same")
    corpus, queries = fact_corpus(args.corpus, seed=1), fact_corpus(args.queries, seed=2)
    stored = same.embed(corpus, mode="passage")
    q_same, q_int8 = same.embed(queries, mode="query"), int8.embed(queries, mode="query")
    index = faiss.IndexFlatIP(stored.shape[1])
    index.add(stored)
    _, top_same = index.search(q_same, 10)
    _, top_int8 = index.search(q_int8, 10)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top_same, top_int8, strict=True)])
    cos = np.sum(q_same * q_int8, axis=1)
    print(f"bench corpus ({args.corpus:,} facts, {args.queries} queries): top-10 overlap {overlap:.3f}, same top-1 "
          f"{np.mean(top_same[:, 0] == top_int8[:, 0]):.3f}, query cosine min {cos.min():.4f} mean {cos.mean():.4f}")
    if args.skip_locomo:
        return
    for name, emb in (("queries int8 (default)", int8), ("queries on the engine (same)", same)):
        with tempfile.TemporaryDirectory() as tmp:
            run = evaluate_memory_recall(out_dir=Path(tmp) / "run", split=args.split, embedder=emb, progress=True)
            print(f"\n## LoCoMo {args.split}, MiniLM, {name}\n")
            print(recall_table(run))


if __name__ == "__main__":
    main()
