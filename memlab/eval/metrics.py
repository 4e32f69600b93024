"""Classification and calibration metrics as pure functions (checked against ``sklearn.metrics``).

Conventions (written down, like faiss ``contrib/evaluation.py``):

* Labels may be :class:`~memlab.records.Label` members or plain strings; they are compared by value.
* A prediction ``abstain`` is a wrong prediction for every class (it lowers recall and accuracy) and is
  reported separately by :func:`coverage`.
* Division by zero returns ``zero_division`` (default 0.0) and emits
  :class:`~memlab.errors.UndefinedMetricWarning`: precision when nothing was predicted positive, recall
  when there is no gold positive, F1 when there is neither (F1 = 2tp / (2tp + fp + fn), as sklearn).
* Empty input returns ``zero_division`` (with the warning) rather than raising.
* Calibration uses the contradiction probability and ``n_bins`` equal-width bins on [0, 1]; a probability
  on a bin edge goes to the lower bin (sklearn ``calibration_curve``'s rule).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from memlab.errors import InvalidInputError, UndefinedMetricWarning
from memlab.records import Label

__all__ = [
    "ClassMetrics",
    "accuracy",
    "average_precision",
    "bootstrap_ci",
    "confusion",
    "coverage",
    "expected_calibration_error",
    "false_contradiction_rate",
    "macro_f1",
    "per_class",
    "pr_curve",
    "reliability_curve",
]


class ClassMetrics(BaseModel):
    """Precision, recall and F1 of one class, with the counts they come from."""

    model_config = ConfigDict(frozen=True)

    precision: float
    """tp / (tp + fp)."""
    recall: float
    """tp / (tp + fn)."""
    f1: float
    """2 tp / (2 tp + fp + fn)."""
    support: int
    """Number of gold examples of the class (tp + fn)."""
    tp: int
    """True positives."""
    fp: int
    """False positives."""
    fn: int
    """False negatives."""


def _values(y: Sequence[Any], name: str) -> NDArray[np.object_]:
    arr = np.asarray([v.value if isinstance(v, Label) else str(v) for v in y], dtype=object)
    return arr


def _pair(
    y_true: Sequence[Any], y_pred: Sequence[Any], owner: str
) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    t, p = _values(y_true, "y_true"), _values(y_pred, "y_pred")
    if len(t) != len(p):
        raise InvalidInputError(
            f"The 'y_pred' parameter of {owner} must have the same length as 'y_true' ({len(t)}). Got {len(p)} instead."
        )
    return t, p


def _div(num: float, den: float, zero_division: float, what: str) -> float:
    if den == 0:
        warnings.warn(
            f"{what} is ill-defined (division by zero); returning {zero_division}.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return float(zero_division)
    return float(num) / float(den)


def _label_key(label: Any) -> str:
    return label.value if isinstance(label, Label) else str(label)


def per_class(
    y_true: Sequence[Any],
    y_pred: Sequence[Any],
    *,
    labels: Sequence[Any] | None = None,
    zero_division: float = 0.0,
) -> dict[str, ClassMetrics]:
    """Per-class precision, recall, F1 and support.

    Args:
        y_true: gold labels.
        y_pred: predicted labels, same length.
        labels: classes to report, in this order; default the sorted union of both sequences.
        zero_division: value returned (with an ``UndefinedMetricWarning``) for undefined ratios.

    Returns:
        ``{label value: ClassMetrics}``.

    Raises:
        InvalidInputError: the sequences differ in length.

    Example:
        >>> m = per_class(["contradiction", "neutral"], ["contradiction", "contradiction"], labels=["contradiction"])
        >>> m["contradiction"].precision, m["contradiction"].recall, m["contradiction"].support
        (0.5, 1.0, 1)
    """
    t, p = _pair(y_true, y_pred, "per_class")
    keys = [_label_key(lab) for lab in labels] if labels is not None else sorted(set(t) | set(p))
    out = {}
    for k in keys:
        tp = int(np.sum((t == k) & (p == k)))
        fp = int(np.sum((t != k) & (p == k)))
        fn = int(np.sum((t == k) & (p != k)))
        out[k] = ClassMetrics(
            precision=_div(tp, tp + fp, zero_division, f"Precision of {k!r}"),
            recall=_div(tp, tp + fn, zero_division, f"Recall of {k!r}"),
            f1=_div(2 * tp, 2 * tp + fp + fn, zero_division, f"F1 of {k!r}"),
            support=tp + fn,
            tp=tp,
            fp=fp,
            fn=fn,
        )
    return out


def accuracy(y_true: Sequence[Any], y_pred: Sequence[Any], *, zero_division: float = 0.0) -> float:
    """Share of exact matches (``abstain`` counts as wrong).

    Example:
        >>> accuracy(["a", "b", "c"], ["a", "b", "x"])
        0.6666666666666666
    """
    t, p = _pair(y_true, y_pred, "accuracy")
    return _div(float(np.sum(t == p)), len(t), zero_division, "Accuracy of an empty input")


def macro_f1(
    y_true: Sequence[Any],
    y_pred: Sequence[Any],
    *,
    labels: Sequence[Any] | None = None,
    zero_division: float = 0.0,
) -> float:
    """Unweighted mean of per-class F1 over ``labels`` (default: the sorted union of both sequences).

    Example:
        >>> macro_f1(["a", "b", "b"], ["a", "a", "b"])
        0.6666666666666666
    """
    m = per_class(y_true, y_pred, labels=labels, zero_division=zero_division)
    if not m:
        return _div(0.0, 0.0, zero_division, "Macro F1 of an empty input")
    return float(np.mean([c.f1 for c in m.values()]))


def confusion(
    y_true: Sequence[Any], y_pred: Sequence[Any], *, labels: Sequence[Any] | None = None
) -> dict[str, dict[str, int]]:
    """Confusion counts ``{gold: {pred: count}}``; rows and columns in ``labels`` order.

    Predictions outside ``labels`` (e.g. ``abstain``) get their own column so no example is dropped.

    Example:
        >>> confusion(["a", "a", "b"], ["a", "b", "b"], labels=["a", "b"])
        {'a': {'a': 1, 'b': 1}, 'b': {'a': 0, 'b': 1}}
    """
    t, p = _pair(y_true, y_pred, "confusion")
    rows = [_label_key(lab) for lab in labels] if labels is not None else sorted(set(t) | set(p))
    cols = rows + sorted(set(p) - set(rows))
    return {r: {c: int(np.sum((t == r) & (p == c))) for c in cols} for r in rows}


def false_contradiction_rate(
    y_true: Sequence[Any],
    y_pred: Sequence[Any],
    *,
    positive: Any = Label.CONTRADICTION,
    zero_division: float = 0.0,
) -> float:
    """Share of gold non-contradictions predicted as contradictions (the false positive rate).

    Example:
        >>> false_contradiction_rate(["neutral", "entailment", "contradiction"], ["contradiction", "neutral", "neutral"])
        0.5
    """
    t, p = _pair(y_true, y_pred, "false_contradiction_rate")
    k = _label_key(positive)
    neg = t != k
    return _div(float(np.sum(neg & (p == k))), float(np.sum(neg)), zero_division, "False contradiction rate")


def coverage(y_pred: Sequence[Any], *, zero_division: float = 0.0) -> float:
    """Share of predictions that are not ``abstain`` (failed examples are kept and counted here).

    Example:
        >>> coverage(["contradiction", "abstain", "neutral", "neutral"])
        0.75
    """
    p = _values(y_pred, "y_pred")
    return _div(float(np.sum(p != Label.ABSTAIN.value)), len(p), zero_division, "Coverage of an empty input")


def _binary(
    y_true: Sequence[Any], prob: Sequence[float] | NDArray[Any], owner: str
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    t = np.asarray(
        [
            bool(v)
            if isinstance(v, bool | np.bool_ | int | np.integer)
            else _label_key(v) == Label.CONTRADICTION.value
            for v in y_true
        ],
        dtype=np.int64,
    )
    pr = np.asarray(prob, dtype=np.float64).reshape(-1)
    if len(t) != len(pr):
        raise InvalidInputError(
            f"The 'prob' parameter of {owner} must have the same length as 'y_true' ({len(t)}). Got {len(pr)} instead."
        )
    if pr.size and (not np.all(np.isfinite(pr)) or pr.min() < 0 or pr.max() > 1):
        raise InvalidInputError(
            f"The 'prob' parameter of {owner} must hold probabilities in [0, 1]. Got values "
            f"outside [0, 1] or NaN instead."
        )
    return t, pr


def _bin_ids(prob: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], prob).astype(np.int64)


def reliability_curve(
    y_true: Sequence[Any], prob: Sequence[float] | NDArray[Any], *, n_bins: int = 15
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Reliability diagram data: per non-empty bin, mean predicted probability, observed frequency, count.

    Args:
        y_true: gold labels (a label is positive when it is ``contradiction``) or booleans/0-1 ints.
        prob: contradiction probabilities in [0, 1].
        n_bins: equal-width bins on [0, 1].

    Returns:
        ``(mean_predicted, fraction_positive, counts)``, each of shape ``(n_nonempty_bins,)``; the first two
        match ``sklearn.calibration.calibration_curve(..., strategy="uniform")`` (returned in swapped order).

    Example:
        >>> mp, fp, n = reliability_curve([1, 0, 1, 1], [0.9, 0.1, 0.8, 0.2], n_bins=2)
        >>> fp.tolist(), n.tolist()
        ([0.5, 1.0], [2, 2])
    """
    t, pr = _binary(y_true, prob, "reliability_curve")
    ids = _bin_ids(pr, n_bins)
    counts = np.bincount(ids, minlength=n_bins)
    sum_p = np.bincount(ids, weights=pr, minlength=n_bins)
    sum_t = np.bincount(ids, weights=t, minlength=n_bins)
    nz = counts > 0
    return sum_p[nz] / counts[nz], sum_t[nz] / counts[nz], counts[nz].astype(np.int64)


