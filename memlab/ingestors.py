"""The fact-extraction step of an assistant turn: an :class:`Ingestor` turns a user message into stored memories.

* :class:`ConversationIngestor`: extraction through :mod:`memlab.extraction` (slots, the version rule, fatigue and
  the conversation-memory prompt block);
* :class:`SentenceIngestor`: the fallback, every assertive sentence becomes a plain memory;
* :func:`default_ingestor`: the best one available.

An ingestor only stores: the integrity check of each new memory is queued by the
:class:`~memlab.assistant.Assistant`. (Documents are ingested into Qdrant by :mod:`memlab.ingest`, not here.)

Example:
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
    >>> res = SentenceIngestor(store).ingest("u1", "c1", "Ciao! Abito a Roma da due anni. Tu dove vivi?")
    >>> [store.get(i, user_id="u1").text for i in res.memory_ids], res.extractor
    (['Abito a Roma da due anni.'], 'sentences')
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memlab.protocols import LLM
from memlab.store.memory import MemoryStore
from memlab.text import is_question, prompt_lang, split_sentences

__all__ = ["ConversationIngestor", "IngestResult", "Ingestor", "SentenceIngestor", "default_ingestor"]

log = logging.getLogger(__name__)


class IngestResult(BaseModel):
    """What one ingestion step stored.

    Attributes:
        memory_ids: ids of the memories written for this message (new or new versions).
        fatigue: the user's fatigue score after this message, when the extractor tracks it.
        prompt_block: the conversation-memory block for the prompt (``format_for_prompt``), if any.
        extractor: name of the extraction step used.
    """

    model_config = ConfigDict(frozen=True)

    memory_ids: list[int] = Field(default_factory=list)
    fatigue: float | None = None
    prompt_block: str = ""
    extractor: str = ""


@runtime_checkable
class Ingestor(Protocol):
    """The fact-extraction step of a turn: message in, stored memories out (never runs checks)."""

    def ingest(self, user_id: str, conversation_id: str, message: str, *, turn: int | None = None,
               topic: str | None = None) -> IngestResult:
        """Extract facts from ``message`` (``topic``: the conversation's current topic) and store them as memories
        of ``user_id``."""
        ...

    def state(self, user_id: str, conversation_id: str) -> IngestResult:
        """The current fatigue and prompt block of a conversation, without ingesting anything."""
        ...


class SentenceIngestor:
    """Fallback extraction: every assertive sentence of the message becomes a plain memory.

    Questions and one-word sentences ("ciao", "ok") are skipped; a sentence already stored (same text, active) is not
    stored again. Used when :mod:`memlab.extraction` is not available; it tracks no fatigue.

    Args:
        store: the memory store.
    """

    name = "sentences"

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def _sentences(self, message: str) -> list[str]:
        out = []
        for s in split_sentences(message):
            if is_question(s):
                continue
            cjk = any("\u3040" <= ch <= "\u9fff" for ch in s)
            if (cjk and len(s) < 3) or (not cjk and len(s.split()) < 2):
                continue  # greetings and one-word answers ("ciao", "ok") are not facts
            out.append(s[: self.store.max_text_chars])
        return out

    def ingest(self, user_id: str, conversation_id: str, message: str, *, turn: int | None = None,
               topic: str | None = None) -> IngestResult:
        """Store the message's assertive sentences (see the class docstring; ``topic`` is not used)."""
        known = {m.text for m in self.store.list(user_id)}
        source = f"conv:{conversation_id}" + (f"/msg:{turn}" if turn is not None else "")
        items = []
        for s in self._sentences(message):
            if s in known:
                continue
            known.add(s)
            items.append({"text": s, "source": source})
        stored = self.store.add_many(user_id, items) if items else []
        return IngestResult(memory_ids=[m.id for m in stored], extractor=self.name)

    def state(self, user_id: str, conversation_id: str) -> IngestResult:
        """No conversation state is tracked by this fallback."""
        return IngestResult(extractor=self.name)


def default_ingestor(store: MemoryStore, *, lang: str = "it", llm: LLM | None = None) -> Ingestor:
    """The best available extraction step: :mod:`memlab.extraction` when installed, else :class:`SentenceIngestor`."""
    try:
        return ConversationIngestor(store, lang=lang, llm=llm)
    except ImportError:
        log.info("assistant: memlab.extraction is not available; storing plain sentences")
        return SentenceIngestor(store)


class ConversationIngestor:
    """Extraction through :mod:`memlab.extraction`: one ``ConversationMemoryService`` per user.

    Facts go to the store (keyed when they fill a slot, so the version rule applies) with provenance
    ``conv:<conversation id>/msg:<n>``; the conversation memory gives the fatigue score and the
    ``format_for_prompt`` block.

    Args:
        store: the memory store.
        lang: the user's language (``it``/``en``/``zh``); the prompt block is Italian for ``it``, else English.
        llm: when given, the LLM extractor (with its rule fallback) is used; otherwise the rule extractor.
        extractor: an explicit extractor (overrides ``llm``).

    Raises:
        ImportError: :mod:`memlab.extraction` is not available.
    """

    name = "extraction"

    def __init__(self, store: MemoryStore, *, lang: str = "it", llm: LLM | None = None,
                 extractor: Any | None = None) -> None:
        from memlab.extraction import ConversationMemoryService, format_for_prompt, load_extractor

        self.store = store
        self.lang = prompt_lang(lang)  # the prompt block and the extraction prompt: it or en
        self._service_cls = ConversationMemoryService
        self._format = format_for_prompt
        self.extractor = extractor if extractor is not None else load_extractor(llm=llm, lang=self.lang)
        self._services: dict[str, Any] = {}

    def _service(self, user_id: str) -> Any:
        svc = self._services.get(user_id)
        if svc is None:
            svc = self._service_cls(self.store, self.extractor, user_id=user_id)
            self._services[user_id] = svc
        return svc

    def ingest(self, user_id: str, conversation_id: str, message: str, *, turn: int | None = None,
               topic: str | None = None) -> IngestResult:
        """Run the extractor on ``message`` (with the current topic and the facts already known); return the
        memories it wrote, the fatigue and the prompt block."""
        res = self._service(user_id).update_after_user_message(conversation_id, message, topic)
        return IngestResult(memory_ids=[m.id for m in res.memories], fatigue=float(res.memory.fatigue),
                            prompt_block=self._format(res.memory, self.lang), extractor=self.name)

    def state(self, user_id: str, conversation_id: str) -> IngestResult:
        """Fatigue and prompt block of the conversation (empty for a new conversation)."""
        from memlab.errors import NotFoundError

        try:
            mem = self._service(user_id).get(conversation_id)
        except NotFoundError:
            return IngestResult(extractor=self.name)
        return IngestResult(fatigue=float(mem.fatigue), prompt_block=self._format(mem, self.lang),
                            extractor=self.name)
