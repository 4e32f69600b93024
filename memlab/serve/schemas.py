"""Request and response bodies of ``memlab serve`` (pydantic; they are also the OpenAPI schema at ``/docs``).

The request schemas state what the server enforces, and pydantic enforces it, so every 422 comes from one place:

- text fields (:func:`text_field`): a length range, at least one visible character and no control characters
  (U+0000-U+001F other than tab, line feed and carriage return, and U+007F-U+009F), written as a JSON Schema
  ``pattern`` and checked by a validator with a readable message; a lone surrogate (``"\\ud800"``) is not text
  and is refused too;
- integers (:data:`JsonInt`): JSON numbers with no fractional part (``30`` and ``30.0``), never ``true`` or
  ``"30"``; booleans are JSON booleans only; numbers are finite (no ``NaN``/``Infinity``);
- ids: row ids are integers in ``[1, 2**63 - 1]``; chat ids match :data:`CHAT_ID_PATTERN`;
- no field that is not in the schema (``additionalProperties: false``).
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
    model_validator,
)

from memlab.chats import Chat
from memlab.config import MAX_SOURCE_CHARS, MAX_TEXT_CHARS
from memlab.errors import MemlabError
from memlab.records import MemoryItem

__all__ = [
    "CHAT_ID_PATTERN",
    "MAX_ROW_ID",
    "MAX_TURNS_PER_REQUEST",
    "NO_CONTROL_PATTERN",
    "TEXT_PATTERN",
    "ChatCreate",
    "ChatOut",
    "ChatPatch",
    "ChatSearchOut",
    "Health",
    "IngestOut",
    "JsonInt",
    "MemoryCreate",
    "MemoryOut",
    "MemorySearch",
    "NotificationOut",
    "NotificationsOut",
    "Resolve",
    "TurnIn",
    "TurnOut",
    "TurnPart",
    "TurnRequest",
    "text_field",
    "text_query",
]

# C0/C1 control characters except tab, line feed, carriage return (memlab._validation refuses the same set).
_C = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# What str.strip() removes, minus the control characters above (str.isspace() characters).
_WS = r"\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: A text field: at least one visible character, no control characters (JSON Schema / ECMA and Python ``re``).
TEXT_PATTERN = rf"^[{_WS}]*[^{_WS}{_C}][^{_C}]*$"
#: A text field that may be blank: no control characters.
NO_CONTROL_PATTERN = rf"^[^{_C}]*$"
_TEXT_RE = re.compile(TEXT_PATTERN)
_NO_CONTROL_RE = re.compile(NO_CONTROL_PATTERN)
#: Chat ids (the server makes 32 lowercase hex digits; anything else cannot exist).
CHAT_ID_PATTERN = r"^[0-9A-Za-z_-]{1,128}$"
#: Largest row id (SQLite's signed 64-bit integers).
MAX_ROW_ID = 2**63 - 1
#: Most turns one POST/PATCH of a chat may carry.
MAX_TURNS_PER_REQUEST = 200
#: Longest turn (all its parts together) and chat message, as :mod:`memlab.chats` and the assistant enforce.
MAX_TURN_CHARS = 100_000

_RULE = ("at least one visible character and no control characters (U+0000-U+001F other than tab, line feed "
         "and carriage return; U+007F-U+009F)")


def _visible_text(value: str) -> str:
    if _TEXT_RE.match(value) is None:
        raise ValueError(f"must contain {_RULE}")
    return value


def _no_control(value: str) -> str:
    if _NO_CONTROL_RE.match(value) is None:
        raise ValueError("must not contain control characters (U+0000-U+001F other than tab, line feed and "
                         "carriage return; U+007F-U+009F)")
    return value


def text_field(max_chars: int, what: str = "", *, blank: bool = False) -> Any:
    """``Annotated[str, ...]`` for a text field of at most ``max_chars`` characters (``blank``: may be empty)."""
    lead = f"{what}: " if what else ""
    if blank:
        desc = f"{lead}at most {max_chars} characters; no control characters (tab, line feed, carriage return are fine)."
        return Annotated[str, Field(max_length=max_chars, description=desc,
                                    json_schema_extra={"pattern": NO_CONTROL_PATTERN}), AfterValidator(_no_control)]
    desc = f"{lead}1-{max_chars} characters, with {_RULE}."
    return Annotated[str, Field(min_length=1, max_length=max_chars, description=desc,
                                json_schema_extra={"pattern": TEXT_PATTERN}), AfterValidator(_visible_text)]


def _json_int(value: Any) -> Any:
    """JSON integers only: ``30`` or ``30.0``, not ``true``, ``"30"`` or ``30.5`` (pydantic's lax mode takes them)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON integer")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError("must be a JSON integer (finite, no fractional part)")
    return value


#: An integer field of a JSON body.
JsonInt = Annotated[int, BeforeValidator(_json_int)]
#: A confidence: a finite JSON number in [0, 1].
_Unit = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
#: The chat id of a body field.
ChatId = Annotated[str, Field(pattern=CHAT_ID_PATTERN, description="a chat id (from POST /api/chats)")]


class TurnPart(BaseModel):
    """One part of a turn (``{"text": ...}``, the chat history shape)."""

    model_config = _STRICT
    text: text_field(MAX_TURN_CHARS)  # type: ignore[valid-type]


class TurnIn(BaseModel):
    """A chat turn: ``{"role": "user"|"model", "parts": [{"text": ...}], "thinking"?: ...}``; its parts together
    hold at most 100000 characters."""

    model_config = _STRICT
    role: Literal["user", "model"]
    parts: list[TurnPart] = Field(min_length=1, max_length=20)
    thinking: text_field(MAX_TURN_CHARS, "the model's reasoning", blank=True) | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _total(self) -> TurnIn:
        if sum(len(p.text.strip()) for p in self.parts) > MAX_TURN_CHARS:
            raise ValueError(f"the parts of a turn hold at most {MAX_TURN_CHARS} characters together")
        return self


class ChatCreate(BaseModel):
    """``POST /api/chats``."""

    model_config = _STRICT
    title: text_field(200, "a title (else one is written from the first turns)") | None = None  # type: ignore[valid-type]
    turns: list[TurnIn] = Field(default_factory=list, max_length=MAX_TURNS_PER_REQUEST)


class ChatPatch(BaseModel):
    """``PATCH /api/chats/{id}``: turns appended (compaction happens as in the library)."""

    model_config = _STRICT
    turns: list[TurnIn] = Field(min_length=1, max_length=MAX_TURNS_PER_REQUEST)


class ChatOut(BaseModel):
    """A chat as a front-end reads it (the summary embedding is left out). ``summary_text`` is empty until the first
    compaction, as in the seed; ``theme`` is what the chat is about from its first turn (its title comes from it)."""

    id: str
    user_id: str
    title: str | None
    full_history: list[dict[str, Any]]
    assistant_history: list[dict[str, Any]]
    summary_text: str | None
    theme: str | None = None
    last_activity_at: datetime
    created_at: datetime
    title_source: str
    compacted_until: int
    n_compactions: int

    @classmethod
    def of(cls, chat: Chat) -> ChatOut:
        return cls(id=chat.id, user_id=chat.user_id, title=chat.title, full_history=list(chat.full_history),
                   assistant_history=list(chat.assistant_history), summary_text=chat.summary_text, theme=chat.theme,
                   last_activity_at=chat.last_activity_at, created_at=chat.created_at,
                   title_source=chat.title_source, compacted_until=chat.compacted_until,
                   n_compactions=chat.n_compactions)


class ChatCandidate(BaseModel):
    """One ranked chat of a search."""

    chat_id: str
    title: str | None
    summary_text: str | None
    theme: str | None = None
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
    text: text_field(MAX_TEXT_CHARS, "the fact")  # type: ignore[valid-type]
    key: text_field(512, "slot name; a new value for the same slot becomes a new version") | None = None  # type: ignore[valid-type]
    value: text_field(MAX_TEXT_CHARS, "the slot value") | None = None  # type: ignore[valid-type]
    confidence: _Unit = 1.0
    type: text_field(64, "fact, preference, event ...") = "fact"  # type: ignore[valid-type]
    scope: text_field(64) = "global"  # type: ignore[valid-type]
    project_id: text_field(512) | None = None  # type: ignore[valid-type]
    source: text_field(MAX_SOURCE_CHARS, "provenance") | None = None  # type: ignore[valid-type]
    wait: StrictBool = Field(False, description="wait (up to 120 s) for the integrity check before answering")


class MemoryOut(BaseModel):
    """A memory version (``updated_at``: the time of its last change: created, superseded, deactivated, reactivated,
    annotated ...)."""

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
                   superseded_at=m.superseded_at, updated_at=m.updated_at or m.superseded_at or m.created_at,
                   valid_from=m.valid_from, valid_to=m.valid_to)


