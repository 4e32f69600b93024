"""ragas non-LLM text metrics: values, multilingual tokenisation, validation."""

from __future__ import annotations

import pytest

from memlab.errors import InvalidInputError, UndefinedMetricWarning
from memlab.eval import text_metrics as T


def _lcs_f(ref: list[str], hyp: list[str]) -> float:
    dp = [[0] * (len(hyp) + 1) for _ in range(len(ref) + 1)]
    for i, a in enumerate(ref):
        for j, b in enumerate(hyp):
            dp[i + 1][j + 1] = dp[i][j] + 1 if a == b else max(dp[i][j + 1], dp[i + 1][j])
    lcs = dp[-1][-1]
    if not lcs:
        return 0.0
    p, r = lcs / len(hyp), lcs / len(ref)
    return 2 * p * r / (p + r)


@pytest.mark.parametrize(
    ("ref", "hyp"),
    [
        ("the user lives in rome", "the user lives in milan"),
        ("L'utente è nato il 12 luglio 1990 a Città di Castello", "Il compleanno dell'utente è il 15 luglio"),
        ("我喜欢猫和狗", "我不喜欢猫"),
    ],
)
def test_rouge_l_is_lcs_f_measure(ref: str, hyp: str) -> None:
    expected = _lcs_f(T.unicode_tokens(ref), T.unicode_tokens(hyp))
    assert T.rouge_l(ref, hyp) == pytest.approx(expected)


def test_rouge_l_non_ascii_is_not_dropped() -> None:
    assert T.rouge_l("我喜欢猫", "我喜欢猫") == 1.0
    assert T.rouge_l("我喜欢猫", "他讨厌狗") == 0.0
    assert T.rouge_l("città", "citta") == 0.0  # accents matter
    assert (
        0 < T.rouge_l("Paris is the capital of France.", "The capital of France is Paris.", mode="recall") < 1
    )


def test_string_similarity() -> None:
    assert T.string_similarity("Abito a Roma", "Abito a Roma") == 1.0
    assert T.string_similarity("abc", "xyz") == 0.0
    assert 0.8 < T.string_similarity("Vivo a Milano", "Vivo a Milan", measure="jaro_winkler") < 1.0
    with pytest.raises(InvalidInputError, match="'measure'"):
        T.string_similarity("a", "b", measure="cosine")  # type: ignore[arg-type]


def test_context_metrics() -> None:
    retrieved = ["Abito a Roma", "Mi piace il caffè", "Il mio cane si chiama Fido"]
    reference = ["Il mio cane si chiama Fido", "Lavoro come infermiera"]
    assert T.context_recall(retrieved, reference) == 0.5
    assert T.context_precision(retrieved, reference) == pytest.approx(1 / 3, abs=1e-6)
    assert T.id_context_precision(["D1:3", "D2:1"], ["D1:3"]) == 0.5
    assert T.id_context_recall(["D1:3"], ["D1:3", "D5:5"]) == 0.5


def test_empty_and_bad_input() -> None:
    with pytest.warns(UndefinedMetricWarning):
        assert T.rouge_l("", "ciao") == 0.0
    with pytest.warns(UndefinedMetricWarning):
        assert T.context_recall([], ["x"]) == 0.0
    with pytest.raises(InvalidInputError, match="'reference'"):
        T.rouge_l(None, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="list of str"):
        T.context_precision("abc", ["x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="lists of ids"):
        T.id_context_recall("D1:3", ["D1:3"])  # type: ignore[arg-type]
