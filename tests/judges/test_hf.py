"""HFJudge plumbing on a tiny randomly initialised model saved to disk (not quality)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlab.errors import InvalidInputError, JudgeError
from memlab.judges import HFJudge, label_from_name, load_judge
from memlab.records import Label, Verdict

from .conftest import build_tiny_model

PAIRS = [
    ("I was born on 12 July 1990.", "My birthday is on 15 August."),
    ("Sono nato il 12 luglio.", "Il mio compleanno è il 15 agosto."),
    ("a man", "a dog"),
]


@pytest.mark.model  # loads the tiny BERT through torch and transformers (seconds of imports)
def test_load_by_hf_name_reads_label_mapping(tiny_nli: Path) -> None:
    judge = load_judge(f"hf:{tiny_nli}")
    assert isinstance(judge, HFJudge)
    assert judge.name == f"hf:{tiny_nli}"
    assert judge.labels == [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]


@pytest.mark.model
def test_verdicts_follow_the_contradiction_column(tiny_nli: Path) -> None:
    judge = HFJudge(tiny_nli, temperature=1.0)
    verdicts = judge.judge(PAIRS)
    probs = judge.probabilities(PAIRS)
    assert len(verdicts) == len(PAIRS)
    assert all(isinstance(v, Verdict) and v.judge == judge.name for v in verdicts)
    np.testing.assert_allclose([v.probability for v in verdicts], probs[:, 2], rtol=1e-5)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert [v.label for v in verdicts] == [judge.labels[int(k)] for k in probs.argmax(axis=1)]


@pytest.mark.model
def test_order_is_kept_whatever_the_batching(tiny_nli: Path) -> None:
    many = [(f"a man {i}", "a dog " * (i % 7 + 1)) for i in range(23)]
    one_by_one = [HFJudge(tiny_nli, batch_size=1).judge([p])[0].probability for p in many]
    batched = [v.probability for v in HFJudge(tiny_nli, batch_size=8).judge(many)]
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-4, atol=1e-5)


@pytest.mark.model
def test_temperature_flattens_probabilities(tiny_nli: Path) -> None:
    sharp = HFJudge(tiny_nli, temperature=0.5).probabilities(PAIRS)
    flat = HFJudge(tiny_nli, temperature=50.0).probabilities(PAIRS)
    assert np.all(np.abs(flat - 1 / 3) <= np.abs(sharp - 1 / 3) + 1e-6)


@pytest.mark.model
def test_int8_quantisation_runs(tiny_nli: Path) -> None:
    verdicts = HFJudge(tiny_nli, quantize="int8").judge(PAIRS)
    assert all(0.0 <= v.probability <= 1.0 for v in verdicts)


@pytest.mark.model
def test_empty_input_returns_empty_list_without_loading(tiny_nli: Path) -> None:
    judge = HFJudge(tiny_nli)
    assert judge.judge([]) == []
    assert judge._model is None


@pytest.mark.model
@pytest.mark.parametrize(
    "pairs",
    [
        "not pairs",
        [("only one",)],
        [("", "b")],
        [("a", "   ")],
        [("a\x00b", "c")],
        [("a", "x" * 20_001)],
        [(1, "b")],
    ],
)
def test_bad_pairs_raise_invalid_input(tiny_nli: Path, pairs: object) -> None:
    with pytest.raises(InvalidInputError):
        HFJudge(tiny_nli).judge(pairs)  # type: ignore[arg-type]


@pytest.mark.model
def test_model_without_named_labels_needs_label_map(tmp_path: Path) -> None:
    path = build_tiny_model(tmp_path / "m", {0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(JudgeError, match="label_map"):
        HFJudge(path).judge(PAIRS[:1])
    judge = HFJudge(path, label_map={0: "not_contradiction", 1: "contradiction"})
    verdicts = judge.judge(PAIRS)
    assert {v.label for v in verdicts} <= {Label.CONTRADICTION, Label.NOT_CONTRADICTION}


@pytest.mark.model
def test_missing_model_raises_judge_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="Could not load"):
        HFJudge(tmp_path / "nothing-here").judge(PAIRS[:1])


@pytest.mark.parametrize(
    "kwargs",
    [{"temperature": 0}, {"temperature": -1.0}, {"quantize": "int4"}, {"batch_size": 0}, {"max_length": 0}],
)
def test_bad_parameters(tmp_path: Path, kwargs: dict[str, object]) -> None:
    # parameters are checked in the constructor, before any model file is read (an empty folder is enough)
    with pytest.raises(InvalidInputError):
        HFJudge(tmp_path, **kwargs)  # type: ignore[arg-type]


def test_label_names() -> None:
    assert label_from_name("Contradiction") is Label.CONTRADICTION
    assert label_from_name("ENTAILMENT") is Label.ENTAILMENT
    assert label_from_name("not-contradiction") is Label.NOT_CONTRADICTION
    assert label_from_name("LABEL_2") is None


def test_get_params_is_json_like(tmp_path: Path) -> None:
    judge = HFJudge(tmp_path, quantize="int8")  # an empty folder: get_params must not load the model
    params = judge.get_params()
    assert params["model"] == str(tmp_path) and params["quantize"] == "int8"
    assert judge._model is None
