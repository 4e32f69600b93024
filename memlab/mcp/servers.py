"""The three MCP servers of memlab: ``memory``, ``datetime`` and ``semantic``.

Each ``*_tools`` function returns the :class:`~memlab.mcp.tools.ToolSpec` list of one server; :func:`make_server`
builds the SDK server for a kind and, for the user-scoped kinds, ONE user: the user is fixed when the connection
is made (from its bearer key over WebSocket, from ``--user`` over stdio) and no tool takes a user argument, so a
connection can only ever read and write its own user's data.

No tool can resolve, dismiss, undo or otherwise change a notification: that is the user's choice alone (the assistant
always asks, the user decides), made through the HTTP API with the user's key, the CLI, the dashboard or the chat's A-D answer
typed by the user. ``notifications_list`` only reads (it does not even mark a notification read), and a model that
calls ``memory.resolve`` gets an error result naming the user's ways (:data:`USER_ONLY_TOOLS`).

``web.search`` (the seed's fourth tool) needs the internet, which memlab's machines do not have: it is left out.

Example:
    >>> from memlab.app import open_memlab
    >>> from memlab.testing import FakeEmbedder, ScriptedJudge
    >>> lab = open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge(), checks=False)
    >>> [t.name for t in memory_tools(lab, "alice")]
    ['search', 'add', 'history', 'notifications_list']
    >>> datetime_tools()[0].fn(NowArgs(timezone="Europe/Rome"))["timezone"]
    'Europe/Rome'
    >>> lab.close()
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

from memlab._validation import check_user_id
from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.mcp.tools import Runner, ToolSpec, build_server

__all__ = [
    "CONSENT_REFUSAL",
    "SERVER_KINDS",
    "DEFAULT_NAMESPACES",
    "NowArgs",
    "datetime_tools",
    "make_server",
    "memory_tools",
    "semantic_tools",
    "USER_ONLY_TOOLS",
]

#: Actions on notifications that only the user may take: no MCP server offers them as tools.
USER_ONLY_TOOLS = frozenset({"resolve", "dismiss", "undo", "delete", "mark_read", "resolve_notification",
                             "dismiss_notification", "delete_notification", "undo_notification"})
#: What a model that calls one of :data:`USER_ONLY_TOOLS` reads back (an error result, nothing changed).
CONSENT_REFUSAL = ("Refused: only the user can resolve, dismiss or change a notification (memlab never decides for "
                   "them). Show the notification and ask the user to answer A, B, C or D; nothing was changed.")

#: The servers ``memlab mcp serve`` knows.
SERVER_KINDS = ("memory", "semantic", "datetime")
#: The namespace a registry gives each kind's tools: ``memory.search``, ``time.now``, ``vector.query``.
DEFAULT_NAMESPACES = {"memory": "memory", "datetime": "time", "semantic": "vector"}


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    """Arguments of ``memory.search``."""

    query: str = Field(min_length=1, max_length=2000, description="what to look for, in the user's words")
    k: int = Field(5, ge=1, le=50, description="how many memories to return")
    include_inactive: bool = Field(False, description="also return superseded or deactivated versions")


class AddArgs(_Args):
    """Arguments of ``memory.add``."""

    text: str = Field(min_length=1, max_length=4000, description="the fact to remember, as a sentence")
    key: str | None = Field(None, max_length=200, description="slot name (e.g. 'birthday'); a new value "
                            "for the same slot becomes a new version")
    value: str | None = Field(None, max_length=2000, description="the slot value")
    type: str = Field("fact", max_length=50, description="fact, preference, event, profile ...")


class HistoryArgs(_Args):
    """Arguments of ``memory.history``."""

    id: int = Field(ge=1, description="a memory id (any version of the chain)")


class NotificationsArgs(_Args):
    """Arguments of ``memory.notifications_list``."""

    include_resolved: bool = Field(False, description="also list resolved notifications")
    limit: int = Field(20, ge=1, le=200)


class NowArgs(_Args):
    """Arguments of ``time.now``."""

    timezone: str = Field("UTC", min_length=1, max_length=64, description="IANA zone, e.g. Europe/Rome")


class QueryArgs(_Args):
    """Arguments of ``vector.query``."""

    query: str = Field(min_length=1, max_length=2000, description="what to look for in the ingested documents")
    k: int = Field(5, ge=1, le=50, description="how many chunks to return")
    tags: list[str] = Field(default_factory=list, max_length=20,
                            description="only chunks carrying ALL these tags")


def _memory(m: Any, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": m.id, "text": m.text, "key": m.key, "value": m.value, "type": m.type,
                           "version": m.version, "is_active": m.is_active,
                           "created_at": m.created_at.isoformat() if m.created_at else None}
    if m.context:
        out["context"] = m.context
    if score is not None:
        out["score"] = round(float(score), 4)
    return out


def memory_tools(lab: Any, user_id: str) -> list[ToolSpec]:
    """The ``memory`` server's tools over ``lab`` (a :class:`~memlab.app.Memlab`), for ``user_id`` only.

    Raises:
        InvalidInputError: bad user id.
    """
    user = check_user_id(user_id, owner="memory_tools")

    def search(a: SearchArgs) -> dict[str, Any]:
        hits = lab.store.search(user, a.query, a.k, include_inactive=a.include_inactive)
        return {"memories": [_memory(m, s) for m, s in hits]}

    def add(a: AddArgs) -> dict[str, Any]:
        item, job_ids = lab.remember(user, a.text, key=a.key, value=a.value, type=a.type, source="mcp")
        return {"memory": _memory(item), "checks_queued": len(job_ids)}

    def history(a: HistoryArgs) -> dict[str, Any]:
        return {"versions": [_memory(m) for m in lab.store.history(a.id, user_id=user)]}

    def notifications_list(a: NotificationsArgs) -> dict[str, Any]:
        items = lab.notifications.list(user, include_resolved=a.include_resolved, limit=a.limit)
        return {"count": lab.notifications.count(user), "notifications": [_public(n.to_dict()) for n in items]}

    return [
        ToolSpec("search", "Search the user's long-term memories (facts, preferences, events) by meaning. "
                 "Use it before answering anything about the user.", SearchArgs, search),
        ToolSpec("add", "Remember a new fact about the user. With a key (e.g. 'birthday') a new value replaces "
                 "the old one as a new version; contradictions are checked in the background.", AddArgs, add),
        ToolSpec("history", "All versions of one memory, oldest first.", HistoryArgs, history),
        ToolSpec("notifications_list", "The user's open notifications (contradictions, reminders), newest first. "
                 "Read only: only the user can resolve one (show both memories and let the user answer A, B, C "
                 "or D); no tool can resolve, dismiss or change a notification.", NotificationsArgs,
                 notifications_list),
    ]


def _public(d: dict[str, Any]) -> dict[str, Any]:
    d.pop("user_id", None)  # the connection's own user: no need to echo it to the model
    return d


def now(a: NowArgs) -> dict[str, Any]:
    """``time.now``: the current time in a zone.

    Raises:
        InvalidInputError: unknown zone.
    """
    try:
        tz = UTC if a.timezone.upper() == "UTC" else ZoneInfo(a.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(
            f"Unknown timezone {a.timezone!r}: give an IANA name such as 'Europe/Rome' or 'Asia/Shanghai'."
        ) from None
    t = datetime.now(tz)
    return {"iso": t.isoformat(timespec="seconds"), "timezone": a.timezone, "date": t.date().isoformat(),
            "time": t.strftime("%H:%M:%S"), "weekday": t.strftime("%A"), "utc_offset": t.strftime("%z"),
            "unix": int(t.timestamp())}


def datetime_tools() -> list[ToolSpec]:
    """The ``datetime`` server's tool (``now``, namespaced ``time.now`` by a registry)."""
    return [ToolSpec("now", "The current date and time (ISO 8601) in a timezone (default UTC).", NowArgs, now,
                     blocking=False)]


