"""Seed 003's agent routes on the ``memlab serve`` app: ``POST /v1/chat`` (SSE) and ``POST /v1/ingest``.

``/v1/chat`` runs :func:`~memlab.mcp.run_turn_stepper` for the key's user with memlab's MCP servers connected
in-process (``memory.*`` scoped to that user, ``time.now``, and ``vector.query`` over the user's ingested
documents when ingestion is available), and streams server-sent events:

- ``token``: ``{"text": ...}`` a visible piece of the model's reply, as it arrives;
- ``tool``: ``{"name", "arguments", "is_error", "dropped"}`` after each tool call (``dropped``: extra calls of the
  same reply that the single-tool rule did not run);
- ``done``: ``{"content", "tool_calls", "stopped"}`` the final answer;
- ``error``: ``{"error", "detail"}`` when the model or a server failed (the stream then ends).

The model's hidden reasoning (``thinking``) is logged on the server, never sent. The model is
``app.state.chat_llm`` when set, else the app's configured LLM (``MEMLAB_LLM_BACKEND``, ``MEMLAB_LLM_MODEL``,
``MEMLAB_LLM_BASE_URL``); without one ``/v1/chat`` answers 503.

The same app also serves memlab's MCP servers over WebSocket, in-process (one store, one worker thread):
``/mcp`` (``memory``, for the bearer key's user), ``/mcp/datetime`` and ``/mcp/semantic``.

``/v1/ingest`` parses, chunks, embeds (with the store's embedder) and upserts one document into the user's
chunks in Qdrant (``app.state.chunks`` when set, else ``MEMLAB_QDRANT_URL``, else an embedded store beside the
database).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, FastAPI, Request, Response
from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictBool, Tag, model_validator

from memlab.errors import BackendError, MemlabError, MissingDependencyError
from memlab.serve.common import WRITE, Svc, User
from memlab.serve.schemas import IngestOut, JsonInt, text_field

__all__ = ["ChatMessage", "ChatRequest", "ChatWithMessage", "ChatWithMessages", "IngestRequest", "add_agent_routes",
           "router"]

log = logging.getLogger(__name__)


router = APIRouter(tags=["agent"])


def add_agent_routes(app: FastAPI) -> None:
    """Add ``/v1/chat``, ``/v1/ingest`` and the MCP WebSockets (``/mcp`` = memory, ``/mcp/datetime``,
    ``/mcp/semantic``) to ``app`` (flat routes, so ``app.routes`` keeps listing paths) and close the ChunkStore the
    routes opened when the app shuts down."""
    from starlette.routing import WebSocketRoute

    app.router.routes.extend(router.routes)
    app.router.routes += [WebSocketRoute("/mcp", _mcp_memory), WebSocketRoute("/mcp/datetime", _mcp_datetime),
                          WebSocketRoute("/mcp/semantic", _mcp_semantic)]
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as state:
            try:
                yield state
            finally:
                chunks = getattr(app.state, "_owned_chunks", None)
                if chunks is not None:
                    chunks.close()
                    app.state._owned_chunks = None

    app.router.lifespan_context = lifespan


_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
_LAST_USER = ("the last of 'messages' must be a user message with at least one visible character (a rule JSON "
              "Schema cannot state; the server refuses it with 422)")


class ChatMessage(BaseModel):
    """One earlier message of the conversation."""

    model_config = _STRICT
    role: Literal["user", "assistant"]
    content: text_field(20_000, blank=True)  # type: ignore[valid-type]


class _ChatOptions(BaseModel):
    model_config = _STRICT
    enable_tools: StrictBool = Field(True, description="False: a plain answer, no tools")
    max_steps: JsonInt = Field(6, ge=1, le=20, description="most tool calls in this turn")


class ChatWithMessage(_ChatOptions):
    """``POST /v1/chat``: the user's ``message``, with the earlier conversation in ``history``."""

    message: text_field(20_000, "the user's message")  # type: ignore[valid-type]
    history: list[ChatMessage] = Field(default_factory=list, max_length=100)

    def turn(self) -> tuple[str, list[dict[str, Any]]]:
        """``(message, history)``."""
        return str(self.message), [m.model_dump() for m in self.history]


class ChatWithMessages(_ChatOptions):
    """``POST /v1/chat``, the seed's form: ``messages``, the conversation ending with the user's message."""

    messages: list[ChatMessage] = Field(min_length=1, max_length=101, description=_LAST_USER)

    @model_validator(mode="after")
    def _last_is_user(self) -> ChatWithMessages:
        last = self.messages[-1]
        if last.role != "user" or not last.content.strip():
            raise ValueError(_LAST_USER)
        return self

    def turn(self) -> tuple[str, list[dict[str, Any]]]:
        """``(message, history)``."""
        return self.messages[-1].content, [m.model_dump() for m in self.messages[:-1]]


