"""Absolutes against habits for any activity, in Italian, English and Chinese: the open-vocabulary half of the
``absolute`` layer of :mod:`memlab.integrity.values` (whose word lists cover alcohol, meat, smoking and coffee).

"Non vado mai in palestra" / "Vado in palestra tre volte a settimana", "I never drive to work" / "I drive to work
every day", "我从来不吃辣" / "我每天都吃辣的". An absolute is a first-person clause with "mai / never / 从不 / 从来不"
and nothing that softens it; a habit is a first-person clause that is not negated and says how often ("ogni",
"every", "tre volte a settimana", "每天"). They clash when every content word of the absolute (lemmas, by
``simplemma``; Chinese: the words after the marker, as written) is in the habit: the same action on the same thing.
"I never drive to work" / "I drive to my parents' every Sunday" do not (work is not in the habit), nor do
"Non bevo mai caffè" / "Bevo tè ogni mattina".

The same clause reading serves the ``status`` layer (:func:`status_frames`: a thing not done yet against the same
thing done) and :mod:`memlab.integrity.changes` (:func:`content_words`, :func:`other_person`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memlab.entities import _vocab as V
from memlab.text import lemma

__all__ = [
    "absolute_frames",
    "clash",
    "clauses",
    "content_words",
    "event_frames",
    "habit_frames",
    "never_vs_event",
    "other_activity",
    "other_person",
    "sentence_clauses",
    "status_clash",
    "status_frames",
    "status_other_things",
    "verb_like",
]

_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[a-zà-ÿ']+", re.I)
_CLAUSES = re.compile(r"[.;!?。！？；\n]|,(?!\d)|，|\b(?:ma|but|però|pero|however|tuttavia)\b|但是|但|可是|不过", re.I)
_SENTENCE_END = re.compile(r"[.;!?。！？；\n]")
_MARK = re.compile(r"\b(?:mai|never)\b", re.I)
_MARK_ZH = re.compile(r"(?:从来都不|从来不|从不|从没|从未|从来没有?|绝不)")
#: what softens an absolute or a habit: "quasi mai", "never ... until", "除了", "以前"
_SOFT_WORDS = (r"quasi|hardly|almost|tranne|except|unless|se non|a parte|apart from|più|anymore|any more|again|ancora|"
               r"yet|until|fino|since|da quando|quando|when|without|senza|alone|da sol[oa]")
_SOFT_ZH = "除了|几乎|很少|以前|以后|再|还"
_SOFT = re.compile(rf"\b(?:{_SOFT_WORDS}|before|prima|dopo|after)\b|{_SOFT_ZH}|之前", re.I)
#: a habit said with its time of day is still a habit ("ogni mattina prima del lavoro", "every day after work"):
#: the softeners of an absolute but "before / after / prima di / dopo"
_HABIT_SOFT = re.compile(rf"\b(?:{_SOFT_WORDS}|prima(?!\s+(?:d[ie]l?l?[aoei]?\b|d')))\b|{_SOFT_ZH}", re.I)
#: verbs of a first try: "I've never tried yoga", "Lo yoga non l'ho mai provato", "我从来没试过瑜伽" say nothing of
#: the action, only of the thing (which any habit of it contradicts)
_TRY = frozenset({"try", "tried", "provare", "provato", "assaggiare", "assaggiato"})
_TRY_ZH = re.compile(r"^(?:尝试|试|尝)")
_NEG = re.compile(r"\b(?:non|not|no|never|mai|n't|don't|didn't|doesn't|nessun[oa]?|niente|nothing)\b|n't\b|不|没|别|未",
                  re.I)
_OTHER_PRONOUN = re.compile(r"\b(?:he|she|they|lui|lei|loro)\b|他|她", re.I)

_FIRST = re.compile(r"\bI\b|\b(?i:i'm|i've|i'd|io|we|noi)\b|我")  # "I" capital: Italian "i" is an article
_HABIT = re.compile(
    r"\b(?:ogni|tutti i|tutte le|sempre|spesso|every|each|daily|always|often|usually|di solito|regolarmente|"
    r"regularly|most (?:days|nights|mornings|evenings)|volte|times)\b|al giorno|a day|a week|alla settimana|"
    r"a settimana|每天|天天|经常|总是|每周|每晚|每个|每年|常常|一直", re.I)
_ZH_HABIT_WORDS = re.compile(r"每天|天天|经常|总是|每周|每晚|每年|每个[月周星期]|常常|一直|都|晚上|早上|周末|两个小时|[一二两三四五六七八九十\d]+(?:次|个小时|小时)")
_FREQUENCY_WORDS = frozenset({
    "mai", "never", "ever", "ogni", "every", "each", "volta", "volte", "time", "times", "settimana", "week", "giorno",
    "day", "always", "sempre", "spesso", "often", "usually", "solito", "really", "proprio", "davvero", "vita",
    "life", "in", "a", "the",
})
#: verbs of the mind: "I never thought / knew / expected" states no habit that a later one could contradict
_MENTAL = frozenset({"think", "know", "expect", "imagine", "believe", "dream", "guess", "realize", "realise", "feel",
                     "pensare", "sapere", "aspettare", "immaginare", "credere", "sognare", "sentire", "capire"})
_STOP = _FREQUENCY_WORDS | frozenset("""
i me my we our you it its this that these those a an the of to in on at for with from by about into over and or
but not no don't do does did doesn't didn't am is are was were be been being have has had i'm i've i'd we're
io noi tu mi ci ti si ne non il lo la l' i gli le un una uno un' di del dello della dei degli delle a al allo alla ai
agli alle da dal dalla dai in nel nello nella nei negli nelle con su sul sulla per tra fra e ed o che chi sono è
ho hai ha abbiamo avete hanno sono sei siamo mio mia miei mie tutti tutte tutto tutta
""".split())


def other_person(text: str) -> bool:
    """Another person in the text: a pronoun or the entity extractor's other-person cues ("mia sorella", "my
    husband", "我妈妈")."""
    return bool(_OTHER_PRONOUN.search(text) or V.OTHER_PERSON.search(text) or V.OTHER_PERSON_NAMED.search(text))


