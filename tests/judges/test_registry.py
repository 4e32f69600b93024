"""load_judge: names, errors, baselines routing, the LLM judge."""

from __future__ import annotations

import pytest

from memlab.errors import InvalidInputError, JudgeError, UnknownComponentError
from memlab.judges import LLMJudge, available_judges, load_judge, register_judge
from memlab.llm import ScriptedLLM
from memlab.protocols import Judge
from memlab.records import Label
from memlab.testing import ScriptedJudge


def test_available_names() -> None:
    names = available_judges()
    for name in ("default", "majority", "lexical", "llm", "hf:<model>"):
        assert name in names


@pytest.mark.parametrize("name", ["nope", "hf", "defaults"])
def test_unknown_name(name: str) -> None:
    with pytest.raises(UnknownComponentError, match="Valid names"):
        load_judge(name)


@pytest.mark.parametrize("name", ["", "   ", None, 3, "hf:", "hf:  "])
def test_bad_name(name: object) -> None:
    with pytest.raises(InvalidInputError):
        load_judge(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["majority", "lexical"])
def test_baselines_are_routed(name: str) -> None:
    pytest.importorskip("memlab.judges.baselines")
    judge = load_judge(name)
    assert isinstance(judge, Judge)
    verdicts = judge.judge([("I live in Rome.", "I live in Milan."), ("a", "b")])
    assert len(verdicts) == 2 and all(0.0 <= v.probability <= 1.0 for v in verdicts)


def test_register_custom_judge() -> None:
    register_judge("test-always-yes", lambda **kw: ScriptedJudge(lambda a, b: 1.0))
    verdicts = load_judge("test-always-yes").judge([("a", "b")])
    assert verdicts[0].probability == 1.0


def test_llm_judge_needs_an_llm() -> None:
    with pytest.raises(InvalidInputError, match="needs an LLM"):
        load_judge("llm")


def test_llm_judge_with_scripted_llm() -> None:
    llm = ScriptedLLM(
        [
            '{"label": "contradiction", "confidence": 0.9, "reason": "two different dates"}',
            '{"label": "neutral", "confidence": 0.8, "reason": "birthday vs anniversary"}',
        ]
    )
    judge = load_judge("llm", llm=llm)
    assert isinstance(judge, LLMJudge)
    v = judge.judge(
        [
            ("Sono nato il 12 luglio 1990.", "Il mio compleanno è il 15 agosto."),
            ("My birthday is 12 July.", "Our wedding anniversary is 15 August."),
        ]
    )
    assert [x.label for x in v] == [Label.CONTRADICTION, Label.NEUTRAL]
    assert v[0].probability == pytest.approx(0.9) and v[1].probability == pytest.approx(0.2)
    assert v[0].rationale == "two different dates"
    assert "Sono nato il 12 luglio 1990." in llm.calls[0][1]["content"]
    assert judge.judge([]) == []


def test_llm_judge_malformed_answer_is_judge_error() -> None:
    judge = LLMJudge(ScriptedLLM(['{"label": "maybe", "confidence": 2}', "not json at all"]))
    with pytest.raises(JudgeError):
        judge.judge([("a", "b")])


def test_llm_judge_rejects_non_llm() -> None:
    with pytest.raises(JudgeError):
        LLMJudge(object())  # type: ignore[arg-type]
