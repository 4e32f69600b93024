"""Chats and compaction: long chats keep a summary turn plus a window of recent turns, and are searchable.

* :class:`ChatStore`: user-scoped chats in the memory store's SQLite file; ``full_history`` for the UI,
  ``assistant_history`` (at most 30 turns, a summary turn at the head once compacted) for the model; a
  chat-level ``summary_text`` + ``summary_embedding`` and a title derived from it.
* :class:`Summarizer` protocol with :class:`ExtractiveSummarizer` (offline default) and
  :class:`LLMSummarizer`.
* Natural-language chat switch: :meth:`ChatStore.search` returns a :class:`ChatSwitch`.

Example:
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> chats = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder()))
    >>> chat = chats.create("u1", turns=[{"role": "user", "parts": [{"text": "Parto per Tokyo il 3 maggio."}]}])
    >>> chat.theme, chat.summary_text  # what it is about from its first turn; a summary after the first compaction
    ('Parto per Tokyo il 3 maggio.', None)
"""

from __future__ import annotations

from memlab.chats.store import SUMMARY_WINDOW_SIZE, Chat, ChatStore, make_title, validate_turns
from memlab.chats.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Passage,
    Summarizer,
    Summary,
    SummarySentence,
    split_sentences,
)
from memlab.chats.switch import ChatSwitch, strip_switch_phrase

__all__ = [
    "Chat",
    "ChatStore",
    "ChatSwitch",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Passage",
    "SUMMARY_WINDOW_SIZE",
    "Summarizer",
    "Summary",
    "SummarySentence",
    "make_title",
    "split_sentences",
    "strip_switch_phrase",
    "validate_turns",
]