def content_words(clause: str, lang: str) -> frozenset[str]:
    """The lemmas of a clause's content words (stop words, frequency words and one-letter words left out)."""
    words = [w for w in _WORD.findall(clause.casefold()) if w not in _STOP]
    return frozenset(lemma(w, lang) for w in words if len(w) > 1) - _FREQUENCY_WORDS


_IT_DETERMINERS = frozenset("""il lo la l' i gli le un uno una un' del dello della dei degli delle al allo alla ai agli
alle dal dallo dalla dai dagli dalle nel nello nella nei negli nelle sul sullo sulla sui sugli sulle di a da in con
su per tra fra mio mia tuo tua suo sua nostro nostra questo questa quel quello ogni""".split())


def _first_person(clause: str, lang: str) -> bool:
    """"I" / "we" / "io" in the clause, or (Italian drops the subject) a clause that opens with an inflected verb
    or "non": "Vado in palestra", "Non guardo mai la TV"; not "John drives to work"."""
    if _FIRST.search(clause):
        return True
    words = _WORD.findall(clause)
    if not words:
        return False
    if words[0].casefold() == "non":
        return True
    first = words[1] if words[0].casefold() in ("ci", "mi", "ne") and len(words) > 1 else words[0]
    if lemma(first, "it") != first.casefold():
        return True
    if lang != "it":
        return False
    # the verb after a fronted time or place ("Ogni mattina prima del lavoro faccio yoga"): a present first person
    # in -o whose lemma is a verb, not after an article or a preposition ("del lavoro" is the noun)
    for prev, w in zip(words, words[1:], strict=False):
        low = w.casefold()
        if low.endswith("o") and prev.casefold() not in _IT_DETERMINERS:
            lem = lemma(low, "it")
            if lem != low and lem.endswith(("are", "ere", "ire")):
                return True
    return False


def clauses(text: str) -> list[str]:
    """``text`` cut at sentence ends, commas (not decimal ones) and "ma / but / però / 但是": the pieces an absolute
    or a habit is read from.

    Example:
        >>> clauses("Non bevo mai vino, ma bevo birra")
        ['Non bevo mai vino', 'bevo birra']
    """
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


def sentence_clauses(text: str) -> list[str]:
    """``text`` cut at sentence ends and semicolons only (a status, a change or an eating habit spans commas)."""
    return [c.strip() for c in _SENTENCE_END.split(text) if c.strip()]


