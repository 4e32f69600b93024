"""The :class:`Entity` record, its kinds, the attribute vocabulary and value formatting."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["ATTRIBUTES", "STABLE_ATTRIBUTES", "Entity", "EntityKind", "format_day", "format_month", "format_value"]


class EntityKind(StrEnum):
    """What an entity is."""

    DATE = "date"
    NUMBER = "number"
    NAME = "name"
    PLACE = "place"
    ORG = "org"


#: Attributes an entity can describe (``None`` when unknown).
ATTRIBUTES: tuple[str, ...] = (
    "born",
    "birthday",
    "anniversary",
    "deadline",
    "wedding",
    "exam",
    "move",
    "graduation",
    "date",
    "height",
    "weight",
    "age",
    "money",
    "count",
    "distance",
    "name",
    "nickname",
    "lives_in",
    "from_place",
    "works_at",
)

#: Attributes that hold one value per subject at a time (two different values conflict). Event-scoped
#: attributes (``date``, ``distance``, ``money``) do not: "ran 5 km on Tuesday" and "ran 3 km on Wednesday"
#: are two events, not one fact with two values.
STABLE_ATTRIBUTES: frozenset[str] = frozenset(
    {"born", "birthday", "anniversary", "deadline", "wedding", "height", "weight", "age", "count", "name",
     "lives_in", "from_place", "works_at"}
)

_MONTHS_IT = ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre",
              "ottobre", "novembre", "dicembre")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


def format_day(when: Any, lang: str) -> str:
    """A calendar day (anything with ``year``, ``month``, ``day``) as people write it: ``8 maggio 2023`` (it),
    ``8 May 2023`` (en and any other language), ``2023年5月8日`` (zh).

    Example:
        >>> from datetime import date
        >>> format_day(date(2023, 5, 8), "it"), format_day(date(2023, 5, 8), "en"), format_day(date(2023, 5, 8), "zh")
        ('8 maggio 2023', '8 May 2023', '2023年5月8日')
    """
    if lang == "zh":
        return f"{when.year}年{when.month}月{when.day}日"
    months = _MONTHS_IT if lang == "it" else _MONTHS_EN
    return f"{when.day} {months[when.month - 1]} {when.year}"


def format_month(when: Any, lang: str) -> str:
    """A month of a year: ``aprile 2023`` (it), ``April 2023`` (en and others), ``2023年4月`` (zh)."""
    if lang == "zh":
        return f"{when.year}年{when.month}月"
    months = _MONTHS_IT if lang == "it" else _MONTHS_EN
    return f"{months[when.month - 1]} {when.year}"


@dataclass(frozen=True, slots=True)
class Entity:
    """One normalised entity found in a text.

    Attributes:
        kind: ``date``, ``number``, ``name``, ``place`` or ``org``.
        text: the raw span as written.
        start: start offset in the (control-stripped, NFC) text.
        end: end offset (exclusive).
        value: normalised value. Dates: ISO ``"1990-07-12"``, ``"--08-15"`` (day-month without year, ISO 8601),
            ``"1990-07"`` or ``"1990"``; numbers: a float in the canonical unit (see ``unit``); names, places,
            organisations: casefolded, whitespace-collapsed text.
        attribute: what the entity describes (one of :data:`ATTRIBUTES`), ``None`` when unknown.
        unit: numbers only: ``cm``, ``kg``, ``year``, ``EUR``, ``USD``, ``GBP``, ``CNY``, ``km``, ``count``.
        subject: ``"user"`` for the speaker / "the user" / "l'utente"; otherwise the other person it is about
            (``"sister"``, ``"sorella"``, ``"marco"``).
        qualifier: what a count counts (``"figli"``, ``"dogs"``), or the thing an anniversary/deadline belongs to,
            when stated; ``None`` otherwise.
        relative: the date was resolved from a relative expression ("ieri", "last Friday") against ``ref_time``.
    """

    kind: EntityKind
    text: str
    start: int
    end: int
    value: str | float
    attribute: str | None = None
    unit: str | None = None
    subject: str = "user"
    qualifier: str | None = None
    relative: bool = False

    @property
    def day_month(self) -> tuple[int, int] | None:
        """``(month, day)`` of a date that has both, else ``None``."""
        if self.kind is not EntityKind.DATE or not isinstance(self.value, str):
            return None
        v = self.value
        if v.startswith("--") and len(v) == 7:
            return int(v[2:4]), int(v[5:7])
        if len(v) == 10:
            return int(v[5:7]), int(v[8:10])
        return None

    @property
    def year(self) -> int | None:
        """Year of a date that has one, else ``None``."""
        if self.kind is not EntityKind.DATE or not isinstance(self.value, str) or self.value.startswith("--"):
            return None
        return int(self.value[:4])

    def same_value(self, other: Entity) -> bool:
        """Whether two entities carry the same value at the granularity both have.

        Dates compare day-month when either side has no year, the year when either side has only a year,
        and the full date otherwise. Numbers compare with a 2% relative tolerance after unit
        normalisation (so "1,80 m" equals "180 cm"). Text values compare casefolded; a one-word value that
        is a word of the other counts as equal ("Li" vs "Li Si").
        """
        if self.kind is not other.kind:
            return False
        if self.kind is EntityKind.DATE:
            a, b = str(self.value), str(other.value)
            if a == b:
                return True
            dm_a, dm_b = self.day_month, other.day_month
            if dm_a is not None and dm_b is not None and (a.startswith("--") or b.startswith("--")):
                return dm_a == dm_b
            ya, yb = self.year, other.year
            if ya is not None and yb is not None and (len(a) == 4 or len(b) == 4):
                return ya == yb
            if len(a) == 7 or len(b) == 7:  # year-month vs something longer
                return a[:7] == b[:7] if not (a.startswith("--") or b.startswith("--")) else a[-5:-3] == b[-5:-3]
            return False
        if self.kind is EntityKind.NUMBER:
            if self.unit != other.unit:
                return False
            x, y = float(self.value), float(other.value)
            return math.isclose(x, y, rel_tol=0.02, abs_tol=1e-9)
        a, b = str(self.value), str(other.value)
        if a == b:
            return True
        wa, wb = a.split(), b.split()
        return (len(wa) == 1 and wa[0] in wb) or (len(wb) == 1 and wb[0] in wa)


def format_value(entity: Entity, lang: str = "it") -> str:
    """Human-readable value of an entity, for explanations.

    Args:
        entity: the entity.
        lang: ``"it"`` (default), ``"en"`` or ``"zh"``; dates are written the way each language writes them
            (``12 luglio 1990``, ``12 July 1990``, ``1990年7月12日``); numbers get the English decimal point in
            en and zh; names, places and organisations are the text as written.

    Returns:
        e.g. ``"12 luglio 1990"``, ``"15 agosto"``, ``"180 cm"``, ``"Milano"``; ``"7月12日"`` in zh.

    Example:
        >>> format_value(Entity(EntityKind.DATE, "12/07/1990", 0, 10, "1990-07-12", "born"))
        '12 luglio 1990'
        >>> format_value(Entity(EntityKind.DATE, "Aug 15", 0, 6, "--08-15", "birthday"), lang="en")
        '15 August'
        >>> format_value(Entity(EntityKind.DATE, "12/07/1990", 0, 10, "1990-07-12", "born"), lang="zh")
        '1990年7月12日'
    """
    if entity.kind is EntityKind.DATE and isinstance(entity.value, str):
        months = _MONTHS_EN if lang == "en" else _MONTHS_IT
        v = entity.value
        dm = entity.day_month
        if lang == "zh":
            if dm is not None:
                md = f"{dm[0]}月{dm[1]}日"
                return md if v.startswith("--") else f"{v[:4]}年{md}"
            return f"{v[:4]}年{int(v[5:7])}月" if len(v) == 7 else (f"{v}年" if len(v) == 4 else v)
        if dm is not None:
            s = f"{dm[1]} {months[dm[0] - 1]}"
            return s if v.startswith("--") else f"{s} {v[:4]}"
        if len(v) == 7:
            return f"{months[int(v[5:7]) - 1]} {v[:4]}"
        return v
    if entity.kind is EntityKind.NUMBER:
        x = float(entity.value)
        num = f"{x:.0f}" if x.is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")
        if lang not in ("en", "zh"):
            num = num.replace(".", ",")
        unit = entity.unit or ""
        if unit == "year":
            if lang == "zh":
                return f"{num}岁"
            unit = "years" if lang == "en" else "anni"
        elif unit == "count":
            unit = entity.qualifier or ""
        return f"{num} {unit}".strip()
    return entity.text.strip()
