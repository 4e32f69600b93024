"""Pattern rules for contradictions that are not "same attribute, different value".

Each rule reads a :class:`Facts` summary of one memory text (built once per memory and cached by the
checker) and compares two summaries. Italian, English and (where sensible) Chinese surface forms.

Rules (each returns a :class:`PatternHit` or ``None``):

* ``born_vs_birthday``: a birth date and a birthday (same person) on different day-months.
* ``age_vs_birth_year``: a stated age that does not fit a stated birth year (at the memories' record time).
* ``exclusive_preference``: "preferisco il tè" vs "preferisco il caffè"; "my favourite colour is red" vs "... blue".
* ``like_vs_dislike``: "I love dogs" vs "I hate dogs" (same object, opposite polarity).
* ``diet``: vegetarian / vegan vs eating meat.
* ``marital``: single vs married / divorced / engaged ("my wife" implies married).
* ``project_status``: the same project not started yet / started (in progress) / completed, in it/en/zh
  (:func:`project_statuses`).
* ``occupation``: "I'm a nurse" vs "I'm a teacher" (first person, closed job vocabulary).
* ``gender`` and ``zodiac``: profile attributes with closed vocabularies (KvPI-style profiles).
* ``negation``: the same first-person statement with and without a negation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

from memlab.entities import STABLE_ATTRIBUTES, Entity, EntityKind
from memlab.records import ConflictType
from memlab.text import ABSOLUTE_OR_FIRST, is_question, split_clauses, split_sentences, statements

__all__ = [
    "CLOSE_DATE_PAIRS",
    "RULES",
    "absolute_stems",
    "content_stems",
    "Facts",
    "PatternHit",
    "asserts_nothing",
    "close_date_entities",
    "close_dates",
    "compare_facts",
    "consistent_reason",
    "project_statuses",
    "summarise",
]


@dataclass(frozen=True, slots=True)
class PatternHit:
    """One rule that fired on a pair.

    Attributes:
        rule: rule name (``born_vs_birthday`` ...).
        type: conflict type.
        confidence: rule confidence in [0, 1].
        old: the older memory's value: the phrase as written, or the :class:`~memlab.entities.Entity`.
        new: the newer memory's value, same form.
        update: the conflict may be a legitimate change over time (status, marital status, diet ...).
    """

    rule: str
    type: ConflictType
    confidence: float
    old: str | Entity
    new: str | Entity
    update: bool = False


@dataclass(frozen=True, slots=True)
class Facts:
    """What the pattern rules need to know about one memory text."""

    text: str
    entities: tuple[Entity, ...]
    created_at: datetime | None
    prefs: tuple[tuple[str, str, str], ...] = ()  # (category, object, raw) for "prefer"/"favourite"
    likes: tuple[tuple[str, int, str], ...] = ()  # (object, +1/-1, raw)
    diet: tuple[str, str] | None = None  # ("veg" | "meat", raw)
    marital: tuple[str, str] | None = None
    status: tuple[tuple[str, str, str], ...] = ()  # (project, "started"|"completed"|"not_started", raw)
    occupation: tuple[str, str] | None = None
    gender: tuple[str, str] | None = None
    zodiac: tuple[str, str] | None = None
    negated_core: tuple[frozenset[str], bool] | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _norm(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).casefold().replace("’", "'")
    return re.sub(r"\s+", " ", s).strip()


_ART = r"(?:(?:anche|also|too|pure)\s+)?(?:(?:(?:il|lo|la|i|gli|le|un|uno|una|the|a|an|some|del|della|dei|delle)\s+|l'|un')\s*)?"
_OBJ = r"(?P<obj>[\w'àèéìòù-]+(?:\s+(?!and\b|e\b|or\b|o\b|but\b|ma\b|with\b|con\b|too\b|anche\b|more\b|than\b|di\b|rather\b)[\w'àèéìòù-]+){0,2})"

# ------------------------------------------------------------------ preferences
_DRINKS = {"tè": "tea", "te": "tea", "the": "tea", "tea": "tea", "caffè": "coffee", "caffe": "coffee",
           "coffee": "coffee", "茶": "tea", "咖啡": "coffee", "cioccolata": "chocolate", "hot chocolate": "chocolate",
           "succo": "juice", "juice": "juice", "vino": "wine", "wine": "wine", "birra": "beer", "beer": "beer"}
#: one name per category of a favourite, across spellings and languages ("colour" / "color" / "colore" / "颜色")
_SAME_CATEGORY = {"colour": "color", "colore": "color", "颜色": "color", "colors": "color", "colours": "color",
                  "stagione": "season", "季节": "season", "四季": "season", "film": "movie", "films": "movie", "movies": "movie",
                  "电影": "movie", "cibo": "food", "piatto": "dish", "libro": "book", "书": "book", "canzone": "song",
                  "歌": "song", "città": "city", "城市": "city", "squadra": "team", "球队": "team", "animale": "animal",
                  "动物": "animal", "frutto": "fruit", "frutta": "fruit", "水果": "fruit", "numero": "number",
                  "数字": "number", "fiore": "flower", "花": "flower", "tv show": "show", "tv series": "show",
                  "series": "show", "serie": "show", "serie tv": "show", "telefilm": "show", "电视剧": "show", "剧": "show",
                  "美剧": "show"}
_PREF_RE = [
    # a favourite of a role: "my favourite sport to play is ...", "il piatto che preferisco cucinare è ..." (the role
    # joins the category: a favourite to play and one to watch are two favourites)
    re.compile(rf"\b(?:my\s+)?favou?rite\s+(?P<cat>[\w-]+)\s+to\s+(?P<role>\w+)\s+(?:is|are)\s+{_ART}{_OBJ}", re.I),
    re.compile(rf"\b(?:il|la|lo|l')\s*(?P<cat>[\w-]+)\s+che\s+preferisco\s+(?P<role>\w+)\s+(?:è|sono)\s+{_ART}{_OBJ}",
               re.I),
    re.compile(rf"\b(?:preferisc[oe]|preferiamo|i prefer|i'd prefer|prefers|user prefers)\s+(?!\w+\s+(?:è|sono)\b){_ART}{_OBJ}",
               re.I),
    re.compile(rf"\b(?:my|il mio|la mia|i miei|le mie)\s+(?P<cat>serie\s+tv|[\w-]+)\s+(?:preferit[oaie]|favou?rite)\s+"
               rf"(?:è|sono|is|are)\s+{_ART}{_OBJ}", re.I),
    re.compile(rf"\b(?:my\s+)?favou?rite\s+(?P<cat>(?:tv\s+)?[\w-]+)\s+(?:is|are)\s+{_ART}{_OBJ}", re.I),
    re.compile(rf"\b(?:il mio|la mia)\s+(?P<cat>serie\s+tv|[\w-]+)\s+(?:preferit[oa])\s+(?!è\b|sono\b){_ART}{_OBJ}", re.I),
    # "我最喜欢(吃)的水果是荔枝", "水果里我最爱的是榴莲", "一年四季里我最爱春天", "我最喜欢秋天"
    # a title in book-title marks is one object: "我最爱的剧是《琅琊榜》"
    re.compile(r"最(?:喜欢|爱)[吃喝看听玩穿读用]?的(?P<cat>[\u4e00-\u9fff]{1,3}?)(?:就是|是)"
               r"(?P<obj>《[^》]{1,15}》|[\u4e00-\u9fff]{1,4})"),
    re.compile(r"(?:一年)?(?P<cat>[\u4e00-\u9fff]{1,2})(?:里面|当中|里|中)[，,]?我?最(?:喜欢|爱)的?(?:就是|是)?"
               r"(?P<obj>[\u4e00-\u9fff]{1,4})"),
    re.compile(r"最(?:喜欢|爱)(?![吃喝看听玩穿读用]?的)(?P<obj>[\u4e00-\u9fff]{1,4})"),
]

# ------------------------------------------------------------------ likes / dislikes
_NEG_LIKE = re.compile(
    rf"\b(?:i\s+(?:really\s+)?(?:hate|dislike|detest|can't stand|cannot stand|don't like|do not like|don't love|"
    rf"don't enjoy|do not enjoy|am not a fan of|'m not a fan of|am allergic to|'m allergic to)|"
    rf"non mi piac(?:e|ciono)|odio|detesto|non sopporto|sono allergic[oa] (?:a|al|alla|ai|alle|agli))\s+{_ART}{_OBJ}"
    r"|(?:我不喜欢|我讨厌|我不爱)(?P<zobj>[\u4e00-\u9fff]{1,4})",
    re.I,
)
_POS_LIKE = re.compile(
    rf"\b(?:i\s+(?:really\s+|also\s+|just\s+)?(?:love|like|enjoy|adore)|i'm a (?:big )?fan of|i am a (?:big )?fan of|"
    rf"(?<!non )mi piac(?:e|ciono)|(?<!non )adoro|(?<!non )amo)\s+{_ART}{_OBJ}"
    r"|(?<!不)(?:我(?:也|还|同样)?喜欢|我(?:也|还)?爱)(?P<zobj>[\u4e00-\u9fff]{1,4})",
    re.I,
)
_LIKE_STOP = {"to", "it", "that", "this", "them", "you", "your", "when", "how", "what", "being", "doing", "going",
              "very", "much", "so", "lot", "too", "quando", "che", "molto", "tanto", "questo", "quello", "fare",
              "a", "the", "all", "most", "more", "one", "ones", "him", "her", "my", "la", "il"}

# ------------------------------------------------------------------ diet
_VEG = re.compile(r"\b(?:i'm|i am|im|sono|user is|l'utente è)\s+(?:a\s+|un[oa]?\s+|strict\s+)?(?:vegetarian[oa]?|vegan[oa]?|vegetariano|vegetariana)\b"
                  r"|\b(?:i don't|i do not|i never|non)\s+(?:eat|mangio)\s+(?:any\s+)?(?:meat|carne)\b|我吃素|我是素食|我(?:从来)?不吃(?:任何)?肉", re.I)
_MEAT = re.compile(r"\b(?:i|io)?\s*(?:eat|ate|love eating|mangio|ho mangiato|adoro|love|i had)\s+(?:a\s+|una?\s+|la\s+|il\s+|some\s+)?"
                   r"(?:meat|carne|steak|steaks|bistecca|bistecche|bacon|beef|pork|maiale|salsicce|sausages?|hamburger|burgers?|"
                   r"pollo|chicken|prosciutto|ham|lamb|agnello)\b|我(?:爱|喜欢)?吃肉", re.I)

# ------------------------------------------------------------------ marital status
_MARITAL = [
    ("single", re.compile(r"\b(?:i'm|i am|im|sono)\s+(?:still\s+|ancora\s+)?(?:single|nubile|celibe|not married|non sposat[oa])\b"
                          r"|\b(?:non sono sposat[oa]|i'm not married|i am not married|never married|mai sposat[oa]|"
                          r"never had a (?:partner|boyfriend|girlfriend|husband|wife)|never been in a relationship|"
                          r"mai avuto (?:un[oa]? )?(?:partner|fidanzat[oa]|ragazz[oa]|compagn[oa]))\b"
                          r"|我单身|我是单身|从来?没谈过恋爱|从来没有?过(?:男朋友|女朋友|对象)", re.I)),
    ("married", re.compile(r"\b(?:i'm|i am|im|sono)\s+(?:happily\s+|felicemente\s+)?(?:married|sposat[oa])\b"
                           r"|\b(?:my wife|my husband|mia moglie|mio marito|i got married|mi sono sposat[oa])\b|我结婚了|我老婆|我老公", re.I)),
    ("divorced", re.compile(r"\b(?:i'm|i am|im|sono)\s+(?:divorced|divorziat[oa]|separat[oa]|separated)\b|我离婚了", re.I)),
    ("widowed", re.compile(r"\b(?:i'm|i am|im|sono)\s+(?:a\s+)?(?:widow|widower|widowed|vedov[oa])\b", re.I)),
]

# ------------------------------------------------------------------ project status
_PROJECT = r"(?:(?:il\s+)?progetto|(?:the\s+)?project)\s+(?P<proj>[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]*)?)"
_STATUS: list[tuple[str, re.Pattern[str]]] = [
    ("started", re.compile(rf"\b(?:ho|abbiamo)\s+(?:appena\s+)?(?:iniziato|avviato|cominciato|aperto)\s+{_PROJECT}", re.I)),
    ("started", re.compile(rf"\b(?:i|we)\s+(?:just\s+|have\s+|'ve\s+)?(?:started|began|begun|kicked off|launched)\s+"
                           rf"(?:working on\s+)?{_PROJECT}", re.I)),
    ("started", re.compile(rf"{_PROJECT}\s+(?:è\s+|is\s+|has\s+)?(?:appena\s+|just\s+)?(?:iniziato|avviato|partito|in corso|"
                           r"started|in progress|ongoing|underway|still open|ancora aperto)", re.I)),
    ("completed", re.compile(rf"\b(?:ho|abbiamo)\s+(?:appena\s+)?(?:completato|finito|concluso|terminato|chiuso|consegnato)\s+"
                             rf"{_PROJECT}", re.I)),
    ("completed", re.compile(rf"\b(?:i|we)\s+(?:just\s+|have\s+|'ve\s+)?(?:completed|finished|wrapped up|delivered|closed)\s+"
                             rf"{_PROJECT}", re.I)),
    ("completed", re.compile(rf"{_PROJECT}\s+(?:è\s+|is\s+|was\s+|has been\s+)?(?:stato\s+)?(?:completato|finito|concluso|"
                             r"terminato|chiuso|completed|finished|done|closed)", re.I)),
    # not started yet: "il progetto X non è ancora iniziato", "non ho ancora iniziato il progetto X", "project X hasn't
    # started yet", "we haven't started project X"; a negated "started" form is never read as started (see
    # project_statuses)
    ("not_started", re.compile(rf"{_PROJECT}\s+non\s+(?:è|e'|é)\s+(?:ancora\s+)?(?:stato\s+)?(?:iniziato|avviato|partito|"
                               r"cominciato|aperto)", re.I)),
    ("not_started", re.compile(rf"{_PROJECT}\s+(?:deve|devono)\s+ancora\s+(?:iniziare|partire|cominciare)", re.I)),
    ("not_started", re.compile(rf"\bnon\s+(?:ho|abbiamo)\s+(?:ancora\s+)?(?:iniziato|avviato|cominciato|aperto)\s+{_PROJECT}", re.I)),
    ("not_started", re.compile(rf"{_PROJECT}\s+(?:has\s+not|hasn't|has\s+never|is\s+not|isn't|did\s+not|didn't)\s+(?:yet\s+)?"
                               r"(?:been\s+)?(?:started|begun|begin|start|kicked off|launched)", re.I)),
    ("not_started", re.compile(rf"{_PROJECT}\s+(?:is\s+)?(?:not\s+(?:yet\s+)?started|yet\s+to\s+(?:start|begin))", re.I)),
    ("not_started", re.compile(rf"\b(?:i|we)\s+(?:have\s+not|haven't|did\s+not|didn't)\s+(?:yet\s+)?(?:started|begun|start|"
                               rf"begin)\s+(?:working on\s+)?{_PROJECT}", re.I)),
]
#: Chinese project statuses: a Latin project name next to 项目 ("Atlas项目", "项目Atlas"); ``None`` -> group ``proj``.
_ZH_PROJECT = r"(?:(?P<proj>[A-Za-z][A-Za-z0-9_-]*)\s*项目|项目\s*(?P<proj2>[A-Za-z][A-Za-z0-9_-]*))"
_STATUS_ZH: list[tuple[str, re.Pattern[str]]] = [
    ("not_started", re.compile(rf"{_ZH_PROJECT}\s*(?:还没(?:有)?|尚未|还未|仍未)(?:开始|启动|开工)")),
    ("not_started", re.compile(rf"(?:我|我们)(?:还没(?:有)?|尚未|还未)(?:开始|启动)(?:做)?\s*{_ZH_PROJECT}")),
    ("completed", re.compile(rf"{_ZH_PROJECT}\s*(?:已经|已|终于)?(?:完成|结束|完工|交付|做完)了?")),
    ("completed", re.compile(rf"(?:我|我们)(?:已经|终于)?(?:完成|做完|交付)了\s*{_ZH_PROJECT}")),
    ("started", re.compile(rf"{_ZH_PROJECT}\s*(?:已经|已)?(?:开始|启动|开工)了?|{_ZH_PROJECT.replace('proj', 'q')}\s*"
                           r"(?:正在进行|进行中|在进行)")),
    ("started", re.compile(rf"(?:我|我们)(?:已经)?(?:开始|启动)了\s*{_ZH_PROJECT}")),
]
_NEGATED_BEFORE = re.compile(r"(?:\bnon|\bnot|n't|\bnever|\bmai)\s+(?:\w+\s+)?$", re.I)

# ------------------------------------------------------------------ occupation
_JOBS = ("nurse|teacher|doctor|lawyer|engineer|programmer|developer|student|accountant|chef|cook|waiter|waitress|"
         "firefighter|police officer|policeman|cop|farmer|pilot|dentist|pharmacist|architect|musician|singer|artist|"
         "writer|journalist|photographer|mechanic|electrician|plumber|carpenter|cashier|librarian|scientist|"
         "professor|banker|salesman|truck driver|driver|soldier|veterinarian|vet|designer|actor|actress|athlete|"
         "retired|unemployed|housewife|stay at home mom|baker|barber|hairdresser|secretary|manager|"
         "infermier[ea]|insegnante|medico|dottore|dottoressa|avvocat[oa]|ingegnere|programmatore|programmatrice|"
         "sviluppatore|studente|studentessa|commercialista|cuoc[oa]|camerier[ea]|pompiere|poliziotto|poliziotta|"
         "contadin[oa]|pilota|dentista|farmacista|architetto|musicista|cantante|artista|scrittore|scrittrice|"
         "giornalista|fotografo|fotografa|meccanico|elettricista|idraulico|falegname|cassier[ea]|bibliotecari[oa]|"
         "scienziat[oa]|professore|professoressa|bancari[oa]|pensionat[oa]|disoccupat[oa]|casalinga|panettiere|"
         "parrucchier[ea]|segretari[oa]|medica|veterinari[oa]|attore|attrice|atleta|"
         "医生|护士|老师|教师|律师|工程师|程序员|学生|厨师|警察|农民|司机|会计")
_OCC = re.compile(
    rf"\b(?:i'm|i am|im|i work as|i worked as|sono|lavoro come|faccio (?:il|la|lo|l'))\s+(?:a\s+|an\s+|un\s+|una\s+|uno\s+|un'\s*)?"
    rf"(?:(?:\w+\s+)?)(?P<job>{_JOBS})\b|我是(?:一名|一个|个)?(?P<zjob>{_JOBS})",
    re.I,
)
_OCC_SOFT = re.compile(r"\b(?:also|anche|part[- ]time|former|ex|used to|was|ero|una volta|retired from)\b", re.I)

# ------------------------------------------------------------------ gender / zodiac (profile attributes)
#: where a sentence starts: "As a woman, I ..." / "Da uomo ti dico ..." (not "a job for a man", "scarpe da donna",
#: "Mom, as a mother, said")
_CLAUSE_START = r"(?:^|[.!?;:]\s*|\b(?:and|but|e|ma)\s+)"
_GENDER = [
    ("female", re.compile(r"\b(?:i'm|i am|im)\s+(?:a\s+)?(?:woman|girl|female|lady|mom|mother)\b|\bsono\s+(?:una\s+)?(?:donna|ragazza|femmina|mamma)\b"
                          rf"|{_CLAUSE_START}(?:as a (?:woman|girl|mom|mother)|(?:da|in quanto) (?:donna|mamma|madre))\b"
                          r"|性别[:：]?\s*女|我是(?:个|一个)?(?:女生|女孩|女的|女人|妹子|姑娘|女孩子|宝妈)|本姑娘|老娘"
                          r"|(?:作为|身为)(?:一个|一名|一位)?(?:女生|女孩子?|女人|女性|妈妈|母亲)", re.I)),
    ("male", re.compile(r"\b(?:i'm|i am|im)\s+(?:a\s+)?(?:man|guy|boy|male|dad|father)\b|\bsono\s+(?:un\s+)?(?:uomo|ragazzo|maschio|papà)\b"
                        rf"|{_CLAUSE_START}(?:as a (?:man|guy|dad|father)|(?:da|in quanto) (?:uomo|papà|padre))\b"
                        r"|性别[:：]?\s*男|我是(?:个|一个)?(?:大老|纯)?(?:男生|男孩|男的|男人|汉子|爷们|男孩子)|老子|哥们我"
                        r"|(?:作为|身为)(?:一个|一名|一位)?(?:男生|男孩子?|男人|男性|爸爸|父亲|大老爷们|爷们)", re.I)),
]
_ZODIAC = ("白羊|金牛|双子|巨蟹|狮子|处女|天秤|天蝎|射手|摩羯|水瓶|双鱼")
_ZODIAC_RE = re.compile(rf"(?:星座[:：]?\s*|我是|我也是|本人)(?P<z>{_ZODIAC})座?"
                        r"|\b(?:i'm an?|i am an?|sono (?:un|una|dell'|del))\s+(?P<w>aries|taurus|gemini|cancer|leo|virgo|libra|"
                        r"scorpio|sagittarius|capricorn|aquarius|pisces|ariete|toro|gemelli|cancro|leone|vergine|bilancia|"
                        r"scorpione|sagittario|capricorno|acquario|pesci)\b", re.I)
_ZODIAC_EN = {"aries": "白羊", "ariete": "白羊", "taurus": "金牛", "toro": "金牛", "gemini": "双子", "gemelli": "双子",
              "cancer": "巨蟹", "cancro": "巨蟹", "leo": "狮子", "leone": "狮子", "virgo": "处女", "vergine": "处女",
              "libra": "天秤", "bilancia": "天秤", "scorpio": "天蝎", "scorpione": "天蝎", "sagittarius": "射手",
              "sagittario": "射手", "capricorn": "摩羯", "capricorno": "摩羯", "aquarius": "水瓶", "acquario": "水瓶",
              "pisces": "双鱼", "pesci": "双鱼"}

# ------------------------------------------------------------------ negation
_NEG_TOK = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|can't|cannot|won't|non|mai|nessun[oa]?)\b|n't\b|不|没", re.I)
_FIRST = re.compile(r"^\s*(?:i|i'm|i am|my|io|sono|non sono|ho|non ho|mi|il mio|la mia)\b", re.I)
_TOKEN = re.compile(r"[\w']+")
_FILLER = {"a", "an", "the", "really", "very", "actually", "just", "also", "too", "so", "il", "lo", "la", "un", "una",
           "do", "does", "did", "davvero", "proprio", "anche", "molto", "yes", "yeah", "sì", "si", "well", "oh", "lol"}


def _obj(raw: str) -> str:
    words = [w for w in _norm(raw).split() if w not in _LIKE_STOP]
    if not words:
        return ""
    w = words[0] if len(words) == 1 else " ".join(words[:2])
    return re.sub(r"(?<=[a-z]{3})s$", "", w)  # plural -> singular (English)


def project_statuses(text: str) -> tuple[tuple[str, str, str], ...]:
    """The project statuses a text states: ``(project, status, phrase)`` with status ``started`` (started, in
    progress), ``completed`` or ``not_started``; Italian, English and Chinese (a Latin project name next to 项目).

    A negated form is not read as its positive ("non ho iniziato il progetto X" is not ``started``); where a
    ``not_started`` phrase overlaps another status phrase, ``not_started`` wins.

    Example:
        >>> [s[:2] for s in project_statuses("Il progetto Atlas non è ancora iniziato")]
        [('atlas', 'not_started')]
        >>> [s[:2] for s in project_statuses("Atlas项目已经完成了")]
        [('atlas', 'completed')]
    """
    found: list[tuple[int, int, str, str, str]] = []
    for name, rx in _STATUS:
        for m in rx.finditer(text):
            if name != "not_started" and _NEGATED_BEFORE.search(text[max(0, m.start() - 24):m.start()]):
                continue
            found.append((m.start(), m.end(), _norm(m.group("proj")), name, m.group(0)))
    for name, rx in _STATUS_ZH:
        for m in rx.finditer(text):
            proj = next((g for g in m.groups() if g), None)
            if proj:
                found.append((m.start(), m.end(), _norm(proj), name, m.group(0)))
    nots = [(s, e) for s, e, _, n, _ in found if n == "not_started"]
    out: list[tuple[str, str, str]] = []
    for s, e, proj, name, raw in found:
        if name != "not_started" and any(a < e and s < b for a, b in nots):
            continue
        if (proj, name, raw) not in out:
            out.append((proj, name, raw))
    return tuple(out)


def summarise(text: str, entities: tuple[Entity, ...], created_at: datetime | None) -> Facts:
    """Build the pattern summary of one memory text.

    Args:
        text: the memory text.
        entities: its entities (``memlab.entities.extract_entities``).
        created_at: its record time (ages are compared at it).

    Returns:
        A :class:`Facts`.
    """
    prefs: list[tuple[str, str, str]] = []
    for rx in _PREF_RE:
        for m in rx.finditer(text):
            obj = _obj(m.group("obj"))
            if not obj:
                continue
            cat = (m.groupdict().get("cat") or "").casefold()
            cat = _SAME_CATEGORY.get(cat, cat)
            if m.groupdict().get("role"):
                cat = f"{cat}:{m.group('role').casefold()}"
            drink = _DRINKS.get(obj) or _DRINKS.get(obj.split()[0])
            if drink:
                cat, obj = "drink", drink
            prefs.append((cat or "*", obj, m.group(0)))
    likes: list[tuple[str, int, str]] = []
    for rx, pol in ((_NEG_LIKE, -1), (_POS_LIKE, 1)):
        for m in rx.finditer(text):
            raw = m.group("obj") if m.groupdict().get("obj") else m.group("zobj")
            if not raw:
                continue
            obj = _obj(raw)
            if obj and not any(o == obj for o, _, _ in likes):
                likes.append((_DRINKS.get(obj, obj), pol, m.group(0)))
    diet = None
    if (m := _VEG.search(text)) is not None:
        diet = ("veg", m.group(0))
    elif (m := _MEAT.search(text)) is not None:
        diet = ("meat", m.group(0))
    marital = None
    for name, rx in _MARITAL:
        if (m := rx.search(text)) is not None:
            marital = (name, m.group(0))
            break
    status = list(project_statuses(text))
    occupation = None
    if (m := _OCC.search(text)) is not None and not _OCC_SOFT.search(text[max(0, m.start() - 30):m.end()]):
        job = (m.group("job") or m.group("zjob") or "").casefold()
        occupation = (job, m.group(0))
    gender = None
    for name, rx in _GENDER:
        if (m := rx.search(text)) is not None:
            gender = (name, m.group(0))
            break
    zodiac = None
    if (m := _ZODIAC_RE.search(text)) is not None:
        z = m.group("z") or _ZODIAC_EN.get((m.group("w") or "").casefold(), "")
        if z:
            zodiac = (z, m.group(0))
    negated_core = None
    sents = split_clauses(text)
    if len(sents) == 1 and _FIRST.search(sents[0]):
        s = sents[0]
        neg = bool(_NEG_TOK.search(s))
        core = frozenset(w for w in _TOKEN.findall(_NEG_TOK.sub(" ", _norm(s))) if w not in _FILLER)
        if len(core) >= 2:
            negated_core = (core, neg)
    return Facts(text=text, entities=entities, created_at=created_at, prefs=tuple(prefs), likes=tuple(likes),
                 diet=diet, marital=marital, status=tuple(status), occupation=occupation, gender=gender,
                 zodiac=zodiac, negated_core=negated_core)


# ------------------------------------------------------------------ rules
def _born_vs_birthday(old: Facts, new: Facts) -> PatternHit | None:
    for a, b in ((old, new), (new, old)):
        for x in a.entities:
            if x.kind is not EntityKind.DATE or x.attribute != "born" or x.day_month is None:
                continue
            for y in b.entities:
                if y.attribute == "birthday" and y.subject == x.subject and y.day_month is not None \
                        and y.day_month != x.day_month:
                    o, n = (x, y) if a is old else (y, x)
                    return PatternHit("born_vs_birthday", ConflictType.DATE, 0.92, o, n)
    return None


def _age_vs_birth_year(old: Facts, new: Facts) -> PatternHit | None:
    for a, b in ((old, new), (new, old)):
        for x in a.entities:
            if x.attribute != "born" or x.year is None:
                continue
            for y in b.entities:
                if y.attribute != "age" or y.subject != x.subject:
                    continue
                when = b.created_at or a.created_at
                if when is None:
                    continue
                expected = when.year - x.year
                if abs(float(y.value) - expected) > 1.01:
                    o, n = (x, y) if a is old else (y, x)
                    return PatternHit("age_vs_birth_year", ConflictType.NUMBER, 0.85, o, n)
    return None


def _exclusive_preference(old: Facts, new: Facts) -> PatternHit | None:
    for ca, oa, ra in old.prefs:
        for cb, ob, rb in new.prefs:
            same_cat = ca == cb and ca != "*"
            if (same_cat or (ca == "*" and cb == "*" and ca == cb and (oa in _DRINKS.values() and ob in _DRINKS.values()))) \
                    and oa != ob:
                return PatternHit("exclusive_preference", ConflictType.PREFERENCE, 0.88, ra, rb, update=True)
    return None


def _like_vs_dislike(old: Facts, new: Facts) -> PatternHit | None:
    for oa, pa, ra in old.likes:
        for ob, pb, rb in new.likes:
            if pa != pb and (oa == ob or oa.split()[0] == ob.split()[0]):
                return PatternHit("like_vs_dislike", ConflictType.PREFERENCE, 0.87, ra, rb, update=True)
    return None


def _diet(old: Facts, new: Facts) -> PatternHit | None:
    if old.diet and new.diet and old.diet[0] != new.diet[0]:
        return PatternHit("diet", ConflictType.PREFERENCE, 0.88, old.diet[1], new.diet[1], update=True)
    return None


def _marital(old: Facts, new: Facts) -> PatternHit | None:
    if old.marital and new.marital and old.marital[0] != new.marital[0]:
        return PatternHit("marital", ConflictType.STATUS, 0.88, old.marital[1], new.marital[1], update=True)
    return None


def _project_status(old: Facts, new: Facts) -> PatternHit | None:
    for pa, sa, ra in old.status:
        for pb, sb, rb in new.status:
            if pa == pb and sa != sb:
                return PatternHit("project_status", ConflictType.STATUS, 0.9, ra, rb, update=True)
    return None


def _occupation(old: Facts, new: Facts) -> PatternHit | None:
    if old.occupation and new.occupation and old.occupation[0] != new.occupation[0]:
        jobs = {old.occupation[0], new.occupation[0]}
        if jobs & {"student", "studente", "studentessa", "学生"} and len(jobs) == 2:
            return None  # a student can also hold a job
        return PatternHit("occupation", ConflictType.OTHER, 0.85, old.occupation[1], new.occupation[1], update=True)
    return None


def _gender(old: Facts, new: Facts) -> PatternHit | None:
    if old.gender and new.gender and old.gender[0] != new.gender[0]:
        return PatternHit("gender", ConflictType.OTHER, 0.9, old.gender[1], new.gender[1])
    return None


def _zodiac(old: Facts, new: Facts) -> PatternHit | None:
    if old.zodiac and new.zodiac and old.zodiac[0] != new.zodiac[0]:
        return PatternHit("zodiac", ConflictType.OTHER, 0.9, old.zodiac[1], new.zodiac[1])
    return None


def _negation(old: Facts, new: Facts) -> PatternHit | None:
    if old.negated_core is None or new.negated_core is None:
        return None
    (ca, na), (cb, nb) = old.negated_core, new.negated_core
    if na == nb:
        return None
    inter, union = len(ca & cb), len(ca | cb)
    if union and inter / union >= 0.8 and min(len(ca), len(cb)) >= 2:
        return PatternHit("negation", ConflictType.OTHER, 0.85, old.text, new.text)
    return None


#: The rules, in order; the first that fires decides the pair.
RULES = (
    ("born_vs_birthday", _born_vs_birthday),
    ("age_vs_birth_year", _age_vs_birth_year),
    ("project_status", _project_status),
    ("marital", _marital),
    ("diet", _diet),
    ("exclusive_preference", _exclusive_preference),
    ("like_vs_dislike", _like_vs_dislike),
    ("gender", _gender),
    ("zodiac", _zodiac),
    ("occupation", _occupation),
    ("negation", _negation),
)


def compare_facts(old: Facts, new: Facts, *, rules: tuple[str, ...] | None = None) -> PatternHit | None:
    """Apply the pattern rules to a pair; the first hit wins.

    Args:
        old: summary of the earlier memory.
        new: summary of the checked memory.
        rules: names of the rules to use (default: all of :data:`RULES`).

    Returns:
        The first :class:`PatternHit`, or ``None`` when no rule fires.
    """
    for name, fn in RULES:
        if rules is not None and name not in rules:
            continue
        hit = fn(old, new)
        if hit is not None:
            return hit
    return None


# ------------------------------------------------------------------ "consistent" decisions
_SHORT_WORDS = 14
_EVENT_ATTRS = {"distance", "money", "date"}


def _words(text: str) -> int:
    return len(_TOKEN.findall(text)) + len(re.findall(r"[\u4e00-\u9fff]", text)) // 2




def asserts_nothing(text: str) -> bool:
    """True when every sentence of ``text`` is a question ("Do you like your job?", "Ti piace il tè?",
    "你喜欢茶吗？"): a question states no fact, so it can neither contradict nor be contradicted. The statements said
    with a question are facts (:func:`memlab.text.statements`: "Ciao, sono Beatrice, mi aggiungi il latte?").

    Example:
        >>> asserts_nothing("Do you have any pets? What kind?"), asserts_nothing("I have a dog. Do you?")
        (True, False)
        >>> asserts_nothing("I'm vegetarian, what should I cook tonight?")
        False
    """
    parts = [p for t in split_sentences(text) if any(ch.isalnum() for ch in t) for p in statements(t)]
    return bool(parts) and all(is_question(t) for t in parts)


def _neg_parity(text: str) -> bool:
    return len(_NEG_TOK.findall(text)) % 2 == 1


def consistent_reason(old: Facts, new: Facts) -> str | None:
    """Why a pair of SHORT memories is known not to conflict (the judge is then not asked), or ``None``.

    Only short statements (at most 14 words each) are decided this way, where the structured facts found
    explain the whole statement; long texts always go on to the judge. Reasons:

    * ``same_value``: they share an attribute of the same subject with the same value (a paraphrase);
    * ``other_subject``: the same attribute, but about different people ("my sister lives in Rome" / "I live in
      Milan");
    * ``different_dates``: two dates of different kinds (birthday vs anniversary);
    * ``different_events``: event-scoped quantities (distances, amounts) of different events;
    * ``different_projects``: status statements about two different projects;
    * ``same_status``: the same projects with the same statuses ("started" / "in progress");
    * ``different_likes``: liking two different things ("likes tea" / "likes biscuits");
    * ``different_favourites``: favourites of different categories or roles ("my favourite sport to play" / "...
      to watch", "最喜欢的茶" / "最喜欢的咖啡");
    * ``same_diet``: two ways of saying "no meat" ("I'm vegetarian" / "I don't eat meat", "我吃素" / "我不吃肉");
    * ``different_attributes``: places of different kinds (born in / lives in / works at: "我出生在哈尔滨" /
      "我现在住在厦门").
    """
    if _words(old.text) > _SHORT_WORDS or _words(new.text) > _SHORT_WORDS:
        return None
    if old.diet and new.diet and old.diet[0] == new.diet[0] == "veg":
        return "same_diet"  # "I'm vegetarian" / "I don't eat meat": the negation is the diet's own
    if _neg_parity(old.text) != _neg_parity(new.text):
        return None
    ea = [e for e in old.entities if e.attribute]
    eb = [e for e in new.entities if e.attribute]
    if ea and eb:
        same_attr = [(x, y) for x in ea for y in eb if x.attribute == y.attribute and x.kind is y.kind]
        if same_attr:
            if all(x.subject == y.subject and x.same_value(y) for x, y in same_attr):
                return "same_value"
            if all(x.subject != y.subject for x, y in same_attr):
                return "other_subject"
            if all(x.attribute in _EVENT_ATTRS for x, y in same_attr):
                return "different_events"
        else:
            places = {"from_place", "lives_in", "works_at"}
            if all(e.attribute in places for e in ea + eb):
                return "different_attributes"  # "nata a Palermo" / "vivo a Bari": where one was born, lives, works
            da = [e for e in ea if e.kind is EntityKind.DATE]
            db = [e for e in eb if e.kind is EntityKind.DATE]
            kinds_a, kinds_b = {e.attribute for e in da}, {e.attribute for e in db}
            if kinds_a and kinds_b and not (kinds_a & kinds_b):
                birth = [(x, y) for x in da for y in db if {x.attribute, y.attribute} == {"born", "birthday"}]
                if not birth:
                    return "different_dates"
                if all(x.subject != y.subject for x, y in birth):
                    return "other_subject"
                if all(x.subject == y.subject and x.day_month == y.day_month for x, y in birth):
                    return "same_value"
    if old.status and new.status:
        if not {p for p, _, _ in old.status} & {p for p, _, _ in new.status}:
            return "different_projects"
        if {(p, st) for p, st, _ in old.status} == {(p, st) for p, st, _ in new.status}:
            return "same_status"  # "Atlas started" / "Atlas is in progress": one status, said twice
    if old.prefs and new.prefs and all(ca != cb and "*" not in (ca, cb) for ca, _, _ in old.prefs for cb, _, _ in new.prefs):
        return "different_favourites"
    if old.likes and new.likes and all(p > 0 for _, p, _ in old.likes + new.likes):
        objs_a, objs_b = {o for o, _, _ in old.likes}, {o for o, _, _ in new.likes}
        if not objs_a & objs_b:
            return "different_likes"
    return None


#: Pairs of date attributes close enough in meaning that two different dates of the same person deserve a gentle
#: question (a birthday vs a wedding anniversary: both "my day", easy to mix up), never an alarm. Everything else
#: (a birthday vs a deadline, an appointment ...) stays silent.
CLOSE_DATE_PAIRS: frozenset[frozenset[str]] = frozenset({
    frozenset({"birthday", "anniversary"}),
    frozenset({"birthday", "wedding"}),
    frozenset({"born", "anniversary"}),
    frozenset({"born", "wedding"}),
})


def close_dates(old: Facts, new: Facts) -> tuple[Entity, Entity] | None:
    """Two different dates of the same person whose kinds are close in meaning (:data:`CLOSE_DATE_PAIRS`):
    ``(old date, new date)``, else ``None``.

    Only pairs that :func:`consistent_reason` calls ``different_dates`` qualify; the caller asks the user a
    LOW-urgency clarification instead of staying silent.

    Example:
        >>> from memlab.entities import extract_entities
        >>> def facts(t): return summarise(t, tuple(extract_entities(t)), None)
        >>> a, b = facts("Il mio compleanno è il 12 luglio"), facts("Il nostro anniversario di matrimonio è il 15 agosto")
        >>> [e.attribute for e in close_dates(a, b)]
        ['birthday', 'anniversary']
    """
    if consistent_reason(old, new) != "different_dates":
        return None
    return close_date_entities(old, new)


def close_date_entities(old: Facts, new: Facts) -> tuple[Entity, Entity] | None:
    """:func:`close_dates` for a caller that already knows :func:`consistent_reason` said ``different_dates``."""
    for x in old.entities:
        for y in new.entities:
            if x.kind is EntityKind.DATE and y.kind is EntityKind.DATE and x.subject == y.subject \
                    and frozenset({x.attribute, y.attribute}) in CLOSE_DATE_PAIRS and not x.same_value(y):
                return x, y
    return None


# ------------------------------------------------------------------ evidence for a judge-only verdict
#: Pairs of words whose opposition makes two statements exclusive ("love" / "hate", "started" / "finished" ...).
_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("love", "hate"), ("like", "dislike"), ("like", "hate"), ("enjoy", "hate"), ("single", "married"),
    ("alive", "died"), ("alive", "passed away"), ("start", "finish"), ("started", "finished"), ("started", "quit"),
    ("began", "quit"), ("open", "closed"), ("bought", "sold"), ("win", "lose"), ("won", "lost"), ("allergic", "fine with"),
    ("older", "younger"), ("only child", "brother"), ("only child", "sister"),
    ("love", "terrified"), ("love", "afraid of"), ("love", "scared of"), ("love", "can't stand"),
    ("loved", "couldn't stand"), ("loved", "hated"), ("my favorite", "least favorite"),
    ("my favourite", "least favourite"), ("amo", "terrorizza"), ("adoro", "paura"),
    ("amo", "odio"), ("adoro", "odio"), ("mi piace", "odio"), ("single", "sposat"), ("iniziato", "finito"),
    ("iniziato", "completato"), ("comprato", "venduto"), ("vinto", "perso"),
    ("喜欢", "讨厌"), ("单身", "结婚"), ("开始", "完成"), ("买", "卖"),
)
#: a "not" that affirms, or only dates: litotes and time phrases ("I'm not alone", "not so long ago", "I can't picture
#: life without it", "non vedo l'ora", "non è male"): no negation of a fact, so no cue (on LoCoMo dev, five of the
#: seven judge-only alarms had only such a "not" for a cue)
_AFFIRMING = re.compile(
    r"\b(?:not (?:so |that |too )?long ago|not alone|not (?:bad|only)|no (?:doubt|matter|wonder)|"
    r"(?:can't|cannot|couldn't) (?:picture|imagine) (?:my |a )?(?:life|myself|a day) without|"
    r"(?:can't|cannot|couldn't) (?:wait|believe|thank|stop smiling|be happier|be prouder|agree more)|"
    r"never (?:felt|been) better|non vedo l'ora|non (?:è|era) male|non (?:sono|siamo) sol[oaie]|non solo|"
    r"non posso (?:immaginare|pensare) (?:la mia vita |una vita )?senza|non ci posso credere)\b|"
    r"迫不及待|不仅|不错|没想到", re.I)
_ABSOLUTE = re.compile(r"\b(?:never|always|every (?:day|night|morning|week)|no longer|not anymore|not any more|ever since|"
                       r"only|(?:only|just) once|once in my life|first time|very first|mai|sempre|ogni (?:giorno|sera|"
                       r"mattina)|non più|soltanto|una volta sola|solo una volta|prima volta|"
                       # a lifetime: "horses have terrified me my whole life", "da tutta la vita"
                       r"(?:my|our) (?:whole|entire) life|all my life|(?:tutta la|in) vita mia|da tutta la vita)\b|"
                       r"从不|从来|总是|每天|再也|只有一次|第一次|一辈子|这辈子", re.I)
_EXCLUSIVE_KINDS = (EntityKind.DATE, EntityKind.NUMBER, EntityKind.PLACE, EntityKind.NAME)
#: attributes that hold one value per person at a time (a generic ``date`` of "yesterday I went to ..." does not:
#: two events have two dates)
_ONE_VALUE = STABLE_ATTRIBUTES | {"exam", "move", "graduation"}


def _event_date(e: Entity) -> bool:
    """The date of some event ("yesterday I took the kids to the museum"), not of a one-value attribute: two events
    have two dates, so two such dates are no cue (the LoCoMo dev replay's museum / park / pottery-class alarms)."""
    return e.kind is EntityKind.DATE and e.attribute not in _ONE_VALUE


#: Content words too common to pick an event out of a user's memories.
_GENERIC_WORDS = frozenset(
    "time times life thing things people person year years month months week weeks day days really always never ever "
    "first very much even single myself yourself anything anywhere something everything lucky before since still "
    "just yet only actually kind sort whole little lot lots pretty would could should might must been being have "
    "having there their they them then than that this these those what when where which while with without your "
    "yours about after again back from into like love make made more most other over same some such take thank "
    "thanks well were will going gonna wanna feel felt good great nice cool know think want said says tell told "
    "volta vita cosa cose anni anno mesi mese giorno giorni sempre ancora prima molto tanto proprio".split())
_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W\d_]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]")
_NAME_INSIDE = re.compile(r"(?<=[\w,;:\-–] )(?!I\b)[A-Z][^\W\d_]{3,}")


def absolute_stems(text: str, *, k: int = 5) -> tuple[tuple[str, float], ...]:
    """``(stem, weight)`` of the rarest content words (names first, then the longest; at most ``k``) of a statement
    that says "never", "first time" or "not yet" (:data:`memlab.text.ABSOLUTE_OR_FIRST`), else ``()``. The integrity
    checker looks them up in the user's memories: "I've never had any mental health struggles" contradicts "I
    struggled with mental health" whatever the two sentences' cosine.

    A stem is a word of six letters or more cut to its first ``max(5, len - 3)`` ("struggles" -> "strugg",
    "maratona" -> "marat"); a name (a capitalised word inside the sentence: "Paris", "Oscar") weighs 2, other words
    1. Chinese has no spaces to find words by: its markers are recognised, but no stems are returned (the
    embedding search still finds its candidates).

    Example:
        >>> absolute_stems("I've never had any mental health struggles myself")
        (('strugg', 1.0), ('healt', 1.0), ('menta', 1.0))
        >>> absolute_stems("I've never been out of the country, so Paris would be a dream")[:2]
        (('paris', 2.0), ('count', 1.0))
        >>> absolute_stems("Non ho mai fatto una maratona"), absolute_stems("I love my dog")
        ((('marat', 1.0), ('fatto', 1.0)), ())
    """
    if not ABSOLUTE_OR_FIRST.search(_norm(text)):
        return ()
    return content_stems(text, k=k)


def content_stems(text: str, *, k: int = 5) -> tuple[tuple[str, float], ...]:
    """``(stem, weight)`` of the rarest content words of any statement, as :func:`absolute_stems` reads them (names
    first, then the longest; at most ``k``; Chinese gives none). The integrity checker's ``lexical`` candidates:
    "Ho un solo fratello" / "I miei fratelli, Luca e Andrea, ..." share ``frate`` whatever their cosine.

    Example:
        >>> content_stems("Ho un solo fratello")
        (('frate', 1.0), ('solo', 1.0))
    """
    low = _norm(text)
    names = {m.group(0).casefold() for m in _NAME_INSIDE.finditer(text)}
    words = {w.strip("'’-") for w in _WORD.findall(low)}
    words = {w for w in words if len(w) >= 4 and w not in _GENERIC_WORDS and not w.endswith(("n't", "'ve", "'re"))
             and not _CJK_RUN.search(w)}
    ranked = sorted(words, key=lambda w: (w not in names, -len(w), w))[:k]
    return tuple((w[: max(5, len(w) - 3)] if len(w) > 5 else w, 2.0 if w in names else 1.0) for w in ranked)


def differing_values(old: Facts, new: Facts) -> tuple[Entity, Entity] | None:
    """Two values of one named attribute that differ (a date, number, place or name: "L'esame di diritto è il 20
    giugno" / "... il 3 luglio", both ``exam``), or ``None``. With a judge's contradiction verdict on the pair, that
    is a conflict of structure (the checker makes it HIGH and names both values).

    Example:
        >>> from memlab.entities import extract_entities
        >>> def f(t): return summarise(t, tuple(extract_entities(t)), None)
        >>> x, y = differing_values(f("L'esame di diritto è il 20 giugno"), f("L'esame di diritto è il 3 luglio"))
        >>> x.attribute, x.text, y.text
        ('exam', '20 giugno', '3 luglio')
    """
    for x in old.entities:
        if x.kind not in _EXCLUSIVE_KINDS or x.attribute not in _ONE_VALUE:
            continue
        for y in new.entities:
            if y.kind is x.kind and y.attribute == x.attribute and x.subject == y.subject and not x.same_value(y):
                return x, y
    return None


def exclusive_cue(old: Facts, new: Facts) -> str | None:
    """What could make two statements of one person exclusive, beyond a model's verdict: ``negation`` (one says
    "not"/"never", the other does not), ``absolute`` (an "always"/"never"/"only" on one side), ``values`` (both hold a
    date, number, place or name, and they differ), ``antonym`` ("love" / "hate", "started" / "finished" ...); ``None``
    when nothing does ("My mom loved flowers" / "My mom had a passion for cooking": a model trained on NLI, where both
    sentences describe one scene, calls that a contradiction; of one person, both are true).

    Used by :class:`~memlab.integrity.SemanticIntegrityChecker` to decide how loud a judge-only verdict may be.

    Example:
        >>> from memlab.entities import extract_entities
        >>> def f(t): return summarise(t, tuple(extract_entities(t)), None)
        >>> exclusive_cue(f("I have a dog named Max."), f("I have never had a pet."))
        'negation'
        >>> exclusive_cue(f("My mom really loved flowers."), f("My mom had a big passion for cooking.")) is None
        True
    """
    a, b = _norm(old.text), _norm(new.text)
    if bool(_NEG_TOK.search(_AFFIRMING.sub(" ", a))) != bool(_NEG_TOK.search(_AFFIRMING.sub(" ", b))):
        return "negation"
    if bool(_ABSOLUTE.search(a)) != bool(_ABSOLUTE.search(b)):
        return "absolute"
    for x in old.entities:
        if x.kind not in _EXCLUSIVE_KINDS or _event_date(x):
            continue
        for y in new.entities:
            if y.kind is x.kind and not _event_date(y) \
                    and (x.attribute == y.attribute or x.attribute is None or y.attribute is None) \
                    and not x.same_value(y):
                return "values"
    for p, q in _ANTONYMS:
        if (p in a and q in b and q not in a) or (q in a and p in b and p not in a):
            return "antonym"
    return None
