"""A state and its end, in Italian, English and Chinese, for the ``change`` layer of
:mod:`memlab.integrity.values`: "Ho una Fiat Panda" / "A marzo ho venduto la Panda", "I work at a bank" / "I quit
the bank and joined a startup", "I'm married" / "My divorce was finalized last week", "我是学生" / "我已经毕业了".

The product asks about such a pair (a change over time replaces a fact: DESIGN's "an update is a conflict to ask
about"), so it is a contradiction with ``update=True``. An end is a first-person clause with an ending verb (sold,
quit, left, divorced, broke up, graduated; venduto, lasciato, licenziato, divorziato, laureato; 卖了, 辞职,
离婚, 分手, 毕业); the state is the other memory, not negated and not itself an end. They are about the same
thing when they share a content word that is not a verb (the Panda, the bank, Paolo), or when the state is the
one the end closes (married / divorced, engaged / broke up or married, student / graduated, a job / retired or laid
off, 结婚 / 离婚, 在公司上班 / 被裁了).
"""

from __future__ import annotations

import re

from memlab.integrity.habits import content_words, other_person, sentence_clauses, verb_like

__all__ = ["change_clash", "change_frames", "ended", "states"]

_END = re.compile(
    r"\b(?:ho venduto|abbiamo venduto|ho lasciato|abbiamo lasciato|ci siamo lasciati|ci siamo separati|"
    r"mi sono licenziat[oa]|mi hanno licenziat[oa]|ho smesso di lavorare|abbiamo divorziato|ho divorziato|"
    r"mi sono laureat[oa]|mi sono diplomat[oa]|ho chiuso|non lavoro più|non sono più|ho dato via|ho regalato|"
    r"i sold|we sold|i quit|i left (?:my|the|our) (?:job|company|firm|school|university|band|team|husband|wife|boyfriend|"
    r"girlfriend)|divorced|my divorce|broke up|split up|i graduated|got laid off|was laid off|was fired|got fired|"
    r"retired from|gave away|(?:i|we) (?:no longer|don't|do not) (?:work|have|own)\b[^.]*\b(?:anymore|any more)|"
    r"(?:i|we) no longer (?:work|have|own)|non lavoro più|non ho più)\b|"
    r"\b(?:got married|mi sono sposat[oa]|ci siamo sposati|sto con (?-i:[A-Z])\w+|mi sono fidanzat[oa]|i'm dating|"
    r"got engaged)\b|结婚了|谈恋爱了|脱单|有男朋友了|有女朋友了|"
    r"卖了|卖掉了|辞职|辞了|辞掉了|离职|离婚|分手|毕业了|已经毕业|不在.{1,6}工作了|送人了", re.I)
#: what a state says: owning, working at or as, or one of the states an end closes (:data:`_CLOSES`)
_STATE = re.compile(
    r"\b(?:ho|abbiamo|possiedo|i have|i own|i've got|we have|we own|lavoro|i work|i'm working|i am working|sono|"
    r"i'm|i am|faccio (?:il|la|l'))\b|我有|我在.{1,12}(?:工作|上班|当)|我是|我开的是|我开着", re.I)
_MARRIED = re.compile(r"married|sposat|结婚|sto con|fidanzat|dating|engaged|恋爱|脱单|朋友了", re.I)
_NEG = re.compile(r"\b(?:non|not|no|never|mai|n't|don't|didn't|haven't|isn't)\b|n't\b|没|不|未", re.I)
#: a state and the words that end it, across the three languages
_CLOSES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(a, re.I), re.compile(b, re.I)) for a, b in (
        (r"\b(?:sposat[oa]|married|husband|wife|marito|moglie)\b|结婚|已婚|老公|老婆|丈夫|妻子",
         r"\b(?:divorziat[oa]|divorziato|divorced|divorce|separated|separati)\b|离婚"),
        (r"\b(?:fidanzat[oa]|engaged|girlfriend|boyfriend|partner|ragazza|ragazzo)\b|女朋友|男朋友|对象",
         r"\b(?:lasciati|broke up|split up|separati)\b|分手"),
        (r"\b(?:single|singolo|single da)\b|单身",
         r"\b(?:got married|mi sono sposat[oa]|ci siamo sposati|we married|i married|sto con (?-i:[A-Z])\w+|"
         r"mi sono fidanzat[oa]|i'm dating|i'm seeing someone|got engaged|in a relationship)\b|结婚了|结了婚|谈恋爱了|脱单|"
         r"有男朋友了|有女朋友了"),
        (r"\b(?:student[ei]?|studentessa|studio all'università|university student|in college|at university)\b|学生|上大学|读研",
         r"\b(?:laureat[oa]|diplomat[oa]|graduated)\b|毕业"),
        (r"\b(?:fidanzat[oa]|engaged)\b|订婚",
         r"\b(?:got married|mi sono sposat[oa]|ci siamo sposati|we married|i married)\b|结婚了|结了婚"),
    ))
