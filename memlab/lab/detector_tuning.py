"""Tune the layered detector on dev dialogues only (``memlab tune-detector``).

The detector reports a contradiction when a pair of memories passes the candidate stage (FAISS cosine above the
candidate threshold, or another source: same key, version link, attribute group) and a level decides it with a
confidence at or above ``integrity_confidence_threshold``. Both thresholds are chosen here, on a split the
acceptance figures never use (DECODE's dev dialogues), by one pass of the real checker with both thresholds
open (every FAISS neighbour a candidate, every judged pair reported with its probability) and an exact replay
of the decision rule over a grid:

* a pair counts when ``level != "judge"`` or its source is not FAISS alone, or its cosine is above the candidate
  threshold (a pair found only by FAISS below it would never have been a candidate);
* it is reported when its confidence is at least the confidence threshold;
* a unit is flagged when any of its pairs is reported.

A second set of traces can cap false alarms on negatives built like DECODE's RCT test group: ``decode`` split
``dev-rct`` (each dev contradiction dialogue with its contradicting turn removed, see
:func:`memlab.datasets.remove_contradicting_turn`). Its false-contradiction rate is reported for every grid point
(``rct_false_contradiction_rate``) and capped by ``max_rct_false_contradiction_rate``.

Pairs decided by the entity / pattern levels do not depend on either threshold's candidates (each pair is decided
on its own), so the replay gives exactly what the checker would report with those settings.

Test and blind splits (DECODE human-bot and RCT, any ``test``) are refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlab.errors import InvalidInputError
from memlab.records import Label

__all__ = ["DetectorPoint", "UnitTrace", "collect_traces", "sweep", "tune_detector"]

_FORBIDDEN_SPLITS = {"test", "human-bot", "rct"}


@dataclass(frozen=True, slots=True)
class UnitTrace:
    """What the open checker found for one unit: the gold label and ``(level, confidence, cosine, faiss only)``."""

    id: str
    gold: bool
    pairs: tuple[tuple[str, float, float | None, bool], ...]


@dataclass(frozen=True, slots=True)
class DetectorPoint:
    """Dev metrics of one (candidate threshold, confidence threshold) setting."""

    similarity_threshold: float
    confidence_threshold: float
    f1: float
    precision: float
    recall: float
    false_contradiction_rate: float
    flagged: int
    rct_false_contradiction_rate: float | None = None


def collect_traces(
    dataset: str = "decode",
    split: str = "dev",
    *,
    judge: Any = "default",
    embedder: Any = None,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> list[UnitTrace]:
    """Run the real checker with both thresholds open on a dev split and keep every pair's evidence.

    Raises:
        InvalidInputError: a test or blind split (``test``, ``human-bot``, ``rct``).
    """
    if split in _FORBIDDEN_SPLITS:
        raise InvalidInputError(
            f"The detector may be tuned on dev/train splits only. Got {dataset}/{split} instead."
        )
    from memlab.eval.integrity import IntegrityTask

    task = IntegrityTask(
        dataset, split, judge=judge, embedder=embedder, confidence_threshold=0.0, similarity_threshold=-1.0
    )
    units = task.samples(limit, seed)
    solved = task.solve(units, progress=progress)
    traces = []
    for u, (res, _refs, _lat, err) in zip(units, solved, strict=True):
        if err is not None or res is None:
            continue
        pairs = tuple(
            (
                c.decided_by,
                float(c.confidence),
                None if c.details.get("similarity") is None else float(c.details["similarity"]),
                set(c.details.get("candidate_sources", ())) == {"faiss"},
            )
            for c in res.contradictions
        )
        traces.append(UnitTrace(u.id, u.gold.value == "contradiction", pairs))
    return traces


def _flags(traces: Sequence[UnitTrace], sim: float, conf: float) -> np.ndarray:
    return np.array(
        [
            any(
                c >= conf and (not faiss_only or s is None or s > sim)
                for _level, c, s, faiss_only in t.pairs
            )
            for t in traces
        ]
    )


def sweep(
    traces: Sequence[UnitTrace],
    similarity: Sequence[float],
    confidence: Sequence[float],
    *,
    negatives: Sequence[UnitTrace] = (),
) -> list[DetectorPoint]:
    """Dev metrics of every grid point (see the module docstring for the replayed rule).

    ``negatives`` (RCT-like consistent units, e.g. ``decode``/``dev-rct``) add their false-contradiction rate to
    each point.

    Scored with :mod:`memlab.eval.metrics` (the functions every run uses); a grid point that flags nothing has
    precision 0 (its undefined-metric warning is silenced: it is an expected point of the grid).
    """
    import warnings

    from memlab.errors import UndefinedMetricWarning
    from memlab.eval.metrics import false_contradiction_rate, per_class

    c, nc = Label.CONTRADICTION.value, Label.NOT_CONTRADICTION.value
    gold = [c if t.gold else nc for t in traces]
    out = []
    for sim in similarity:
        for conf in confidence:
            flags = _flags(traces, sim, conf)
            pred = [c if f else nc for f in flags]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                m = per_class(gold, pred, labels=[c])[c]
                fcr = false_contradiction_rate(gold, pred)
            rct = float(_flags(negatives, sim, conf).mean()) if negatives else None
            out.append(
                DetectorPoint(
                    similarity_threshold=round(float(sim), 4),
                    confidence_threshold=round(float(conf), 4),
                    f1=round(m.f1, 4),
                    precision=round(m.precision, 4),
                    recall=round(m.recall, 4),
                    false_contradiction_rate=round(fcr, 4),
                    flagged=int(flags.sum()),
                    rct_false_contradiction_rate=None if rct is None else round(rct, 4),
                )
            )
    return out


def tune_detector(
    traces: Sequence[UnitTrace],
    *,
    max_false_contradiction_rate: float = 0.10,
    similarity: Sequence[float] | None = None,
    confidence: Sequence[float] | None = None,
    negatives: Sequence[UnitTrace] = (),
    max_rct_false_contradiction_rate: float = 0.10,
    out: str | Path | None = None,
) -> tuple[DetectorPoint, list[DetectorPoint]]:
    """The best dev F1 whose dev false-contradiction rate is within the cap (ties: fewer flags), and the grid.

    With ``negatives`` (RCT-like consistent units) a point must also keep their false-contradiction rate within
    ``max_rct_false_contradiction_rate``.

    Raises:
        InvalidInputError: no trace, or no grid point within the cap.
    """
    if not traces:
        raise InvalidInputError("tune_detector needs at least one unit trace. Got none instead.")
    # cosines are in the embedder's own scale (e5's English candidate threshold is ~0.13, recall >= 0.95)
    sims = list(similarity) if similarity is not None else [-1.0, 0.0, 0.05, 0.1, 0.13, 0.15, 0.2, 0.25, 0.3, 0.4]
    confs = list(confidence) if confidence is not None else [round(x, 2) for x in np.arange(0.30, 0.99, 0.02)]
    grid = sweep(traces, sims, confs, negatives=negatives)
    ok = [
        g
        for g in grid
        if g.false_contradiction_rate <= max_false_contradiction_rate
        and (g.rct_false_contradiction_rate is None or g.rct_false_contradiction_rate <= max_rct_false_contradiction_rate)
    ]
    if not ok:
        raise InvalidInputError(
            f"No setting keeps the dev false-contradiction rate within {max_false_contradiction_rate}"
            + (f" and the RCT-like rate within {max_rct_false_contradiction_rate}." if negatives else ".")
        )
    best = max(ok, key=lambda g: (g.f1, -g.flagged, g.confidence_threshold))
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "units": len(traces),
                    "positives": sum(t.gold for t in traces),
                    "rct_units": len(negatives),
                    "max_false_contradiction_rate": max_false_contradiction_rate,
                    "max_rct_false_contradiction_rate": max_rct_false_contradiction_rate if negatives else None,
                    "best": asdict(best),
                    "grid": [asdict(g) for g in grid],
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    return best, grid
