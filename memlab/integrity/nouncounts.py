"""Counts of any countable thing and the lists that name them, in Italian, English and Chinese, for the ``count``
layer of :mod:`memlab.integrity.values`: "Ho due gatti" / "I miei gatti sono Micio, Fuffi e Pallina", "I have
three sisters" / "My sisters, Kate and Emily, live in Ohio", "我有两个哥哥" / "我的三个哥哥都在北京工作".

A count is a first-person possession or ability with a number ("ho / possiedo / suono 2 X", "I have / own / play
2 X", "我有 / 养了 / 会弹 2 个 X"; the text's numbers already in digits); a list is a definitional enumeration of
the user's X ("i miei X sono / si chiamano A, B e C", "my X are A and B", "my X, A and B, ...", "我的 X 叫 A、B
和 C"). Things are compared by lemma (``simplemma``: "gatti" and "gatto", "sisters" and "sister"); Chinese by
the noun as written. Languages and children have their own readers in ``values`` and are left to them.
"""

from __future__ import annotations

import re

from memlab.text import lemma

__all__ = ["noun_counts", "noun_lists"]

#: nouns the values module counts itself (languages, children): left alone here
_OWN = re.compile(r"^(?:lingu|languag|figli|figlio|figlie|figlia|bambin|kid|child|son|daughter)", re.I)
_STOP_NOUNS = frozenset({
    "anni", "anno", "years", "year", "volte", "volta", "times", "time", "giorni", "giorno", "days", "day", "ore",
    "hours", "minuti", "minutes", "settimane", "weeks", "mesi", "months", "euro", "dollars", "km", "kg", "chili",
    "metri", "cm", "pounds", "miles",
})
#: two words for one thing (after lemmatisation)
_SAME_THING = {"grandkid": "grandchild", "nipotino": "nipote", "nipotina": "nipote", "bicycle": "bike",
               "automobile": "car", "auto": "macchina", "cagnolino": "cane", "kitty": "cat", "puppy": "dog",
               "娃": "孩子", "小孩": "孩子", "孩子们": "孩子", "狗狗": "狗", "猫咪": "猫"}
#: a participle between the verb and the count: "Ho visitato 3 capitali", "I've read 5 of his books"
_DONE = (r"(?:(?:già|already|ever)\s+)?(?:visitato|visto|letto|scritto|corso|adottato|cresciuto|avuto|fatto|visited|seen|read|"
         r"written|run|adopted|raised|had|been to)")
_COUNT_IT_EN = re.compile(
    r"\b(?:ho|abbiamo|possiedo|suono|i have|i've got|i have got|i own|we have|we own|i play|i've)\s+"
    rf"(?:{_DONE}\s+)?(?:(?:solo|soltanto|only|just)\s+)?(?P<n>\d{{1,2}}|un solo|una sola|un'unica|only one|a single|one)\s+"
    r"(?:(?:solo|sola|unico|unica)\s+)?(?P<noun>[a-zà-ÿ]{3,20})\b", re.I)
_MEASURE = "个只条位辆把种台部座套间匹头口张本件双盆棵首门家所"
_ZH_STOP = "都也在是叫和、，。,.的了就还住已很去"
_COUNT_ZH = re.compile(rf"我(?:有|养了|养着|养|会弹|会拉|会吹|会做|会|家(?:就|只)?有?|报了|学了|上了|参加了|买了|办了)(?P<n>\d{{1,2}})"
                       rf"[{_MEASURE}]?(?P<noun>[^\d{_ZH_STOP}]{{1,3}})")
#: a count said after its list: "我就办了招行和工行两张信用卡"
_LIST_THEN_COUNT_ZH = re.compile(
    rf"我[^，。！？\d]{{0,4}}?(?:办了|有|买了|养了|去过|学了|会做|会)[^，。！？\d]{{1,30}}?[、和][^，。！？\d]{{1,8}}?"
    rf"(?:这|那)?(?P<n>\d{{1,2}})[{_MEASURE}](?P<noun>[^\d{_ZH_STOP}]{{1,3}})")