def semantic_tools(chunks: Any, user_id: str) -> list[ToolSpec]:
    """The ``semantic`` server's tool (``query``, namespaced ``vector.query``) over a
    :class:`~memlab.ingest.ChunkStore`, reading only ``user_id``'s documents."""
    user = check_user_id(user_id, owner="semantic_tools")

    def query(a: QueryArgs) -> dict[str, Any]:
        hits = chunks.query(user, a.query, k=a.k, tags=a.tags)
        return {"chunks": [h.to_dict() for h in hits]}

    return [ToolSpec("query", "Search the user's ingested documents (notes, pages) by meaning; optionally only "
                     "chunks with all the given tags.", QueryArgs, query)]


Kind = Literal["memory", "semantic", "datetime"]


def make_server(
    kind: str,
    *,
    user_id: str | None = None,
    lab: Any = None,
    chunks: Any = None,
    runner: Runner | None = None,
) -> Any:
    """The SDK server of one kind, for one user.

    Args:
        kind: ``memory``, ``semantic`` or ``datetime``.
        user_id: the connection's user (needed by ``memory`` and ``semantic``).
        lab: the :class:`~memlab.app.Memlab` (``memory``).
        chunks: the :class:`~memlab.ingest.ChunkStore` (``semantic``).
        runner: where blocking tool calls run (share one per process: the store is single-threaded).

    Raises:
        UnknownComponentError: unknown kind.
        InvalidInputError: a user-scoped kind without a user, or without its backend.
    """
    if kind not in SERVER_KINDS:
        raise UnknownComponentError("MCP server", kind, SERVER_KINDS)
    if kind == "datetime":
        return build_server("memlab-datetime", datetime_tools(), runner=runner)
    if user_id is None:
        raise InvalidInputError(f"The {kind!r} MCP server is per user: give the connection's user_id.")
    if kind == "memory":
        if lab is None:
            raise InvalidInputError("The 'memory' MCP server needs an open Memlab ('lab').")
        return build_server("memlab-memory", memory_tools(lab, user_id), runner=runner,
                            instructions=f"Long-term memory of one user ({user_id}). Only the user can resolve a "
                                         "notification.", refusals=dict.fromkeys(USER_ONLY_TOOLS, CONSENT_REFUSAL))
    if chunks is None:
        raise InvalidInputError("The 'semantic' MCP server needs a ChunkStore ('chunks').")
    return build_server("memlab-semantic", semantic_tools(chunks, user_id), runner=runner,
                        instructions="Semantic search over the user's ingested documents.")
