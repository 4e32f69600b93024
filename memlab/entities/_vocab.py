"""Small Italian / English / Chinese vocabularies and regexes used by the entity extractor.

No spaCy (or other NER) model can be installed offline, so spans are found with these vocabularies and
regular expressions; values are parsed with dateparser (dates, relative dates) and pint (units).
"""

from __future__ import annotations

import re

MONTHS: dict[str, int] = {}
for _i, _names in enumerate(
    [
        ("gennaio", "january", "jan"),
        ("febbraio", "february", "feb"),
        ("marzo", "march", "mar"),
        ("aprile", "april", "apr"),
        ("maggio", "may"),
        ("giugno", "june", "jun"),
        ("luglio", "july", "jul"),
        ("agosto", "august", "aug"),
        ("settembre", "september", "sep", "sept"),
        ("ottobre", "october", "oct"),
        ("novembre", "november", "nov"),
        ("dicembre", "december", "dec"),
    ],
    start=1,
):
    for _n in _names:
        MONTHS[_n] = _i

NUMBER_WORDS: dict[str, int] = {
    # English
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "no": 0, "zero": 0,
    # Italian
    "un": 1, "uno": 1, "una": 1, "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sei": 6, "sette": 7,
    "otto": 8, "nove": 9, "dieci": 10, "undici": 11, "dodici": 12, "tredici": 13, "quattordici": 14,
    "quindici": 15, "sedici": 16, "diciassette": 17, "diciotto": 18, "diciannove": 19, "venti": 20,
    "trenta": 30, "quaranta": 40, "cinquanta": 50, "sessanta": 60, "settanta": 70, "ottanta": 80,
    "novanta": 90, "nessun": 0, "nessuno": 0, "nessuna": 0,
    # Chinese (single characters; 两 = two of something)
    "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
}

def _compound_numbers() -> dict[str, int]:
    """21-99 written as one word: "thirty-four" / "thirty four", "trentaquattro", "ventuno" / "ventun" (a tens word
    loses its last vowel before "uno" and "otto"; "tre" is also written "tré")."""
    en_u = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    it_u = ["uno", "due", "tre", "quattro", "cinque", "sei", "sette", "otto", "nove"]
    out: dict[str, int] = {}
    for t, en_t, it_t in zip(range(20, 100, 10), ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
                                                   "ninety"], ["venti", "trenta", "quaranta", "cinquanta", "sessanta",
                                                               "settanta", "ottanta", "novanta"], strict=True):
        for u, (eu, iu) in enumerate(zip(en_u, it_u, strict=True), start=1):
            out[f"{en_t}-{eu}"] = out[f"{en_t} {eu}"] = t + u
            stem = it_t[:-1] if iu[0] in "uo" else it_t
            out[stem + iu] = t + u
        out[it_t[:-1] + "un"] = t + 1
        out[it_t + "tré"] = t + 3
    return out


NUMBER_WORDS.update(_compound_numbers())
_NUM_WORDS_LATIN = sorted((w for w in NUMBER_WORDS if not "\u4e00" <= w[0] <= "\u9fff" and w not in {"a", "an", "no"}),
                          key=len, reverse=True)
NUM = r"(?:\d+(?:[.,]\d+)?|" + "|".join(_NUM_WORDS_LATIN) + r")"

WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
    "lunedì": 0, "martedì": 1, "mercoledì": 2, "giovedì": 3, "venerdì": 4, "sabato": 5, "domenica": 6,
    "lunedi": 0, "martedi": 1, "mercoledi": 2, "giovedi": 3, "venerdi": 4,
}

# --- cues that attach an entity to an attribute (searched in the clause before the entity) ---------------
DATE_CUES: list[tuple[str, re.Pattern[str]]] = [
    # event dates of the user's life; "anniversario di matrimonio" stays an anniversary (see _date_attribute)
    ("wedding", re.compile(r"\b(?:matrimonio|nozze|mi sposo|ci sposiamo|sposarmi|sposarci|wedding|get(?:ting)? "
                           r"married)\b|婚礼|结婚的日子", re.I)),
    ("exam", re.compile(r"\b(?:esame|esami|exam|exams|test di|maturità)\b|考试", re.I)),
    ("move", re.compile(r"\b(?:trasloco|traslochiamo|trasloc\w+|mi trasferisco|ci trasferiamo|moving day|move out|"
                        r"move in|moving)\b|搬家", re.I)),
    ("graduation", re.compile(r"\b(?:laurea|mi laureo|discussione della tesi|graduation|graduate|graduating)\b|毕业",
                              re.I)),
    ("anniversary", re.compile(r"\b(?:anniversari[oi]|anniversary|wedding day)\b|纪念日|结婚", re.I)),
    ("birthday", re.compile(r"\b(?:compleann[oi]|compio gli anni|festeggio gli anni|birthdays?|bday)\b|生日", re.I)),
    ("born", re.compile(r"\b(?:nat[oaie]|nascita|born|birth|birthdate|date of birth|dob)\b|出生|生于|(?<=[号日])生的|^生的", re.I)),
    ("deadline", re.compile(r"\b(?:scadenza|scade|deadline|due|entro|consegn\w+|submit\w*|finish(?:ed)? by)\b|截止",
                            re.I)),
]

