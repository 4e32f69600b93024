"""The slot vocabulary: keys a fact can fill, their memory type, labels and plain-text templates.

A keyed fact goes to the store under ``key`` with the slot's ``type``, so the store's version rule applies
(a newer ``preferred_name`` supersedes the older one). Templates give every keyed fact the same assertive
form in the message's language; the entity extractor (``memlab.entities``) reads the templates back.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SLOTS", "SlotSpec", "render_slot", "slot_label"]


@dataclass(frozen=True, slots=True)
class SlotSpec:
    """One slot.

    Attributes:
        key: the slot key (``preferred_name`` ...).
        type: memory type used in the store (part of the version-rule slot).
        label_it: Italian label for prompts.
        label_en: English label for prompts.
        template_it: Italian text (``{v}`` = value as written, ``{o}`` = gender ending ``o``/``a``).
        template_en: English text.
        template_zh: Chinese text (``None``: use the English one).
    """

    key: str
    type: str
    label_it: str
    label_en: str
    template_it: str
    template_en: str
    template_zh: str | None = None


_S = [
    SlotSpec("preferred_name", "profile", "Nome preferito", "Preferred name",
             "L'utente si chiama {v}", "The user's name is {v}", "用户叫{v}"),
    SlotSpec("birthday", "profile", "Data di nascita / compleanno", "Birthday",
             "L'utente è nat{o} il {v}", "The user was born on {v}", "用户的生日是{v}"),
    SlotSpec("wedding_date", "event", "Data del matrimonio", "Wedding date",
             "Il matrimonio dell'utente è il {v}", "The user's wedding is on {v}", "用户的婚礼是{v}"),
    SlotSpec("home_city", "profile", "Città in cui vive", "Home city",
             "L'utente vive a {v}", "The user lives in {v}", "用户住在{v}"),
    SlotSpec("hometown", "profile", "Luogo di origine", "Hometown",
             "L'utente viene da {v}", "The user comes from {v}", "用户来自{v}"),
    SlotSpec("employer", "profile", "Datore di lavoro", "Employer",
             "L'utente lavora presso {v}", "The user works at {v}", "用户在{v}工作"),
    SlotSpec("job_title", "profile", "Professione", "Job title",
             "L'utente lavora come {v}", "The user works as {v}", "用户的职业是{v}"),
    SlotSpec("height_cm", "profile", "Altezza (cm)", "Height (cm)",
             "L'utente è alt{o} {v} cm", "The user is {v} cm tall", "用户身高{v}厘米"),
    SlotSpec("weight_kg", "profile", "Peso (kg)", "Weight (kg)",
             "L'utente pesa {v} kg", "The user weighs {v} kg", "用户体重{v}公斤"),
    SlotSpec("age", "profile", "Età", "Age",
             "L'utente ha {v} anni", "The user is {v} years old", "用户{v}岁"),
    SlotSpec("diet", "preference", "Alimentazione", "Diet",
             "L'utente segue una dieta {v}", "The user's diet is {v}", "用户的饮食是{v}"),
    SlotSpec("marital_status", "profile", "Stato civile", "Marital status",
             "Stato civile dell'utente: {v}", "The user's marital status is {v}", "用户的婚姻状况是{v}"),
    SlotSpec("favourite_drink", "preference", "Bevanda preferita", "Favourite drink",
             "La bevanda preferita dell'utente è {v}", "The user's favourite drink is {v}", None),
    SlotSpec("favourite_food", "preference", "Cibo preferito", "Favourite food",
             "Il cibo preferito dell'utente è {v}", "The user's favourite food is {v}", None),
    SlotSpec("favourite_color", "preference", "Colore preferito", "Favourite colour",
             "Il colore preferito dell'utente è {v}", "The user's favourite colour is {v}", None),
    SlotSpec("favourite_movie", "preference", "Film preferito", "Favourite movie",
             "Il film preferito dell'utente è {v}", "The user's favourite movie is {v}", None),
    SlotSpec("favourite_book", "preference", "Libro preferito", "Favourite book",
             "Il libro preferito dell'utente è {v}", "The user's favourite book is {v}", None),
    SlotSpec("favourite_sport", "preference", "Sport preferito", "Favourite sport",
             "Lo sport preferito dell'utente è {v}", "The user's favourite sport is {v}", None),
    SlotSpec("favourite_music", "preference", "Musica preferita", "Favourite music",
             "La musica preferita dell'utente è {v}", "The user's favourite music is {v}", None),
]

#: Every slot by key.
SLOTS: dict[str, SlotSpec] = {s.key: s for s in _S}


def slot_label(key: str, lang: str = "it") -> str:
    """Human label of a slot (the key itself when unknown)."""
    spec = SLOTS.get(key)
    if spec is None:
        return key
    return spec.label_it if lang == "it" else spec.label_en


def render_slot(key: str, value: str, *, lang: str = "it", feminine: bool = False) -> str:
    """The plain-text form of a keyed fact.

    Example:
        >>> render_slot("preferred_name", "Li Si")
        "L'utente si chiama Li Si"
        >>> render_slot("birthday", "12 luglio 1990", feminine=True)
        "L'utente è nata il 12 luglio 1990"
        >>> render_slot("home_city", "Rome", lang="en")
        'The user lives in Rome'
    """
    spec = SLOTS[key]
    if lang == "zh" and spec.template_zh:
        tpl = spec.template_zh
    elif lang == "it":
        tpl = spec.template_it
    else:
        tpl = spec.template_en
    return tpl.format(v=value, o="a" if feminine else "o")
