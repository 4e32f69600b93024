"""User-facing explanations of contradictions (Italian by default, English on request).

An explanation names what disagrees and cites both values, in words a user understands, e.g.
"Risulta che sei nato il 12 luglio 1990, ma il tuo compleanno risulta il 15 agosto: le due date non
coincidono. Quale è corretta?"
"""

from __future__ import annotations

import re

from memlab.entities import Entity, EntityKind, format_value

__all__ = ["ATTRIBUTE_LABELS", "explain_entities", "explain_judge", "explain_key", "explain_pattern"]

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

_ASK = ("Quale dei due è corretto?", "Which one is right?")
_UPDATE = ("Potrebbe trattarsi di un cambiamento: quale vale adesso?",
           "This may be a change: which one holds now?")
_MOVE = ("Potrebbe trattarsi di un trasloco: quale vale adesso?", "This may be a move: which one holds now?")


def _i(lang: str) -> int:
    return 1 if lang == "en" else 0


def _val(v: str | Entity, lang: str) -> str:
    return format_value(v, lang) if isinstance(v, Entity) else v.strip()


def _whose(subject: str, lang: str) -> str:
    if subject == "user":
        return "tuo/a" if lang != "en" else "your"
    return f"di {subject}" if lang != "en" else f"{subject}'s"


def explain_entities(attribute: str, old: Entity, new: Entity, *, lang: str = "it", update: bool = False) -> str:
    """Explain a same-attribute conflict, citing both normalised values.

    Args:
        attribute: the shared attribute (``born``, ``height`` ...).
        old: the earlier memory's entity.
        new: the checked memory's entity.
        lang: ``"it"`` (default) or ``"en"``.
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
    label = ATTRIBUTE_LABELS.get(attribute, (attribute, attribute))[i]
    if attribute == "count" and old.qualifier:
        label = f"{label} ({old.qualifier})"
    if old.subject != "user":
        label = f"{label} {_whose(old.subject, lang)}" if lang != "en" else f"{_whose(old.subject, lang)} {label}"
    o, n = _val(old, lang), _val(new, lang)
    if lang == "en":
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
    i = _i(lang)
    label = ATTRIBUTE_LABELS[_KEY_ATTRIBUTE[key]][i] if key in _KEY_ATTRIBUTE else key
    o, n = _human_value(old_value, lang), _human_value(new_value, lang)
    if lang == "en":
        return f"Two memories give different values for \"{label}\": \"{o}\" and \"{n}\". {_ASK[1]}"
    return f"Due memorie danno valori diversi per «{label}»: «{o}» e «{n}». {_ASK[0]}"


def explain_pattern(rule: str, old: str | Entity, new: str | Entity, *, lang: str = "it") -> str:
    """Explain a pattern-rule conflict (see :mod:`memlab.integrity.patterns`), citing both sides."""
    i = _i(lang)
    tpl = _RULES.get(rule, ("«{old}» contro «{new}».", "\"{old}\" versus \"{new}\"."))[i]
    text = tpl.format(old=_val(old, lang), new=_val(new, lang))
    return text if rule in ("project_status", "marital", "exclusive_preference") else f"{text} {_ASK[i]}"


def explain_judge(old_text: str, new_text: str, probability: float, *, lang: str = "it") -> str:
    """Explain a judge decision (no structured values: cite both memories)."""
    if lang == "en":
        return (f"These two memories seem to contradict each other (probability {probability:.2f}): "
                f"\"{old_text}\" and \"{new_text}\". {_ASK[1]}")
    p = f"{probability:.2f}".replace(".", ",")
    return f"Queste due memorie sembrano contraddirsi (probabilità {p}): «{old_text}» e «{new_text}». {_ASK[0]}"
