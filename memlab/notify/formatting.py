"""How notifications reach the user, by urgency (Italian by default; English and Chinese available).

- HIGH: a block **before** the reply. For a contradiction it is the seed's sentence quoting what the user said each
  time, then the A–D question block, each option with its value when the detector found one::

      [⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto «Sono nato il 12 luglio 1990», ma ora mi dici «Il mio compleanno è il 15 agosto».
      Il dato «compleanno» non coincide: prima 12 luglio, ora 15 agosto.
      [⚠️ CONTRADDIZIONE RILEVATA]
      Ho notato una contraddizione nella memoria:
      1. Memoria precedente: "Sono nato il 12 luglio 1990"
      2. Memoria nuova: "Il mio compleanno è il 15 agosto"
      Quale informazione è corretta?
      - A) La prima (12 luglio)
      - B) La seconda (15 agosto)
      - C) Entrambe sono corrette (spiega il contesto)
      - D) Cancella entrambe

  From the ``[⚠️ CONTRADDIZIONE RILEVATA]`` marker on, the block is the seed's; the sentence and the explanation
  line (what differs) come before it. The explanation line and the option values are rendered in the language the block is shown in (from what the
  checker recorded, see :func:`memlab.integrity.explain.render_explanation`); other HIGH notifications are shown as
  ``[⚠️ IMPORTANTE] <content>``.
- MEDIUM: **after** the reply, the offer "Ho una notifica importante per te. Vuoi che te la mostri ora? (sì/no)"
  (with several waiting, one plural offer: "Ho alcune notifiche importanti per te. Vuoi che te le mostri ora?");
  a "sì" in the next message shows them, a "no" leaves them in the bell.
- LOW: only the bell badge count.

Every user text a notification quotes (what the user said, the two memories, the values, a HIGH content, the note
of a resolution) is shown through :func:`memlab.text.display_text`: zero-width characters removed, bidi controls
balanced and the text isolated in FSI … PDI when it holds right-to-left letters or controls, so a U+202E inside a
memory cannot reverse the block's own text after it (the display policy of :mod:`memlab.text`).

Fatigue (``> 0.7``, the user's fatigue score from the conversation memory): MEDIUM notifications are
treated as LOW for the turn (not offered) and at most one HIGH is shown per turn. :func:`plan_turn` is the
pure policy; :func:`parse_choice` and :func:`parse_yes_no` read the user's answers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memlab.integrity.explain import render_explanation, render_values
from memlab.notify.records import Notification, NotificationType, ResolutionChoice
from memlab.records import Urgency
from memlab.text import display_text, is_question, messages, one_line, split_sentences

__all__ = [
    "FATIGUE_THRESHOLD",
    "TurnPlan",
    "contradiction_sentence",
    "declined_text",
    "format_high_block",
    "format_notification",
    "format_resolution",
    "medium_offer",
    "parse_choice",
    "parse_yes_no",
    "plan_turn",
]

#: Above this fatigue score MEDIUM becomes LOW for the turn and at most one HIGH is shown.
FATIGUE_THRESHOLD = 0.7

def _t(lang: str) -> Mapping[str, str]:
    return messages(lang)


def _shown(text: str, max_chars: int | None = None) -> str:
    """User text as it appears inside a notification: on one line, and neutralised for display
    (:func:`memlab.text.display_text`: no zero-width characters, its bidi controls balanced and isolated, so the
    block's own text after it renders in order)."""
    return display_text(one_line(text, max_chars=max_chars))


def _pair_texts(n: Notification) -> tuple[str, str]:
    p = n.payload
    first = p.get("first", {}).get("text", "") if isinstance(p.get("first"), dict) else ""
    second = p.get("second", {}).get("text", "") if isinstance(p.get("second"), dict) else ""
    return str(first), str(second)


def format_notification(n: Notification, lang: str = "it", *, with_ref: bool = False) -> str:
    """The full text of one notification (a contradiction gets the A–D question block).

    Args:
        n: the notification.
        lang: ``it`` (default), ``en`` or ``zh``.
        with_ref: add a line naming the notification id (used when several are shown at once).
    """
    t = _t(lang)
    if n.type is NotificationType.CONTRADICTION:
        first, second = _pair_texts(n)
        v1, v2 = _pair_values(n, lang)
        # user texts stay on their own numbered line, quoted: a memory holding newlines and "A) ..." lines
        # cannot add options or a second block
        details = n.payload.get("details") if isinstance(n.payload.get("details"), dict) else {}
        clarify = details.get("kind") == "clarification"
        # the explanation in the reader's language, rebuilt from what the checker recorded (older notifications:
        # the text stored with them)
        expl = render_explanation(details.get("explain"), lang) or str(n.payload.get("explanation") or "")
        expl = _shown(_statement_only(expl))  # it quotes the two values the user wrote
        if clarify:
            lines = [t["clarify_head"]]
        else:  # the seed's sentence and what differs, then the seed's block under its marker
            lines = [contradiction_sentence(n, lang), *([expl] if expl else []), t["contradiction_marker"],
                     t["contradiction_head"]]
        lines += [f'1. {t["previous"]}: "{_shown(first)}"', f'2. {t["new"]}: "{_shown(second)}"']
        if clarify and expl:
            lines.append(expl)
        lines += [t["question"], t["A"].format(value=v1), t["B"].format(value=v2), t["C"], t["D"]]
        if with_ref:
            lines.append(t["ref"].format(id=n.id))
        return "\n".join(lines)
    head = t["important"] if n.urgency is Urgency.HIGH else f"[{n.type.value}]"
    return f"{head} {_shown(n.content)}"


def contradiction_sentence(n: Notification, lang: str = "it") -> str:
    """The seed's HIGH sentence for a contradiction, quoting what the user said each time (the words of the chat
    message a memory came from, when the notification recorded them, else the memory's text), e.g.
    ``[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto «Sono nato il 12 luglio 1990»,
    ma ora mi dici «Il mio compleanno è il 15 agosto».``"""
    p = n.payload

    def said(side: str) -> str:
        d = p.get(side) if isinstance(p.get(side), dict) else {}
        return display_text(one_line(str(d.get("said") or d.get("text") or ""), max_chars=200).rstrip(" .。!！"))

    return _t(lang)["contradiction_said"].format(old=said("first"), new=said("second"))


def _pair_values(n: Notification, lang: str) -> tuple[str, str]:
    """`` (12 luglio)``-style suffixes for the A/B options: the two values the detector compared, in ``lang`` when
    it recorded them structured (``details.explain``), else as it wrote them (``details.spans``), else empty."""
    details = n.payload.get("details") if isinstance(n.payload.get("details"), dict) else {}
    spans = render_values(details.get("explain"), lang) or details.get("spans")
    if not (isinstance(spans, list | tuple) and len(spans) == 2
            and all(isinstance(x, str) and x.strip() for x in spans)):
        return "", ""
    other, new = (_shown(x, max_chars=60) for x in spans)  # the detector's order: the earlier memory, the new one
    first = n.payload.get("first") if isinstance(n.payload.get("first"), dict) else {}
    a, b = (new, other) if first.get("id") == n.payload.get("new_id") else (other, new)
    return f" ({a})", f" ({b})"


def _statement_only(text: str) -> str:
    """The explanation without its own closing question (the block asks "Quale informazione è corretta?")."""
    return " ".join(s for s in split_sentences(text) if not is_question(s)).strip()


def format_high_block(notifications: Sequence[Notification], lang: str = "it") -> str:
    """The block shown before the reply for the HIGH notifications of a turn ("" when none)."""
    if not notifications:
        return ""
    several = len(notifications) > 1
    return "\n\n".join(format_notification(n, lang, with_ref=several) for n in notifications)


def medium_offer(lang: str = "it", count: int = 1) -> str:
    """The MEDIUM offer shown after the reply: singular for one notification, plural for several."""
    return _t(lang)["offer" if count <= 1 else "offer_many"]


def format_resolution(n: Notification, lang: str = "it") -> str:
    """Confirmation text after a contradiction was resolved through the chat."""
    t = _t(lang)
    first, second = (_shown(x) for x in _pair_texts(n))
    choice = (n.choice or "").upper()
    if choice == "C" and n.note:
        msg = t["res_C_note"].format(note=_shown(n.note))
    elif choice in ("A", "B", "C", "D"):
        msg = t[f"res_{choice}"].format(first=first, second=second)
    else:
        msg = ""
    return f"{msg} {t['undo']}".strip()


def declined_text(lang: str = "it", count: int = 1) -> str:
    """Reply to a "no" after a MEDIUM offer (plural when the offer held several notifications)."""
    return _t(lang)["declined" if count <= 1 else "declined_many"]


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What one assistant turn does with the pending notifications (output of :func:`plan_turn`).

    Attributes:
        high: HIGH notifications shown in full before the reply.
        offer: the MEDIUM notification offered after the reply (at most one offer per turn), or None.
        offer_more: the other MEDIUM notifications not yet offered, offered together with ``offer`` (the offer then
            speaks in the plural and "yes" shows them all).
        badge_only: everything else (LOW, downgraded MEDIUM, HIGH beyond the per-turn limit).
        fatigued: whether the fatigue rule applied.
    """

    high: tuple[Notification, ...] = ()
    offer: Notification | None = None
    badge_only: tuple[Notification, ...] = field(default_factory=tuple)
    offer_more: tuple[Notification, ...] = ()
    fatigued: bool = False


def plan_turn(
    pending: Sequence[Notification], *, fatigue: float = 0.0, max_high: int = 3,
    fatigue_threshold: float = FATIGUE_THRESHOLD,
) -> TurnPlan:
    """Decide which pending notifications a turn shows, offers, or leaves in the badge.

    HIGH notifications not yet shown are shown (oldest first, at most ``max_high``; at most one when
    ``fatigue > fatigue_threshold``). HIGH ones already shown and still unanswered stay in the badge (they
    can be answered at any time). The MEDIUM ones not yet offered are offered in one question (``offer`` and
    ``offer_more``), unless the user is fatigued, in which case MEDIUM counts as LOW for this turn.
    """
    fatigued = float(fatigue) > fatigue_threshold
    limit = 1 if fatigued else max(1, int(max_high))
    high: list[Notification] = []
    offer: Notification | None = None
    more: list[Notification] = []
    rest: list[Notification] = []
    for n in sorted(pending, key=lambda n: n.id):
        if n.urgency is Urgency.HIGH and n.shown_at is None and len(high) < limit:
            high.append(n)
        elif n.urgency is Urgency.MEDIUM and n.offered_at is None and n.shown_at is None and not fatigued:
            if offer is None:
                offer = n
            else:
                more.append(n)
        else:
            rest.append(n)
    return TurnPlan(high=tuple(high), offer=offer, badge_only=tuple(rest), fatigued=fatigued, offer_more=tuple(more))


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"\s+", " ", text).strip()


_WORD_CHOICES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(la |il |lo |the )?(prima|primo|first|1st)( (e|è|is) (quella )?(corretta|giusta|correct|right))?\b"), "A"),
    (re.compile(r"^(la |il |lo |the )?(seconda|secondo|second|2nd)( (e|è|is) (quella )?(corretta|giusta|correct|right))?\b"),
     "B"),
    (re.compile(r"^(sono )?(entrambe|entrambi|tutte e due|tutti e due|both)( (corrette|corretti|giuste|giusti|correct|"
                r"are correct|sono corrette))?\b"), "C"),
    (re.compile(r"^(cancella|cancellale|elimina|eliminale|delete|remove)( (entrambe|entrambi|tutte e due|both|them))?\b"
                r"|^(nessuna|neither|none)( delle due| of them)?\b"), "D"),
]
_ZH_CHOICES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(第一个|第一条|前者)"), "A"),
    (re.compile(r"^(第二个|第二条|后者)"), "B"),
    (re.compile(r"^(两个都对|都对|都正确|两个都正确)"), "C"),
    (re.compile(r"^(都删除|都删掉|全部删除|两个都删)"), "D"),
]
# "A", "a)", "2: B", "#2 c - ...", "C: uno è il compleanno di mia madre"
_LETTER = re.compile(r"^(?:#?(?P<ref>\d+)\s*[:.)\-]\s*)?(?P<letter>[abcd])(?P<sep>\s*[).:,;\-]|\s+|$)")
_LETTER_REF = re.compile(r"^(?P<letter>[abcd])\s+#?(?P<ref>\d+)$")


def parse_choice(text: str) -> tuple[ResolutionChoice, str | None, int | None] | None:
    """Read an answer to a contradiction.

    Accepted: ``A``/``B``/``C``/``D`` (optionally ``a)``, ``B.``, with a notification number: ``2: B``, ``B 2``),
    "la prima", "la seconda", "entrambe (corrette)", "cancella entrambe", "nessuna", "the first", "both",
    "delete both"; Chinese "第一个", "第二个", "都对", "都删除". Text after a ``C`` answer is the user's explanation. A bare Italian "a" followed by words
    ("a che ora...") is not an answer.

    Returns:
        ``(choice, note, notification_ref)`` or None when the text is not an answer.
    """
    raw = text.strip()
    folded = _fold(raw)
    if not folded or len(folded) > 2000:
        return None
    m = _LETTER_REF.match(folded)
    if m is not None:
        return ResolutionChoice(m.group("letter").upper()), None, int(m.group("ref"))
    m = _LETTER.match(folded)
    if m is not None:
        letter = m.group("letter")
        tail = folded[m.end():].strip()
        punct = m.group("sep").strip() != ""
        if tail and not punct and letter != "c":
            return None  # "a che ora ...", "d altronde": ordinary sentences
        ref = int(m.group("ref")) if m.group("ref") else None
        note = _tail_original(raw, tail) if (letter == "c" and tail) else None
        if tail and letter != "c" and len(tail.split()) > 6:
            return None
        return ResolutionChoice(letter.upper()), note or None, ref
    for pat, letter in _ZH_CHOICES:
        m3 = pat.match(folded)
        if m3 is not None:
            tail = folded[m3.end():].strip(" ,.;:-!，。：；")
            note = _tail_original(raw, tail) if letter == "C" and tail else None
            return ResolutionChoice(letter), note or None, None
    for pat, letter in _WORD_CHOICES:
        m2 = pat.match(folded)
        if m2 is not None:
            tail = folded[m2.end():].strip(" ,.;:-!")
            if letter != "C" and len(tail.split()) > 4:
                return None
            note = _tail_original(raw, tail) if letter == "C" and tail else None
            return ResolutionChoice(letter), note or None, None
    return None


def _tail_original(raw: str, folded_tail: str) -> str:
    """The user's own words (original case and accents) for the folded tail of an answer."""
    words = raw.split()
    n = len(folded_tail.split())
    cand = " ".join(words[-n:]) if n else ""
    if _fold(cand) == folded_tail:
        return cand.strip(" ,.;:-")
    return folded_tail


_YES = re.compile(r"^(si|sì|certo|ok|okay|va bene|yes|yep|sure|mostra|mostramela|fammela vedere|show( me)?( it)?)\b"
                  r"|^(是|好|好的|可以|行)$")
_NO = re.compile(r"^(no|nope|non ora|dopo|più tardi|piu tardi|later|not now)\b|^(不|不要|不用|以后再说|等一下)$")


def parse_yes_no(text: str) -> bool | None:
    """``True`` for "sì"/"yes"/"ok"..., ``False`` for "no"/"non ora"/"later"..., None otherwise."""
    folded = _fold(text).strip(" !.?,")
    if _YES.match(folded):
        return True
    if _NO.match(folded):
        return False
    return None
