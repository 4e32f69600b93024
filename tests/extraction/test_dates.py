"""Relative dates resolved against when they were said (Italian, English, Chinese)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.extraction import resolve_relative_dates

REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        ("it", "Ieri ho visto Marco", "Ieri (7 maggio 2023) ho visto Marco"),
        ("it", "L'altro ieri pioveva", "L'altro ieri (6 maggio 2023) pioveva"),
        ("it", "La settimana scorsa ero a Roma", "La settimana scorsa (la settimana del 1 maggio 2023) ero a Roma"),
        ("it", "Il mese scorso ho cambiato lavoro", "Il mese scorso (aprile 2023) ho cambiato lavoro"),
        ("it", "Mi sono sposata l'anno scorso", "Mi sono sposata l'anno scorso (2022)"),
        ("it", "3 giorni fa ho corso", "3 giorni fa (5 maggio 2023) ho corso"),
        ("en", "I ran a marathon last month", "I ran a marathon last month (April 2023)"),
        ("en", "Yesterday I adopted a dog", "Yesterday (7 May 2023) I adopted a dog"),
        ("en", "We met two years ago", "We met two years ago (2021)"),
        ("zh", "我昨天去了北京", "我昨天(2023年5月7日)去了北京"),
        ("zh", "去年我搬家了", "去年(2022年)我搬家了"),
    ],
)
def test_relative_dates_get_their_absolute_date(lang: str, text: str, expected: str) -> None:
    assert resolve_relative_dates(text, REF, lang=lang) == expected


def test_words_that_only_contain_a_date_word_are_left_alone() -> None:
    assert resolve_relative_dates("Oggiono è in Lombardia; ieriano non esiste", REF) == "Oggiono è in Lombardia; ieriano non esiste"
    assert resolve_relative_dates("Todays' yesterdays", REF, lang="en") == "Todays' yesterdays"
    assert resolve_relative_dates("Nothing relative here.", REF, lang="fr") == "Nothing relative here."