def expected_calibration_error(
    y_true: Sequence[Any],
    prob: Sequence[float] | NDArray[Any],
    *,
    n_bins: int = 15,
    zero_division: float = 0.0,
) -> float:
    """ECE of the contradiction probability: sum over bins of ``n_b / N * |frequency_b - mean_prob_b|``.

    Example:
        >>> round(expected_calibration_error([1, 0], [0.9, 0.1], n_bins=15), 3)
        0.1
    """
    mp, fp, n = reliability_curve(y_true, prob, n_bins=n_bins)
    total = int(n.sum())
    if total == 0:
        return _div(0.0, 0.0, zero_division, "ECE of an empty input")
    return float(np.sum(n / total * np.abs(fp - mp)))


def pr_curve(
    y_true: Sequence[Any], scores: Sequence[float] | NDArray[Any]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Precision-recall curve of the contradiction class (same output as ``sklearn.metrics.precision_recall_curve``).

    Returns:
        ``(precision, recall, thresholds)``: precision and recall have ``len(thresholds) + 1`` points, the last
        being ``(1, 0)``; thresholds increase.

    Raises:
        InvalidInputError: no gold contradiction (recall undefined).

    Example:
        >>> p, r, th = pr_curve([1, 0, 1], [0.9, 0.4, 0.6])
        >>> p.tolist(), r.tolist(), th.tolist()
        ([0.6666666666666666, 1.0, 1.0, 1.0], [1.0, 1.0, 0.5, 0.0], [0.4, 0.6, 0.9])
    """
    t, s = _binary(y_true, scores, "pr_curve")
    if t.sum() == 0:
        raise InvalidInputError(
            "The 'y_true' parameter of pr_curve must contain a contradiction. Got none instead."
        )
    order = np.argsort(-s, kind="mergesort")
    s, t = s[order], t[order]
    distinct = np.where(np.diff(s))[0]
    idx = np.r_[distinct, t.size - 1]
    tps = np.cumsum(t)[idx]
    fps = 1 + idx - tps
    thresholds = s[idx]
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    sl = slice(None, None, -1)
    return np.r_[precision[sl], 1.0], np.r_[recall[sl], 0.0], thresholds[sl].astype(np.float64)


def average_precision(y_true: Sequence[Any], scores: Sequence[float] | NDArray[Any]) -> float:
    """Area under the PR curve as sklearn's ``average_precision_score`` (step-wise sum).

    Example:
        >>> average_precision([1, 0, 1], [0.9, 0.4, 0.6])
        1.0
    """
    p, r, _ = pr_curve(y_true, scores)
    return float(-np.sum(np.diff(r) * p[:-1]))


def bootstrap_ci(
    metric: Callable[..., float],
    *arrays: Sequence[Any],
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``metric(*arrays)``, resampling examples with replacement.

    Undefined-metric warnings inside resamples are silenced (a resample may lack a class).

    Args:
        metric: a function of the arrays (e.g. ``lambda t, p: per_class(t, p)["contradiction"].f1``).
        *arrays: equally long sequences resampled together.
        n_resamples: bootstrap resamples.
        confidence: interval mass (0.95 -> 2.5th and 97.5th percentiles).
        seed: seed of ``numpy.random.default_rng`` (fixed: the same inputs give the same interval).

    Returns:
        ``(low, high)``; ``(nan, nan)`` for empty input.

    Example:
        >>> lo, hi = bootstrap_ci(accuracy, ["a"] * 50 + ["b"] * 50, ["a"] * 100, seed=0)
        >>> lo < 0.5 < hi
        True
    """
    if not arrays:
        raise InvalidInputError("bootstrap_ci needs at least one array. Got none instead.")
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise InvalidInputError(
            "The arrays passed to bootstrap_ci must have the same length. Got different lengths instead."
        )
    if not 0 < confidence < 1:
        raise InvalidInputError(
            f"The 'confidence' parameter of bootstrap_ci must be in (0, 1). Got {confidence!r} instead."
        )
    if n == 0:
        return float("nan"), float("nan")
    arrs = [np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a for a in arrays]
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for i in range(n_resamples):
            idx = rng.integers(0, n, size=n)
            stats[i] = metric(*[a[idx] for a in arrs])
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
    return float(lo), float(hi)
