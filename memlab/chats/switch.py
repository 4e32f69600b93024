"""Natural-language chat switch: clean the request, score chats, decide switch / ask / none.

Scoring (documented formula). For a chat with summary embedding ``s`` and the query embedding ``q``
(query mode), ``sim = cos(q, s)``. Only chats with ``sim >= tau`` are candidates, where ``tau`` is the
embedder's calibrated chat-search threshold (``embedder.thresholds.chat_search``; 0.3 if the embedder has
none). Each candidate gets::

    ref   = max(tau, median(sim over all the user's chats))     (the median only when the user has >= 3 chats)
    score = (sim - ref) / (1 - ref)  +  recency_weight * 2 ** (-age_days / half_life_days)  +  lexical_weight * lex

The first term rescales similarity above a reference to [0, 1]: above the calibrated threshold, or above the
"background" similarity of the query to this user's chats when that is higher. So the same margin means the
same thing for an embedder with a wide cosine scale (MiniLM) and one with a compressed scale (e5, where
unrelated texts still score ~0.8). The second term breaks near-ties in favour of the chat used most recently
(``age_days`` = days since its last activity). The third is lexical evidence for the words the request names
("Tokyo" in "la chat in cui parlavamo del viaggio a Tokyo", when the user also has a chat about a trip to Osaka:
e5 puts the two trips 0.08 apart, under the margin): ``lex`` = the share of the request's *distinctive* terms
(found in some of the user's chats but not in all of them) that the chat's title, summary or archived passages
contain, matched by SQLite FTS5 with memlab's tokenizer (:mod:`memlab.store.lexical`: stemming, accents folded,
CJK as character pairs). A term every chat contains says nothing about which one is meant; with none distinctive,
``lex = 0`` everywhere. Defaults: ``recency_weight = 0.05``, ``half_life_days = 14``, ``margin = 0.1``: recency
alone can never create a clear winner; ``lexical_weight =`` :data:`LEXICAL_WEIGHT` ``= 0.05``, chosen on LoCoMo's dev
conversations only (``eval/experiments/switch_lexical_weight.py``: with every dev session a chat of its own, 36
chats, 0.05 gives the most right switches, 14 of 108 named and masked queries vs 13 at 0, without more wrong
switches than the dense switch, 21; 0.1 adds a wrong one; the two dev conversations as chats are right at every
weight). With it the seed's phrase clears the margin by little (Tokyo - Osaka ≈ 0.10).

Decision: no candidate -> ``none``; one candidate, or ``score_1 - score_2 >= margin`` -> ``switch`` to the
first; otherwise -> ``ask`` (the caller shows the candidates and lets the user choose).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from memlab.chats.store import Chat

__all__ = [
    "LEXICAL_WEIGHT",
    "ChatSwitch",
    "background_reference",
    "decide_switch",
    "recency_factor",
    "strip_switch_phrase",
    "switch_request",
    "switch_score",
]

SwitchDecision = Literal["switch", "ask", "none"]

#: Weight of the lexical evidence in the switch score (module docstring).
LEXICAL_WEIGHT = 0.05


@dataclass(frozen=True, slots=True)
class ChatSwitch:
    """Result of a chat-switch request (:meth:`memlab.chats.ChatStore.search`).

    Attributes:
        decision: ``switch`` (one clear winner: go to ``chat_id``), ``ask`` (several close candidates: ask the
            user which one), ``none`` (no chat is similar enough).
        chat_id: the chat to switch to when ``decision == "switch"``, else ``None``.
        candidates: ``(chat, score)`` pairs, best first (at most ``k``).
        query: the topic actually searched (the request without "the chat where we talked about").
    """

    decision: SwitchDecision
    chat_id: str | None
    candidates: tuple[tuple[Chat, float], ...]
    query: str = ""


# Leading phrases of a switch request, Italian / English / Chinese. Removing them leaves the topic, which is
# what the chat summaries are about ("la chat in cui parlavamo del viaggio a Tokyo" -> "viaggio a Tokyo").
_LEAD = [
    r"(?:ti ricordi |ricordi )?(?:(?:pass(?:iamo|a|are)|torn(?:iamo|a|are)|riprend(?:iamo|i|ere)|ripart(?:iamo|i)|va(?:i|di)|andiamo|apri|riapri"
    r"|mostrami|fammi vedere|cerca|trova)\s+(?:(?:a|alla|nella|su|sulla|la)\s+)?)?"
    r"(?:(?:la|quella)\s+)?(?:chat|conversazione|discussione)\s+"
    r"(?:(?:in cui|dove|nella quale|di cui|che)\s+)?(?:(?:abbiamo|avevamo|ho|hai)\s+)?"
    r"(?:(?:parla|discuss|pianificat|organizzat)\w*\s+|detto\s+)?"
    r"(?:(?:riguardo a|a proposito di|sull'|dell'|sulla|sullo|sulle|sugli|della|dello|delle|degli|sul|sui|del|dei|di|su)(?:\s+|(?<=')))?",
    r"(?:(?:let'?s |can we |could we |please )?(?:(?:go|get|come)\s+back|return|switch|jump|move)\s+(?:back\s+)?to\s+"
    r"|open\s+|show me\s+|find\s+)?"
    r"(?:(?:the|that|our)\s+)?(?:chat|conversation|thread|discussion)\s+"
    r"(?:(?:where|in which|when|that)\s+)?(?:(?:we|i|you)\s+)?(?:(?:were|had|have)\s+)?"
    r"(?:(?:talk|discuss|chat|plann)\w*\s+|was\s+)?(?:(?:about|on|regarding|of)\s+)?",
    r"(?:回到|切换到|打开|找到)?(?:我们)?(?:之前)?(?:讨论|聊|谈)(?:过)?(?:的)?(?:关于)?",
]
_LEAD_RE = [re.compile("^" + p, re.IGNORECASE) for p in _LEAD]
_TRAIL_RE = re.compile(r"(?:的(?:那个)?(?:聊天|对话))?[\s?？!.。]*$")


# A message that asks to change chat: a verb of moving plus "chat"/"conversation" at its start (a bare mention of
# "la chat di ieri" is not a request).
_REQUEST_RE = (
    re.compile(
        r"^(?:ti prego,?\s+|per favore,?\s+)?(?:pass(?:iamo|a|are)|torn(?:iamo|a|are)|riprend(?:iamo|i)|vai|andiamo"
        r"|apri|riapri|riportami|spostiamoci)\s+(?:(?:a|alla|nella|sulla|la|su)\s+)?(?:(?:quella|la)\s+)?"
        r"(?:chat|conversazione|discussione)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:let'?s\s+|can we\s+|could we\s+|please\s+)?(?:(?:go|get|come)\s+back|return|switch|jump|move|open)"
        r"\s+(?:back\s+)?(?:to\s+)?(?:(?:the|that|our)\s+)?(?:chat|conversation|thread)\b",
        re.IGNORECASE,
    ),
    re.compile(r"^(?:请)?(?:回到|切换到|切换回|打开|返回)[^。！？?!]*(?:聊天|对话)"),
)


def switch_request(message: str) -> str | None:
    """The topic when ``message`` asks to move to another chat, else ``None``.

    Example:
        >>> switch_request("Passiamo alla chat in cui parlavamo del viaggio a Tokyo")
        'viaggio a Tokyo'
        >>> switch_request("Let's go back to the conversation about my marathon training")
        'my marathon training'
        >>> switch_request("回到我们讨论东京旅行的聊天"), switch_request("La chat di ieri era divertente")
        ('东京旅行', None)
    """
    text = message.strip()
    if len(text) > 300 or not any(rx.match(text) for rx in _REQUEST_RE):
        return None
    return strip_switch_phrase(text)


def strip_switch_phrase(query: str) -> str:
    """The topic of a switch request, without the "chat where we talked about" wrapper.

    Returns the original text when nothing is left after stripping.

    Example:
        >>> strip_switch_phrase("la chat in cui parlavamo del viaggio a Tokyo")
        'viaggio a Tokyo'
        >>> strip_switch_phrase("Let's go back to the chat about my marathon training")
        'my marathon training'
        >>> strip_switch_phrase("viaggio a Tokyo")
        'viaggio a Tokyo'
    """
    text = query.strip()
    for rx in _LEAD_RE:
        m = rx.match(text)
        if m and m.end() > 0:
            text = text[m.end() :]
            break
    text = _TRAIL_RE.sub("", text).strip()
    return text if text else query.strip()


def recency_factor(last_activity: datetime, now: datetime, half_life_days: float) -> float:
    """``2 ** (-age_days / half_life_days)`` (1.0 for activity in the future or now)."""
    age_days = max((now - last_activity).total_seconds() / 86400.0, 0.0)
    return float(2.0 ** (-age_days / half_life_days))


def background_reference(sims: Sequence[float] | np.ndarray, tau: float, *, min_chats: int = 3) -> float:
    """``max(tau, median(sims))`` when there are at least ``min_chats`` similarities, else ``tau``."""
    values = np.asarray(sims, dtype=np.float64)
    if values.size < min_chats:
        return float(tau)
    return float(max(tau, float(np.median(values))))


def switch_score(
    sim: float, tau: float, recency: float, recency_weight: float, lexical: float = 0.0, lexical_weight: float = 0.0
) -> float:
    """``(sim - tau) / (1 - tau) + recency_weight * recency + lexical_weight * lexical`` (``tau`` = the reference;
    see the module docstring)."""
    return (sim - tau) / max(1.0 - tau, 1e-6) + recency_weight * recency + lexical_weight * lexical


def decide_switch(scores: Sequence[float], margin: float) -> SwitchDecision:
    """``none`` / ``switch`` / ``ask`` from candidate scores sorted best first."""
    if not scores:
        return "none"
    if len(scores) == 1 or scores[0] - scores[1] >= margin:
        return "switch"
    return "ask"