class MemoryCreated(BaseModel):
    """``POST /api/memory`` response: the stored version, its queued check and (with ``wait``) the new badge.

    ``outcome`` says what the version rule did: ``added`` (a new memory), ``new_version`` (it replaced the slot's
    active value, ``memory.supersedes``), or ``existing_retained``: the existing value kept its place (higher
    confidence) and ``retained_id`` names it (the seed's "Returns id1 (existing memory retained)"); ``memory`` is then
    the new, inactive version, kept in the history."""

    memory: MemoryOut
    outcome: Literal["added", "new_version", "existing_retained"]
    retained_id: int | None = None
    job_ids: list[int]
    checked: bool
    notifications_count: int


class MemorySearch(BaseModel):
    """``POST /api/memory/search``."""

    model_config = _STRICT
    query: text_field(MAX_TEXT_CHARS, "what to look for")  # type: ignore[valid-type]
    k: JsonInt = Field(10, ge=1, le=100)
    include_inactive: StrictBool = False
    mode: Literal["hybrid", "dense"] = Field(
        "hybrid", description="hybrid: dense + full-text, reciprocal rank fusion; dense: cosine only"
    )


class MemoryHit(BaseModel):
    """One search result."""

    memory: MemoryOut
    score: float


class NotificationOut(BaseModel):
    """A notification (``Notification.to_dict()``; fields may be added)."""

    model_config = ConfigDict(extra="allow")
    id: int
    user_id: str
    type: str
    urgency: str
    content: str
    payload: dict[str, Any]
    memory_ids: list[int]
    status: str
    actionable: bool
    created_at: str | None = None
    read_at: str | None = None
    shown_at: str | None = None
    resolved_at: str | None = None
    choice: str | None = None
    note: str | None = None
    source: str | None = None


