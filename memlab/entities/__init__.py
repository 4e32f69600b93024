"""Entity extraction and normalisation (dates, numbers with units, names, places, organisations).

Used by the integrity checker (entities level) and by the rule-based fact extractor. Offline: dateparser
for dates, pint for units, regexes with small Italian/English/Chinese vocabularies (no NER model can be
installed offline).

Example:
    >>> from memlab.entities import extract_entities
    >>> [(e.value, e.attribute) for e in extract_entities("I was born on 12 July 1990")]
    [('1990-07-12', 'born')]
"""

from __future__ import annotations

from memlab.entities.extract import MAX_ENTITY_TEXT_CHARS, extract_entities, introduced_names
from memlab.entities.model import (
    ATTRIBUTES,
    STABLE_ATTRIBUTES,
    Entity,
    EntityKind,
    format_day,
    format_month,
    format_value,
)

__all__ = [
    "ATTRIBUTES",
    "MAX_ENTITY_TEXT_CHARS",
    "STABLE_ATTRIBUTES",
    "Entity",
    "EntityKind",
    "extract_entities",
    "format_day",
    "format_month",
    "format_value",
    "introduced_names",
]
