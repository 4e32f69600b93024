"""Fact extraction and the per-conversation memory (what the assistant must not ask again).

Example:
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> svc = ConversationMemoryService(MemoryStore(":memory:", embedder=FakeEmbedder()), user_id="u1")
    >>> _ = svc.update_after_user_message("c1", "Chiamami Li Si. Abito a Roma.")
    >>> print(format_for_prompt(svc.get("c1")).splitlines()[2])
    - <memory>L'utente si chiama Li Si</memory>
"""

from __future__ import annotations

from typing import Any

from memlab.extraction.base import Extractor
from memlab.extraction.dates import resolve_relative_dates
from memlab.extraction.llm_extractor import (
    LLMExtractionOutput,
    LLMExtractor,
    LLMFact,
    build_extraction_messages,
)
from memlab.extraction.memory import FATIGUE_DECAY, ConversationMemoryService, UpdateResult
from memlab.extraction.prompt import FATIGUE_WARNING_THRESHOLD, MIN_PROMPT_CONFIDENCE, format_for_prompt
from memlab.extraction.records import (
    ConversationMemory,
    Coverage,
    ExtractionResult,
    Fact,
    Priority,
    SkipReason,
    StoredFact,
    Tone,
    TopicState,
    UnansweredArea,
)
from memlab.extraction.rules import MAX_MESSAGE_CHARS, RuleExtractor
from memlab.extraction.signals import detect_lang, measure, split_sentences
from memlab.extraction.slots import SLOTS, SlotSpec, render_slot, slot_label

__all__ = [
    "FATIGUE_DECAY",
    "FATIGUE_WARNING_THRESHOLD",
    "MAX_MESSAGE_CHARS",
    "MIN_PROMPT_CONFIDENCE",
    "SLOTS",
    "ConversationMemory",
    "ConversationMemoryService",
    "Coverage",
    "ExtractionResult",
    "Extractor",
    "Fact",
    "LLMExtractionOutput",
    "LLMExtractor",
    "LLMFact",
    "RuleExtractor",
    "SlotSpec",
    "StoredFact",
    "Tone",
    "TopicState",
    "UnansweredArea",
    "Priority",
    "SkipReason",
    "UpdateResult",
    "build_extraction_messages",
    "detect_lang",
    "format_for_prompt",
    "load_extractor",
    "measure",
    "render_slot",
    "resolve_relative_dates",
    "slot_label",
    "split_sentences",
]


def load_extractor(settings: Any = None, *, llm: Any = None, lang: str | None = None) -> Extractor:
    """The extractor to use: an :class:`LLMExtractor` when an LLM is given or configured, else rules.

    Args:
        settings: :class:`memlab.config.Settings` (its ``llm_*`` fields and ``lang``), or ``None``.
        llm: an LLM backend; takes precedence over ``settings``.
        lang: prompt language (default ``settings.lang`` or ``it``).

    Example:
        >>> load_extractor().name
        'rules'
    """
    lang = lang or (getattr(settings, "lang", None) or "it")
    if llm is None and settings is not None:
        from memlab.llm import load_llm

        llm = load_llm(settings)
    if llm is None:
        return RuleExtractor()
    return LLMExtractor(llm, lang=lang)
