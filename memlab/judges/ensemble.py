"""A judge that averages the calibrated class probabilities of several judges (``load_judge("ensemble")``).

memlab's two trained judges start from different pre-trained encoders (English MiniLM-L6 and multilingual-e5-small)
and make partly different mistakes. On English dev sets the mean of their calibrated probabilities separates
contradictions better than either alone (ROC AUC with the English v3 judge, English / multilingual → mean: SNLI dev
holdout 0.936 / 0.928 → 0.944, gu_dnli dev 0.830 / 0.817 → 0.839, DECODE dev pairs 0.904 / 0.882 → 0.907;
``eval/experiments/ensemble_judge.py``), at the cost of
running both models (about a quarter of the English judge's throughput). ``ensemble`` therefore sends English pairs to
:class:`AveragedJudge` (English + multilingual) and every other pair to the multilingual judge alone (the English
judge is poor on Italian and Chinese), through :class:`~memlab.judges.routed.LanguageRoutedJudge`.

The decision threshold :data:`ENSEMBLE_THRESHOLD` was chosen on dev data only, by the rule of the shipped judges'
cards: the best pooled F1 over the SNLI dev holdout + gu_dnli dev + the synthetic dev pairs whose pooled
false-contradiction rate is at most 0.07.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memlab.errors import InvalidInputError
from memlab.judges.hf import check_pairs
from memlab.records import Label, Verdict

__all__ = ["ENSEMBLE_THRESHOLD", "AveragedJudge", "ProbabilisticJudge"]

#: P(contradiction) at or above which the English ensemble says "contradiction" (dev rule above, re-run with the
#: English v3 judge; SNLI dev holdout F1 0.848 / fcr 0.078, gu_dnli dev 0.644 / 0.061, synthetic 0.993 / 0.004).
ENSEMBLE_THRESHOLD = 0.49


class ProbabilisticJudge(Protocol):
    """A judge that exposes calibrated class probabilities (``DefaultJudge``, ``HFJudge``)."""

    name: str

    @property
    def labels(self) -> list[Label]: ...

    def probabilities(self, pairs: Sequence[tuple[str, str]], /) -> NDArray[np.float32]: ...


class AveragedJudge:
    """Average the calibrated class probabilities of several judges over the same labels.

    Args:
        judges: two or more judges with ``labels`` and ``probabilities(pairs)`` (their columns are aligned by
            label, so the members may order their classes differently).
        weights: one non-negative weight per judge (default: equal).
        decision_threshold: ``contradiction`` iff the averaged P(contradiction) reaches it, else the more probable
            other class; ``None``: the most probable class.
        name: recorded in the verdicts.

    Raises:
        InvalidInputError: fewer than two judges, a judge without probabilities, weights of the wrong length or
            sign, or members whose label sets differ (checked at the first judgement).

    Example:
        >>> from memlab.testing import ScriptedJudge
        >>> class J(ScriptedJudge):
        ...     labels = [Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL]
        ...     def probabilities(self, pairs):
        ...         p = self.judge(pairs)[0].probability
        ...         return np.array([[p, 1 - p, 0.0]] * len(pairs), dtype=np.float32)
        >>> AveragedJudge([J(default=0.9), J(default=0.3)]).judge([("a", "b")])[0].probability
        0.6
    """

    def __init__(
        self,
        judges: Sequence[ProbabilisticJudge],
        *,
        weights: Sequence[float] | None = None,
        decision_threshold: float | None = None,
        name: str = "averaged",
    ) -> None:
        owner = type(self).__name__
        judges = list(judges)
        if len(judges) < 2:
            raise InvalidInputError(f"The 'judges' parameter of {owner} needs at least two judges. Got {len(judges)}.")
        for j in judges:
            if not callable(getattr(j, "probabilities", None)):
                raise InvalidInputError(
                    f"The 'judges' parameter of {owner} needs judges with calibrated probabilities "
                    f"(probabilities(pairs) and labels). Got {j!r} instead."
                )
        w = [1.0] * len(judges) if weights is None else [float(x) for x in weights]
        if len(w) != len(judges) or any(not np.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
            raise InvalidInputError(
                f"The 'weights' parameter of {owner} must give one non-negative weight per judge with a positive "
                f"sum. Got {weights!r} for {len(judges)} judges instead."
            )
        if decision_threshold is not None and not 0.0 <= float(decision_threshold) <= 1.0:
            raise InvalidInputError(
                f"The 'decision_threshold' parameter of {owner} must be in [0, 1] or None. "
                f"Got {decision_threshold!r} instead."
            )
        self.judges = judges
        self.weights = [x / sum(w) for x in w]
        self.decision_threshold = None if decision_threshold is None else float(decision_threshold)
        self.name = name

    @property
    def labels(self) -> list[Label]:
        """The first member's labels: the column order of :meth:`probabilities`."""
        return list(self.judges[0].labels)

    def probabilities(self, pairs: Sequence[tuple[str, str]], /) -> NDArray[np.float32]:
        """The weighted mean of the members' calibrated probabilities, shape ``(len(pairs), n_classes)``."""
        clean = check_pairs(pairs, owner=type(self).__name__)
        labels = self.labels
        out = np.zeros((len(clean), len(labels)), dtype=np.float64)
        if not clean:
            return out.astype(np.float32)
        for judge, w in zip(self.judges, self.weights, strict=True):
            own = list(judge.labels)
            if set(own) != set(labels):
                raise InvalidInputError(
                    f"AveragedJudge members must share their labels. Got {[x.value for x in own]} and "
                    f"{[x.value for x in labels]} instead."
                )
            probs = np.asarray(judge.probabilities(clean), dtype=np.float64)
            out += w * probs[:, [own.index(x) for x in labels]]
        return out.astype(np.float32)

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """One verdict per pair, same order; ``probability`` = the averaged P(contradiction)."""
        probs = self.probabilities(pairs)
        if probs.shape[0] == 0:
            return []
        labels = self.labels
        c = labels.index(Label.CONTRADICTION)
        top = probs.argmax(axis=1)
        if self.decision_threshold is not None:
            other = np.where(np.arange(probs.shape[1]) == c, -1.0, probs).argmax(axis=1)
            top = np.where(probs[:, c] >= self.decision_threshold, c, other)
        return [
            Verdict(label=labels[int(k)], probability=round(float(p[c]), 6), judge=self.name)
            for k, p in zip(top, probs, strict=True)
        ]

    def get_params(self) -> dict[str, Any]:
        """The members' parameters, weights and threshold; ``weights_sha256`` joins the members' fingerprints."""
        members = [j.get_params() if hasattr(j, "get_params") else {"name": j.name} for j in self.judges]
        return {
            "name": self.name,
            "members": members,
            "weights": self.weights,
            "decision_threshold": self.decision_threshold,
            "weights_sha256": "+".join(str(m.get("weights_sha256") or m.get("name")) for m in members),
        }

    def __repr__(self) -> str:
        return f"AveragedJudge({self.judges!r}, weights={self.weights!r}, name={self.name!r})"
