"""Measured message signals: sentence split, language guess, emoji, keywords, tone and fatigue (IT/EN/ZH).

Everything here is a small, documented heuristic over what can be counted in one message: its length,
"don't know" and evasion phrases, explicit tiredness, punctuation and emoji. The conversation memory
folds the per-message fatigue signal over time (``0.7 * old + 0.3 * new``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from enum import StrEnum

from memlab.text import FUNCTION_WORDS, detect_lang, split_sentences, word_count

__all__ = [
    "MessageSignals",
    "Tone",
    "detect_lang",
    "has_emoji",
    "keywords",
    "measure",
    "split_sentences",
    "word_count",
]


class Tone(StrEnum):
    """Detected communication style of the user (formal, casual, brief, verbose)."""

    FORMAL = "formal"
    CASUAL = "casual"
    BRIEF = "brief"
    VERBOSE = "verbose"


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


# --- emoji ----------------------------------------------------------------------------------------
def _is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F300 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x1F000 <= cp <= 0x1F2FF
        or 0x1F900 <= cp <= 0x1F9FF
        or (unicodedata.category(ch) == "So" and cp > 0x2000)
    )


def has_emoji(text: str) -> bool:
    """True when ``text`` holds at least one emoji (pictographs, dingbats, symbols)."""
    return any(_is_emoji(c) for c in text)


def _strip_emoji(text: str) -> str:
    return "".join(c for c in text if not _is_emoji(c) and c not in "\u200d\ufe0f")


# --- keywords -------------------------------------------------------------------------------------
_STOP = FUNCTION_WORDS | frozenset(
    "sono stato stata essere avere fatto fare molto tanto tutto tutti questo quella quel quei ecco "
    "presso verso dopo prima sopra sotto senza tra fra ogni qualche altro altra ancora già sempre mai poi ora "
    "oggi ieri domani così quindi allora però perciò dove cui quale quali sua suo suoi sue loro "
    "about after again also any because been before being both each few more most other some such than "
    "then there these those through very just really like get got going gonna wanna yeah yes okay ok "
    "im ive id ill dont didnt cant wont thats its whats lets".split()
)


def keywords(text: str, *, k: int = 5) -> tuple[str, ...]:
    """Up to ``k`` content words (casefolded, stopwords removed, order of first appearance).

    Example:
        >>> keywords("Lavoro presso Fincons come sviluppatore")
        ('fincons', 'sviluppatore')
    """
    out: list[str] = []
    for w in _WORD.findall(text):
        f = w.casefold().replace("’", "'")
        if "'" in f:
            f = f.split("'")[-1]
        if len(f) < 3 or f in _STOP or f.isdigit() or f in out:
            continue
        out.append(f)
        if len(out) == k:
            break
    return tuple(out)


# --- tone & fatigue -------------------------------------------------------------------------------
def _rx(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + "|".join(phrases) + r")(?!\w)", re.IGNORECASE)


_DUNNO = _rx(
    r"non (?:lo )?so", r"boh+", r"mah+", r"non saprei", r"non ricordo", r"non mi ricordo", r"chi lo sa",
    r"i don'?t know", r"idk", r"dunno", r"no idea", r"not sure", r"can'?t remember", r"whatever", r"不知道", r"随便",
)
_EVADE = _rx(
    r"preferisco non (?:rispondere|dirlo|parlarne)", r"non (?:mi va|voglio) (?:di )?(?:rispondere|parlarne|dirlo)",
    r"passiamo oltre", r"lasciamo (?:stare|perdere)", r"saltiamo", r"prossima domanda", r"cambiamo argomento",
    r"rather not(?: say)?", r"skip(?: it| this)?", r"next question", r"let'?s move on", r"不想说", r"下一个",
)
_TIRED = _rx(
    r"sono stanc[oa]", r"che stanchezza", r"basta così", r"basta domande", r"quante domande", r"ho fretta",
    r"devo andare", r"finiamo", r"i'?m (?:so |really )?tired", r"that'?s enough", r"too many questions",
    r"in a hurry", r"gotta go", r"累了", r"够了",
)
# ambiguous inside longer sentences ("basta che...", "old enough"): counted only in short messages
_TIRED_SHORT = _rx(r"basta", r"enough", r"ancora", r"uff+", r"ugh+", r"sigh")
_FORMAL = _rx(
    r"gentile", r"egregi[oa]", r"cordiali saluti", r"distinti saluti", r"la ringrazio", r"le chiedo", r"potrebbe",
    r"vorrei", r"desidererei", r"dear", r"kind regards", r"best regards", r"sincerely", r"would you (?:kindly|please)",
    r"could you please", r"i would appreciate", r"您",
)
_CASUAL = _rx(
    r"ciao+", r"ehi", r"hey+", r"haha+", r"ahah+", r"lol", r"xd", r"tipo", r"figo", r"dai", r"vabbè", r"ok+",
    r"yeah", r"yep", r"nope", r"gonna", r"wanna", r"cool", r"omg", r"btw", r"哈哈+",
)
_TIRED_EMOJI = frozenset("😴🥱😩😫😑😒🙄😪")

#: At most this many words is a "brief" message; at least ``VERBOSE_WORDS`` is "verbose".
BRIEF_WORDS = 3
VERBOSE_WORDS = 60


@dataclass(frozen=True, slots=True)
class MessageSignals:
    """What was measured on one user message.

    Attributes:
        n_chars: characters (after cleaning).
        n_words: words (CJK characters count one each).
        has_emoji: at least one emoji.
        lang: guessed language of the whole message.
        tone: detected tone, or ``None`` when nothing clear was seen (the memory keeps the last one).
        fatigue: per-message fatigue signal in [0, 1] (before folding).
        components: the parts of ``fatigue`` by name (``short``, ``dunno``, ``evasion``, ``tired``, ...).
    """

    n_chars: int
    n_words: int
    has_emoji: bool
    lang: str
    tone: Tone | None
    fatigue: float
    components: dict[str, float] = field(default_factory=dict)


def measure(text: str) -> MessageSignals:
    """Measure tone and fatigue signals on one (clean) message.

    Fatigue components (summed, capped at 1): ``short`` 0.5 for <= 2 words, 0.35 for <= 4, 0.15 for <= 8;
    ``dunno`` 0.45 ("non so", "boh", "idk"); ``evasion`` 0.5 ("passiamo oltre", "skip"); ``tired`` 0.6
    ("sono stanco", "basta così"; "basta", "uff" only in messages of <= 6 words); ``trailing`` 0.1 (ends with "..." or has no letters); ``emoji`` 0.25
    (tired emoji). An empty message counts as fully short.

    Example:
        >>> s = measure("boh... non so")
        >>> s.tone.value, s.fatigue >= 0.8
        ('brief', True)
    """
    n_chars = len(text)
    n_words = word_count(_strip_emoji(text))
    emoji = has_emoji(text)
    comp: dict[str, float] = {}
    if n_words <= 2:
        comp["short"] = 0.5
    elif n_words <= 4:
        comp["short"] = 0.35
    elif n_words <= 8:
        comp["short"] = 0.15
    if _DUNNO.search(text):
        comp["dunno"] = 0.45
    if _EVADE.search(text):
        comp["evasion"] = 0.5
    if _TIRED.search(text) or (n_words <= 6 and _TIRED_SHORT.search(text)):
        comp["tired"] = 0.6
    stripped = text.strip()
    if stripped.endswith(("...", "…")) or (stripped and not any(c.isalpha() for c in stripped)):
        comp["trailing"] = 0.1
    if any(c in _TIRED_EMOJI for c in text):
        comp["emoji"] = 0.25
    fatigue = float(min(1.0, sum(comp.values())))
    tone: Tone | None
    if n_words <= BRIEF_WORDS:
        tone = Tone.BRIEF
    elif n_words >= VERBOSE_WORDS:
        tone = Tone.VERBOSE
    elif _FORMAL.search(text):
        tone = Tone.FORMAL
    elif _CASUAL.search(text) or emoji or "!!" in text:
        tone = Tone.CASUAL
    else:
        tone = None
    return MessageSignals(n_chars, n_words, emoji, detect_lang(text), tone, fatigue, comp)