def verb_like(word: str) -> bool:
    """The word looks like a verb form: a participle, an infinitive or an "-ing" ("prenotato", "finire", "booked")."""
    return bool(_VERB_FORM.match(word))


def _marked(clause: str, need: re.Pattern[str] | None, skip: tuple[re.Pattern[str], ...]) -> bool:
    """The clause says ``need`` (when given) and none of ``skip``."""
    return (need is None or need.search(clause) is not None) and not any(rx.search(clause) for rx in skip)


def _own_clauses(text: str, lang: str, need: re.Pattern[str] | None,
                 *skip: re.Pattern[str]) -> Iterator[tuple[str, frozenset[str]]]:
    """(clause, content lemmas) of each Latin-script clause of ``text`` that the user says of themself (first
    person), that says ``need`` (when given) and none of ``skip``: the one clause reader of the frames below."""
    for clause in clauses(text):
        if _CJK.search(clause) or not _marked(clause, need, skip) or not _first_person(clause, lang):
            continue
        yield clause, content_words(clause, lang)


def _zh_absolutes(text: str) -> list[tuple[frozenset[str] | str, str]]:
    """(the words after the marker, clause) of the user's Chinese absolutes ("我从不喝酒" -> ``喝酒``)."""
    out: list[tuple[frozenset[str] | str, str]] = []
    for clause in clauses(text):
        if not _CJK.search(clause) or _SOFT.search(clause):
            continue
        m = _MARK_ZH.search(clause)
        if m is None or not (clause[:m.start()] in ("", "我", "我们") or clause.startswith("我")):
            continue
        rest = re.sub(r"[了过的呢啊吧。，！\s]", "", clause[m.end():])
        tried = _TRY_ZH.sub("", rest)
        if tried != rest and len(tried) >= 2:
            out.append((tried, clause))
        elif 2 <= len(rest) <= 6:
            out.append((rest, clause))
    return out


def absolute_frames(text: str, lang: str) -> tuple[tuple[frozenset[str] | str, str], ...]:
    """(content lemmas, or for Chinese the words after the marker, clause) of the user's absolutes.

    Example:
        >>> absolute_frames("Non vado mai in palestra.", "it")[0][0] == frozenset({"andare", "palestra"})
        True
    """
    if other_person(text):
        return ()
    out = _zh_absolutes(text)
    for clause, words in _own_clauses(text, lang, _MARK, _SOFT):
        content = words - _MENTAL
        thing = content - _TRY - {"avere", "essere"}  # "l'ho provato"
        if content & _TRY and 1 <= len(thing) <= 2:
            out.append((thing, clause))
        elif 2 <= len(content) <= 3:  # an action and its thing ("vado in palestra"): "I never thought ..." is not one
            out.append((content, clause))
    return tuple(out)


def habit_frames(text: str, lang: str) -> tuple[tuple[frozenset[str] | str, str], ...]:
    """(content lemmas, or for Chinese the clause itself, clause) of the user's habits: first person, not negated,
    with how often."""
    if other_person(text):
        return ()
    out: list[tuple[frozenset[str] | str, str]] = [
        (_ZH_HABIT_WORDS.sub("", c), c) for c in clauses(text)
        if _CJK.search(c) and c.startswith("我") and _marked(c, _HABIT, (_NEG, _HABIT_SOFT))]
    out += [(words, clause) for clause, words in _own_clauses(text, lang, _HABIT, _NEG, _HABIT_SOFT)]
    return tuple(out)


def clash(absolutes: tuple[tuple[frozenset[str] | str, str], ...],
          habits: tuple[tuple[frozenset[str] | str, str], ...]) -> tuple[str, str] | None:
    """(absolute clause, habit clause) of the first absolute whose every content word is in a habit, or ``None``.

    Example:
        >>> clash(absolute_frames("I never drive to work", "en"), habit_frames("I drive to work every day", "en"))
        ('I never drive to work', 'I drive to work every day')
    """
    for content, clause in absolutes:
        for hcontent, hclause in habits:
            if isinstance(content, str):
                if isinstance(hcontent, str) and content in hcontent:
                    return clause, hclause
            elif isinstance(hcontent, frozenset) and content <= hcontent:
                return clause, hclause
    return None