class NotificationsOut(BaseModel):
    """``GET /api/notifications``: the bell (pending count) and the list grouped by urgency."""

    count: int
    by_urgency: dict[str, list[NotificationOut]]


class Resolve(BaseModel):
    """``POST /api/notifications/{id}/resolve``."""

    model_config = _STRICT
    choice: text_field(64, "A, B, C or D for a contradiction (a short label such as 'done' for others)")  # type: ignore[valid-type]
    note: text_field(10_000, "the user's explanation") | None = None  # type: ignore[valid-type]


class TurnRequest(BaseModel):
    """``POST /api/turn``: one assistant turn."""

    model_config = _STRICT
    message: text_field(MAX_TURN_CHARS, "the user's message")  # type: ignore[valid-type]
    chat_id: ChatId | None = None
    wait: StrictBool = Field(True, description="wait for this turn's integrity checks before answering")
    at: datetime | None = Field(
        None, json_schema_extra={"pattern": r"^(19|20|21)[0-9]{2}-"},
        description="when the message was said (ISO 8601, a time without offset is UTC; years 1900-2199; "
        "default now): relative dates are resolved against it, and the turn's memories, chat turns and its checks' "
        "notifications carry it, so a logged conversation replays exactly")

    @field_validator("at", mode="before")
    @classmethod
    def _at_in_range(cls, v: Any) -> datetime | None:
        from memlab.clock import check_time

        if v is not None and not isinstance(v, str):  # a number would be read as seconds since 1970
            raise ValueError("must be an ISO 8601 date-time string")
        try:
            return check_time(v, owner="POST /api/turn")
        except MemlabError as exc:
            raise ValueError(str(exc)) from None


class TurnOut(BaseModel):
    """``POST /api/turn`` response (:class:`memlab.assistant.AssistantResponse` plus ``checked``)."""

    model_config = ConfigDict(extra="allow")
    response: str
    notifications_count: int
    high_urgency_notifications: list[dict[str, Any]] = Field(default_factory=list)
    reply: str | None = None
    medium_offer: dict[str, Any] | None = None
    resolved: dict[str, Any] | None = None
    memory_ids: list[int] = Field(default_factory=list)
    job_ids: list[int] = Field(default_factory=list)
    chat_id: str | None = None
    llm_error: str | None = None
    kind: str = "chat"
    switch: dict[str, Any] | None = None
    checked: bool


class IngestOut(BaseModel):
    """``POST /v1/ingest`` response: what was stored, with the seed's statistics (``files``, ``chunks``, ``errors``)."""

    ingested: dict[str, Any] | None = Field(None, description="the document of a `content` request")
    documents: list[dict[str, Any]] = Field(default_factory=list, description="every document stored")
    files: int = Field(description="files (documents) stored")
    chunks: int = Field(description="chunks stored by this request")
    errors: int = Field(description="files that could not be ingested (each in `failed`)")
    failed: list[dict[str, str]] = Field(default_factory=list, description="`{source, error}` of each failed file")
    chunks_total: int = Field(description="the user's chunks after this request")


class Health(BaseModel):
    """``GET /health``."""

    status: Literal["ok", "degraded"]
    checks: dict[str, dict[str, Any]]
    reasons: list[str] = Field(default_factory=list, description="why the status is `degraded`: one line per "
                               "failing check (`writes: ...` when the database cannot be written: read-only, disk full)")


def text_query(max_chars: int, what: str = "") -> Any:
    """``Annotated[str, Query(...)]`` for a text query parameter (the rules of :func:`text_field`)."""
    from fastapi import Query

    lead = f"{what}: " if what else ""
    return Annotated[str, Query(min_length=1, max_length=max_chars, description=f"{lead}1-{max_chars} characters, "
                                f"with {_RULE}.", json_schema_extra={"pattern": TEXT_PATTERN}),
                     AfterValidator(_visible_text)]