HEIGHT_CUE = re.compile(r"\b(?:alt[oaie]|altezza|statura|tall|height|misuro)\b|身高|个子", re.I)
WEIGHT_CUE = re.compile(r"\b(?:pes[oaie]|peso|pesavo|weigh\w*|weight)\b|体重", re.I)
AGE_CUE = re.compile(r"\b(?:età|age|aged)\b|年龄|今年", re.I)
MONEY_CUE = re.compile(r"\b(?:cost\w*|paid|pay|earn\w*|spend|spent|salary|stipendio|guadagn\w+|pagat\w+|cost\w+)\b",
                       re.I)

# --- subject detection ---------------------------------------------------------------------------------
#: English kin words (also the age of "my daughter is 12", memlab.entities.extract)
KIN_EN = (r"sister|brother|mother|mom|mum|father|dad|wife|husband|son|daughter|friend|best friend|boyfriend|"
           r"girlfriend|partner|cousin|uncle|aunt|grandma|grandmother|grandpa|grandfather|boss|colleague|"
           r"coworker|neighbou?r|roommate|dog|cat|kid|child|children|kids|parents|family|baby")
_KIN_IT = (r"sorella|fratello|madre|mamma|padre|papà|papa|moglie|marito|figlio|figlia|figli|amico|amica|"
           r"fidanzat[oa]|ragazz[oa]|compagn[oa]|cugin[oa]|zi[oa]|nonn[oa]|capo|collega|vicin[oa]|cane|gatto|"
           r"coinquilin[oa]|genitori|famiglia|bambin[oa]|suocer[oa]")
OTHER_PERSON = re.compile(
    rf"\b(?:my|his|her|our|their|your)\s+(?:\w+\s+)?(?P<en>{KIN_EN})\b"
    rf"|\b(?:(?:la|il|lo|le|i|gli)\s+)?(?:mia|mio|mie|miei|sua|suo|sue|suoi|nostra|nostro|tua|tuo|vostra|vostro)\s+"
    rf"(?P<it>{_KIN_IT})\b"
    rf"|\b(?:la|il|lo|l'|le|i|gli)\s*(?P<it2>{_KIN_IT})\s+(?:di|del|della)\b"
    rf"|\b(?:la|il|lo|l')\s*(?P<it3>{_KIN_IT})(?=\s+(?-i:[A-Z][a-zà-ý]+)\b)"  # "il nonno Aldo", "la zia Carla"
    r"|\b(?P<pron>he|she|they|lui|lei|loro|you|tu)\b"
    r"|(?:我的|我)(?P<zh>妈妈|爸爸|姐姐|妹妹|哥哥|弟弟|老婆|老公|妻子|丈夫|朋友|儿子|女儿|男朋友|女朋友|同事|老板)"
    r"|(?P<zhpron>他|她|你)",
    re.I,
)
#: Case-sensitive forms: a capitalised name ("Marco's birthday", "il compleanno di Marco", "Marco è nato").
OTHER_PERSON_NAMED = re.compile(
    r"\b(?P<poss>[A-Z][a-zà-ý]+)'s\b"
    r"|\b(?:di|del|della)\s+(?P<di>[A-Z][a-zà-ý]+)\b"
    r"|(?:^|[,;:]\s*|\b(?:and|e|ma|but)\s+)(?P<name3>[A-Z][a-zà-ý]+)\s+"
    r"(?:was born|is|lives|works|(?:just\s+)?turn(?:ed|s)|è nat[oa]|è|abita|vive|lavora|si chiama|compie|ha)\b"
)
#: the one name a kin word is followed by: "my daughter, Lily," / "mia sorella Irene" / "il nonno Aldo" (case-sensitive)
APPOSITIVE_NAME = re.compile(r"\s*,?\s*(?P<name>[A-Z][a-zà-ý]+)\b(?!['’]s\b)")
#: one canonical word per kin relation written several ways, so that "mia madre" and "mia mamma" are one subject
KIN_CANON = {"mom": "mother", "mum": "mother", "dad": "father", "grandma": "grandmother", "grandpa": "grandfather",
             "mamma": "madre", "papà": "padre", "papa": "padre", "babbo": "padre", "neighbor": "neighbour",
             "kid": "child", "kids": "children", "coworker": "colleague"}
