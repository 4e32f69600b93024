"""Throughput of the default judge on short pairs: fp32 vs int8 dynamic quantisation (``memlab bench judge``).

:meth:`JudgeBenchResult.write` saves it as an eval run (``bench-judge``), see :mod:`memlab.lab.bench.runs`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

__all__ = ["JudgeBenchResult", "run_judge_bench"]


class JudgeBenchResult(BaseModel):
    """Throughput figures per variant."""

    n_pairs: int
    """Pairs judged per variant."""
    batch_size: int
    """Pairs per forward pass."""
    num_threads: int
    """torch threads."""
    pairs_per_second: dict[str, float]
    """Per variant (``fp32``, ``int8``)."""
    load_seconds: dict[str, float]
    """Model load (+ quantisation) time per variant."""
    label_agreement: float
    """Share of pairs where the variants predict the same label."""
    max_probability_gap: float
    """Largest |P_fp32 - P_int8| over the pairs."""
    mean_chars: float
    """Mean characters per pair (premise + hypothesis)."""
    weights: str | None = None
    """Judge weights directory (``None``: the shipped weights)."""
    seed: int | None = None
    """Sample seed (``None``: the pairs were given)."""

    def to_markdown(self) -> str:
        """A small markdown table."""
        lines = ["| variant | pairs/s | load s |", "|---|---|---|"]
        for k, v in self.pairs_per_second.items():
            lines.append(f"| {k} | {v:.1f} | {self.load_seconds[k]:.2f} |")
        lines.append(
            f"\n{self.n_pairs} pairs, batch {self.batch_size}, {self.num_threads} threads, mean {self.mean_chars:.0f} "
            f"chars/pair; label agreement {self.label_agreement:.3f}, max |dP| {self.max_probability_gap:.3f}"
        )
        return "\n".join(lines)

    def write(self, out_dir: str | Path, *, command: str | None = None) -> Path:
        """Write the ``bench-judge`` eval run (and ``bench.md``) into ``out_dir``; returns it.

        Metrics: ``pairs_per_second.<variant>``, ``load_seconds.<variant>``, ``label_agreement``,
        ``max_probability_gap``, ``mean_chars``; one example per variant.
        """
        from memlab.lab.bench.runs import write_bench_run

        metrics = self.model_dump(include={"pairs_per_second", "load_seconds", "label_agreement",
                                           "max_probability_gap", "mean_chars"})
        examples = [{"id": v, "group": v, "meta": {"pairs_per_second": pps, "load_seconds": self.load_seconds.get(v)}}
                    for v, pps in self.pairs_per_second.items()]
        params = {"batch_size": self.batch_size, "num_threads": self.num_threads, "weights": self.weights}
        write_bench_run(out_dir, "judge", params=params, seed=self.seed, n=self.n_pairs, metrics=metrics,
                        primary_metric="pairs_per_second.fp32", examples=examples, markdown=self.to_markdown(),
                        judge="default", command=command)
        return Path(out_dir)


def run_judge_bench(
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    n: int = 1000,
    batch_size: int = 32,
    num_threads: int = 2,
    weights: str | Path | None = None,
    seed: int = 0,
) -> JudgeBenchResult:
    """Judge the same pairs with the fp32 and the int8 default judge and time both.

    Args:
        pairs: pairs to judge (default: a seeded sample of ``n`` SNLI test pairs: short pairs).
        n: sample size when ``pairs`` is None.
        batch_size: pairs per forward pass.
        num_threads: torch threads.
        weights: judge weights directory (default: the shipped weights).
        seed: sample seed.

    Returns:
        A :class:`JudgeBenchResult`.
    """
    from memlab.judges.default import DefaultJudge

    sampled = pairs is None
    if pairs is None:
        from memlab.datasets import load_pairs, sample_pairs

        pairs = [(p.premise, p.hypothesis) for p in sample_pairs(load_pairs("snli", "test"), n, seed=seed)]
    pairs = list(pairs)
    pps: dict[str, float] = {}
    load: dict[str, float] = {}
    probs: dict[str, Any] = {}
    labels: dict[str, list[str]] = {}
    for variant, quantize in (("fp32", None), ("int8", "int8")):
        judge = DefaultJudge(weights, quantize=quantize, batch_size=batch_size, num_threads=num_threads)
        t0 = time.perf_counter()
        judge.judge(pairs[:2])  # load (+ quantise) and warm up
        load[variant] = time.perf_counter() - t0
        t1 = time.perf_counter()
        verdicts = judge.judge(pairs)
        pps[variant] = len(pairs) / max(time.perf_counter() - t1, 1e-9)
        probs[variant] = np.array([v.probability for v in verdicts])
        labels[variant] = [v.label.value for v in verdicts]
    agree = (
        float(np.mean([a == b for a, b in zip(labels["fp32"], labels["int8"], strict=True)]))
        if pairs
        else 1.0
    )
    gap = float(np.max(np.abs(probs["fp32"] - probs["int8"]))) if pairs else 0.0
    return JudgeBenchResult(
        n_pairs=len(pairs),
        batch_size=batch_size,
        num_threads=num_threads,
        pairs_per_second={k: round(v, 1) for k, v in pps.items()},
        load_seconds={k: round(v, 2) for k, v in load.items()},
        label_agreement=agree,
        max_probability_gap=gap,
        mean_chars=float(np.mean([len(a) + len(b) for a, b in pairs])) if pairs else 0.0,
        weights=str(weights) if weights is not None else None,
        seed=seed if sampled else None,
    )