def _chat_form(value: Any) -> str:
    """Which form a body is in (a body with ``messages`` is the seed's form; anything else is validated as the
    ``message`` form, so its errors name that form's fields)."""
    has_messages = "messages" in value if isinstance(value, dict) else isinstance(value, ChatWithMessages)
    return "ChatWithMessages" if has_messages else "ChatWithMessage"


#: Body of ``POST /v1/chat``: ``message`` (+ optional ``history``), or ``messages`` (exactly one of the two forms).
ChatRequest = Annotated[
    Annotated[ChatWithMessage, Tag("ChatWithMessage")] | Annotated[ChatWithMessages, Tag("ChatWithMessages")],
    Discriminator(_chat_form),
    Body(description="either {message, history?} or {messages} (the seed's form), plus enable_tools and max_steps"),
]


class IngestRequest(BaseModel):
    """Body of ``POST /v1/ingest``."""

    model_config = _STRICT
    content: str = Field(min_length=1, max_length=5_000_000,
                         description="the document (control characters are removed when it is parsed; the request "
                                     "body limit, 8 MiB by default, applies first)")
    fmt: Literal["text", "markdown", "html"] = "text"
    source: text_field(1000, "a label (file name, URL); re-ingesting the same source replaces it")  # type: ignore[valid-type]
    tags: list[text_field(64, "a tag")] = Field(default_factory=list, max_length=20)  # type: ignore[valid-type]


def _chat_llm(request: Request, svc: Any) -> Any:
    llm = getattr(request.app.state, "chat_llm", None) or getattr(svc.lab.assistant, "llm", None)
    if llm is None or not hasattr(llm, "complete"):
        raise BackendError("No chat model configured: set MEMLAB_LLM_BACKEND (ollama|openai), MEMLAB_LLM_MODEL and "
                           "MEMLAB_LLM_BASE_URL, or app.state.chat_llm.")
    return llm


def _chunks(app: FastAPI, svc: Any, *, create: bool) -> Any:
    """The app's ChunkStore (None when ingestion is not installed and ``create`` is False)."""
    chunks = getattr(app.state, "chunks", None) or getattr(app.state, "_owned_chunks", None)
    if chunks is not None or not create:
        return chunks
    try:
        from memlab.ingest import ChunkStore
    except ImportError as exc:  # pragma: no cover - memlab[ingest] is in `all`
        raise MissingDependencyError("qdrant-client", "ingest") from exc
    settings = svc.lab.settings
    embedder = svc.lab.store.embedder
    if settings.qdrant_url:
        chunks = ChunkStore(url=settings.qdrant_url, embedder=embedder)
    elif settings.qdrant_path is not None:
        chunks = ChunkStore(path=settings.qdrant_path, embedder=embedder)
    elif svc.lab.store.db.in_memory:
        chunks = ChunkStore(path=":memory:", embedder=embedder)
    else:
        chunks = ChunkStore(path=Path(str(svc.lab.store.path) + ".qdrant"), embedder=embedder)
    app.state._owned_chunks = chunks
    return chunks


async def _ws_user(websocket: Any, svc: Any) -> str | None:
    value = websocket.headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    user: str | None = await svc.call(svc.keys.user_for, token.strip())
    return user


async def _mcp_memory(websocket: Any) -> None:
    """``ws://.../mcp``: the ``memory`` MCP server for the bearer key's user, in this process (same store, same
    worker thread as the HTTP routes)."""
    from memlab.mcp import make_server
    from memlab.mcp.transport import serve_websocket

    svc = websocket.app.state.svc
    user = await _ws_user(websocket, svc)
    if user is None:
        await websocket.close(code=1008, reason="missing or invalid API key")
        return
    await serve_websocket(websocket, make_server("memory", user_id=user, lab=svc.lab, runner=svc.call))


async def _mcp_datetime(websocket: Any) -> None:
    """``ws://.../mcp/datetime``: ``time.now`` (no key needed)."""
    from memlab.mcp import make_server
    from memlab.mcp.transport import serve_websocket

    await serve_websocket(websocket, make_server("datetime"))


async def _mcp_semantic(websocket: Any) -> None:
    """``ws://.../mcp/semantic``: ``vector.query`` over the key's user's documents ingested with ``/v1/ingest``."""
    from memlab.mcp import make_server
    from memlab.mcp.transport import serve_websocket

    svc = websocket.app.state.svc
    user = await _ws_user(websocket, svc)
    if user is None:
        await websocket.close(code=1008, reason="missing or invalid API key")
        return
    chunks = await svc.call(_chunks, websocket.app, svc, create=True)
    await serve_websocket(websocket, make_server("semantic", user_id=user, chunks=chunks, runner=svc.call))