#: places counted by what one did there: "我在3个城市工作过", "我去过5个国家"
_COUNT_ZH_WHERE = re.compile(rf"我(?:在|去过)(?P<n>\d{{1,2}})[{_MEASURE}](?P<noun>城市|国家|省|地方)")
_COUNT_ZH_MY = re.compile(rf"我的(?P<n>\d{{1,2}})[{_MEASURE}](?P<noun>[^\d{_ZH_STOP}]{{1,3}})")
_LIST_IT_EN = re.compile(
    r"\b(?:(?:i miei|le mie|my)\s+(?:(?:only|unici|uniche)\s+)?(?P<noun>[a-zà-ÿ]{3,20})|(?:gli|i|le|the)\s+(?:(?:unici|uniche|only)\s+)?"
    r"(?P<rnoun>[a-zà-ÿ]{3,20})(?:\s+[a-zà-ÿ]{3,15})?\s+"  # "le uniche capitali europee che ho visto sono ..."
    rf"(?:che\s+(?:ho|abbiamo|suono|possiedo)(?:\s+{_DONE})?|(?:that|which)\s+i\s+(?:have|own|play)|"
    rf"(?:that\s+|which\s+)?i(?:'ve|\s+have)\s+{_DONE}))\s*"
    # the names right after the noun, with or without a comma: "my nieces, Sophie and Grace," / "my nieces Sophie and Grace"
    r"(?:(?P<cop>si chiamano|sono|sono stat[ie]|erano|are called|are named|are|were)\s*:?\s+|(?P<app>,|(?=(?-i:[A-Z])))\s*|"
    r"(?P<q>\?|:)\s+)", re.I)  # "I miei tatuaggi? Una rondine, una rosa e una scritta"
_LIST_ZH = re.compile(rf"我的(?P<noun>[^\d{_ZH_STOP}]{{1,3}}?)(?:分别)?(?:就是|叫做|叫|是)")
#: what the user's things are, with a verb before "的": "我现在上的兴趣班有书法、古筝和瑜伽", "我工作过的城市就广州和长沙两个";
#: the whole of them only with "就 / 只 / 只有" or a count after the list
_LIST_ZH_VERB = re.compile(rf"我[^，。！？\d]{{0,8}}?的(?P<noun>[^\d{_ZH_STOP}]{{1,3}}?)(?:(?P<only>就是|就|只有)|有|是)(?=[^\d])")
_TRAILING_COUNT = re.compile(rf"\s*(?:这|那)?\s*\d{{1,2}}\s*[{_MEASURE}]\S*$")


def _zh_items(rest: str) -> tuple[list[str], bool]:
    """The items of a Chinese list up to the clause's end (each 1-8 characters), and whether a count closed it
    ("红烧肉、糖醋排骨和番茄炒蛋这三个")."""
    rest = re.split(r"[。！？；，,\n]", rest, maxsplit=1)[0]
    counted = _TRAILING_COUNT.search(rest)
    parts = [x.strip() for x in re.split(r"、|和|及|跟", rest[:counted.start()] if counted else rest)]
    if not parts or not all(re.fullmatch(r"[\u4e00-\u9fff]{1,8}", x) for x in parts):
        return [], False
    return parts, counted is not None


_SPLIT = re.compile(r"\s*(?:,|，|、)\s*(?:(?:and|e|ed)\s+)?|\s+(?:and|e|ed|&)\s+|和|及|跟")
_NAME = re.compile(r"^(?:[A-Z][a-zà-ÿ]+|[\u4e00-\u9fff]{1,3})$")
#: a listed thing that is not a name must come with its article ("la chitarra", "a road bike"): "my friends are
#: awesome and kind" lists no friends
_ARTICLE = r"(?:il|lo|la|i|gli|le|un|una|uno|a|an|the|my|1)"  # "1": "una" in digits
_ITEM = re.compile(rf"^(?:(?:{_ARTICLE}|il mio|la mia)\s+|l'|un')[\wà-ÿ'-]+(?:\s+[\wà-ÿ'-]+){{0,3}}$", re.I)
#: an item's words end before what is said about it: "my knee in 2019", "my appendix when I was twelve"
_ITEM_END = re.compile(r"\s+(?:in|at|on|for|from|with|that|which|when|quando|nel|nell'|a|to)\s+.*$", re.I)
#: a piece of a list that opens like an item: a list cut before it would be miscounted
_ITEM_LIKE = re.compile(rf"^{_ARTICLE}\s+", re.I)


