"""Opposite self-descriptions, in Italian, English and Chinese: the ``trait`` layer of :mod:`memlab.integrity.values`.

* **Two poles of one trait**: "Sono mattiniero" / "sono un nottambulo", "I'm an introvert" / "I'm such an extrovert",
  "我是左撇子" / "我是右撇子". Only the user's own, stated and not negated ("I'm not a morning person" is said of a
  night owl, and is not read).
* **An only child and a sibling**: "Sono figlio unico" / "Da piccolo dividevo la cameretta con mio fratello", "I'm an
  only child" / "My sister is visiting", "我是独生女" / "我哥下个月结婚". Step-, half- and in-law siblings and
  cousins are not siblings here.
* **A language spoken well and hardly**: "I'm fluent in Spanish" / "I only know a few words of Spanish",
  "Parlo il tedesco da madrelingua" / "Di tedesco so solo qualche parola"; two ways of not speaking it agree ("I
  can't speak French" / "I never learned any French").

Example:
    >>> trait_clash("Sono mattiniera.", "La mattina faccio fatica ad alzarmi, sono una nottambula.")
    ('Sono mattiniera', 'sono una nottambula')
"""

from __future__ import annotations

import re

from memlab.integrity.habits import other_person

__all__ = ["language_levels", "trait_clash", "traits"]

#: trait -> (pattern of one pole, pattern of the other)
_POLES: dict[str, tuple[str, str]] = {
    "chronotype": (
        r"\b(?:early (?:riser|bird)|morning person|mattinier[oa]|allodola)\b|早起的人|早起的鸟|习惯早起",
        r"\b(?:night owl|night person|nottambul[oa]|nottetempo|gufo)\b|夜猫子|习惯熬夜|夜型人"),
    "sociability": (r"\b(?:introvert(?:ed)?|introvers[oa]|riservat[oa])\b|内向的人|性格内向|我很内向|我内向",
                    r"\b(?:extrovert(?:ed)?|extravert(?:ed)?|estrovers[oa]|socievolissim[oa])\b|外向的人|性格外向|我很外向|我外向"),
    "handedness": (r"\b(?:left-handed|lefty|mancin[oa])\b|左撇子|用左手", r"\b(?:right-handed|destrors[oa])\b|右撇子"),
}
_SELF = re.compile(r"\b(?:i'm|i am|im|i've always been|sono|sono sempre stat[oa]|io sono)\b|^\s*(?:mattinier|nottambul)|我是|我属于|我这人|我",
                   re.I)
_NEG = re.compile(r"\b(?:not|never|non|mai|n't|no longer|più)\b|n't\b|不是|不算|并不|从来不是|不再", re.I)
_CLAUSES = re.compile(r"[.;!?。！？；\n,，]|\b(?:ma|but|però|e|and)\b", re.I)

_ONLY_CHILD = re.compile(r"\b(?:only child|figli[oa] unic[oa])\b|独生子女|独生子|独生女|家里就我一个孩子", re.I)
_SIBLING = re.compile(
    r"\b(?:my|mio|mia|miei|mie)\s+(?:(?:older|younger|little|big|twin|elder|baby|maggiore|minore|piccol[oa]|grande)\s+)?"
    r"(?:brothers?|sisters?|siblings|fratell[oi]|sorell[ae])\b(?![-\s]+in[-\s]+law)|\bho\s+(?:un|una|due|tre)\s+(?:fratell|sorell)"
    r"|\bi have (?:a|an|two|three) (?:older |younger |little |big |twin )?(?:brothers?|sisters?)\b"
    r"|我(?:的)?(?:亲)?(?:哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹)(?!夫|媳|妇)", re.I)
_HALF = re.compile(r"\b(?:step|half|fratellastr|sorellastr|in-law|cognat)\w*|表|堂", re.I)

_FLUENT = re.compile(r"\b(?:fluent(?:ly)?|native speaker|madrelingua|fluente(?:mente)?|perfettamente|benissimo|"
                     r"bilingual|bilingue)\b|流利|母语|说得很好", re.I)
_FEW = re.compile(r"\b(?:a few words|qualche parola|poche parole|only a little|just a little|un pochino|"
                  r"solo un po'|very basic|molto base|barely)\b|只会几句|只会一点|一点点|几句", re.I)
_NONE = re.compile(r"\b(?:can't speak|cannot speak|don't speak|do not speak|never learned|non parlo|non so parlare|"
                   r"non (?:lo|la) parlo|non (?:lo|la) so parlare|non ho mai studiato|non l'ho mai studiat[oa]|"
                   r"non ho mai imparato)\b|不会说|不会讲|从来没学过|没学过", re.I)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


def traits(text: str) -> dict[str, tuple[int, str]]:
    """trait -> (pole 0 or 1, clause) of the user's stated, not negated, self-descriptions."""
    out: dict[str, tuple[int, str]] = {}
    for clause in _clauses(text):
        if _NEG.search(clause) or other_person(clause):
            continue
        for trait, poles in _POLES.items():
            for pole, rx in enumerate(poles):
                if re.search(rx, clause, re.I) and _SELF.search(clause):
                    out.setdefault(trait, (pole, clause))
    return out


def _only_child(text: str) -> str | None:
    m = _ONLY_CHILD.search(text)
    if m is None or _NEG.search(text[max(0, m.start() - 12):m.start()]):
        return None
    return m.group(0)


def _sibling(text: str) -> str | None:
    for m in _SIBLING.finditer(text):
        if not _HALF.search(text[max(0, m.start() - 4):m.end() + 8]):
            return m.group(0)
    return None


def language_levels(text: str, names: dict[str, str]) -> dict[str, tuple[str, str]]:
    """ISO 639-3 code -> (``fluent`` | ``few`` | ``none``, clause) of how well the user speaks a language named in the
    clause (``names``: casefolded language name -> code)."""
    out: dict[str, tuple[str, str]] = {}
    if other_person(text):
        return out
    for clause in re.split(r"[.;!?。！？；\n]", text):
        low = clause.casefold()
        level = "none" if _NONE.search(clause) else "few" if _FEW.search(clause) else \
            "fluent" if _FLUENT.search(clause) else None
        if level is None:
            continue
        words = re.findall(r"[a-zà-ÿ]+", low)
        for run in re.findall(r"[\u4e00-\u9fff]+", low):  # "我的日语很流利": every piece ending in 语 / 文
            words += [run[i:j + 1] for j, ch in enumerate(run) if ch in "语文" for i in range(max(0, j - 4), j)]
        for word in words:
            code = names.get(word) or (names.get(word[:-1] + "语") if word.endswith("文") else None)
            if code is not None:
                out.setdefault(code, (level, clause.strip()))
    return out


def trait_clash(old: str, new: str) -> tuple[str, str] | None:
    """(old clause, new clause) of two opposite self-descriptions (see the module docs), else ``None``."""
    ta, tb = traits(old), traits(new)
    for trait, (pole, clause) in tb.items():
        if trait in ta and ta[trait][0] != pole:
            return ta[trait][1], clause
    for a, b, flip in ((old, new, False), (new, old, True)):
        only = _only_child(a) if not other_person(a) else None
        sib = _sibling(b) if only else None
        if only and sib:
            return (only, sib) if not flip else (sib, only)
    return None
