"""memlab.eval.metrics checked against sklearn.metrics on random labels."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from memlab.errors import InvalidInputError, UndefinedMetricWarning
from memlab.eval import metrics as M
from memlab.records import Label

LABELS = ["contradiction", "entailment", "neutral"]
# sklearn (the oracle) is imported by the tests that use it: importing it costs ~1 s, which every pytest worker of
# `make test-fast` would otherwise pay while collecting, whether or not it runs these tests


@pytest.fixture(params=range(5))
def random_labels(request: pytest.FixtureRequest, seed: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed + request.param)
    n = int(rng.integers(5, 300))
    return list(rng.choice(LABELS, n)), list(rng.choice(LABELS + ["abstain"], n))


def test_per_class_matches_sklearn(random_labels: tuple[list[str], list[str]]) -> None:
    from sklearn.metrics import precision_recall_fscore_support

    t, p = random_labels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prec, rec, f1, sup = precision_recall_fscore_support(t, p, labels=LABELS, zero_division=0.0)
        ours = M.per_class(t, p, labels=LABELS)
    for i, lab in enumerate(LABELS):
        assert ours[lab].precision == pytest.approx(prec[i])
        assert ours[lab].recall == pytest.approx(rec[i])
        assert ours[lab].f1 == pytest.approx(f1[i])
        assert ours[lab].support == sup[i]
        assert ours[lab].tp + ours[lab].fn == sup[i]


def test_accuracy_macro_confusion_match_sklearn(random_labels: tuple[list[str], list[str]]) -> None:
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    t, p = random_labels
    assert M.accuracy(t, p) == pytest.approx(accuracy_score(t, p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert M.macro_f1(t, p) == pytest.approx(f1_score(t, p, average="macro", zero_division=0.0))
        assert M.macro_f1(t, p, labels=LABELS) == pytest.approx(
            f1_score(t, p, labels=LABELS, average="macro", zero_division=0.0)
        )
    all_labels = sorted(set(t) | set(p))
    cm = confusion_matrix(t, p, labels=all_labels)
    ours = M.confusion(t, p, labels=all_labels)
    assert [[ours[r][c] for c in all_labels] for r in all_labels] == cm.tolist()


def test_confusion_keeps_abstain_column() -> None:
    cm = M.confusion(["contradiction", "neutral"], ["abstain", "neutral"], labels=LABELS)
    assert cm["contradiction"]["abstain"] == 1
    assert sum(sum(r.values()) for r in cm.values()) == 2


def test_labels_as_enum_or_str() -> None:
    t = [Label.CONTRADICTION, Label.NEUTRAL]
    assert M.accuracy(t, ["contradiction", "neutral"]) == 1.0


def test_zero_division_warns_and_returns_value() -> None:
    with pytest.warns(UndefinedMetricWarning, match="ill-defined"):
        m = M.per_class(["neutral"], ["neutral"], labels=["contradiction"], zero_division=1.0)
    assert m["contradiction"].precision == 1.0 and m["contradiction"].support == 0
    with pytest.warns(UndefinedMetricWarning):
        assert M.accuracy([], []) == 0.0
    with pytest.warns(UndefinedMetricWarning):
        assert M.false_contradiction_rate(["contradiction"], ["contradiction"]) == 0.0


def test_false_contradiction_rate_and_coverage(random_labels: tuple[list[str], list[str]]) -> None:
    t, p = np.array(random_labels[0]), np.array(random_labels[1])
    neg = t != "contradiction"
    if neg.any():
        assert M.false_contradiction_rate(t, p) == pytest.approx(np.mean(p[neg] == "contradiction"))
    assert M.coverage(p) == pytest.approx(np.mean(p != "abstain"))


def test_length_mismatch_raises() -> None:
    with pytest.raises(InvalidInputError, match="same length"):
        M.per_class(["a"], ["a", "b"])
    with pytest.raises(InvalidInputError, match=r"\[0, 1\]"):
        M.expected_calibration_error([1], [1.5])


@pytest.mark.parametrize("trial", range(5))
def test_calibration_matches_sklearn(trial: int, seed: int) -> None:
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(seed + 100 + trial)
    n = int(rng.integers(20, 500))
    prob = rng.random(n)
    prob[:3] = [0.0, 1.0, 1 / 15]  # edges
    y = (rng.random(n) < prob).astype(int)
    frac, mean = calibration_curve(y, prob, n_bins=15, strategy="uniform")
    mp, fp, counts = M.reliability_curve(y, prob, n_bins=15)
    np.testing.assert_allclose(mp, mean)
    np.testing.assert_allclose(fp, frac)
    assert counts.sum() == n
    expected = float(np.sum(counts / n * np.abs(frac - mean)))
    assert M.expected_calibration_error(y, prob) == pytest.approx(expected)
    labels = ["contradiction" if v else "neutral" for v in y]
    assert M.expected_calibration_error(labels, prob) == pytest.approx(expected)


@pytest.mark.parametrize("trial", range(5))
def test_pr_curve_matches_sklearn(trial: int, seed: int) -> None:
    from sklearn.metrics import average_precision_score, precision_recall_curve

    rng = np.random.default_rng(seed + 200 + trial)
    n = int(rng.integers(10, 400))
    y = rng.integers(0, 2, n)
    y[0] = 1
    scores = np.round(rng.random(n), 2)  # ties on purpose
    p, r, th = M.pr_curve(y, scores)
    sp, sr, sth = precision_recall_curve(y, scores)
    np.testing.assert_allclose(p, sp)
    np.testing.assert_allclose(r, sr)
    np.testing.assert_allclose(th, sth)
    assert M.average_precision(y, scores) == pytest.approx(average_precision_score(y, scores))


def test_pr_curve_needs_a_positive() -> None:
    with pytest.raises(InvalidInputError, match="contradiction"):
        M.pr_curve([0, 0], [0.1, 0.2])


def test_bootstrap_ci_seeded_and_contains_point(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.choice(LABELS, 300)
    p = np.where(rng.random(300) < 0.7, t, rng.choice(LABELS, 300))
    f = lambda a, b: M.per_class(a, b, labels=["contradiction"])["contradiction"].f1  # noqa: E731
    ci = M.bootstrap_ci(f, t, p, n_resamples=300, seed=7)
    assert ci == M.bootstrap_ci(f, t, p, n_resamples=300, seed=7)
    assert ci[0] <= f(t, p) <= ci[1]
    assert ci[0] < ci[1]
    assert all(np.isnan(M.bootstrap_ci(f, [], [], n_resamples=10)))
