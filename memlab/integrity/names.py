"""Names the entities level cannot judge, in Italian, English and Chinese, for the ``name`` layer of
:mod:`memlab.integrity.values`:

* **a nickname** others use is not a second name: "Mi chiamo Giuseppe" / "Tutti mi chiamano Peppe", "My name is
  William" / "My friends call me Bill", "我叫刘建国" / "同事们都叫我老刘" agree;
* **the one pet's name**: "Ho un solo cane, si chiama Rex" / "Il mio cane si chiama Argo", "We have one cat,
  Mittens" / "Our cat's name is Smokey", "我只有一只狗，叫豆豆" / "我的狗叫旺财" contradict — only when one side says
  there is one (two dogs may well have two names). The name may follow the animal directly ("La mia tartaruga
  Cleopatra", "Our parrot Mango").
"""

from __future__ import annotations

import re

from memlab.entities import introduced_names
from memlab.text import lemma

__all__ = ["name_clash", "nickname", "own_names", "pet_names", "stated_name"]

#: others call the user something: "tutti / gli amici mi chiamano", "my friends / everyone call(s) me", "朋友们都叫我"
_NICKNAME = re.compile(
    r"\b(?i:tutti|gli amici|i miei amici|i colleghi|in famiglia|a casa|mi chiamano tutti|everyone|everybody|people|"
    r"my friends|friends|my family|my colleagues|at work they|they all)\b[^.!?]{0,20}?\b(?i:mi chiamano|call me|calls me)"
    r"\s+(?P<x>[A-Z][a-zà-ÿ]+)|(?:朋友们|同事们|大家|家里人|别人|同学们|他们)都?(?:叫我|喊我|称呼我)(?P<y>[\u4e00-\u9fff]{1,3})")
_STATED = re.compile(
    r"\b(?i:mi chiamo|il mio nome è|my name is|my name's|i'm|i am)\s+(?P<x>[A-Z][a-zà-ÿ]+(?:\s+[A-Z][a-zà-ÿ]+)?)"
    r"|(?:我叫|我的名字是|我的名字叫|我名叫)(?P<y>[\u4e00-\u9fff]{2,4})")
_ANIMALS = ("cane", "cani", "gatto", "gatti", "gatta", "cagnolino", "cagnolina", "coniglio", "criceto", "pappagallo",
            "cavallo", "tartaruga", "cavia", "canarino", "porcellino d'india", "guinea pig", "dog", "cat", "puppy", "pup", "kitten", "rabbit",
            "hamster", "parrot", "horse", "turtle", "pet")
_ANIMALS_ZH = "狗|猫|狗狗|猫咪|兔子|仓鼠|鹦鹉|乌龟|马"
_PET = re.compile(
    rf"\b(?:il mio|la mia|mio|mia|my|our|the)\s+(?:one and only\s+|only\s+|unico\s+|unica\s+)?(?P<a>{'|'.join(_ANIMALS)})\b"
    rf"(?:'s name is|\s+is called|\s+is named|\s+si chiama|\s+se chiama|,\s+(?:l'unic[oa] che ho,\s+)?si chiama|"
    rf",\s+[^,.;!?]{{1,30}},\s+(?:si chiama|is called|is named))\s+"  # "il mio unico gatto, un rosso tigrato, si chiama"
    rf"(?P<x>[A-Z][a-zà-ÿ]+)"
    rf"|\b(?:ho|abbiamo|i have|we have)\s+(?:un solo|una sola|un|una|only one|one|a|just one|just the one|only the one)"
    rf"\s+(?P<b>{'|'.join(_ANIMALS)})"
    rf"\s*(?:,\s*(?:[^,.;!?]{{1,30}},\s*)?(?:si chiama\s+|called\s+|named\s+)?|\s+(?:che si chiama|called|named)\s+)"
    rf"(?P<z>[A-Z][a-zà-ÿ]+)"
    rf"|\b(?P<v>[A-Z][a-zà-ÿ]+)\s*(?:,|-|–|—)\s*(?:my|our|il mio|la mia)\s+(?:one and only\s+|only\s+|unico\s+)?"
    rf"(?P<e>{'|'.join(_ANIMALS)})\b"
    rf"|(?:我的|我家的?|我家唯一的|我唯一的)(?P<c>{_ANIMALS_ZH})(?:的名字)?(?:叫|是)(?P<y>[\u4e00-\u9fff]{{2,3}})"
    rf"|我家?(?:只有|就有|就养了|就|只养了|养了)一(?:只|条)(?P<d>{_ANIMALS_ZH})[，,]\s*(?:[^，。]{{1,6}}[，,]\s*)?(?:它)?叫"
    rf"(?P<w>[\u4e00-\u9fff]{{2,3}})"
    # the name right after the animal: "La mia tartaruga Cleopatra ha vent'anni", "Our parrot Mango just learned ..."
    rf"|\b(?:il mio|la mia|my|our)\s+(?P<f>{'|'.join(_ANIMALS)})\s+(?P<u>(?-i:[A-Z])[a-zà-ÿ]+)\b(?!\s+(?-i:[A-Z]))",
    re.I)