def _key(noun: str, lang: str) -> str | None:
    if re.search(r"[\u4e00-\u9fff]", noun):
        return f"noun:{_SAME_THING.get(noun, noun)}"
    if noun.casefold() in _STOP_NOUNS or _OWN.match(noun):
        return None
    base = lemma(noun, lang)
    return f"noun:{_SAME_THING.get(base, base)}"


def _number(raw: str) -> int:
    return int(raw) if raw.isdigit() else 1


def noun_counts(norm: str, lang: str) -> dict[str, tuple[int, str]]:
    """``noun:<lemma>`` -> (count, phrase) of the first-person counts in a number-normalised text.

    Example:
        >>> noun_counts("Ho 2 gatti e un cane", "it")
        {'noun:gatto': (2, '2 gatti')}
    """
    out: dict[str, tuple[int, str]] = {}
    for m in _COUNT_IT_EN.finditer(norm):
        key = _key(m.group("noun"), lang)
        if key is not None:
            out.setdefault(key, (_number(m.group("n")), f"{m.group('n')} {m.group('noun')}"))
    for m in _VERB_COUNT.finditer(norm):
        verb, n = (m.group("v"), m.group("n")) if m.group("v") else (m.group("zv"), m.group("zn"))
        out.setdefault(_verb_key(verb), (int(n), m.group(0).removeprefix("我")))
    for rx in (_COUNT_ZH, _COUNT_ZH_MY, _FAMILY_ZH, _COUNT_ZH_WHERE, _LIST_THEN_COUNT_ZH):
        for m in rx.finditer(norm):
            key = _key(m.group("noun"), "zh")
            if key is not None:
                out.setdefault(key, (int(m.group("n")), m.group(0).removeprefix("我的").removeprefix("我")))
    for m in _HAVE_LIST.finditer(norm):  # "I've got a road bike, a gravel bike and a mountain bike": three bikes
        rest = re.split(r"[.!?;:\n]", norm[m.end():], maxsplit=1)[0]
        items = []
        for part in _SPLIT.split(rest):
            item = _ARTICLE_ITEM.match(_ITEM_TAIL.split(part.strip(), maxsplit=1)[0])
            if item is None:
                break
            items.append(item)
        keys = {_key(i.group("head"), "en") for i in items}
        key = keys.pop() if len(keys) == 1 else None
        if len(items) >= 2 and key is not None:
            out.setdefault(key, (len(items), ", ".join(i.group(0) for i in items)))
    return out


#: the members of a household counted after a list of them: "我家就我、我老婆和儿子三个人" (digits by then)
_FAMILY_ZH = re.compile(r"我家[^。！？，\d]{0,16}?(?P<n>\d{1,2})[个口](?P<noun>人)")
#: an English enumeration of one kind of thing after a verb of having, each with its article
_HAVE_LIST = re.compile(r"\b(?:i have|i've got|i have got|i own)\s+(?=an?\s)", re.I)
_ARTICLE_ITEM = re.compile(r"^(?:a|an)\s+(?:[\w'-]+\s+){0,2}(?P<head>[a-z]{3,20})$", re.I)
#: where an item's words end: "a mountain bike in the garage", "a dog that I adopted"
_ITEM_TAIL = re.compile(r"\s+(?:in|at|on|for|from|with|that|which|i)\s+", re.I)


