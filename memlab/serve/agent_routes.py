"""Seed 003's agent routes on the ``memlab serve`` app: ``POST /v1/chat`` (SSE) and ``POST /v1/ingest``.

``/v1/chat`` is one turn of the memory assistant (:meth:`memlab.assistant.Assistant.start_turn` /
:meth:`~memlab.assistant.Assistant.finish_turn`, the flow of ``POST /api/turn``) whose reply is written by
:func:`~memlab.mcp.run_turn_stepper`: an answer to an open contradiction ("A", "la prima") is applied without a
model call; otherwise the pending HIGH notifications are streamed first, the message's facts are stored and their
integrity checks enqueued, the model answers with memlab's MCP servers connected in-process (``memory.*`` scoped
to the key's user, ``time.now``, and ``vector.query`` over the user's ingested documents when ingestion is
available) plus the extra servers of ``MEMLAB_MCP_SERVERS`` (:attr:`memlab.config.Settings.mcp_servers`), with the
user's memories in its system prompt, and a MEDIUM offer follows the reply. The client sends its own history
(``messages``): the turn is appended to no chat. Server-sent events:

- ``token``: ``{"text": ...}`` a visible piece of the turn, as it arrives (the HIGH block first, when there is one,
  then the model's reply, then the MEDIUM offer);
- ``tool``: ``{"name", "arguments", "is_error", "dropped"}`` after each tool call (``dropped``: extra calls of the
  same reply that the single-tool rule did not run);
- ``done``: ``{"content", "tool_calls", "stopped", "response", "kind", "high_urgency_notifications",
  "notifications_count", "memory_ids", "job_ids", "checked"}``: ``content`` is the model's answer, ``response``
  everything the user saw (as ``POST /api/turn``'s ``response``); ``checked``: the checks of this message's
  memories finished before the event (``wait``, default true);
- ``error``: ``{"error", "detail"}`` when the model or a server failed (the stream then ends).

A client that disconnects cancels the turn: the model's stream is closed at its next piece and no further step
(tool call, model call, ``finish_turn``) runs; the memories the message already stored stay. No tool the model is
given can resolve, dismiss or change a notification (only the user can: the A-D answer, the API, the CLI, the
dashboard).

The model's hidden reasoning (``thinking``) is logged on the server, never sent. The model is
``app.state.chat_llm`` when set, else the app's configured LLM (``MEMLAB_LLM_BACKEND``, ``MEMLAB_LLM_MODEL``,
``MEMLAB_LLM_BASE_URL``); without one ``/v1/chat`` answers 503.

The same app also serves memlab's MCP servers over WebSocket, in-process (one store, one worker thread):
``/mcp`` (``memory``, for the bearer key's user), ``/mcp/datetime`` and ``/mcp/semantic``.

``/v1/ingest`` parses, chunks, embeds (with the store's embedder) and upserts documents into the user's chunks in
Qdrant (``app.state.chunks`` when set, else ``MEMLAB_QDRANT_URL``, else an embedded store beside the database): one
document sent as ``content``, or, in the seed's form ``{path_or_url, tags}``, a file or every file of a folder under
``MEMLAB_INGEST_ROOT`` (a URL is refused with 422: the server fetches nothing from the network; a path that does not
exist under the root, ``<data_dir>/ingest`` by default, is 404). The answer counts
``files``, ``chunks`` and ``errors`` (files that could not be ingested, each named in ``failed``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, FastAPI, Request, Response
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    Tag,
    model_validator,
)

from memlab.errors import BackendError, MemlabError, MissingDependencyError
from memlab.serve.common import WRITE, WRITE_ONE, Svc, User
from memlab.serve.errors import ClientDisconnected
from memlab.serve.schemas import IngestOut, JsonInt, text_field

__all__ = ["ChatMessage", "ChatRequest", "ChatWithMessage", "ChatWithMessages", "IngestBody", "IngestPathRequest",
           "IngestRequest", "add_agent_routes", "router"]

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
    wait: StrictBool = Field(True, description="wait (up to 120 s) for the integrity checks of the memories this "
                                               "message stored before the `done` event")


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
    """``POST /v1/ingest``: the document itself (``content``)."""

    model_config = _STRICT
    content: str = Field(min_length=1, max_length=5_000_000,
                         description="the document (control characters are removed when it is parsed; the request "
                                     "body limit, 8 MiB by default, applies first)")
    fmt: Literal["text", "markdown", "html"] = "text"
    source: text_field(1000, "a label (file name, URL); re-ingesting the same source replaces it")  # type: ignore[valid-type]
    tags: list[text_field(64, "a tag")] = Field(default_factory=list, max_length=20)  # type: ignore[valid-type]


#: What a URL looks like to ``/v1/ingest`` (a scheme, then ``://``); stated in the schema as ``not: {pattern}``.
URL_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://"
_URL = re.compile(URL_PATTERN)
_NO_URL = ("a URL cannot be ingested: this server has no network access (send the text as `content`, or a path under "
           "MEMLAB_INGEST_ROOT)")


def _not_a_url(value: str) -> str:
    if _URL.match(value):
        raise ValueError(_NO_URL)
    return value


class IngestPathRequest(BaseModel):
    """``POST /v1/ingest``, the seed's form: a file or folder on the server's disk, under ``MEMLAB_INGEST_ROOT``
    (relative paths are taken from it). Every supported file (``.txt``, ``.md``, ``.html``) is stored; the others are
    counted in ``errors``. A URL is refused with 422 (the server fetches nothing from the network); a path that does
    not exist under the root (``MEMLAB_INGEST_ROOT``, default ``<data_dir>/ingest``) is 404."""

    model_config = _STRICT
    path_or_url: Annotated[text_field(4096, "a file or folder under MEMLAB_INGEST_ROOT; not a URL"),  # type: ignore[valid-type]
                           Field(json_schema_extra={"not": {"pattern": URL_PATTERN}}), AfterValidator(_not_a_url)]
    tags: list[text_field(64, "a tag")] = Field(default_factory=list, max_length=20)  # type: ignore[valid-type]


def _ingest_form(value: Any) -> str:
    has_path = "path_or_url" in value if isinstance(value, dict) else isinstance(value, IngestPathRequest)
    return "IngestPathRequest" if has_path else "IngestRequest"


#: Body of ``POST /v1/ingest``: ``{content, fmt, source, tags}`` or the seed's ``{path_or_url, tags}``.
IngestBody = Annotated[
    Annotated[IngestRequest, Tag("IngestRequest")] | Annotated[IngestPathRequest, Tag("IngestPathRequest")],
    Discriminator(_ingest_form),
    Body(description="either {content, fmt?, source, tags?} or the seed's {path_or_url, tags?} (a server path)"),
]


#: Longest memory section in the system prompt of ``/v1/chat`` (characters): the agent reads more with memory.search.
AGENT_MEMORY_CHARS = 4000


def _chat_llm(request: Request, svc: Any) -> Any:
    llm = getattr(request.app.state, "chat_llm", None) or getattr(svc.lab.assistant, "llm", None)
    if llm is None or not hasattr(llm, "complete"):
        from typing import get_args

        from memlab.config import Settings

        backends = "|".join(get_args(Settings.model_fields["llm_backend"].annotation))
        raise BackendError(f"No chat model configured: set MEMLAB_LLM_BACKEND ({backends}; llamacpp, or auto with "
                           "memlab[llm-local] installed, runs the local model; ollama and openai also need "
                           "MEMLAB_LLM_MODEL and MEMLAB_LLM_BASE_URL), or app.state.chat_llm.")
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
    from memlab.serve.fair import FairEmbedder, long_work_twin

    settings = svc.lab.settings
    # ingestion embeds with a twin engine of its own (or yields to requests between texts): never stalls them
    inner = svc.lab.store.embedder
    embedder = FairEmbedder(inner, svc.priority, twin=long_work_twin(inner))
    if settings.qdrant_url:
        chunks = ChunkStore(url=settings.qdrant_url, embedder=embedder)
    elif settings.qdrant_path is not None:
        chunks = ChunkStore(path=settings.qdrant_path, embedder=embedder)
    elif svc.lab.store.db.in_memory:
        chunks = ChunkStore(path=":memory:", embedder=embedder)
    else:
        from memlab.store.opening import default_qdrant_path

        chunks = ChunkStore(path=default_qdrant_path(svc.lab.store.path, settings.data_dir), embedder=embedder)
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
                                "tool_calls, stopped, response, kind, high_urgency_notifications, "
                                "notifications_count, memory_ids, job_ids, checked}; error {error, detail}"},
    },
}
_SSE = {"description": "The turn as server-sent events: `token`s, a `tool` event after each tool call, then `done` "
                       "(or `error`, which ends the stream).", "content": {"text/event-stream": {"schema": _SSE_EVENT}}}


@router.post("/v1/chat", summary="One memory-assistant turn with memlab's MCP tools, streamed as server-sent events",
             operation_id="chat", response_class=_EventStream, responses={200: _SSE, **{
                 code: {"description": r["description"], "content": {"application/json": {"schema": {
                     "$ref": "#/components/schemas/ErrorBody"}}}} for code, r in WRITE.items()}})
async def chat(body: ChatRequest, user: User, svc: Svc, request: Request) -> Any:
    """The memory assistant's turn for the key's user, its reply written by the single-tool stepper; see the module
    docstring for the events."""
    from sse_starlette.sse import EventSourceResponse

    llm = _chat_llm(request, svc)
    message, _ = body.turn()
    # the assistant's turn up to the reply: an answer to a notification is applied; otherwise the pending
    # notifications are planned (HIGH shown first), the message's facts stored and their checks enqueued
    start = await svc.call(svc.lab.assistant.start_turn, user, message, in_chat=False,
                           conversation_id=f"{user}:v1-chat")
    return EventSourceResponse(_ChatTurn(body, user, svc, request, llm, start).events())


class _ChatTurn:
    """One ``/v1/chat`` turn after ``start_turn``: runs the model (or the answer) in a task and streams its events.

    When the client goes away, :meth:`events` is closed: ``gone`` is set, so the model's next streamed piece raises
    :class:`ClientDisconnected` in the model's thread (its HTTP stream is closed there), and the task is cancelled,
    so no further step (tool call, model call, ``finish_turn``) runs. What ``start_turn`` stored stays.
    """

    def __init__(self, body: Any, user: str, svc: Any, request: Request, llm: Any, start: Any) -> None:
        self.body, self.user, self.svc, self.request, self.llm, self.start = body, user, svc, request, llm, start
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
        self.gone = threading.Event()  # set when the client disconnects: the model's next piece stops its stream

    def on_token(self, text: str) -> None:  # called from the model's worker thread
        if self.gone.is_set():
            raise ClientDisconnected(f"the client of user {self.user}'s /v1/chat went away: the turn is cancelled")
        self.loop.call_soon_threadsafe(self.queue.put_nowait, ("token", {"text": text}))

    def on_step(self, step: Any) -> None:
        if step.thinking:
            log.info("chat user=%s step=%d: model thinking captured (%d chars, not streamed)", self.user, step.index,
                     len(step.thinking))
            log.debug("chat user=%s step=%d thinking: %s", self.user, step.index, step.thinking)
        if step.tool:
            self.queue.put_nowait(("tool", {"name": step.tool, "arguments": dict(step.arguments),
                                            "is_error": step.is_error, "dropped": list(step.dropped)}))

    async def done(self, content: str, tool_calls: list[str], stopped: str, resp: Any) -> None:
        svc = self.svc
        checked = await svc.wait_checks(list(resp.job_ids)) if self.body.wait else False
        count = await svc.call(svc.lab.notifications.count, self.user)
        await self.queue.put(("done", {"content": content, "tool_calls": tool_calls, "stopped": stopped,
                                       "response": resp.response, "kind": resp.kind,
                                       "high_urgency_notifications": resp.high_urgency_notifications,
                                       "notifications_count": count, "memory_ids": list(resp.memory_ids),
                                       "job_ids": list(resp.job_ids), "checked": checked}))

    async def answered(self) -> None:  # the message answered a notification: no model call
        await self.queue.put(("token", {"text": self.start.done.response}))
        await self.done(self.start.done.response, [], "answer", self.start.done)

    def servers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """memlab's in-process MCP servers for the user, and the extra ones of ``MEMLAB_MCP_SERVERS``."""
        from memlab.mcp import make_server
        from memlab.mcp.registry import target_from_text

        svc, user = self.svc, self.user
        servers: dict[str, Any] = {
            "memory": make_server("memory", user_id=user, lab=svc.lab, runner=svc.call),
            "time": make_server("datetime"),
        }
        chunks = _chunks(self.request.app, svc, create=False)
        if chunks is not None:
            servers["vector"] = make_server("semantic", user_id=user, chunks=chunks, runner=svc.call)
        return servers, {ns: target_from_text(t) for ns, t in svc.lab.settings.mcp_servers.items()}

    async def run(self) -> None:
        from memlab.mcp import AGENT_SYSTEM_PROMPT, MCPRegistry, run_turn_stepper
        from memlab.notify import medium_offer
        from memlab.text import messages as texts

        svc, start, body = self.svc, self.start, self.body
        assistant = svc.lab.assistant
        message, history = body.turn()
        memory = await svc.call(assistant.memory_prompt, self.user, message, prompt_block=start.prompt_block,
                                max_chars=AGENT_MEMORY_CHARS)
        system = "\n\n".join(p for p in (AGENT_SYSTEM_PROMPT, memory) if p)
        if start.high_block:  # HIGH notifications come before the reply
            await self.queue.put(("token", {"text": start.high_block + "\n\n"}))
        hooks = {"system_prompt": system, "on_token": self.on_token, "on_step": self.on_step}
        try:
            if body.enable_tools:
                servers, extra = self.servers()
                async with MCPRegistry({**servers, **extra}, optional=extra) as registry:
                    res = await run_turn_stepper(self.llm, registry, message, history=history,
                                                 max_steps=body.max_steps, **hooks)
            else:
                res = await run_turn_stepper(self.llm, None, message, history=history, enable_tools=False, **hooks)
        except ClientDisconnected:
            raise
        except MemlabError as exc:  # the turn is still recorded (the block was shown), then the stream ends
            failed = texts(start.lang)["llm_failed"].format(err=f"{type(exc).__name__}: {exc}")
            await svc.call(assistant.finish_turn, start, failed, llm_error=str(exc), from_model=False)
            raise
        resp = await svc.call(assistant.finish_turn, start, res.content)
        if start.plan is not None and start.plan.offer is not None:  # MEDIUM: offered after the reply
            offer = medium_offer(start.lang, 1 + len(start.plan.offer_more))
            await self.queue.put(("token", {"text": "\n\n" + offer}))
        await self.done(res.content, res.tool_calls, res.stopped, resp)

    async def guarded(self) -> None:
        try:
            await (self.answered() if self.start.done is not None else self.run())
        except ClientDisconnected as exc:
            log.info("chat: %s", exc)
        except MemlabError as exc:
            log.warning("chat user=%s failed: %s", self.user, exc)
            await self.queue.put(("error", {"error": type(exc).__name__, "detail": str(exc)}))
        except Exception:  # noqa: BLE001 - the stream must end with an event, not hang
            log.exception("chat user=%s failed unexpectedly", self.user)
            await self.queue.put(("error", {"error": "InternalError",
                                            "detail": "the turn failed (see the server log)"}))
        finally:
            await self.queue.put(None)

    async def events(self) -> AsyncIterator[dict[str, str]]:
        task = asyncio.create_task(self.guarded())
        try:
            while True:
                item = await self.queue.get()
                if item is None:
                    break
                yield _sse(*item)
        finally:  # the end of the stream, or the client went away: stop the model and the remaining steps
            self.gone.set()
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@router.post("/v1/ingest", status_code=201, summary="Parse, chunk, embed and store documents of the user",
             operation_id="ingest", response_model=IngestOut, responses=WRITE_ONE)
