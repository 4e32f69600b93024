"""The seeded synthetic persona generator."""

from __future__ import annotations

from collections import Counter

import pytest

from memlab.errors import InvalidInputError
from memlab.lab.augment import generate_pairs
from memlab.records import Label


def test_deterministic_per_seed() -> None:
    assert generate_pairs(300, seed=7) == generate_pairs(300, seed=7)
    assert generate_pairs(300, seed=7) != generate_pairs(300, seed=8)


def test_labels_and_languages_are_balanced_enough() -> None:
    pairs = generate_pairs(3000, seed=0)
    labels = Counter(p.label for p in pairs)
    assert set(labels) == {Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL}
    assert min(labels.values()) > 0.25 * len(pairs)
    langs = Counter(p.language for p in pairs)
    assert set(langs) == {"en", "it", "zh"} and min(langs.values()) > 0.28 * len(pairs)


def test_italian_only() -> None:
    pairs = generate_pairs(200, seed=1, languages=["it"])
    assert {p.language for p in pairs} == {"it"}
    assert any("compleanno" in p.premise or "compleanno" in p.hypothesis for p in pairs)


def test_english_and_italian_draws_do_not_change_with_chinese_added() -> None:
    # the judges v1-v3 were trained on these draws: adding Chinese must not change them for a seed
    pairs = generate_pairs(400, seed=13, languages=["en", "it"], chitchat=0.3)
    assert pairs[0].language in {"en", "it"} and {p.language for p in pairs} == {"en", "it"}
    assert pairs == generate_pairs(400, seed=13, languages=("en", "it"), chitchat=0.3)


def test_chinese_pairs_by_construction() -> None:
    pairs = generate_pairs(4000, seed=2, languages=["zh"], chitchat=0.5)
    assert {p.language for p in pairs} == {"zh"}
    by_attr = Counter((p.attribute, p.label) for p in pairs)
    for attr in ("zodiac", "gender", "home", "birthday", "age"):
        for label in (Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL):
            assert by_attr[(attr, label)] > 0, (attr, label)
    # a key/value memory is never wrapped as a chat turn
    assert any(p.premise.startswith("星座：") for p in pairs)
    assert not any("：" in p.premise and not p.premise.startswith(("星座", "性别", "地点", "年龄")) for p in pairs)
    # a city entails its own province
    prov = [p for p in pairs if p.attribute == "home_province"]
    assert prov and all(p.label is Label.ENTAILMENT for p in prov)
    # another person's sign is not the user's: neutral
    assert any(p.attribute == "zodiac" and p.label is Label.NEUTRAL and p.hypothesis.startswith("我男朋友")
               for p in pairs)


def test_entailment_same_attribute_contradiction_differs() -> None:
    for p in generate_pairs(2000, seed=3):
        assert p.premise.strip() and p.hypothesis.strip()
        if p.label is Label.CONTRADICTION and p.attribute != "negation":
            assert p.premise != p.hypothesis


def test_birthday_vs_anniversary_is_neutral() -> None:
    pairs = [
        p for p in generate_pairs(4000, seed=5) if p.attribute == "birthday" and p.label is Label.NEUTRAL
    ]
    assert any("anniversar" in p.hypothesis for p in pairs)


@pytest.mark.parametrize(
    "kwargs", [{"n": -1}, {"n": 1.5}, {"n": 3, "languages": ["fr"]}, {"n": 3, "languages": []}]
)
def test_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        generate_pairs(**kwargs)  # type: ignore[arg-type]


def test_zero() -> None:
    assert generate_pairs(0) == []


def test_chitchat_wraps_turns_and_keeps_labels() -> None:
    plain = generate_pairs(400, seed=5)
    assert generate_pairs(400, seed=5, chitchat=0.0) == plain  # the default draws the same pairs as before
    wrapped = generate_pairs(400, seed=5, chitchat=1.0)
    assert wrapped == generate_pairs(400, seed=5, chitchat=1.0)
    assert Counter(p.label for p in wrapped).keys() == {Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL}
    questions = sum(p.premise.endswith("?") or p.hypothesis.endswith("?") for p in wrapped)
    assert questions > 0.4 * len(wrapped) and sum(p.premise.endswith("?") for p in plain) == 0
    with pytest.raises(InvalidInputError):
        generate_pairs(3, chitchat=1.5)