#: a job and its end that does not name it ("被裁了", "sono in pensione", "I lost my job"): only a job said first and
#: its end said later (a new job after a lost one ends nothing)
_JOB = re.compile(r"\b(?:i work (?:as|at|for|in)|lavoro (?:come|a|in|da|presso)|faccio (?:il|la|l'))|"
                  r"我在.{1,12}(?:工作|上班|当)|我是.{1,8}(?:经理|工程师|老师|医生|护士|员)", re.I)
_JOB_END = re.compile(r"\b(?:sono in pensione|i'm retired|i am retired|i retired|lost my job|ho perso il lavoro|"
                      r"got laid off|was laid off|got fired|was fired|mi hanno licenziat[oa])\b|被裁|被辞退|被开除|退休了",
                      re.I)
_JOB_ENDS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = ((_JOB, _JOB_END),)


def ended(text: str, lang: str) -> tuple[tuple[frozenset[str], str], ...]:
    """(content words that are not verbs or ending words, clause) of the user's ends ("ho venduto la Panda").

    Example:
        >>> [sorted(c) for c, _ in ended("A marzo ho venduto la Panda", "it")]
        [['marzo', 'panda']]
    """
    if other_person(text):
        return ()
    out: list[tuple[frozenset[str], str]] = []
    for clause in sentence_clauses(text):
        m = _END.search(clause)
        if m is None and _JOB_END.search(clause):
            out.append((frozenset(), clause))  # a job's end that names nothing: compared through _JOB_ENDS only
            continue
        if m is None or (re.search(r"[\u4e00-\u9fff]", clause) and not clause.startswith("我")
                         and re.search(r"[他她]|我(?:的)?(?:爸|妈|哥|姐|弟|妹|老公|老婆|朋友|同事|儿子|女儿)", clause)):
            continue  # Chinese: the user's own clause ("我把那辆大众卖了", "帕萨特上个月卖了"), not anyone else's
        # getting married ends only being single: it is compared through _CLOSES, never by shared words
        things = frozenset() if _MARRIED.search(m.group(0)) else _things(clause.replace(m.group(0), " "), lang)
        out.append((things, clause))
    return tuple(out)


def states(text: str, lang: str) -> tuple[tuple[frozenset[str], str], ...]:
    """(content words that are not verbs, clause) of the user's positive statements of a state (owning, working,
    being) that end nothing."""
    if other_person(text):
        return ()
    return tuple((_things(c, lang), c) for c in sentence_clauses(text)
                 if (_STATE.search(c) or any(st.search(c) for st, _ in _CLOSES + _JOB_ENDS))
                 and not _END.search(c) and not _NEG.search(c))


_ZH_NOT_THINGS = re.compile(r"[我你他她它的了在是把那这一个辆家已经从现在自己]|卖掉?|辞职|离职|离婚|分手|毕业|不再|工作|上班")


def _things(clause: str, lang: str) -> frozenset[str]:
    if re.search(r"[\u4e00-\u9fff]", clause):
        rest = _ZH_NOT_THINGS.sub(" ", clause)  # Chinese: the two-character pieces left once the grammar is gone
        return frozenset(p[i:i + 2] for p in rest.split() for i in range(len(p) - 1) if re.fullmatch(r"[\u4e00-\u9fff]{2}", p[i:i + 2]))
    words = {w for w in re.findall(r"[a-zà-ÿ']+", clause.casefold()) if not verb_like(w)}
    return content_words(" ".join(words), lang)


Frames = tuple[tuple[tuple[frozenset[str], str], ...], tuple[tuple[frozenset[str], str], ...]]


def change_frames(text: str, lang: str) -> Frames:
    """(:func:`ended`, :func:`states`) of one text: read once per memory, compared with many."""
    return ended(text, lang), states(text, lang)


def change_clash(old: Frames, new: Frames) -> tuple[str, str] | None:
    """(state clause, end clause) when one memory ends what the other states, either order; else ``None``. ``old``
    and ``new`` are the two memories' :func:`change_frames`.

    Example:
        >>> change_clash(change_frames("Ho una Fiat Panda", "it"), change_frames("A marzo ho venduto la Panda", "it"))
        ('Ho una Fiat Panda', 'A marzo ho venduto la Panda')
    """
    for (_, st_states), (ends, _), flip in ((old, new, False), (new, old, True)):
        if not ends:
            continue
        for things, sclause in st_states:
            for ething, eclause in ends:
                closes = any(s.search(sclause) and e.search(eclause)
                             for s, e in (_CLOSES if flip else _CLOSES + _JOB_ENDS))
                if closes or (things & ething):
                    return (eclause, sclause) if flip else (sclause, eclause)
    return None
