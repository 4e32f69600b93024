"""Semantic integrity: layered contradiction detection over the memory store (similarity, entities, patterns, a calibrated judge).

Example:
    >>> from memlab.integrity import SemanticIntegrityChecker
    >>> SemanticIntegrityChecker.__name__
    'SemanticIntegrityChecker'
"""

from __future__ import annotations

from memlab.integrity.checker import ATTRIBUTE_GROUPS, LEVELS, IntegrityConfig, SemanticIntegrityChecker
from memlab.integrity.explain import explain_entities, explain_judge, explain_key, explain_pattern
from memlab.integrity.patterns import RULES, Facts, PatternHit, compare_facts, consistent_reason, summarise

__all__ = [
    "ATTRIBUTE_GROUPS",
    "LEVELS",
    "RULES",
    "Facts",
    "IntegrityConfig",
    "PatternHit",
    "SemanticIntegrityChecker",
    "compare_facts",
    "consistent_reason",
    "explain_entities",
    "explain_judge",
    "explain_key",
    "explain_pattern",
    "summarise",
]