#: what makes a clause no event of the user: a wish, a plan, a condition, the future, a question of taste
_NOT_EVENT = re.compile(
    r"\b(?:would|could|should|might|may|if|unless|wish|hope|want|wanna|gonna|going to|plan(?:ning)?|will|'ll|"
    r"maybe|perhaps|someday|one day|can't wait|vorrei|potrei|dovrei|se|magari|spero|voglio|forse|"
    r"prima o poi|un giorno)\b", re.I)
#: emphasis inside an absolute that the earlier event need not repeat ("I've never had any mental health struggles
#: myself" / "I struggled with mental health")
_EMPHASIS = frozenset("myself any single whole once even actual actually really one anything anybody anyone "
                      "nessun nessuno nessuna alcun alcuna niente neanche nemmeno proprio".split())


def event_frames(text: str, lang: str) -> tuple[tuple[frozenset[str], str], ...]:
    """(content lemmas, clause) of what the user says they did or do, said plainly: first person, not negated, not a
    wish, a plan, a condition or the future ("Last month I got hurt and had to take a break from pottery", "I
    struggled with mental health"). Italian and English only (Chinese absolutes keep their words as written).

    Example:
        >>> event_frames("I struggled with mental health, but therapy helped.", "en")[0][0] == frozenset(
        ...     {"struggle", "mental", "health"})
        True
    """
    if other_person(text) or _CJK.search(text):
        return ()
    return tuple((words, clause) for clause, words in _own_clauses(text, lang, None, _NEG, _NOT_EVENT) if words)


def never_vs_event(old: str, new: str, lang: str) -> tuple[str, str] | None:
    """(old clause, new clause) when the NEW memory says the user never did what the OLD one says they did: every
    content word of the absolute (its emphasis aside, :data:`_EMPHASIS`) is in one earlier event. "Last month I got
    hurt" / "I've never been hurt myself"; "I struggled with mental health" / "I've never had any mental health
    struggles myself". The other order ("I've never been to Paris" / later "I went to Paris") is a change the user
    lived, not a contradiction: ``None``.

    Example:
        >>> never_vs_event("Last month I got hurt at the pottery class", "I've never been hurt myself", "en")
        ('Last month I got hurt at the pottery class', "I've never been hurt myself")
    """
    nevers = _never_frames(new, lang)
    if not nevers:
        return None
    for econtent, eclause in event_frames(old, lang):
        for core, clause in nevers:
            if core <= econtent:
                return eclause, clause
    return None


#: light verbs an absolute and the event may say differently ("never *been* to Paris" / "*went* to Paris")
_LIGHT = frozenset("be go get do have make take andare essere stare avere fare".split())
#: a "never" of comparison or wonder, no absolute: "never seen anything like it", "never been so happy", "mai così"
_COMPARISON = re.compile(r"\b(?:so|such|like|anything|more|better|worse|as|this|that|cos[iì]|tanto|simile|meglio|"
                         r"peggio|quanto)\b", re.I)


def _never_frames(text: str, lang: str) -> tuple[tuple[frozenset[str], str], ...]:
    """(content lemmas but light verbs and emphasis, clause) of the user's plain "never" clauses, for
    :func:`never_vs_event` (1-4 words: "I've never been to Paris" -> ``{paris}``)."""
    if other_person(text) or _CJK.search(text):
        return ()
    out: list[tuple[frozenset[str], str]] = []
    for clause, words in _own_clauses(text, lang, _MARK, _SOFT, _COMPARISON):
        core = frozenset(w for w in words - _MENTAL - _EMPHASIS - _LIGHT - _TRY if len(w) >= 3)
        if 1 <= len(core) <= 4:
            out.append((core, clause))
    return tuple(out)


def _object(content: frozenset[str] | str, clause: str, lang: str) -> frozenset[str] | str:
    """What an absolute is about, without its verb: the content words but the first one in the clause ("I never
    drink *coffee*", "Non guardo mai *la televisione*"); Chinese: the words after the verb ("从来不喝*奶茶*")."""
    if isinstance(content, str):
        return content[1:] if len(content) > 1 else content
    order = [lemma(w, lang) for w in _WORD.findall(clause.casefold()) if w not in _STOP and len(w) > 1]
    verb = next((w for w in order if w in content), None)
    return content - {verb} if verb is not None else content


