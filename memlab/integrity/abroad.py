"""Never abroad against a stay abroad, in Italian, English and Chinese: the ``abroad`` layer of
:mod:`memlab.integrity.values`.

"Non sono mai stata all'estero" / "Il portoghese l'ho imparato a Lisbona, durante l'Erasmus"; "我从来没出过国" /
"去年我去泰国玩了一周"; "I've never set foot outside the States" / "a gift from my grandma in my home country, Sweden".

* **Never abroad** (:func:`never_abroad`): a first-person clause with an absolute ("mai", "never", "从来没", "没…过")
  and a phrase of going abroad ("all'estero", "abroad", "overseas", "outside the States", "fuori dall'Italia",
  "出国", "国外"). The home country is the one the clause names ("dall'Italia", "the States", "离开过中国"), else
  the one of the language (Italian: Italy, Chinese: China); English names none ("I've never been abroad").
  Softened or dated absolutes ("before 2019", "until", "prima di", "以前") are not read.
* **A stay abroad** (:func:`stays_abroad`): a first-person clause, not negated, not a wish or a plan ("I'd love to
  visit Japan", "vorrei andare", "明年想去"), with a verb of being somewhere ("went", "lived", "studied", "sono
  stata", "ho imparato", "去", "留学") and a place the gazetteer (:mod:`memlab.integrity.places`) puts in another
  country than home ("a Lisbona", "to Tokyo", "泰国"); or a phrase of going abroad said as done ("when I studied
  abroad", "在国外留学的时候"), which contradicts every "never abroad"; or a country of origin ("my home country,
  Sweden", "il mio paese d'origine, la Romania", "我的老家在越南") outside home, whoever else the sentence is about.

Both sides must be the user's: another person ("my sister lives in Paris") is never read, unless the user is
there too ("I visited my sister in Paris").

Example:
    >>> never_abroad("Non sono mai stata all'estero.", "it")
    ("Non sono mai stata all'estero", frozenset({'IT'}))
    >>> stays_abroad("Il portoghese l'ho imparato a Lisbona, durante l'Erasmus.", "it", frozenset({"IT"}))
    ("Il portoghese l'ho imparato a Lisbona, durante l'Erasmus", 'Lisbona')
"""

from __future__ import annotations

import re

from memlab.integrity.habits import _CJK, _first_person, clauses, other_person, sentence_clauses
from memlab.integrity.places import resolve_place

__all__ = ["ABROAD_WORDS", "STAY_WORDS", "never_abroad", "stays_abroad"]

#: words of a stay, to find the memories a "never abroad" could contradict (``category_forms``: a SQL ``LIKE``)
STAY_WORDS: tuple[str, ...] = ("trip", "vacation", "holiday", "visited", "went to", "studied in", "lived in",
                               "grew up in", "home country", "viaggio", "vacanza", "vacanze", "erasmus", "sono stat",
                               "andat", "vissuto", "visitato", "去过", "旅游", "旅行", "留学", "出差")
#: words of going abroad, to find the "never abroad" memories a stay could contradict
ABROAD_WORDS: tuple[str, ...] = ("abroad", "overseas", "outside the", "estero", "fuori dall", "uscit", "出国",
                                 "出过国", "国外", "境外")
#: the language's own country when a "never abroad" clause names none
HOME_BY_LANG: dict[str, frozenset[str]] = {"it": frozenset({"IT"}), "zh": frozenset({"CN"})}
#: names of a home country that the gazetteer reads otherwise or not at all
_HOME_ALIASES: dict[str, frozenset[str]] = {
    "states": frozenset({"US"}), "the states": frozenset({"US"}), "america": frozenset({"US"}),
    "the us": frozenset({"US"}), "the u.s.": frozenset({"US"}), "u.s.": frozenset({"US"}), "usa": frozenset({"US"}),
    "britain": frozenset({"GB"}), "the uk": frozenset({"GB"}), "stati uniti": frozenset({"US"}),
}

