"""The zodiac sign layer: the user's own sign, stated or from the birthday, in Italian, English and Chinese."""

from __future__ import annotations

import pytest

from memlab.integrity.values import compare_values, explain_values
from memlab.integrity.zodiac import SIGNS, sign_of_date, user_sign


@pytest.mark.parametrize(("text", "sign"), [
    ("Sono dello Scorpione.", "Scorpio"),
    ("Sono nata sotto il segno dei Pesci.", "Pisces"),
    ("Il mio segno zodiacale è la Bilancia.", "Libra"),
    ("I'm a Leo, so I love attention.", "Leo"),
    ("My star sign is Libra.", "Libra"),
    ("星座：射手座", "Sagittarius"),
    ("我的星座是天蝎座", "Scorpio"),
    ("哈哈我是天蝎，你呢", "Scorpio"),
    ("我就是处女座", "Virgo"),
])
def test_the_users_own_sign(text: str, sign: str) -> None:
    got = user_sign(text)
    assert got is not None and got[0] == sign, got


@pytest.mark.parametrize("text", [
    "Mio marito è dello Scorpione.",  # another person
    "Sono un toro in palestra.",  # a bull, not Taurus
    "I'm a Cancer survivor.",  # not a sign
    "I'm Leo, nice to meet you.",  # a name
    "你也是巨蟹吗？", "我男朋友是天蝎座", "我们摩羯三人行", "我双子座的朋友很多",  # someone else, or "we"
    "I'm a Leo with a Virgo rising.",  # two signs: nothing safe to compare
    "",
])
def test_no_sign_of_the_user(text: str) -> None:
    assert user_sign(text) is None


def test_sign_of_date_and_its_edges() -> None:
    assert sign_of_date(7, 12) == "Cancer" and sign_of_date(8, 15) == "Leo" and sign_of_date(1, 5) == "Capricorn"
    assert sign_of_date(12, 31) == "Capricorn" and sign_of_date(3, 30) == "Aries"
    # within a day of the start of a sign: traditions differ, no sign
    assert all(sign_of_date(m, d + k) is None for _, _, (m, d) in SIGNS.values() for k in (-1, 0, 1))


@pytest.mark.parametrize(("old", "new", "contradiction"), [
    ("Sono dello Scorpione.", "Sono del Leone.", True),
    ("Sono nato il 12 luglio.", "Sono del Leone.", True),  # 12 July is Cancer
    ("星座：射手座", "我就是处女座", True),
    ("I was born on 15 August 1990.", "I'm a Leo.", False),
    ("我的生日是8月15日。", "我是狮子座。", False),
])
def test_sign_layer(old: str, new: str, contradiction: bool) -> None:
    d = compare_values(old, new)
    assert d is not None and d.layer == "sign" and d.contradiction is contradiction, d
    if contradiction:
        text = explain_values(d, "it")
        assert text.startswith("I segni zodiacali non coincidono") and d.old in text and d.new in text


def test_two_birthdays_are_not_the_sign_layers() -> None:
    # both signs come from dates: the date layers compare the dates themselves
    d = compare_values("Sono nato il 12 luglio.", "Il mio compleanno è il 15 agosto.")
    assert d is None or d.layer != "sign", d


def test_the_sign_of_someone_else_is_left_alone() -> None:
    assert compare_values("星座：射手座", "你也是处女座吗？") is None
    d = compare_values("Sono dello Scorpione.", "Mio marito è del Leone.")
    assert d is None or d.layer != "sign", d
