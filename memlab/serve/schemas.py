"""Request and response bodies of ``memlab serve`` (pydantic; they are also the OpenAPI schema at ``/docs``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memlab.chats import Chat
from memlab.records import MemoryItem

__all__ = [
    "ChatCreate",
    "ChatOut",
    "ChatPatch",
    "ChatSearchOut",
    "Health",
    "MemoryCreate",
    "MemoryOut",
    "MemorySearch",
    "NotificationsOut",
    "Resolve",
    "TurnIn",
    "TurnPart",
    "TurnRequest",
]

_STRICT = ConfigDict(extra="forbid")


class TurnPart(BaseModel):
    """One part of a turn (``{"text": ...}``, the chat history shape)."""

    model_config = _STRICT
    text: str = Field(min_length=1)


class TurnIn(BaseModel):
    """A chat turn: ``{"role": "user"|"model", "parts": [{"text": ...}], "thinking"?: ...}``."""

    model_config = _STRICT
    role: Literal["user", "model"]
    parts: list[TurnPart] = Field(min_length=1)
    thinking: str | None = None


class ChatCreate(BaseModel):
    """``POST /api/chats``."""

    model_config = _STRICT
    title: str | None = Field(None, min_length=1, max_length=200)
    turns: list[TurnIn] = Field(default_factory=list)


class ChatPatch(BaseModel):
    """``PATCH /api/chats/{id}``: turns appended (compaction happens as in the library)."""

    model_config = _STRICT
    turns: list[TurnIn] = Field(min_length=1)


class ChatOut(BaseModel):
    """A chat as a front-end reads it (the summary embedding is left out)."""

    id: str
    user_id: str
    title: str | None
    full_history: list[dict[str, Any]]
    assistant_history: list[dict[str, Any]]
    summary_text: str | None
    last_activity_at: datetime
    created_at: datetime
    title_source: str
    compacted_until: int
    n_compactions: int

    @classmethod
    def of(cls, chat: Chat) -> ChatOut:
        return cls(id=chat.id, user_id=chat.user_id, title=chat.title, full_history=list(chat.full_history),
                   assistant_history=list(chat.assistant_history), summary_text=chat.summary_text,
                   last_activity_at=chat.last_activity_at, created_at=chat.created_at,
                   title_source=chat.title_source, compacted_until=chat.compacted_until,
                   n_compactions=chat.n_compactions)


class ChatCandidate(BaseModel):
    """One ranked chat of a search."""

    chat_id: str
    title: str | None
    summary_text: str | None
    score: float


class ChatSearchOut(BaseModel):
    """``GET /api/chats?q=...``: the semantic chat switch."""

    decision: Literal["switch", "ask", "none"]
    chat_id: str | None
    query: str
    candidates: list[ChatCandidate]


class MemoryCreate(BaseModel):
    """``POST /api/memory``."""

    model_config = _STRICT
    text: str = Field(min_length=1)
    key: str | None = None
    value: str | None = None
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    type: str = Field("fact", min_length=1, max_length=64)
    scope: str = Field("global", min_length=1, max_length=64)
    project_id: str | None = None
    source: str | None = None
    wait: bool = Field(False, description="wait (up to 120 s) for the integrity check before answering")


class MemoryOut(BaseModel):
    """A memory version (``updated_at`` is when this version last changed state)."""

    id: int
    user_id: str
    text: str
    scope: str
    type: str
    key: str | None
    value: str | None
    confidence: float
    project_id: str | None
    source: str | None
    version: int
    chain_id: int | None
    supersedes: int | None
    superseded_by: int | None
    is_active: bool
    context: str | None
    created_at: datetime | None
    superseded_at: datetime | None
    updated_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None

    @classmethod
    def of(cls, m: MemoryItem) -> MemoryOut:
        return cls(id=m.id, user_id=m.user_id, text=m.text, scope=m.scope, type=m.type, key=m.key, value=m.value,
                   confidence=m.confidence, project_id=m.project_id, source=m.source, version=m.version,
                   chain_id=m.chain_id, supersedes=m.supersedes, superseded_by=m.superseded_by,
                   is_active=m.is_active, context=m.context, created_at=m.created_at,
                   superseded_at=m.superseded_at, updated_at=m.superseded_at or m.created_at,
                   valid_from=m.valid_from, valid_to=m.valid_to)


class MemoryCreated(BaseModel):
    """``POST /api/memory`` response: the stored version, its queued check and (with ``wait``) the new badge."""

    memory: MemoryOut
    job_ids: list[int]
    checked: bool
    notifications_count: int


class MemorySearch(BaseModel):
    """``POST /api/memory/search``."""

    model_config = _STRICT
    query: str = Field(min_length=1)
    k: int = Field(10, ge=1, le=100)
    include_inactive: bool = False
    mode: Literal["hybrid", "dense"] = Field(
        "hybrid", description="hybrid: dense + full-text, reciprocal rank fusion; dense: cosine only"
    )


class MemoryHit(BaseModel):
    """One search result."""

    memory: MemoryOut
    score: float


class NotificationsOut(BaseModel):
    """``GET /api/notifications``: the bell (pending count) and the list grouped by urgency."""

    count: int
    by_urgency: dict[str, list[dict[str, Any]]]


class Resolve(BaseModel):
    """``POST /api/notifications/{id}/resolve``."""

    model_config = _STRICT
    choice: str = Field(min_length=1, max_length=64, description="A, B, C or D for a contradiction")
    note: str | None = None


class TurnRequest(BaseModel):
    """``POST /api/turn``: one assistant turn."""

    model_config = _STRICT
    message: str = Field(min_length=1)
    chat_id: str | None = None
    wait: bool = Field(True, description="wait for this turn's integrity checks before answering")


class Health(BaseModel):
    """``GET /health``."""

    status: Literal["ok", "degraded"]
    checks: dict[str, dict[str, Any]]
