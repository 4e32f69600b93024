"""Which MiniLM inference path for one search query? Speed and fidelity of each candidate on this machine.

    .venv/bin/python eval/experiments/minilm_engine.py [--queries 200] [--threads 1]

One short query at a time (what ``MemoryStore.search`` embeds), interleaved across the paths so machine load hits them
alike, on the seeded sentences of ``memlab bench peers`` (``fact_corpus(seed=1)``). Fidelity = cosine to the float32
sentence-transformers vector (the reference, what mem0 runs). Paths:

* ``sentence-transformers fp32``: ``MiniLMEmbedder(backend="sentence-transformers")``;
* ``engine fp32`` / ``engine bf16``: :class:`memlab.embedding.bert_engine.BertMeanPoolEngine` (bf16 needs a CPU with
  native bfloat16; the row is skipped otherwise);
* ``engine int8 dynamic``: the engine's float32 weights quantised per output channel to int8, activations quantised
  per call (``torch.ops.quantized.linear_dynamic``, fbgemm) — the usual "dynamic quantisation".

Measured here (2 shared cores, 1 thread, 2026-11-25, 200 queries): p50 ms sentence-transformers 18.0, engine fp32
12.3, bf16 7.8, int8 3.2; cosine to the reference min / mean: fp32 1.0000, bf16 0.9999 / 1.0000, int8 0.955 / 0.976.
Per layer type (int8 on one kind, bf16 on the others): QKV 0.995, attention output 0.9996 (no faster), FFN in 0.984,
FFN out 0.981 (min cosine). memlab ships bf16: int8 is 2.5x faster still, but no variant keeps cosine >= 0.999 with a
gain, and the calibrated thresholds and stored vectors assume the float32 geometry.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from memlab.embedding import MiniLMEmbedder
from memlab.embedding.bert_engine import BertMeanPoolEngine, native_bf16
from memlab.embedding.sentence_transformers import minilm_path
from memlab.lab.bench.corpus import fact_corpus


def _int8_path(eng: BertMeanPoolEngine) -> Callable[[str], np.ndarray]:
    """The float32 engine's forward with every linear layer as a prepacked int8 dynamic op."""
    warnings.filterwarnings("ignore", message=".*quantiz")
    eng.encode(["load"])

    def pack(w: torch.Tensor, b: torch.Tensor) -> object:
        scale = (w.abs().amax(1).clamp(min=1e-8) / 127.0).double()
        qw = torch.quantize_per_channel(w, scale, torch.zeros(w.shape[0], dtype=torch.long), 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(qw, b)

    layers = [(pack(L[0], L[1]), pack(L[2], L[3]), L[4], L[5], pack(L[6], L[7]), pack(L[8], L[9]), L[10], L[11])
              for L in eng._layers]
    cfg = eng._cfg
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    eps = float(cfg["layer_norm_eps"])
    lin = torch.ops.quantized.linear_dynamic

    def encode(text: str) -> np.ndarray:
        ids = torch.tensor(eng.token_ids([text])[0])
        n = len(ids)
        word, pos, typ, ln_w, ln_b = eng._emb
        with torch.inference_mode():
            x = F.layer_norm(word[ids] + pos[:n] + typ, (hidden,), ln_w, ln_b, eps)
            for p_qkv, p_o, l1_w, l1_b, p_i, p_d, l2_w, l2_b in layers:
                qkv = lin(x, p_qkv, True).view(n, 3, heads, hidden // heads).permute(1, 2, 0, 3)
                att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]).transpose(0, 1).reshape(n, hidden)
                x = F.layer_norm(lin(att, p_o, True) + x, (hidden,), l1_w, l1_b, eps)
                x = F.layer_norm(lin(F.gelu(lin(x, p_i, True)), p_d, True) + x, (hidden,), l2_w, l2_b, eps)
            return x.mean(0).numpy()

    return encode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    queries = fact_corpus(args.queries, seed=1)
    ref_emb = MiniLMEmbedder(backend="sentence-transformers")
    fp32 = BertMeanPoolEngine(minilm_path(), dtype="float32")
    bf16 = BertMeanPoolEngine(minilm_path(), dtype="bfloat16")
    paths: dict[str, Callable[[str], np.ndarray]] = {
        "sentence-transformers fp32": lambda t: ref_emb._encode([t], "query")[0],
        "engine fp32": lambda t: fp32.encode([t])[0],
    }
    if native_bf16():
        paths["engine bf16"] = lambda t: bf16.encode([t])[0]
    paths["engine int8 dynamic"] = _int8_path(BertMeanPoolEngine(minilm_path(), dtype="float32"))
    ref = ref_emb.embed(queries, mode="query")
    times: dict[str, list[float]] = {name: [] for name in paths}
    cos: dict[str, list[float]] = {name: [] for name in paths}
    for fn in paths.values():
        fn("warm-up")
    for i, q in enumerate(queries):
        for name, fn in paths.items():
            t = time.perf_counter()
            v = fn(q)
            times[name].append((time.perf_counter() - t) * 1000)
            cos[name].append(float(v @ ref[i] / np.linalg.norm(v)))
    print(f"| path ({args.threads} thread(s), {len(queries)} queries) | p50 ms | p95 ms | cosine to reference min / mean |")
    print("|---|---|---|---|")
    for name in paths:
        print(f"| {name} | {np.percentile(times[name], 50):.2f} | {np.percentile(times[name], 95):.2f} | "
              f"{min(cos[name]):.4f} / {np.mean(cos[name]):.4f} |")


if __name__ == "__main__":
    main()