def _meets(obj: frozenset[str] | str, habit: frozenset[str] | str, hclause: str) -> bool:
    """The habit mentions the absolute's thing: a shared word, or one word the start of the other ("bici" /
    "bicicletta", "tele" in "televisione" / "telegiornale"); Chinese: a shared character pair (one character for
    a one-character thing)."""
    if isinstance(obj, str):
        if len(obj) == 1:
            return obj in hclause
        return any(obj[i:i + 2] in hclause for i in range(len(obj) - 1))
    words = habit if isinstance(habit, frozenset) else frozenset()
    return any(o[:4] == w[:4] for o in obj for w in words if len(o) >= 4 and len(w) >= 4) or bool(obj & words)


def other_activity(absolutes: tuple[tuple[frozenset[str] | str, str], ...],
                   habits: tuple[tuple[frozenset[str] | str, str], ...], lang: str) -> bool:
    """An absolute and a habit of the same person about different things: "I never drink coffee" / "I drink green
    tea every morning", "I never watch TV" / "I listen to podcasts every evening", "Non vado mai in palestra" /
    "Corro al parco tre volte a settimana". Both can be true. ``False`` when there is no pair, or when some habit
    mentions an absolute's thing ("I never drink coffee" / "two cups of coffee every morning": the judge decides).

    Example:
        >>> other_activity(absolute_frames("I never drink coffee.", "en"),
        ...                habit_frames("I drink green tea every morning.", "en"), "en")
        True
    """
    if not absolutes or not habits:
        return False
    for content, clause in absolutes:
        obj = _object(content, clause, lang)
        if not obj or any(_meets(obj, hcontent, hclause) for hcontent, hclause in habits):
            return False
    return True


# ====================================================================================== not yet vs done
_PENDING = re.compile(
    r"\b(?:non\b.{0,40}\bancora|ancora da|devo ancora|not\b.{0,40}\byet|haven't\b.{0,40}\byet|still have to|"
    r"still need to|have yet to|not started|non ho (?:ancora )?(?:iniziato|cominciato))\b|"
    r"\b(?:haven't|have not|hasn't|non ho)\s+(?:even\s+)?(?:started|begun|iniziato|cominciato)\b|"
    # what is left to do: "mi restano ancora dieci anni di rate", "I still have two years left on the loan"
    r"\b(?:mi rest(?:a|ano) ancora|mi manca(?:no)? ancora|ho ancora da|i still have\b.{0,30}\bleft)\b|"
    r"\bnon\s+(?:l'|lo\s+|la\s+)?(?:ho|abbiamo)\s+(?:neanche|nemmeno|neppure)\b|\bhaven't even\b|"
    r"还没|尚未|还未|还一.{0,2}都?没|还剩", re.I)
_DONE = re.compile(
    r"\b(?:già|finito|terminato|completato|concluso|consegnato|spedito|chiuso|finished|completed|done|already|"
    r"submitted|sent|wrapped up|handed in)\b|已经|完了|完成|做完|考完|装修完|结束了|搞定|交给|交上去了|提交了", re.I)
#: a thing begun is not a thing done: "Ho già iniziato il corso", "I've already started the course", "我已经开始练八段锦了"
#: clash with "not started" only, not with "not finished yet" ("动作还没记全")
_STARTED = re.compile(r"\b(?:started|begun|began|iniziato|cominciato|avviato)\b|开始", re.I)
_NOT_STARTED = re.compile(r"\b(?:not|haven't|hasn't|non)\b.{0,20}\b(?:started|begun|iniziato|cominciato)\b|"
                          r"(?:还没有?|尚未|还未)开始", re.I)
#: the pairs of kinds that cannot both be true of one thing
_STATUS_CLASH = frozenset({frozenset({"done", "pending"}), frozenset({"done", "not_started"}),
                           frozenset({"started", "not_started"})})
_STATUS_WORDS = frozenset("""
ancora già finito finire terminato terminare completato completare concluso concludere iniziato iniziare cominciato
cominciare devo dovere yet still already finish finished complete completed done start started begin begun need
have yet ieri yesterday weekend settimana scorsa last over
""".split())
_ZH_MARKS = re.compile(r"还没有?|尚未|还未|还一.{0,2}都?没|还剩|已经|完了|完成|做完|开始|结束了|搞定|了|的|我|都|在|等|下个月|入住|，")