_ONE = re.compile(r"\b(?:un solo|una sola|l'unic[oa]|unic[oa]|only|just one|one|a single|one and only|just the one)\b|"
                  r"只有一|唯一|就一|就有一|就养了一", re.I)


def nickname(text: str) -> str | None:
    """The name others call the user by ("Peppe", "Bill", "老刘"), or ``None``.

    Example:
        >>> nickname("Tutti mi chiamano Peppe"), nickname("My name is Bill")
        ('Peppe', None)
    """
    m = _NICKNAME.search(text)
    return (m.group("x") or m.group("y")) if m else None


def stated_name(text: str) -> str | None:
    """The name the user gives as their own ("Mi chiamo Giuseppe", "我叫王芳"), or ``None``."""
    if nickname(text):
        return None
    m = _STATED.search(text)
    return (m.group("x") or m.group("y")) if m else None


def _animal(word: str) -> str:
    w = word.casefold()
    if re.search(r"[\u4e00-\u9fff]", w):
        return {"狗狗": "狗", "猫咪": "猫"}.get(w, w)
    base = lemma(w, "it" if w in _ANIMALS[:10] else "en")
    return {"cagnolino": "cane", "cagnolina": "cane", "gatta": "gatto", "puppy": "dog", "pup": "dog",
            "kitten": "cat"}.get(base, base)


def pet_names(text: str) -> tuple[tuple[str, str, bool], ...]:
    """(animal, name, the text says it is the only one) for each pet the user names.

    Example:
        >>> pet_names("Ho un solo cane, si chiama Rex")
        (('cane', 'Rex', True),)
    """
    out: list[tuple[str, str, bool]] = []
    one = bool(_ONE.search(text))
    for m in _PET.finditer(text):
        animal = m.group("a") or m.group("b") or m.group("c") or m.group("d") or m.group("e") or m.group("f")
        name = m.group("x") or m.group("z") or m.group("y") or m.group("w") or m.group("v") or m.group("u")
        if animal and name:
            out.append((_animal(animal), name, one))
    return tuple(out)


# ---------------------------------------------------------------------------------------------------- own name
#: the user's own name said outright: "my (full) name is", "mi chiamo", "我叫", "我身份证上的名字是"
_OWN_NAME = re.compile(
    r"\b(?i:my (?:full |real |legal )?name is|my name's|my name,|mi chiamo|il mio nome (?:completo )?è|a nome mio,)\s+"
    r"(?P<x>[A-Z][a-zà-ÿ]+(?:\s+[A-Z][a-zà-ÿ]+)?)(?![\w'’])"
    r"|(?:我叫|我名叫|我(?:身份证上|护照上|证件上)?的(?:全名|名字)(?:是|叫))(?P<y>[\u4e00-\u9fff]{2,4}?)(?=[，。！？,.!?\s]|$)")
#: the user's surname: "il cognome è Galli", "my last name is Ortiz", "我姓赵"
_SURNAME = re.compile(r"\b(?i:il (?:mio )?cognome è|my (?:last name|surname|family name) is)\s+(?P<x>[A-Z][a-zà-ÿ]+)"
                      r"|我姓(?P<y>[\u4e00-\u9fff])(?![\u4e00-\u9fff]{0,1}的)")
def own_names(text: str) -> tuple[tuple[str, ...], str | None]:
    """(the names the user gives as their own, the surname they give), read from outright statements and
    introductions; a nickname others use is not one.

    Example:
        >>> own_names("Piacere, sono Alessandro Ferri.")
        (('Alessandro Ferri',), None)
    """
    if nickname(text):
        return (), None
    names = [m.group("x") or m.group("y") for m in _OWN_NAME.finditer(text)]
    names += [raw for _, _, raw in introduced_names(text)]
    sm = _SURNAME.search(text)
    return tuple(dict.fromkeys(names)), (sm.group("x") or sm.group("y")) if sm else None


def _parts(name: str) -> tuple[str, str | None]:
    """(given name, surname or ``None``); a Chinese name is its surname character and its given name."""
    if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", name):
        return name[1:], name[0]
    words = name.split()
    return words[0].casefold(), (words[-1].casefold() if len(words) > 1 else None)


def name_clash(old: str, new: str) -> tuple[str, str] | None:
    """(old name, new name) when the user gives two names that cannot both be theirs: different given names (one
    not a short form of the other: "Greg" / "Gregory" agree), or different surnames; else ``None``.

    Example:
        >>> name_clash("I'm Gregory, and nobody calls me Greg.", "My name's Patrick, by the way.")
        ('Gregory', 'Patrick')
    """
    (na, sa), (nb, sb) = own_names(old), own_names(new)
    for x in na:
        gx, fx = _parts(x)
        for y in nb:
            gy, fy = _parts(y)
            if not (gx.startswith(gy) or gy.startswith(gx)):
                return x, y
            if fx and fy and fx != fy:
                return x, y
        if sb and fx and fx != sb.casefold():
            return x, sb
    for y in nb:
        _, fy = _parts(y)
        if sa and fy and fy != sa.casefold():
            return sa, y
    return None
