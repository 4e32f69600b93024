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
    assert set(langs) == {"en", "it"} and min(langs.values()) > 0.4 * len(pairs)


def test_italian_only() -> None:
    pairs = generate_pairs(200, seed=1, languages=["it"])
    assert {p.language for p in pairs} == {"it"}
    assert any("compleanno" in p.premise or "compleanno" in p.hypothesis for p in pairs)


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
    "kwargs", [{"n": -1}, {"n": 1.5}, {"n": 3, "languages": ["zh"]}, {"n": 3, "languages": []}]
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
