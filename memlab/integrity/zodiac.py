"""The user's zodiac sign, in Italian, English and Chinese, for the ``sign`` layer of :mod:`memlab.integrity.values`.

A sign is one value per person, like a birthday: "Sono dello Scorpione" / "I'm a Leo" contradict, and so does a
sign against the birth date ("Sono nato il 12 luglio" is Cancer, not Leo). Only the user's own sign is read: "sono
dello Scorpione", "I'm a Scorpio", "my star sign is Libra", "我是天蝎座", "我天蝎", "我的星座是天蝎座", and a
key/value memory "星座：天蝎座" / "zodiac: Scorpio"; not "mio marito è dello Scorpione", "你也是巨蟹", "我们摩羯".
A birth date within a day of the edge of two signs gives no sign (traditions differ by a day).

The Chinese zodiac animal (生肖) is one value per person too: "我属龙" against "我是1993年出生的" (1993 is the
Rooster's year, or the Monkey's before the Spring Festival) contradict; "我九零年的，属马" agrees with a birth in March
1990. Only the user's own animal ("我属龙", "我是属马的", "我九零年的，属马"), not "我爸属牛".
"""

from __future__ import annotations

import re

__all__ = ["ANIMALS", "SIGNS", "animals_of_birth", "sign_of_date", "user_animal", "user_sign"]

#: canonical (English) name -> (Italian, Chinese, first day (month, day) of the sign)
SIGNS: dict[str, tuple[str, str, tuple[int, int]]] = {
    "Aries": ("Ariete", "白羊", (3, 21)), "Taurus": ("Toro", "金牛", (4, 20)), "Gemini": ("Gemelli", "双子", (5, 21)),
    "Cancer": ("Cancro", "巨蟹", (6, 21)), "Leo": ("Leone", "狮子", (7, 23)), "Virgo": ("Vergine", "处女", (8, 23)),
    "Libra": ("Bilancia", "天秤", (9, 23)), "Scorpio": ("Scorpione", "天蝎", (10, 23)),
    "Sagittarius": ("Sagittario", "射手", (11, 22)), "Capricorn": ("Capricorno", "摩羯", (12, 22)),
    "Aquarius": ("Acquario", "水瓶", (1, 20)), "Pisces": ("Pesci", "双鱼", (2, 19)),
}
#: ((month, day) a sign starts, sign), in calendar order
_STARTS = sorted(((m, d), c) for c, (_, _, (m, d)) in SIGNS.items())
_BY_FORM = {f.casefold(): c for c, (it, zh, _) in SIGNS.items() for f in (c, it, zh, zh + "座")}
_IT = "|".join(it for it, _, _ in SIGNS.values())
_EN = "|".join(SIGNS)
_ZH = "|".join(zh for _, zh, _ in SIGNS.values())
_STATED = [
    # the sign capitalised, as it is written: "sono un toro" (strong as a bull) is no sign
    re.compile(rf"\b(?i:sono|io sono)\s+(?i:(?:del|dello|della|dei|un|una|nat[oa] sotto il segno (?:del|dello|della|dei))\s+)?"
               rf"(?i:segno\s+(?:del|dello|della|dei)\s+)?(?P<s>{_IT})\b"),
    re.compile(rf"\b(?:il mio segno(?: zodiacale)? è|il mio segno(?: zodiacale)? e')\s+(?:(?:il|lo|la|l'|i)\s*)?"
               rf"(?P<s>{_IT})\b", re.I),
    # the article is required: "I'm Leo" is a name
    re.compile(rf"\b(?i:i'm|i am|im)\s+(?:an?|a typical|such an?|a true|a total)\s+(?P<s>{_EN})\b"
               r"(?!\s+(?:survivor|patient|research|treatment|diagnosis))"),
    re.compile(rf"\bmy\s+(?:star\s+|zodiac\s+|sun\s+)?sign\s+is\s+(?P<s>{_EN})\b", re.I),
    re.compile(rf"^\s*(?:zodiac|star sign|sign|segno(?: zodiacale)?)\s*[:：]\s*(?P<s>{_EN}|{_IT})\b", re.I),
    # not "我双子座的朋友" (my Gemini friend)
    re.compile(rf"(?<![你他她])我(?!们)(?:是|就是|也是|可是|才是|真的是|本人是|属于)?(?:个|一个|一只)?(?P<s>{_ZH})"
               r"(?!座?的?(?:朋友|男友|女友|男朋友|女朋友|同事|老公|老婆|妈|爸|闺蜜|室友|同学|儿子|女儿|哥|姐|弟|妹))(?:座|男|女)?"),
    re.compile(rf"我的星座(?:是|：|:)\s*(?P<s>{_ZH})"),
    re.compile(rf"^\s*星座\s*[：:]\s*(?P<s>{_ZH})"),
]
#: another person, or "we", right before the sign: not the user's own
_OTHER = re.compile(r"\b(?:mio|mia|my|your|his|her|tuo|tua|suo|sua)\s+\w+\s+(?:è|is|e')\s*$|我们$|你$|他$|她$", re.I)