NOT_A_NAME = {"i", "it", "this", "that", "there", "she", "he", "my", "the", "il", "la", "lo", "what", "who", "user",
              "utente", "l'utente", "our", "your", "his", "her", "today", "oggi", "mine", "yes", "no", "si", "sì",
              "ciao", "hello", "hi", "where", "dove", "when", "quando", "which", "chi", "cosa", "what's", "it's"}
FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|im|i've|i'd|i'll|my|me|mine|myself|user|user's|io|mi|mio|mia|miei|mie|sono|ho|abito|vivo|"
    r"lavoro|chiamami|utente|l'utente)\b|我",
    re.I,
)

# --- names / places / organisations ----------------------------------------------------------------------
NAME_PREFIX = re.compile(
    r"\b(?:mi chiamo|chiamami|anzi chiamami|il mio nome è|il mio nome e'|il mio nome e|mi puoi chiamare|"
    r"puoi chiamarmi|preferisco essere chiamat[oa]|my name is|my name's|call me|i am called|i'm called|"
    r"please call me|si chiama|is called|is named|name is)\s+",
    re.I,
)
#: others doing the calling, just before "call me" / "叫我": the name that follows is a nickname, not the user's name
NICKNAME_BEFORE = re.compile(
    r"\b(?:friends|everyone|everybody|people|colleagues|family|they(?: all)?|tutti|amici|colleghi|famiglia)\b"
    r"[^.!?]{0,12}$|(?:们|大家|家里人|别人|他们|她们)都?$", re.I)
#: an introduction, where the name ends the clause: "I'm Gregory," / "Piacere, sono Alessandro Ferri." / "你好，我是郑雨晴。"
#: (the Chinese form needs the greeting: "我是老师" says a role)
INTRODUCTION = re.compile(
    r"(?:^|[.!?]\s+|\b(?i:hi|hello|hey|ciao|salve|piacere)[,!]?\s+)(?i:i'm|i am|sono)\s+"
    r"(?P<x>[A-Z][a-zà-ÿ]+(?:\s+[A-Z][a-zà-ÿ]+)?)(?=\s*(?:[,.!;]|$|\s+(?i:by the way|btw)))"
    r"|(?:你好|您好|大家好|嗨)[，,！!]?\s*我是(?P<y>[\u4e00-\u9fff]{2,3}?)(?=[，。！？,.!?\s]|$)")
#: Chinese words ending a role, not a name: 老师, 学生, 医生, 店员, 新来的, 北京人, 专家, 家长, 记者
INTRODUCTION_NOT_NAME_ZH = re.compile(r"[师生员的人家长者士工]$")
#: capitalised words an introduction can hold that are not names: beliefs, parties, nationalities
INTRODUCTION_NOT_NAMES = frozenset("""catholic christian muslim jewish buddhist hindu protestant orthodox mormon atheist
agnostic democrat republican conservative liberal libertarian independent american canadian mexican brazilian
argentinian argentine chilean peruvian colombian venezuelan cuban british english scottish welsh irish french german
dutch belgian swiss austrian italian spanish portuguese greek turkish polish russian ukrainian swedish norwegian danish
finnish icelandic czech hungarian romanian bulgarian serbian croatian chinese japanese korean vietnamese thai
filipino indonesian malaysian indian pakistani bangladeshi nepali iranian iraqi israeli lebanese syrian egyptian
moroccan nigerian kenyan ethiopian somali african european asian australian kiwi texan californian""".split()) | {
    # Italian nationalities and beliefs, each in its four endings ("Sono Italiana.")
    stem + end for stem in """italian american african european asiatic australian canades messican brasilian argentin
    tedesc spagnol svizzer olandes russ grec cines giappones corean frances ingles scozzes irlandes portoghes austriac
    polacc ucrain svedes norveges danes rumen bulgar serb croat turc egizian marocchin indian pakistan cattolic
    cristian musulman ebre buddist induist protestant ortodoss ate agnostic""".split()
    for end in ("o", "a", "i", "e", "")}