_NEVER = re.compile(r"\b(?:never|mai)\b|从来没有?|从没|从未|没有?(?=[^，。！？,.!?]{0,8}过)", re.I)
#: going abroad; ``c`` is the home country when the phrase names it
_ABROAD = re.compile(
    r"\b(?:abroad|overseas|out of the country|to another country|in another country|in a foreign country|"
    r"all'estero|in un altro paese|"
    r"(?:outside|out of|left|leave|leaving)\s+(?:of\s+)?(?:my\s+|the\s+)?(?P<c>(?:home\s+)?country|states|[A-Z][\w.]+"
    r"(?:\s+[A-Z]\w+)?)|"
    r"(?:fuori|uscit[oaie]|usciti)\s+(?:dall'|dal\s+|dalla\s+|da\s+|dai\s+confini\s+(?:dell'|della\s+|del\s+)?)"
    r"(?P<ci>[A-Z]\w+(?:\s+[A-Z]\w+)?)|(?:lasciato|lasciata)\s+(?:l'|la\s+|il\s+)(?P<cl>[A-Z]\w+))", re.I)
_ABROAD_ZH = re.compile(r"出过?国|出国|国外|境外|海外|离开过(?P<c>[\u4e00-\u9fff]{2,4}?)(?=[，。！？,.!?]|$)|出过(?P<c2>中国)")
#: a "never" about one kind of stay ("never lived abroad") says nothing of a holiday: not read
_SPECIFIC = re.compile(r"\b(?:lived|live|worked|work|studied|study|vissut[oaie]|abitato|lavorato|studiato)\b|住|生活|工作|留学|读书",
                       re.I)
#: Italian first person by its auxiliary ("l'ho imparato", "sono stata"; "sono stati" is the plural "they")
_IT_FIRST = re.compile(r"\b(?:ho|l'ho|abbiamo|l'abbiamo|sono\s+\w+[oa])\b", re.I)
#: softened, dated or conditional absolutes
_SOFT = re.compile(
    r"\b(?:before|until|till|since|prima|fino|finché|except|tranne|almost|quasi|hardly|if|se|yet|ancora|"
    r"for work|per lavoro)\b|以前|之前|以后|除了|几乎|如果", re.I)
#: a wish, a plan or the future: not a stay
_WISH = re.compile(
    r"\b(?:would|wo|'d|want|wanna|wish|hope|hoping|someday|some day|one day|plan|planning|going to|gonna|will|'ll|"
    r"next|dream|dreaming|could|might|maybe|vorrei|voglio|vorremmo|mi piacerebbe|spero|sogno|andrò|andremo|"
    r"prossim[oa]|un giorno|magari|forse|potrei|pensavo di|penso di)\b|想|打算|希望|计划|明年|下个月|下次|将来|以后|要去|准备",
    re.I)
_NEG = re.compile(r"\b(?:not|no|never|n't|non|mai|nessun[oa]?)\b|n't\b|不|没|未|别", re.I)
#: a verb or noun of being somewhere (the user's own stay)
_STAY = re.compile(
    r"\b(?:went|been|was|were|lived|live|living|studied|study|worked|visited|travel(?:l)?ed|flew|moved|spent|"
    r"stayed|grew up|born|raised|trip|vacation|holiday|honeymoon|semester|exchange|erasmus|home country|"
    r"stat[oaie]|andat[oaie]|vissut[oaie]|abitato|studiato|lavorato|visitato|viaggiato|imparato|nat[oaie]|"
    r"cresciut[oaie]|trasferit[oaie]|vacanza|vacanze|viaggio|gita|soggiorno|semestre|scambio|paese d'origine)\b", re.I)
_STAY_ZH = re.compile(r"去过?|到过|留学|旅游|旅行|出差|玩|住过|生活过|工作过|读书|读过|长大|出生|来自|老家")
#: the place after a preposition (it/en): one to three capitalised words
_PLACE_EN_IT = re.compile(
    r"\b(?:in|to|at|from|a|ad|nel|nella|negli|nei|nelle|dal|dalla|da|country,|paese,)\s+"
    r"(?P<p>(?-i:[A-Z][\w'’-]+)(?:\s+(?-i:[A-Z][\w'’-]+)){0,2})", re.I)
#: the user's own country of origin, whoever else the sentence is about: "a gift from my grandma in my home country,
#: Sweden", "il mio paese d'origine, la Romania", "我的老家在越南"
_HOME_COUNTRY = re.compile(
    r"\b(?i:my|our)\s+(?i:home\s+country|homeland|native\s+country|country\s+of\s+origin)\s*,?\s*(?:(?i:is)\s+)?"
    r"(?P<p>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"
    r"|\b(?i:il\s+)?(?i:mio|nostro)\s+(?i:paese\s+d'origine|paese\s+natale)\s*,?\s*(?:(?i:è)\s+)?(?i:l'|la\s+|il\s+)?"
    r"(?P<q>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"
    r"|我的(?:祖国|老家)(?:是|在)?(?P<z>[\u4e00-\u9fff]{2,4}?)(?=[，。！？,.!?的]|$)")