def status_frames(text: str, lang: str) -> tuple[tuple[str, frozenset[str] | str, str], ...]:
    """(``pending`` | ``not_started`` | ``started`` | ``done``, content lemmas or for Chinese the clause without its
    markers, clause) of the user's things not yet done (or not begun) and done (or begun): "Non ho ancora prenotato
    le vacanze", "I haven't started the course yet", "I've already started the course", "新房子已经装修完了".

    Example:
        >>> [f[0] for f in status_frames("Non ho ancora prenotato le vacanze", "it")]
        ['pending']
    """
    if other_person(text):
        return ()
    out: list[tuple[str, frozenset[str] | str, str]] = []
    for clause in sentence_clauses(text):
        pending = _PENDING.search(clause)
        if pending is None and (not _DONE.search(clause) or (_NEG.search(clause) and not _CJK.search(clause))):
            continue
        if pending is not None:
            kind = "not_started" if _NOT_STARTED.search(clause) else "pending"
        else:
            kind = "started" if _STARTED.search(clause) else "done"
        if _CJK.search(clause):
            out.append((kind, _ZH_MARKS.sub("", clause), clause))
        else:
            content = frozenset(x for x in content_words(clause, lang) if x not in _STATUS_WORDS) - _verbs(clause, lang)
            if content:
                out.append((kind, content, clause))
    return tuple(out)


_VERB_FORM = re.compile(r"^[a-zà-ÿ]{3,}(?:ed|ing|at[oaie]|it[oaie]|ut[oaie]|are|ere|ire)$", re.I)
_AFTER_SUBJECT = re.compile(r"\b(?:i|we|haven't|hasn't|have|had|not|ho|ha|abbiamo|devo|sto)\s+([a-zà-ÿ']+)", re.I)


def _verbs(clause: str, lang: str) -> frozenset[str]:
    """Lemmas of the words that look like the clause's verbs (participles, infinitives, "-ing", the word after
    "I" / "ho"): a shared verb alone ("booked the flights" / "booked the hotel") is not the same thing."""
    words = {w for w in _WORD.findall(clause.casefold()) if verb_like(w)}
    words |= {m.group(1) for m in _AFTER_SUBJECT.finditer(clause.casefold())}
    return frozenset(lemma(w, lang) for w in words)


def _zh_overlap(a: str, b: str) -> bool:
    return any(a[i:i + 2] in b for i in range(len(a) - 1))


def status_clash(old: tuple[tuple[str, frozenset[str] | str, str], ...],
                 new: tuple[tuple[str, frozenset[str] | str, str], ...]) -> tuple[str, str] | None:
    """(old clause, new clause) where one says a thing is not yet done and the other that it is done, about the same
    thing (a shared content word; Chinese: two characters in common), or ``None``."""
    for kind, content, clause in old:
        for nkind, ncontent, nclause in new:
            if frozenset({kind, nkind}) not in _STATUS_CLASH:
                continue
            if isinstance(content, str) and isinstance(ncontent, str):
                if _zh_overlap(content, ncontent):
                    return clause, nclause
            elif isinstance(content, frozenset) and isinstance(ncontent, frozenset) and content & ncontent:
                return clause, nclause
    return None


def status_other_things(old: tuple[tuple[str, frozenset[str] | str, str], ...],
                        new: tuple[tuple[str, frozenset[str] | str, str], ...]) -> bool:
    """Both texts say how far along something is, and no two of those things share a word (Chinese: a character
    pair): "I finished my degree" / "I haven't started looking for a job yet". Both can be true.

    Example:
        >>> status_other_things(status_frames("I finished my degree.", "en"),
        ...                     status_frames("I haven't started looking for a job yet.", "en"))
        True
    """
    if not old or not new:
        return False
    for _, content, _ in old:
        for _, ncontent, _ in new:
            if isinstance(content, str) and isinstance(ncontent, str):
                if _zh_overlap(content, ncontent):
                    return False
            elif isinstance(content, frozenset) and isinstance(ncontent, frozenset):
                if content & ncontent:
                    return False
            else:
                return False
    return True
