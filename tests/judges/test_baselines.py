"""Baseline judges: Judge protocol contract, multilingual cues, validation."""

from __future__ import annotations

import pytest

from memlab.errors import InvalidInputError
from memlab.judges.baselines import LexicalJudge, MajorityJudge
from memlab.protocols import Judge
from memlab.records import Label, Verdict

PAIRS = [
    ("A man is sleeping.", "A man is not sleeping."),
    ("L'utente è nato il 12 luglio 1990", "Il compleanno dell'utente è il 15 agosto"),
    ("Abito a Roma", "Non abito a Roma"),
    ("我喜欢猫。", "我不喜欢猫。"),
    ("I ran 5 km on Tuesday", "I ran 3 km on Wednesday"),
    ("The user's name is Anna", "The user's name is Anna"),
]


@pytest.mark.parametrize("judge", [MajorityJudge(), LexicalJudge()], ids=["majority", "lexical"])
def test_judge_contract(judge: Judge) -> None:
    assert isinstance(judge, Judge)
    out = judge.judge(PAIRS)
    assert len(out) == len(PAIRS) and all(isinstance(v, Verdict) for v in out)
    assert all(0.0 <= v.probability <= 1.0 and v.judge == judge.name for v in out)
    assert judge.judge(PAIRS) == out  # deterministic
    assert [judge.judge([p])[0] for p in PAIRS] == out  # order and batching do not matter
    assert judge.judge([]) == []
    assert isinstance(judge.get_params(), dict)  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="pairs"):
        judge.judge("not pairs")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        judge.judge([("only one",)])  # type: ignore[list-item]


def test_lexical_cues_in_three_languages() -> None:
    labels = [v.label for v in LexicalJudge().judge(PAIRS)]
    assert labels[0] is Label.CONTRADICTION  # English negation
    assert labels[2] is Label.CONTRADICTION  # Italian negation
    assert labels[3] is Label.CONTRADICTION  # Chinese negation
    assert labels[5] is Label.ENTAILMENT  # identical statement
    f = LexicalJudge().features(*PAIRS[4])
    assert f["number_mismatch"] == 1.0 and f["negation_mismatch"] == 0.0


def test_lexical_validation() -> None:
    with pytest.raises(InvalidInputError, match="'threshold'"):
        LexicalJudge(threshold=1.5)


def test_majority_fit() -> None:
    j = MajorityJudge().fit([Label.CONTRADICTION, "contradiction", "neutral"], source="x/train")
    assert j.label is Label.CONTRADICTION and j.probability == pytest.approx(2 / 3)
    assert j.get_params()["fitted_on"] == "x/train"
    with pytest.raises(InvalidInputError, match="empty"):
        MajorityJudge().fit([])
    with pytest.raises(ValueError):
        MajorityJudge().fit(["maybe"])
    with pytest.raises(InvalidInputError, match="probability"):
        MajorityJudge("neutral", probability=2.0)


def test_registry_routes_to_baselines() -> None:
    from memlab.judges import load_judge

    assert isinstance(load_judge("majority"), MajorityJudge)
    assert isinstance(load_judge("lexical"), LexicalJudge)