_SELF = re.compile(r"\bI\b|\b(?i:io|we|noi)\b|我")
#: what a "never left" may name that is not a country of its own
_GENERIC_HOME = ("country", "home country")
_ZH_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def _home_of(name: str | None) -> frozenset[str] | None:
    if not name:
        return None
    key = name.casefold().strip(" .")
    if key in _HOME_ALIASES:
        return _HOME_ALIASES[key]
    if key in _GENERIC_HOME:
        return None
    place = resolve_place(name)
    return place.countries if place is not None and place.kind == "country" else None


def never_abroad(text: str, lang: str) -> tuple[str, frozenset[str] | None] | None:
    """(clause, home countries or ``None`` when the clause names none and the language gives none) of the user's
    "never been abroad", or ``None``.

    Example:
        >>> never_abroad("I've never set foot outside the States.", "en")
        ("I've never set foot outside the States", frozenset({'US'}))
    """
    if other_person(text):
        return None
    for clause in clauses(text):
        if not _NEVER.search(clause) or _SOFT.search(clause) or _SPECIFIC.search(clause):
            continue
        zh = _ABROAD_ZH.search(clause)
        if zh is not None:
            if not clause.startswith(("我", "本人")) and "我" not in clause[:zh.start()]:
                continue
            home = _home_of(zh.group("c") or zh.group("c2")) or HOME_BY_LANG["zh"]
            return clause, home
        m = _ABROAD.search(clause)
        if m is None or not _first_person(clause, lang):
            continue
        named = m.group("c") or m.group("ci") or m.group("cl")
        home = _home_of(named)
        if named and home is None and named.casefold() not in _GENERIC_HOME:
            continue  # "never left the house", "outside the office": not a country
        return clause, home or HOME_BY_LANG.get(lang)
    return None


def _places(clause: str) -> list[str]:
    if _CJK.search(clause):
        out = []
        for run in _ZH_RUN.findall(clause):
            i = 0
            while i < len(run) - 1:  # longest known name first at each position
                for n in range(min(5, len(run) - i), 1, -1):
                    piece = run[i:i + n]
                    if resolve_place(piece) is not None:
                        out.append(piece)
                        i += n - 1
                        break
                i += 1
        return out
    return [m.group("p") for m in _PLACE_EN_IT.finditer(clause)]


def stays_abroad(text: str, lang: str, home: frozenset[str] | None) -> tuple[str, str] | None:
    """(clause, place or the phrase of going abroad) of the user's stay outside ``home`` (any stay said to be
    abroad when ``home`` is ``None``), or ``None``."""
    if home is not None:
        for m in _HOME_COUNTRY.finditer(text):
            name = m.group("p") or m.group("q") or m.group("z")
            place = resolve_place(name)
            if place is not None and place.countries and not place.countries & home:
                return m.group(0), name
    for clause in sentence_clauses(text):
        if _NEG.search(clause) or _WISH.search(clause):
            continue
        if other_person(clause) and not _SELF.search(clause):
            continue  # "Mia sorella vive a Parigi"; "I visited my sister in Paris" is the user's stay
        zh = bool(_CJK.search(clause))
        if zh:
            if "我" not in clause and not clause.startswith(("去年", "今年", "前年", "小时候")):
                continue
            if not _STAY_ZH.search(clause):
                continue
            m = _ABROAD_ZH.search(clause)
            if m is not None and not (m.group("c") or m.group("c2")):
                return clause, m.group(0)
        else:
            if not _STAY.search(clause) or not (_first_person(clause, lang) or _IT_FIRST.search(clause)):
                continue
            m = _ABROAD.search(clause)
            if m is not None and not (m.group("c") or m.group("ci") or m.group("cl")):
                return clause, m.group(0)
        if home is None:
            continue
        for name in _places(clause):
            place = resolve_place(name)
            if place is not None and place.countries and not place.countries & home:
                return clause, name
    return None
