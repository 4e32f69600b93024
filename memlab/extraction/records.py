"""Records of fact extraction and of the per-conversation memory (facts, topics, unanswered areas, fatigue)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memlab.extraction.signals import Tone

__all__ = [
    "ConversationMemory",
    "Coverage",
    "ExtractionResult",
    "Fact",
    "StoredFact",
    "Tone",
    "TopicState",
    "UnansweredArea",
]


class Coverage(StrEnum):
    """How deeply a topic has been explored."""

    SHALLOW = "shallow"
    MODERATE = "moderate"
    DEEP = "deep"


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact extracted from one user message.

    Attributes:
        content: assertive plain text of the fact (what is stored and embedded).
        confidence: in [0, 1], from the strength of the rule (or the LLM's own estimate).
        key: the slot it fills (``preferred_name``, ``birthday`` ...; see ``memlab.extraction.SLOTS``), or ``None``.
        value: the slot value, normalised where memlab knows how (dates ISO, cm, kg), when ``key`` is set.
        type: memory type (``profile``, ``preference``, ``fact``, ``event``, ``relation``).
        keywords: content words and entity values.
        topic: topic label, if the caller gave one.
        evidence: the sentence of the message the fact was read from.
        rule: which rule (or ``llm``) produced it.
        correction: the sentence corrects something said before ("anzi", "actually", "其实"): stored as an
            update of its slot (a LOW "updated" notice), not as a doubt to ask about.
    """

    content: str
    confidence: float
    key: str | None = None
    value: str | None = None
    type: str = "fact"
    keywords: tuple[str, ...] = ()
    topic: str | None = None
    evidence: str = ""
    rule: str = ""
    correction: bool = False


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """Everything an extractor read from one message.

    Attributes:
        facts: extracted facts, in message order.
        tone: detected tone, ``None`` when unclear.
        fatigue_signal: per-message fatigue in [0, 1] (the memory folds it over time).
        lang: language guessed for the message (``it``/``en``/``zh``).
        n_chars: characters of the (cleaned, possibly truncated) message.
        n_words: words of the message.
        has_emoji: whether the message contains emoji.
        truncated: the message was longer than the extractor's ``max_chars`` and was cut.
        extractor: ``rules`` or ``llm`` (``llm>rules`` when the LLM output was unusable and rules took over).
        fallback_reason: why the LLM extractor fell back to rules, else ``None``.
        signals: the measured fatigue components.
    """

    facts: tuple[Fact, ...] = ()
    tone: Tone | None = None
    fatigue_signal: float = 0.0
    lang: str = "it"
    n_chars: int = 0
    n_words: int = 0
    has_emoji: bool = False
    truncated: bool = False
    extractor: str = "rules"
    fallback_reason: str | None = None
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredFact:
    """A fact collected in a conversation (persisted).

    Attributes:
        id: row id.
        content: the fact's text.
        topic: topic label, if any.
        extracted_at: when it was extracted (UTC).
        confidence: in [0, 1].
        keywords: keywords.
        key: slot, if any.
        value: slot value, if any.
        type: memory type.
        memory_id: the :class:`~memlab.records.MemoryItem` holding it in the store.
        source: provenance ``conv:<conversation id>/msg:<n>``.
        message_index: 1-based index of the user message it came from.
        is_active: whether its memory is active in the store now (a superseded slot value is not).
    """

    id: int
    content: str
    topic: str | None
    extracted_at: datetime
    confidence: float
    keywords: tuple[str, ...]
    key: str | None
    value: str | None
    type: str
    memory_id: int | None
    source: str
    message_index: int
    is_active: bool = True


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic explored in the conversation.

    Attributes:
        topic_id: stable id (e.g. ``lavoro``).
        label: human label.
        coverage: shallow, moderate or deep.
        covered: sub-goals already covered.
        missing: sub-goals still open.
        last_explored_at: when it was last marked explored (UTC).
    """

    topic_id: str
    label: str
    coverage: Coverage
    covered: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    last_explored_at: datetime | None = None


class Priority(StrEnum):
    """How much an unanswered area matters."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class SkipReason(StrEnum):
    """Why an area was skipped."""

    USER_DECLINED = "user_declined"
    """The user said they would rather not answer."""
    OFF_TOPIC = "off_topic"
    """The conversation moved elsewhere."""
    TIME_LIMIT = "time_limit"
    """No time left (or the user was tired) to ask again."""


@dataclass(frozen=True, slots=True)
class UnansweredArea:
    """An area the user did not answer (or asked to skip).

    Attributes:
        area: what was asked about.
        priority: ``high``, ``medium`` or ``low``.
        attempts: how many times it was asked.
        skip_reason: why it was skipped (``user_declined``, ``off_topic``, ``time_limit``), if it was.
        updated_at: last change (UTC).
    """

    area: str
    priority: Priority = Priority.MEDIUM
    attempts: int = 1
    skip_reason: SkipReason | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ConversationMemory:
    """The anti-redundancy memory of one conversation: what is known, explored and unanswered, so nothing is asked twice.

    Attributes:
        conversation_id: the conversation.
        user_id: its owner (a conversation belongs to exactly one user).
        facts: facts collected, oldest first (including ones already known from earlier conversations).
        topics: topics explored.
        unanswered: unanswered areas.
        fatigue: folded fatigue score in [0, 1] (``0.7 * old + 0.3 * new`` per user message).
        tone: last detected tone (kept when a message shows none).
        avg_response_length: running mean of user message length in characters.
        n_messages: user messages seen.
        emoji_used: the user has used emoji.
        lang: language of the last message (``it``/``en``/``zh``).
        created_at: first seen (UTC).
        updated_at: last update (UTC).
    """

    conversation_id: str
    user_id: str
    facts: tuple[StoredFact, ...] = ()
    topics: tuple[TopicState, ...] = ()
    unanswered: tuple[UnansweredArea, ...] = ()
    fatigue: float = 0.0
    tone: Tone | None = None
    avg_response_length: float = 0.0
    n_messages: int = 0
    emoji_used: bool = False
    lang: str = "it"
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (datetimes as ISO strings)."""

        def conv(v: Any) -> Any:
            if isinstance(v, datetime):
                return v.isoformat()
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [conv(x) for x in v]
            return v

        return conv(asdict(self))  # type: ignore[no-any-return]