async def ingest(body: IngestBody, user: User, svc: Svc, request: Request) -> dict[str, Any]:
    """Store a document (``content``) or the files of a server path (``path_or_url``) in the user's vector store
    (``vector.query`` in ``/v1/chat`` and the semantic server). The work runs off the request thread, embedding in
    bounded batches that yield to other requests (:mod:`memlab.serve.fair`): a large document never stalls the
    other users."""
    chunks = await svc.call(_chunks, request.app, svc, create=True)
    if isinstance(body, IngestPathRequest):
        settings = svc.lab.settings
        root = settings.ingest_root if settings.ingest_root is not None else settings.data_dir / "ingest"
        path = Path(body.path_or_url.strip()).expanduser()
        target = path if path.is_absolute() else Path(root) / path
        report = await svc.long(chunks.ingest_files, user, target, tags=body.tags, within=root)
        stats = report.to_dict()
        return {"ingested": None, **stats, "chunks_total": await svc.call(chunks.count, user)}
    doc = await svc.long(chunks.ingest_text, user, body.content, fmt=body.fmt, source=body.source, tags=body.tags)
    return {"ingested": doc.to_dict(), "documents": [doc.to_dict()], "files": 1, "chunks": doc.n_chunks, "errors": 0,
            "failed": [], "chunks_total": await svc.call(chunks.count, user)}
