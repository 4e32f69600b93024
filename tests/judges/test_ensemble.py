"""The averaged judge: label-aligned mean of calibrated probabilities, threshold rule, bad input; the shipped ensemble."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memlab.errors import InvalidInputError
from memlab.judges import ENSEMBLE_THRESHOLD, AveragedJudge, LanguageRoutedJudge, load_judge
from memlab.records import Label


class _Fixed:
    """Fixed class probabilities per premise, in its own label order (a logic fake for the averaging rule)."""

    def __init__(self, labels: Sequence[Label], table: dict[str, list[float]], name: str = "fixed") -> None:
        self.labels = list(labels)
        self.table = table
        self.name = name

    def probabilities(self, pairs: Sequence[tuple[str, str]], /) -> np.ndarray:
        return np.array([self.table[a] for a, _ in pairs], dtype=np.float32)


C, E, N = Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL


def test_mean_is_aligned_by_label_and_weighted() -> None:
    a = _Fixed([C, E, N], {"x": [0.8, 0.1, 0.1], "y": [0.1, 0.2, 0.7]})
    b = _Fixed([N, C, E], {"x": [0.2, 0.4, 0.4], "y": [0.3, 0.1, 0.6]})  # another class order
    j = AveragedJudge([a, b])
    np.testing.assert_allclose(j.probabilities([("x", "h"), ("y", "h")]), [[0.6, 0.25, 0.15], [0.1, 0.4, 0.5]],
                               atol=1e-6)
    w = AveragedJudge([a, b], weights=[3, 1])
    assert w.weights == [0.75, 0.25]
    assert w.judge([("x", "h")])[0].probability == pytest.approx(0.75 * 0.8 + 0.25 * 0.4, abs=1e-6)


def test_threshold_decides_contradiction_else_the_best_other_class() -> None:
    a = _Fixed([C, E, N], {"x": [0.45, 0.35, 0.2]})
    b = _Fixed([C, E, N], {"x": [0.45, 0.15, 0.4]})
    assert AveragedJudge([a, b]).judge([("x", "h")])[0].label is C  # argmax without a threshold
    v = AveragedJudge([a, b], decision_threshold=0.5, name="avg").judge([("x", "h")])[0]
    assert (v.label, v.probability, v.judge) == (N, pytest.approx(0.45), "avg")  # 0.45 < 0.5: neutral 0.3 > 0.25
    assert AveragedJudge([a, b]).judge([]) == []


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([],), {}, "at least two"),
        (([_Fixed([C, E, N], {})],), {}, "at least two"),
        (([_Fixed([C, E, N], {}), object()],), {}, "calibrated probabilities"),
        (([_Fixed([C, E, N], {}), _Fixed([C, E, N], {})],), {"weights": [1.0]}, "one non-negative weight"),
        (([_Fixed([C, E, N], {}), _Fixed([C, E, N], {})],), {"weights": [1.0, -1.0]}, "one non-negative weight"),
        (([_Fixed([C, E, N], {}), _Fixed([C, E, N], {})],), {"decision_threshold": 1.5}, "decision_threshold"),
    ],
)
def test_bad_configuration_is_refused(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        AveragedJudge(*args, **kwargs)


def test_members_with_other_labels_and_bad_pairs_are_refused() -> None:
    j = AveragedJudge([_Fixed([C, E, N], {"x": [1, 0, 0]}), _Fixed([C, E], {"x": [1, 0]})])
    with pytest.raises(InvalidInputError, match="share their labels"):
        j.probabilities([("x", "h")])
    with pytest.raises(InvalidInputError):
        j.judge([("x",)])  # type: ignore[list-item]


@pytest.mark.model
def test_shipped_ensemble_averages_english_pairs_and_routes_the_others() -> None:
    judge = load_judge("ensemble")
    assert isinstance(judge, LanguageRoutedJudge) and isinstance(judge.english, AveragedJudge)
    assert judge.english.decision_threshold == ENSEMBLE_THRESHOLD
    en_judge, ml_judge = judge.english.judges
    assert ml_judge is judge.multilingual  # one multilingual model, shared
    english = ("I was born on 12 July 1990.", "My birthday is on 15 August.")
    italian = ("L'utente è nato il 12 luglio 1990.", "Il compleanno dell'utente è il 15 agosto.")
    v_en, v_it = judge.judge([english, italian])
    p_en = en_judge.judge([english])[0].probability
    p_ml = ml_judge.judge([english])[0].probability
    assert v_en.probability == pytest.approx((p_en + p_ml) / 2, abs=1e-5)
    assert v_it.probability == pytest.approx(ml_judge.judge([italian])[0].probability, abs=1e-6)
    assert v_en.label is Label.CONTRADICTION and v_it.label is Label.CONTRADICTION  # the seed pair, both languages
    not_one = judge.judge([("My birthday is 12 July.", "Our wedding anniversary is 15 August.")])[0]
    assert not_one.probability < 0.5 and not_one.judge == "ensemble"
    params = judge.get_params()
    assert params["english"]["decision_threshold"] == ENSEMBLE_THRESHOLD and "+" in params["weights_sha256"]
