"""memlab.text: language detection with lingua on a restricted language set, short-text safe."""

from __future__ import annotations

import pytest

from memlab.errors import InvalidInputError
from memlab.text import DEFAULT_LANGUAGES, detect_language, detect_languages


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("L'utente è nato il 12 luglio 1990", "it"),
        ("Il compleanno dell'utente è il 15 agosto", "it"),
        ("Il mio cane si chiama Fido", "it"),
        ("Abito a Roma", "it"),
        ("The user was born on 12 July 1990", "en"),
        ("I live in Rome", "en"),
        ("我住在上海", "zh"),
        ("我叫张三", "zh"),
        ("我喜欢Python", "zh"),
        ("Ich wohne in Berlin und arbeite bei einer Bank", "de"),
    ],
)
def test_detects_the_seed_languages(text, lang):
    assert detect_language(text) == lang


@pytest.mark.parametrize("text", ["", "   ", "12345 !!", "🙂🙂", "\x00\x01", "3.14 + 2 = 5.14"])
def test_no_letters_is_unknown(text):
    assert detect_language(text) is None


def test_huge_text_is_cheap_and_detected():
    assert detect_language("Il mio cane si chiama Fido e abita a Roma. " * 5000) == "it"


def test_restricted_language_set():
    assert detect_language("Abito a Roma e lavoro in banca", languages=["en", "it"]) == "it"
    assert detect_language("我住在上海", languages=["en", "it"]) in {"en", "it", None}  # zh not allowed
    assert set(DEFAULT_LANGUAGES) >= {"it", "en", "zh"}


def test_batch_keeps_order():
    assert detect_languages(["I live in Rome", "Abito a Roma", "123"]) == ["en", "it", None]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"text": 3}, "must be a str"),
        ({"text": "ciao", "languages": ["it", "xx"]}, "ISO 639-1"),
        ({"text": "ciao", "languages": ["it"]}, "at least 2"),
        ({"text": "ciao", "languages": "it"}, "not a str"),
        ({"text": "ciao", "min_relative_distance": 2.0}, r"\[0, 0.99\]"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        detect_language(**kwargs)


def test_batch_rejects_bare_string():
    with pytest.raises(InvalidInputError):
        detect_languages("Abito a Roma")
