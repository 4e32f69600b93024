"""The labelled-pair record every pairwise loader yields (:mod:`memlab.datasets.pairs` for the set-level loaders,
:mod:`memlab.datasets.dialogues` for DECODE's dialogue pairs); both import it from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memlab.records import Label

__all__ = ["Pair"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled pair: does ``hypothesis`` contradict ``premise``?

    Attributes:
        id: unique within the split: ``"<file>:<line>"`` (or ``"<dialogue id>#t<turn>"`` for DECODE).
        premise: the earlier text / memory / context.
        hypothesis: the new statement judged against the premise.
        label: gold label (see :mod:`memlab.datasets.pairs` for each set's mapping).
        meta: set-specific fields (raw label, round, group, profile, ...). ``meta["group"]``, when
            present, ties several pairs to one gold decision (DECODE dialogues).
    """

    id: str
    premise: str
    hypothesis: str
    label: Label
    meta: Mapping[str, Any] = field(default_factory=dict)
