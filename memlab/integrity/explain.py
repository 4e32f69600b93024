"""User-facing explanations of contradictions (Italian by default, English and Chinese on request).

An explanation names what disagrees and cites both values, in words a user understands, e.g.
"Risulta che sei nato il 12 luglio 1990, ma il tuo compleanno risulta il 15 agosto: le due date non
coincidono. Quale è corretta?"

The checker writes its explanation in the database's language, and also what the explanation is made of
(:func:`explain_data`: the level's rule or slot and the raw values) into the contradiction's ``details["explain"]``.
A notification is shown in the language of the user reading it: :func:`render_explanation` and
:func:`render_values` rebuild the sentence and the A/B option values from that record in any of it/en/zh.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from memlab.entities import Entity, EntityKind, format_value
from memlab.text import messages

__all__ = ["ATTRIBUTE_LABELS", "explain_data", "explain_entities", "explain_judge", "explain_key", "explain_pattern",
           "render_explanation", "render_values"]

#: attribute -> (Italian label, English label)
ATTRIBUTE_LABELS: dict[str, tuple[str, str]] = {
    "born": ("data di nascita", "date of birth"),
    "birthday": ("compleanno", "birthday"),
    "anniversary": ("anniversario", "anniversary"),
    "deadline": ("scadenza", "deadline"),
    "wedding": ("data del matrimonio", "wedding date"),
    "exam": ("data dell'esame", "exam date"),
    "move": ("data del trasloco", "moving date"),
    "graduation": ("data della laurea", "graduation date"),
    "date": ("data", "date"),
    "height": ("altezza", "height"),
    "weight": ("peso", "weight"),
    "age": ("età", "age"),
    "money": ("importo", "amount"),
    "count": ("numero", "number"),
    "distance": ("distanza", "distance"),
    "name": ("nome", "name"),
    "lives_in": ("città in cui vivi", "place you live in"),
    "from_place": ("luogo di origine", "place you come from"),
    "works_at": ("posto di lavoro", "workplace"),
}

#: attribute -> Chinese label
_ZH_LABELS: dict[str, str] = {
    "born": "出生日期", "birthday": "生日", "anniversary": "纪念日", "deadline": "截止日期", "wedding": "婚礼日期",
    "exam": "考试日期", "move": "搬家日期", "graduation": "毕业日期", "date": "日期", "height": "身高",
    "weight": "体重", "age": "年龄", "money": "金额", "count": "数量", "distance": "距离", "name": "名字",
    "lives_in": "居住的城市", "from_place": "家乡", "works_at": "工作单位",
}

_RULES: dict[str, tuple[str, str]] = {
    "born_vs_birthday": (
        "Risulta che la data di nascita è {old}, ma il compleanno risulta il {new}: le due date non coincidono.",
        "The date of birth is {old}, but the birthday is recorded as {new}: the two dates do not match.",
    ),
    "age_vs_birth_year": (
        "L'età indicata ({new}) non è compatibile con la data di nascita ({old}).",
        "The stated age ({new}) does not fit the date of birth ({old}).",
    ),
    "project_status": (
        "Lo stato del progetto non coincide: prima «{old}», ora «{new}». Potrebbe essere un aggiornamento.",
        "The project's status disagrees: first \"{old}\", now \"{new}\". It may be an update.",
    ),
    "marital": (
        "Lo stato civile non coincide: «{old}» contro «{new}». Potrebbe essere cambiato.",
        "The marital status disagrees: \"{old}\" versus \"{new}\". It may have changed.",
    ),
    "diet": (
        "Le abitudini alimentari non coincidono: «{old}» contro «{new}».",
        "The diet disagrees: \"{old}\" versus \"{new}\".",
    ),
    "exclusive_preference": (
        "Le preferenze si escludono a vicenda: «{old}» contro «{new}». Potrebbero essere cambiate.",
        "The preferences exclude each other: \"{old}\" versus \"{new}\". They may have changed.",
    ),
    "like_vs_dislike": (
        "Prima «{old}», ora «{new}»: i gusti non coincidono.",
        "First \"{old}\", now \"{new}\": the tastes disagree.",
    ),
    "occupation": (
        "La professione non coincide: «{old}» contro «{new}».",
        "The occupation disagrees: \"{old}\" versus \"{new}\".",
    ),
    "gender": ("Il genere indicato non coincide: «{old}» contro «{new}».",
               "The stated gender disagrees: \"{old}\" versus \"{new}\"."),
    "zodiac": ("Il segno zodiacale non coincide: «{old}» contro «{new}».",
               "The zodiac sign disagrees: \"{old}\" versus \"{new}\"."),
    "negation": ("Una memoria afferma ciò che l'altra nega: «{old}» contro «{new}».",
                 "One memory states what the other denies: \"{old}\" versus \"{new}\"."),
}

#: rule -> Chinese sentence (same fields as :data:`_RULES`)
_ZH_RULES: dict[str, str] = {
    "born_vs_birthday": "出生日期是{old}，但生日记录为{new}：两个日期不一致。",
    "age_vs_birth_year": "所说的年龄（{new}）与出生日期（{old}）不符。",
    "project_status": "项目状态不一致：之前是「{old}」，现在是「{new}」。可能是一次更新。",
    "marital": "婚姻状况不一致：「{old}」与「{new}」。可能已经改变。",
    "diet": "饮食习惯不一致：「{old}」与「{new}」。",
    "exclusive_preference": "这两个偏好互相排斥：「{old}」与「{new}」。可能已经改变。",
    "like_vs_dislike": "之前「{old}」，现在「{new}」：喜好不一致。",
    "occupation": "职业不一致：「{old}」与「{new}」。",
    "gender": "所说的性别不一致：「{old}」与「{new}」。",
    "zodiac": "星座不一致：「{old}」与「{new}」。",
    "negation": "一条记忆肯定了另一条所否定的内容：「{old}」与「{new}」。",
}

_ASK = ("Quale dei due è corretto?", "Which one is right?", "哪一个是对的？")
_UPDATE = ("Potrebbe trattarsi di un cambiamento: quale vale adesso?",
           "This may be a change: which one holds now?", "这可能是一个变化：现在哪个成立？")
_MOVE = ("Potrebbe trattarsi di un trasloco: quale vale adesso?", "This may be a move: which one holds now?",
         "你可能搬家了：现在哪个成立？")


def _i(lang: str) -> int:
    return 2 if lang == "zh" else 1 if lang == "en" else 0


def _label(attribute: str, lang: str) -> str:
    if lang == "zh":
        return _ZH_LABELS.get(attribute, attribute)
    return ATTRIBUTE_LABELS.get(attribute, (attribute, attribute))[_i(lang)]


def _val(v: str | Entity, lang: str) -> str:
    return format_value(v, lang) if isinstance(v, Entity) else v.strip()


def _whose(subject: str, lang: str) -> str:
    if lang == "zh":
        return "你的" if subject == "user" else f"{subject}的"
    if subject == "user":
        return "tuo/a" if lang != "en" else "your"
    return f"di {subject}" if lang != "en" else f"{subject}'s"


def explain_entities(attribute: str, old: Entity, new: Entity, *, lang: str = "it", update: bool = False) -> str:
    """Explain a same-attribute conflict, citing both normalised values.

    Args:
        attribute: the shared attribute (``born``, ``height`` ...).
        old: the earlier memory's entity.
        new: the checked memory's entity.
        lang: ``"it"`` (default), ``"en"`` or ``"zh"``.
        update: phrase it as a possible change over time (places, workplaces).

    Returns:
        One or two sentences.

    Example:
        >>> from memlab.entities import extract_entities
        >>> a = extract_entities("Sono alto 180 cm")[0]; b = extract_entities("Sono alto 175 cm")[0]
        >>> explain_entities("height", a, b)
        'Il dato «altezza» non coincide: prima 180 cm, ora 175 cm. Quale dei due è corretto?'
    """
    i = _i(lang)
    label = _label(attribute, lang)
    if attribute == "count" and old.qualifier:
        label = f"{label} ({old.qualifier})" if lang != "zh" else f"{label}（{old.qualifier}）"
    if old.subject != "user":
        label = f"{label} {_whose(old.subject, lang)}" if lang == "it" else f"{_whose(old.subject, lang)}{label}" \
            if lang == "zh" else f"{_whose(old.subject, lang)} {label}"
    o, n = _val(old, lang), _val(new, lang)
    if lang == "zh":
        text = f"「{label}」不一致：之前是{o}，现在是{n}。"
    elif lang == "en":
        text = f"The {label} disagrees: first {o}, now {n}."
    else:
        text = f"Il dato «{label}» non coincide: prima {o}, ora {n}."
    tail = (_MOVE if attribute == "lives_in" else _UPDATE) if update else _ASK
    return f"{text} {tail[i]}"


#: slot keys (the extraction vocabulary) whose human label is an entity attribute's
_KEY_ATTRIBUTE = {"preferred_name": "name", "birthday": "birthday", "birth_date": "born", "home_city": "lives_in",
                  "employer": "works_at", "height_cm": "height", "weight_kg": "weight", "age": "age"}
_ISO_DATE = re.compile(r"^(\d{4}|-)-(\d{2})-(\d{2})$")


def _human_value(value: str, lang: str) -> str:
    """An ISO date ("1990-07-12", "--08-15") in words ("12 luglio 1990", "15 agosto"); other values unchanged."""
    if _ISO_DATE.match(value):
        return format_value(Entity(EntityKind.DATE, value, 0, len(value), value, "date"), lang=lang)
    return value


def explain_key(key: str, old_value: str, new_value: str, *, lang: str = "it") -> str:
    """Explain two different values stored under the same key (slot), citing both values in words.

    Example:
        >>> explain_key("birthday", "1990-07-12", "--08-15")
        'Due memorie danno valori diversi per «compleanno»: «12 luglio 1990» e «15 agosto». Quale dei due è corretto?'
    """
    label = _label(_KEY_ATTRIBUTE[key], lang) if key in _KEY_ATTRIBUTE else key
    o, n = _human_value(old_value, lang), _human_value(new_value, lang)
    if lang == "zh":
        return f"两条记忆对「{label}」给出了不同的值：「{o}」和「{n}」。{_ASK[2]}"
    if lang == "en":
        return f"Two memories give different values for \"{label}\": \"{o}\" and \"{n}\". {_ASK[1]}"
    return f"Due memorie danno valori diversi per «{label}»: «{o}» e «{n}». {_ASK[0]}"


def explain_pattern(rule: str, old: str | Entity, new: str | Entity, *, lang: str = "it") -> str:
    """Explain a pattern-rule conflict (see :mod:`memlab.integrity.patterns`), citing both sides."""
    i = _i(lang)
    if lang == "zh":
        tpl = _ZH_RULES.get(rule, "「{old}」与「{new}」。")
    else:
        tpl = _RULES.get(rule, ("«{old}» contro «{new}».", "\"{old}\" versus \"{new}\"."))[i]
    text = tpl.format(old=_val(old, lang), new=_val(new, lang))
    return text if rule in ("project_status", "marital", "exclusive_preference") else f"{text} {_ASK[i]}"


def explain_judge(old_text: str, new_text: str, probability: float, *, lang: str = "it") -> str:
    """Explain a judge decision (no structured values: cite both memories)."""
    if lang == "zh":
        return f"这两条记忆似乎相互矛盾（概率 {probability:.2f}）：「{old_text}」和「{new_text}」。{_ASK[2]}"
    if lang == "en":
        return (f"These two memories seem to contradict each other (probability {probability:.2f}): "
                f"\"{old_text}\" and \"{new_text}\". {_ASK[1]}")
    p = f"{probability:.2f}".replace(".", ",")
    return f"Queste due memorie sembrano contraddirsi (probabilità {p}): «{old_text}» e «{new_text}». {_ASK[0]}"


# ------------------------------------------------------------------ rendered at display time
def _entity_dict(e: Entity) -> dict[str, Any]:
    return {"kind": e.kind.value, "text": e.text, "value": e.value, "attribute": e.attribute, "unit": e.unit,
            "subject": e.subject, "qualifier": e.qualifier}


def _entity(d: Any) -> Entity | None:
    if not isinstance(d, Mapping):
        return None
    try:
        return Entity(EntityKind(d["kind"]), str(d["text"]), 0, len(str(d["text"])), d["value"],
                      d.get("attribute"), d.get("unit"), str(d.get("subject") or "user"), d.get("qualifier"))
    except (KeyError, TypeError, ValueError):
        return None


def _side(v: str | Entity) -> str | dict[str, Any]:
    return _entity_dict(v) if isinstance(v, Entity) else str(v)


def explain_data(level: str, **parts: Any) -> dict[str, Any]:
    """What an explanation is made of, as JSON (kept in a contradiction's ``details["explain"]``).

    ``level`` is the function that renders it: ``key`` (``key``, ``old``, ``new``: slot values), ``entities``
    (``attribute``, ``old``, ``new``: entities, ``update``), ``pattern`` (``rule``, ``old``, ``new``: entities or
    texts), ``judge`` (``old``, ``new``: texts, ``probability``), ``clarify`` (``old``, ``new``: two dates).

    Example:
        >>> explain_data("key", key="birthday", old="1990-07-12", new="--08-15")
        {'level': 'key', 'key': 'birthday', 'old': '1990-07-12', 'new': '--08-15'}
    """
    return {"level": level, **{k: _side(v) if k in ("old", "new") else v for k, v in parts.items()}}


def _parts(data: Any) -> tuple[str, Any, Any] | None:
    if not isinstance(data, Mapping) or "old" not in data or "new" not in data:
        return None
    return str(data.get("level")), data["old"], data["new"]


def _value(side: Any, lang: str) -> str:
    e = _entity(side)
    return format_value(e, lang) if e is not None else _human_value(str(side), lang)


def render_explanation(data: Any, lang: str) -> str | None:
    """The explanation recorded by :func:`explain_data`, in ``lang`` (``it``/``en``/``zh``); ``None`` when
    ``data`` is not such a record (an older notification: show its stored explanation).

    Example:
        >>> render_explanation(explain_data("key", key="birthday", old="1990-07-12", new="--08-15"), "zh")
        '两条记忆对「生日」给出了不同的值：「1990年7月12日」和「8月15日」。哪一个是对的？'
    """
    p = _parts(data)
    if p is None:
        return None
    level, old, new = p
    if level == "key":
        return explain_key(str(data.get("key")), str(old), str(new), lang=lang)
    if level == "entities":
        eo, en = _entity(old), _entity(new)
        if eo is None or en is None:
            return None
        return explain_entities(str(data.get("attribute") or ""), eo, en, lang=lang, update=bool(data.get("update")))
    if level == "pattern":
        return explain_pattern(str(data.get("rule")), _entity(old) or str(old), _entity(new) or str(new), lang=lang)
    if level == "judge":
        return explain_judge(str(old), str(new), float(data.get("probability") or 0.0), lang=lang)
    if level == "clarify":
        return messages(lang)["clarify_dates"].format(old=_value(old, lang), new=_value(new, lang))
    return None


def render_values(data: Any, lang: str) -> tuple[str, str] | None:
    """The two compared values (the earlier memory's, the new one's) in ``lang``, for the A/B options: dates in
    words, other values as written; ``None`` when the record has no structured values (pattern texts, judge)."""
    p = _parts(data)
    if p is None or p[0] not in ("key", "entities", "clarify"):
        return None
    level, old, new = p
    if level == "key":
        return _human_value(str(old), lang), _human_value(str(new), lang)
    eo, en = _entity(old), _entity(new)
    if eo is None or en is None:
        return None
    return tuple(format_value(e, lang) if e.kind is EntityKind.DATE else e.text.strip()  # type: ignore[return-value]
                 for e in (eo, en))
