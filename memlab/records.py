"""Frozen records shared by every layer of memlab.

Records are immutable (``@dataclass(frozen=True, slots=True)``); to change one, use
:func:`dataclasses.replace`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "ConflictType",
    "Contradiction",
    "IntegrityResult",
    "Label",
    "MemoryItem",
    "Urgency",
    "Verdict",
]


class Label(StrEnum):
    """Gold or predicted relation of a pair ``(premise, hypothesis)``.

    Three-way sets use ``CONTRADICTION`` / ``ENTAILMENT`` / ``NEUTRAL``; binary sets (contradiction or
    not) use ``CONTRADICTION`` / ``NOT_CONTRADICTION``. ``ABSTAIN`` marks a failed prediction (counted in
    the ``coverage`` metric, never dropped).
    """

    CONTRADICTION = "contradiction"
    ENTAILMENT = "entailment"
    NEUTRAL = "neutral"
    NOT_CONTRADICTION = "not_contradiction"
    ABSTAIN = "abstain"

    @property
    def is_contradiction(self) -> bool:
        """True only for :attr:`CONTRADICTION`."""
        return self is Label.CONTRADICTION


class Urgency(StrEnum):
    """How soon the user must see a notification: HIGH before the reply, MEDIUM offered after it, LOW in the bell."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ConflictType(StrEnum):
    """What kind of value two memories disagree on."""

    DATE = "date"
    NUMBER = "number"
    NAME = "name"
    PLACE = "place"
    PREFERENCE = "preference"
    STATUS = "status"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's answer for one pair.

    Attributes:
        label: predicted relation (``contradiction``/``entailment``/``neutral``, or ``abstain`` on error).
        probability: calibrated probability that the pair is a contradiction, in [0, 1].
        judge: name of the judge that produced it (e.g. ``"default"``, ``"hf:/path"``).
        rationale: optional explanation (LLM judges give one).
    """

    label: Label
    probability: float
    judge: str
    rationale: str | None = None

    @property
    def is_contradiction(self) -> bool:
        """True when the label is ``contradiction``."""
        return self.label is Label.CONTRADICTION


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One memory of one user: a version in a chain (``supersedes``/``superseded_by``), active or not.

    Attributes:
        id: integer id, unique in the store (also the FAISS id).
        user_id: owner. Isolation is a security boundary: no method returns another user's items.
        text: plain-text form of the memory; every embedding has its text.
        scope: ``global``, ``project``, ``chat`` ...
        type: ``fact``, ``preference``, ``event``, ``profile`` ...
        key: slot filled by the memory (``preferred_name``, ``birthday``), ``None`` for free facts.
        value: the slot value, when there is a key.
        confidence: in [0, 1].
        project_id: optional project the memory belongs to.
        source: provenance (e.g. ``"chat:3/turn:12"``).
        keywords: keywords extracted with the fact.
        topic: topic label, if known.
        created_at: record time (tz-aware UTC).
        valid_from: when the fact became true in the world, if known.
        valid_to: when it stopped being true, if known.
        version: position in its version chain (1-based).
        chain_id: id of the first item of the chain; shared by every version.
        supersedes: id of the item this one replaced, if any.
        superseded_by: id of the item that replaced (or beat) this one, if any.
        is_active: whether queries return it by default.
        superseded_at: when it stopped being active.
        context: user-provided context (e.g. the explanation given when both versions are kept).
        updated_at: when the memory last changed (created, superseded, deactivated, reactivated, annotated ...);
            ``None`` from a store that does not record it.
    """

    id: int
    user_id: str
    text: str
    scope: str = "global"
    type: str = "fact"
    key: str | None = None
    value: str | None = None
    confidence: float = 1.0
    project_id: str | None = None
    source: str | None = None
    keywords: tuple[str, ...] = ()
    topic: str | None = None
    created_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    version: int = 1
    chain_id: int | None = None
    supersedes: int | None = None
    superseded_by: int | None = None
    is_active: bool = True
    superseded_at: datetime | None = None
    context: str | None = None
    updated_at: datetime | None = None

    @property
    def lost_to(self) -> int | None:
        """Id of the item that beat this one when it was added (``None`` if it won or is unkeyed)."""
        return self.superseded_by if not self.is_active else None

    @property
    def retained_id(self) -> int | None:
        """The existing memory the version rule kept instead of this one when it was added (the seed's "Returns id1
        (existing memory retained)"): its id while this one is inactive because of it; ``None`` otherwise (this one
        won, is unkeyed, or was replaced later by a newer version)."""
        if not self.is_active and self.superseded_by is not None and self.superseded_by < self.id:
            return self.superseded_by
        return None


@dataclass(frozen=True, slots=True)
class Contradiction:
    """One detected conflict between a memory and an earlier one.

    Attributes:
        memory_id: the checked (usually newer) memory.
        other_id: the memory it conflicts with.
        memory_text: text of ``memory_id``.
        other_text: text of ``other_id``.
        confidence: in [0, 1].
        type: what the memories disagree on.
        urgency: contradictions are HIGH by default.
        explanation: in words the user understands (Italian by default).
        decided_by: the detection level that decided (``entities``, ``patterns``, ``judge`` ...).
        details: level-specific evidence (normalised values, attribute, probabilities).
    """

    memory_id: int
    other_id: int
    memory_text: str
    other_text: str
    confidence: float
    type: ConflictType
    urgency: Urgency
    explanation: str
    decided_by: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IntegrityResult:
    """Result of checking one memory against the rest of its user's store.

    Attributes:
        item_id: the checked memory.
        has_contradiction: whether at least one contradiction was found.
        contradictions: the conflicts, strongest first.
        confidence: max confidence over ``contradictions`` (0.0 when none).
        n_candidates: how many memories were compared.
        stage_ms: wall time per stage, for benchmarks (``candidates``, ``entities``, ``patterns``, ``judge``; the
            candidate stage is also split into ``candidates.search``, ``candidates.attribute_sql``,
            ``candidates.attribute_facts`` and ``candidates.other``).
        n_judged: how many pairs went to the judge (after the per-check cap and the early exit, see
            :class:`memlab.integrity.IntegrityConfig`).
        clarifications: pairs that are not contradictions but worth a LOW-urgency question (two different dates
            of the same person whose kinds are easy to mix up, e.g. a birthday and a wedding anniversary); they
            never count in ``has_contradiction``.
    """

    item_id: int
    has_contradiction: bool
    contradictions: tuple[Contradiction, ...] = ()
    confidence: float = 0.0
    n_candidates: int = 0
    stage_ms: Mapping[str, float] = field(default_factory=dict)
    clarifications: tuple[Contradiction, ...] = ()
    n_judged: int = 0