def user_sign(text: str) -> tuple[str, str] | None:
    """(canonical sign, the words that say it) of the user's own zodiac sign, or ``None``.

    Example:
        >>> user_sign("Sono dello Scorpione"), user_sign("我就是处女座"), user_sign("你也是巨蟹")
        (('Scorpio', 'Sono dello Scorpione'), ('Virgo', '我就是处女座'), None)
    """
    if not isinstance(text, str) or not text:
        return None
    head = text[:500]
    found: set[str] = set()
    phrase = ""
    for rx in _STATED:
        for m in rx.finditer(head):
            if _OTHER.search(head[:m.start("s")].rstrip("是也就才的个一只 ")):
                continue
            sign = _BY_FORM.get(m.group("s").casefold())
            if sign is not None:
                found.add(sign)
                phrase = phrase or m.group(0).strip(" ，。！？,.!?")
    if len(found) != 1:
        return None
    sign = found.pop()
    if any(other != sign for other in _mentioned(head)):
        return None  # another sign in the text ("I'm a Leo with a Virgo rising"): nothing safe to compare
    return sign, phrase


_ANY_SIGN = re.compile(rf"\b(?P<w>{_EN}|{_IT})\b|(?P<z>{_ZH})")


def _mentioned(text: str) -> set[str]:
    return {_BY_FORM[(m.group("w") or m.group("z")).casefold()] for m in _ANY_SIGN.finditer(text)}


def sign_of_date(month: int, day: int) -> str | None:
    """The sign of a birth day, or ``None`` within a day of the edge of two signs.

    Example:
        >>> sign_of_date(7, 12), sign_of_date(7, 23), sign_of_date(8, 15)
        ('Cancer', None, 'Leo')
    """
    for (m, d), _ in _STARTS:
        if month == m and abs(day - d) <= 1:
            return None
    current = _STARTS[-1][1]  # before 20 January: Capricorn
    for (m, d), c in _STARTS:
        if (month, day) >= (m, d):
            current = c
    return current


#: the twelve animals of the Chinese zodiac, from the Rat (1900, 1912 ... 2020)
ANIMALS = "鼠牛虎兔龙蛇马羊猴鸡狗猪"
_ANIMAL_OWN = re.compile(rf"我(?:是|也是|本人)?属(?P<a>[{ANIMALS}])|^我[^，。！？,.!?]{{0,10}}[，,]\s*(?:是)?属(?P<b>[{ANIMALS}])")
_OTHER_ZH = re.compile(r"我(?:的)?(?:爸|妈|爷|奶|姥|外公|外婆|老公|老婆|丈夫|妻子|儿子|女儿|哥|姐|弟|妹|朋友|同事|孩子|对象)|他|她|你|我们")


def user_animal(text: str) -> tuple[str, str] | None:
    """(animal, phrase) of the user's Chinese zodiac animal, or ``None``.

    Example:
        >>> user_animal("我九零年的，属马。"), user_animal("我爸属牛。")
        (('马', '我九零年的，属马'), None)
    """
    m = _ANIMAL_OWN.search(text)
    if m is None or _OTHER_ZH.search(text[:m.end()]):
        return None
    return m.group("a") or m.group("b"), m.group(0)


def animals_of_birth(year: int, month: int | None = None, day: int | None = None) -> frozenset[str]:
    """The animals a birth can have: the year's, and the year before's for a birth before 21 February (the Spring
    Festival falls between 21 January and 20 February) or an unknown day."""
    this = ANIMALS[(year - 1900) % 12]
    if month is not None and day is not None and (month, day) >= (2, 21):
        return frozenset({this})
    return frozenset({this, ANIMALS[(year - 1901) % 12]})
