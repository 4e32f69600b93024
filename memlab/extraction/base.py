"""The extractor interface."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlab.extraction.records import ExtractionResult

__all__ = ["Extractor"]


@runtime_checkable
class Extractor(Protocol):
    """Reads one user message into facts, tone and a fatigue signal.

    Implementations: :class:`~memlab.extraction.RuleExtractor` (offline default) and
    :class:`~memlab.extraction.LLMExtractor` (an LLM with a JSON schema, falling back to rules).
    """

    name: str

    def extract(self, message: str, *, lang: str | None = None, ref_time: datetime | None = None,
                topic: str | None = None, known: Sequence[str] = ()) -> ExtractionResult:
        """Extract from one message. ``ref_time`` resolves relative dates; ``topic`` is the conversation's current
        topic (it labels the facts); ``known`` are the facts already known (an extractor must not repeat them)."""
        ...

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs)."""
        ...
