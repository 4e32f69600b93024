"""Measured signals: sentences, language, emoji, tone, fatigue."""

from __future__ import annotations

import pytest

from memlab.extraction import Tone, detect_lang, measure, split_sentences


def test_split_sentences_latin_cjk_and_abbreviations() -> None:
    assert split_sentences("Ciao! Mi chiamo Anna. Abito a Roma") == ["Ciao!", "Mi chiamo Anna.", "Abito a Roma"]
    assert split_sentences("我叫李四。我住在北京。") == ["我叫李四。", "我住在北京。"]
    assert split_sentences("I met Dr. Who at St. Mary. Then I left.") == ["I met Dr. Who at St. Mary.", "Then I left."]
    assert split_sentences("") == []


@pytest.mark.parametrize(("text", "lang"), [("I live in Rome with my wife", "en"), ("Abito a Roma con mia moglie", "it"),
                                            ("我住在北京", "zh")])
def test_detect_lang(text: str, lang: str) -> None:
    assert detect_lang(text) == lang


@pytest.mark.parametrize(
    ("text", "component"),
    [("boh", "dunno"), ("non lo so", "dunno"), ("idk", "dunno"), ("preferisco non rispondere", "evasion"),
     ("let's move on", "evasion"), ("sono stanca", "tired"), ("uff basta", "tired"), ("mah...", "trailing"),
     ("😴", "emoji"), ("ok", "short")],
)
def test_fatigue_components(text: str, component: str) -> None:
    s = measure(text)
    assert component in s.components and 0.0 < s.fatigue <= 1.0


def test_ambiguous_words_do_not_count_in_long_sentences() -> None:
    s = measure("Basta che tu mi dica dove abiti e poi ci vediamo domani in centro per un caffè")
    assert "tired" not in s.components and s.fatigue == 0.0


def test_long_answer_is_verbose_and_not_tired() -> None:
    s = measure(" ".join(["Ieri sono andato in montagna con i miei amici e abbiamo camminato tanto"] * 6))
    assert s.tone is Tone.VERBOSE and s.fatigue == 0.0


def test_emoji_detection() -> None:
    assert measure("ciao 😀").has_emoji and not measure("ciao :)").has_emoji