class _EventStream(Response):
    """Only documents the media type of ``/v1/chat`` (the route returns an ``EventSourceResponse``)."""

    media_type = "text/event-stream"


def _sse(event: str, data: Any) -> dict[str, str]:
    return {"event": event, "data": json.dumps(data, ensure_ascii=False)}


#: One server-sent event of ``/v1/chat`` (OpenAPI 3.1: the schema of a ``text/event-stream`` is one event's).
_SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["token", "tool", "done", "error"]},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "description": "JSON: token {text}; tool {name, arguments, is_error, dropped}; done {content, "
                                "tool_calls, stopped}; error {error, detail}"},
    },
}
_SSE = {"description": "The turn as server-sent events: `token`s, a `tool` event after each tool call, then `done` "
                       "(or `error`, which ends the stream).", "content": {"text/event-stream": {"schema": _SSE_EVENT}}}


@router.post("/v1/chat", summary="One agent turn with memlab's MCP tools, streamed as server-sent events",
             operation_id="chat", response_class=_EventStream, responses={200: _SSE, **{
                 code: {"description": r["description"], "content": {"application/json": {"schema": {
                     "$ref": "#/components/schemas/ErrorBody"}}}} for code, r in WRITE.items()}})
async def chat(body: ChatRequest, user: User, svc: Svc, request: Request) -> Any:
    """Run the single-tool stepper for the key's user; see the module docstring for the events."""
    from sse_starlette.sse import EventSourceResponse

    from memlab.mcp import MCPRegistry, make_server, run_turn_stepper

    llm = _chat_llm(request, svc)
    chunks = _chunks(request.app, svc, create=False)
    servers: dict[str, Any] = {
        "memory": make_server("memory", user_id=user, lab=svc.lab, runner=svc.call),
        "time": make_server("datetime"),
    }
    if chunks is not None:
        servers["vector"] = make_server("semantic", user_id=user, chunks=chunks, runner=svc.call)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

    def on_token(text: str) -> None:  # called from the model's worker thread
        loop.call_soon_threadsafe(queue.put_nowait, ("token", {"text": text}))

    def on_step(step: Any) -> None:
        if step.thinking:
            log.info("chat user=%s step=%d: model thinking captured (%d chars, not streamed)", user, step.index,
                     len(step.thinking))
            log.debug("chat user=%s step=%d thinking: %s", user, step.index, step.thinking)
        if step.tool:
            queue.put_nowait(("tool", {"name": step.tool, "arguments": dict(step.arguments),
                                       "is_error": step.is_error, "dropped": list(step.dropped)}))

    message, history = body.turn()

    async def run() -> None:
        try:
            if body.enable_tools:
                async with MCPRegistry(servers) as registry:
                    res = await run_turn_stepper(llm, registry, message, history=history, max_steps=body.max_steps,
                                                 on_token=on_token, on_step=on_step)
            else:
                res = await run_turn_stepper(llm, None, message, history=history, enable_tools=False,
                                             on_token=on_token, on_step=on_step)
            await queue.put(("done", {"content": res.content, "tool_calls": res.tool_calls, "stopped": res.stopped}))
        except MemlabError as exc:
            log.warning("chat user=%s failed: %s", user, exc)
            await queue.put(("error", {"error": type(exc).__name__, "detail": str(exc)}))
        except Exception:  # noqa: BLE001 - the stream must end with an event, not hang
            log.exception("chat user=%s failed unexpectedly", user)
            await queue.put(("error", {"error": "InternalError", "detail": "the turn failed (see the server log)"}))
        finally:
            await queue.put(None)

    async def events() -> AsyncIterator[dict[str, str]]:
        task = asyncio.create_task(run())
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                yield _sse(*item)
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return EventSourceResponse(events())


@router.post("/v1/ingest", status_code=201, summary="Parse, chunk, embed and store one document of the user",
             operation_id="ingest", response_model=IngestOut, responses=WRITE)
async def ingest(body: IngestRequest, user: User, svc: Svc, request: Request) -> dict[str, Any]:
    """Store a document in the user's vector store (``vector.query`` in ``/v1/chat`` and the semantic server)."""
    chunks = await svc.call(_chunks, request.app, svc, create=True)
    report = await svc.call(chunks.ingest_text, user, body.content, fmt=body.fmt, source=body.source,
                            tags=body.tags)
    return {"ingested": report.to_dict(), "chunks_total": await svc.call(chunks.count, user)}

