"""Relative dates resolved against when something was said: "ieri" said on 8 May 2023 is 7 May 2023.

A fact stored as "went to the support group yesterday" answers no "when?" a month later. :func:`resolve_relative_dates`
keeps the words and adds the absolute date in brackets: "went to the support group yesterday (7 May 2023)".

Expressions (Italian, English, Chinese): yesterday/today/tomorrow and the day before yesterday, last/next
week, weekend, month, year, "N days/weeks/months/years ago" ("3 giorni fa", "三天前" not: Chinese numerals
are left alone), and English "last <weekday>". The calendar arithmetic is :mod:`dateutil.relativedelta`'s;
"N ... ago" and weekdays go through :mod:`dateparser` with the reference date as its ``RELATIVE_BASE``.
Granularity follows the expression: a day ("7 May 2023"), a week ("the week of 1 May 2023"), a month
("April 2023") or a year ("2022").
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from dateutil.relativedelta import relativedelta

from memlab.entities import format_day, format_month

__all__ = ["resolve_relative_dates"]

_DAY, _WEEK, _MONTH, _YEAR = "day", "week", "month", "year"

# (pattern, granularity, offset as relativedelta keyword arguments); longest first where they overlap.
_FIXED: dict[str, list[tuple[str, str, dict[str, int]]]] = {
    "en": [
        (r"the day before yesterday", _DAY, {"days": -2}),
        (r"the day after tomorrow", _DAY, {"days": 2}),
        (r"yesterday", _DAY, {"days": -1}),
        (r"last night", _DAY, {"days": -1}),
        (r"today|tonight|this morning|this afternoon|this evening", _DAY, {}),
        (r"tomorrow", _DAY, {"days": 1}),
        (r"last weekend", _WEEK, {"weeks": -1}),
        (r"last week", _WEEK, {"weeks": -1}),
        (r"next week", _WEEK, {"weeks": 1}),
        (r"this week", _WEEK, {}),
        (r"last month", _MONTH, {"months": -1}),
        (r"next month", _MONTH, {"months": 1}),
        (r"this month", _MONTH, {}),
        (r"last year", _YEAR, {"years": -1}),
        (r"next year", _YEAR, {"years": 1}),
        (r"this year", _YEAR, {}),
    ],
    "it": [
        (r"l'altro ieri|l'altroieri|altroieri", _DAY, {"days": -2}),
        (r"dopodomani", _DAY, {"days": 2}),
        (r"ieri sera|ieri", _DAY, {"days": -1}),
        (r"oggi|stasera|stamattina|stamani", _DAY, {}),
        (r"domani", _DAY, {"days": 1}),
        (r"(?:lo )?scorso (?:weekend|fine settimana)|(?:il )?(?:weekend|fine settimana) scorso", _WEEK, {"weeks": -1}),
        (r"(?:la )?settimana scorsa|(?:la )?scorsa settimana", _WEEK, {"weeks": -1}),
        (r"(?:la )?settimana prossima|(?:la )?prossima settimana", _WEEK, {"weeks": 1}),
        (r"questa settimana", _WEEK, {}),
        (r"(?:il )?mese scorso|(?:lo )?scorso mese", _MONTH, {"months": -1}),
        (r"(?:il )?mese prossimo|(?:il )?prossimo mese", _MONTH, {"months": 1}),
        (r"questo mese", _MONTH, {}),
        (r"(?:l')?anno scorso|(?:lo )?scorso anno", _YEAR, {"years": -1}),
        (r"(?:l')?anno prossimo|(?:il )?prossimo anno", _YEAR, {"years": 1}),
        (r"quest'anno", _YEAR, {}),
    ],
    "zh": [
        (r"前天", _DAY, {"days": -2}),
        (r"后天", _DAY, {"days": 2}),
        (r"昨天|昨晚", _DAY, {"days": -1}),
        (r"今天|今晚", _DAY, {}),
        (r"明天", _DAY, {"days": 1}),
        (r"上周|上个星期|上星期", _WEEK, {"weeks": -1}),
        (r"下周|下个星期|下星期", _WEEK, {"weeks": 1}),
        (r"上个月", _MONTH, {"months": -1}),
        (r"下个月", _MONTH, {"months": 1}),
        (r"去年", _YEAR, {"years": -1}),
        (r"明年", _YEAR, {"years": 1}),
    ],
}
_NUM = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|un|una|uno|due|tre|quattro|cinque|sei|sette|otto|nove|dieci)"
_PARSED: dict[str, list[tuple[str, str]]] = {
    "en": [
        (rf"{_NUM} days? ago", _DAY),
        (rf"{_NUM} weeks? ago", _WEEK),
        (rf"{_NUM} months? ago", _MONTH),
        (rf"{_NUM} years? ago", _YEAR),
        (r"last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)", _DAY),
    ],
    "it": [
        (rf"{_NUM} giorni fa|un giorno fa", _DAY),
        (rf"{_NUM} settimane fa|una settimana fa", _WEEK),
        (rf"{_NUM} mesi fa|un mese fa", _MONTH),
        (rf"{_NUM} anni fa|un anno fa", _YEAR),
    ],
    "zh": [],
}
_WORD_EDGE = {"en": (r"(?<![\w'])", r"(?![\w])"), "it": (r"(?<![\w'])", r"(?![\w])"), "zh": ("", "")}
_COMPILED: dict[str, re.Pattern[str]] = {}
_WEEK_OF = {"en": "the week of {}", "it": "la settimana del {}", "zh": "{}那周"}


def _pattern(lang: str) -> re.Pattern[str]:
    if lang not in _COMPILED:
        left, right = _WORD_EDGE[lang]
        alts = [f"(?P<f{i}>{p})" for i, (p, _, _) in enumerate(_FIXED[lang])]
        alts += [f"(?P<p{i}>{p})" for i, (p, _) in enumerate(_PARSED[lang])]
        _COMPILED[lang] = re.compile(left + "(?:" + "|".join(alts) + ")" + right, re.IGNORECASE)
    return _COMPILED[lang]


def _render(when: datetime, granularity: str, lang: str) -> str:
    if granularity == _DAY:
        return format_day(when, lang)
    if granularity == _WEEK:
        monday = when - timedelta(days=when.weekday())
        return _WEEK_OF[lang].format(format_day(monday, lang))
    if granularity == _MONTH:
        return format_month(when, lang)
    return f"{when.year}年" if lang == "zh" else str(when.year)


def resolve_relative_dates(text: str, reference: datetime, *, lang: str = "it") -> str:
    """``text`` with every relative date followed by its absolute date in brackets, counted from ``reference``.

    Args:
        text: what was said.
        reference: when it was said.
        lang: ``it``, ``en`` or ``zh`` (another code is treated as ``en``).

    Example:
        >>> from datetime import datetime
        >>> ref = datetime(2023, 5, 8)
        >>> resolve_relative_dates("Sono andata ieri al gruppo", ref)
        'Sono andata ieri (7 maggio 2023) al gruppo'
        >>> resolve_relative_dates("I moved here last year, 3 weeks ago I found a job", ref, lang="en")
        'I moved here last year (2022), 3 weeks ago (the week of 17 April 2023) I found a job'
        >>> resolve_relative_dates("我上个月去了东京", ref, lang="zh")
        '我上个月(2023年4月)去了东京'
    """
    lang = lang if lang in _FIXED else "en"
    import dateparser

    def repl(m: re.Match[str]) -> str:
        phrase = m.group(0)
        name = next(k for k, v in m.groupdict().items() if v is not None)
        when: datetime | None
        if name.startswith("f"):
            _, granularity, delta = _FIXED[lang][int(name[1:])]
            when = reference + relativedelta(**delta)  # type: ignore[arg-type]
        else:
            granularity = _PARSED[lang][int(name[1:])][1]
            when = dateparser.parse(
                phrase, languages=[lang], settings={"RELATIVE_BASE": reference.replace(tzinfo=None)}
            )
            if when is None:
                return phrase
        resolved = _render(when, granularity, lang)
        return f"{phrase}({resolved})" if lang == "zh" else f"{phrase} ({resolved})"

    return _pattern(lang).sub(repl, text)