NAME_PREFIX_ZH = re.compile(r"(?:我叫|叫我|我的名字是|我的名字叫|我名字叫|我名叫|称呼我)\s*")
NAME_STOP = {
    "back", "later", "when", "if", "at", "on", "tomorrow", "anytime", "please", "a", "an", "the", "whatever",
    "so", "ok", "okay", "now", "soon", "anything", "what", "maybe", "not", "that", "this", "it", "crazy", "and",
    "but", "or", "sometime", "again", "un", "una", "il", "la", "lo", "per", "quando", "se", "domani", "dopo",
    "pure", "come", "e", "ma", "o", "too", "just", "really", "very", "by", "in", "to", "for", "with", "di", "da",
}
PLACE_PREFIX: list[tuple[str, re.Pattern[str]]] = [
    ("from_place", re.compile(
        r"\b(?:sono nat[oa] a|sono nat[oa] in|vengo da|vengo dalla|vengo dal|sono originari[oa] di|born in|"
        r"i'm from|i am from|im from|i come from|comes? from|is from|are from|grew up in|cresciut[oa] a)\s+",
        re.I)),
    ("lives_in", re.compile(
        r"\b(?:abito|vivo|risiedo|abitiamo|viviamo|abita|vive|mi sono trasferit[oa]|mi trasferisco|"
        r"ci siamo trasferiti|trasferit[oa]|live|living|lives|moved|relocated|reside|resides|stay)\s+"
        r"(?:a|ad|in|nel|nella|nello|negli|to|at|near|vicino a|out in|down in|up in)\s+",
        re.I)),
    ("works_at", re.compile(
        r"\b(?:lavoro|lavora|lavoriamo)\s+(?:da|presso|per|alla|al|allo|nella|nel|in|a)\s+"
        r"|\b(?:work|works|working|worked|employed)\s+(?:at|for|by)\s+"
        # where one works, when it is a proper name ("I work in Manhattan", not "I work in marketing")
        r"|\b(?:i|we)\s+work\s+in\s+(?=(?-i:[A-Z][a-z]))(?!(?i:sales|marketing|finance|retail|tech|admin)\b)"
        r"|\b(?:il mio ufficio è|il mio ufficio e'|l'ufficio dove lavoro è|my office is)\s+(?:a|ad|in|at)\s+"
        r"(?=(?-i:[A-Z][a-z]))",
        re.I)),
]
#: a home said as the place just named ("I grew up in Toronto and still live there", "Sono cresciuto a Cagliari e vivo
#: ancora lì", "我在成都长大，现在还住在那里"): the span of "there" is the home's
STILL_LIVE_THERE = re.compile(
    r"\b(?:and|but|e|ma)\s+(?:i\s+)?(?:still|now|currently)\s+live\s+(?P<there>there)\b"
    r"|\b(?:and|but|e|ma)\s+(?:i\s+)?live\s+(?P<there2>there)\s+(?:still|now|today)\b"
    r"|\b(?:e|ma)\s+(?:vivo|abito)\s+ancora\s+(?P<there3>lì|li|là|qui|qua)\b|\b(?:e|ma)\s+(?:ci|tuttora ci)\s+"
    r"(?:vivo|abito)\s+(?P<there4>ancora|tuttora)\b|(?:现在|至今|一直)还?(?:住在|生活在)(?P<there5>那里|那儿|那边)",
    re.I)
#: where one is from, said with a word that is a place only when the gazetteer knows what follows ("Sono di Palermo";
#: not "sono di turno", "sono di fretta"), with no other subject before it ("Io sono di Bari", "Ciao, sono di Bari",
#: "Anna, e sono di Bari"; not "Le foto sono di Parigi", "I miei sono di Napoli"): read by ``extract._known_origins``
ORIGIN_KNOWN = re.compile(r"(?:^|[.!?;:,]\s*|\b(?:io|anch'io|e|ma|però|che)\s+)(?:sono|siamo)\s+di\s+", re.I)
#: "我是广州人", "我是土生土长的成都人": a known place (a Chinese region, a city, a country) before 人
ORIGIN_ZH = re.compile(r"我(?:们)?(?:是|算是)(?:土生土长的|地道的|正宗的)?(?P<p>[\u4e00-\u9fff]{2,4}?)人")
PLACE_PREFIX_ZH: list[tuple[str, re.Pattern[str]]] = [
    ("lives_in", re.compile(r"(?:我住在|我现在住在|住在|我搬到了?|搬到了?|我生活在)")),
    ("from_place", re.compile(r"(?:我来自|我出生在|我出生于|我老家是|老家在|我在(?=[\u4e00-\u9fff]{2,6}长大)"
                              r"|我是在(?=[\u4e00-\u9fff]{2,6}(?:出生|长大)))")),
    ("works_at", re.compile(r"(?:我在)(?=[\u4e00-\u9fff]{2,8}(?:工作|上班))|我的(?:公司|单位|办公室)在")),
]
PLACE_STOP = {
    "with", "and", "but", "for", "since", "because", "now", "e", "ma", "con", "da", "per", "perché", "ora",
    "adesso", "dal", "dalla", "from", "when", "where", "which", "who", "as", "so", "too", "though", "although",
    "while", "until", "on", "at", "in", "by", "of", "di", "del", "della", "che", "dove", "quando", "mentre",
    "to", "a", "ad", "is", "was", "it", "i", "or", "o", "anche", "also", "right", "currently",
    "lol", "haha", "yes", "no", "sì", "si", "ok", "are", "am", "be", "my", "your",
}
ARTICLES = {"the", "a", "an", "il", "lo", "la", "l'", "i", "gli", "le", "un", "uno", "una", "un'"}