#: counts and lists keyed by what one does with the things (played instruments, practised sports), for a list that
#: names none of the counted noun: "Suono tre strumenti" / "Suono solo il piano e la chitarra", "我会弹三种乐器" /
#: "我只会弹钢琴和吉他". The list must be said to be the whole of it ("solo", "only", "只").
_VERB_COUNT = re.compile(
    r"\b(?P<v>suono|pratico|i play|i practi[cs]e)\s+(?P<n>\d{1,2})\s+[a-zà-ÿ]{3,20}\b"
    rf"|我(?P<zv>会弹|会拉|会吹)(?P<zn>\d{{1,2}})[{_MEASURE}]", re.I)
_VERB_ONLY_LIST = re.compile(
    r"\b(?:(?P<v1>suono|pratico)\s+(?:solo|soltanto|solamente)|i\s+only\s+(?P<v2>play|practi[cs]e))\s+"
    r"|我(?:只|就只|仅)(?P<zv>会弹|会拉|会吹)", re.I)
_VERB_KEY = {"i play": "play", "i practice": "practise", "i practise": "practise", "pratico": "practise",
             "suono": "play", "practice": "practise"}


def _verb_key(verb: str) -> str:
    v = verb.casefold()
    return f"verb:{_VERB_KEY.get(v, v)}"


def _items(rest: str, names_only: bool) -> list[str]:
    rest = re.split(r"[.!?;:。！？；\n]", rest, maxsplit=1)[0]
    items: list[str] = []
    for part in _SPLIT.split(rest):
        part = part.strip(" '\"")
        if not part:
            continue
        if not names_only and _ITEM_LIKE.match(part):
            part = _ITEM_END.sub("", part)
        ok = _NAME.match(part) if names_only else (_NAME.match(part) or _ITEM.match(part))
        if not ok:
            first = part.split()[0] if part.split() else ""
            if _NAME.match(first) and not re.search(r"[\u4e00-\u9fff]", first):
                items.append(first)  # "Andrea vivono ...": the list ends with Andrea
            elif not names_only and _ITEM_LIKE.match(part):
                return []  # an item this reader cannot delimit: the count of the list is unknown
            break
        items.append(part)
    return items


def noun_lists(norm: str, lang: str) -> dict[str, tuple[int, str, bool]]:
    """``noun:<lemma>`` -> (items, phrase, definitional) of the definitional lists of the user's things.

    Example:
        >>> noun_lists("I miei gatti sono Micio, Fuffi e Pallina", "it")
        {'noun:gatto': (3, 'Micio, Fuffi, Pallina', True)}
    """
    out: dict[str, tuple[int, str, bool]] = {}
    for m in _LIST_IT_EN.finditer(norm):
        key = _key(m.group("noun") or m.group("rnoun"), lang)
        if key is None:
            continue
        items = _items(norm[m.end():], names_only=m.group("app") is not None)
        if len(items) >= 2 or (len(items) == 1 and m.group("cop")):
            out.setdefault(key, (len(items), ", ".join(items), True))
    for m in _VERB_ONLY_LIST.finditer(norm):
        verb = m.group("v1") or m.group("v2") or m.group("zv")
        rest = norm[m.end():]
        zh = m.group("zv") is not None
        parts = [x.strip() for x in _SPLIT.split(re.split(r"[.!?;:。！？；\n]", rest, maxsplit=1)[0]) if x.strip()]
        items = [x for x in parts if zh or _ITEM.match(x) or re.fullmatch(r"[a-zà-ÿ]{3,20}", x, re.I)]
        if len(items) >= 1:
            out.setdefault(_verb_key(verb), (len(items), "、".join(items) if zh else ", ".join(items), True))
    for m in _LIST_ZH.finditer(norm):
        key = _key(m.group("noun"), "zh")
        items, _ = _zh_items(norm[m.end():])
        if key is not None and len(items) >= 2:
            out.setdefault(key, (len(items), "、".join(items), True))
    for m in _LIST_ZH_VERB.finditer(norm):
        key = _key(m.group("noun"), "zh")
        items, counted = _zh_items(norm[m.end():])
        if key is not None and len(items) >= 2:
            out.setdefault(key, (len(items), "、".join(items), bool(m.group("only") or counted)))
    return out
