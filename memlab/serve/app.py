"""The FastAPI app of ``memlab serve``: chats, memory, notifications and turns as thin routes over :class:`memlab.app.Memlab`.

Every ``/api`` route needs ``Authorization: Bearer <key>`` (keys from ``memlab users add NAME``); the key decides
the user, and another user's ids answer 404 exactly like ids that do not exist. Every error has one body,
:class:`memlab.serve.errors.ErrorBody` (``{"error": <memlab error class>, "detail": ...}``), and every route
declares in the OpenAPI each status it can answer; a request body larger than ``max_body_bytes`` is refused
(413) before it is read. Service calls run one at a time
on a single worker thread (SQLite has one writer; the FAISS index is not thread-safe), long work that does not touch
the memory store (``/v1/ingest``) on a second thread at a lower priority (:mod:`memlab.serve.fair`), while the
background agent runs its integrity checks inside the server's lifespan and is drained on shutdown. ``/health``
probes writes too (:mod:`memlab.serve.health`): a read-only database or a full disk is a 503 with the reason, and the
server recovers by itself when the file is writable again.

Example:
    >>> from memlab.app import open_memlab
    >>> from memlab.testing import FakeEmbedder, ScriptedJudge
    >>> app = create_app(open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge()))
    >>> "/api/memory/{item_id:int}/history" in {r.path for r in app.routes}
    True
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request, Response, status

from memlab.app import Memlab, open_memlab
from memlab.config import Settings
from memlab.errors import BackendError, InvalidInputError, MemlabError, NotFoundError
from memlab.serve.common import READ, READ_ONE, WRITE, WRITE_ONE, Service, Svc, User
from memlab.serve.errors import (
    BodyLimitMiddleware,
    ConflictError,
    error_responses,
    install_error_handlers,
    max_body_bytes_from_env,
)
from memlab.serve.health import WriteLog, write_health
from memlab.serve.schemas import (
    CHAT_ID_PATTERN,
    MAX_ROW_ID,
    ChatCandidate,
    ChatCreate,
    ChatOut,
    ChatPatch,
    ChatSearchOut,
    Health,
    MemoryCreate,
    MemoryCreated,
    MemoryHit,
    MemoryOut,
    MemorySearch,
    NotificationOut,
    NotificationsOut,
    Resolve,
    TurnOut,
    TurnRequest,
    text_query,
)

__all__ = ["create_app"]

log = logging.getLogger(__name__)

#: Path parameters: row ids (``{item_id:int}`` in the route: a path segment that is not digits is another path,
#: 404; digits beyond SQLite's range: 422) and chat ids.
ItemId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="a memory id")]
NotificationId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="a notification id")]
ChatIdPath = Annotated[str, Path(pattern=CHAT_ID_PATTERN, description="a chat id (from POST /api/chats)")]


def _links(status_code: int, description: str, **links: tuple[str, str, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI links of a response (``name=(operationId, parameter, runtime expression)``): what a client (or a
    stateful fuzzer) can call next with the id this response returned."""
    return {status_code: {"description": description, "links": {
        name: {"operationId": op, "parameters": {param: expr}} for name, (op, param, expr) in links.items()}}}


def _lifespan(
    lab: Memlab | None, db: str | os.PathLike[str] | None, settings: Settings | None, open_kwargs: dict[str, Any]
) -> Any:
    """Open (or adopt) the Memlab at startup and run its agent; stop the agent and close what was opened."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        the_lab = lab if lab is not None else open_memlab(db, settings=settings, **open_kwargs)  # type: ignore[arg-type]
        svc = Service(the_lab, owns_lab=lab is None)
        app.state.svc = svc
        writes = await svc.call(write_health, the_lab.store.db)
        if not writes["ok"]:  # said at startup, and by /health (503) until the database can be written again
            svc.write_failing = True
            log.warning("memlab serve: %s", writes["error"])
        watcher = asyncio.create_task(svc.watch_writes())
        if the_lab.agent is not None:
            await the_lab.agent.start()
        try:
            yield
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            if the_lab.agent is not None:
                await the_lab.agent.stop()  # drains the checks in flight; pending jobs stay queued in SQLite
            svc.shutdown()
            if svc.owns_lab:
                the_lab.close()
            else:
                the_lab.store.flush()

    return lifespan


#: Every route of the app; :func:`create_app` mounts it (other modules may add routers of their own).
router = APIRouter()


# ------------------------------------------------------------------ health
@router.get("/health", response_model=Health, tags=["health"], operation_id="health",
            responses={503: {"model": Health, "description": "A dependency is down: `status` is `degraded` and "
                             "`checks` says which."}, **error_responses(413)})
async def health(svc: Svc, response: Response, request: Request) -> Health:
    """Every dependency: the store (read through a fresh connection), writes (a probe write rolled back: a read-only
    file or a full disk fails it), the index, the embedder, the judge, the agent, the chat model when one is
    configured (its server answers and lists the model) and the vector store of ingested documents (Qdrant).
    ``reasons`` says in one line per failing check why the status is ``degraded`` (503)."""
    checks = await svc.call(_health_checks, svc.lab, svc.writes)
    svc.write_failing = not checks.get("writes", {"ok": True})["ok"]
    llm = getattr(request.app.state, "chat_llm", None) or getattr(svc.lab.assistant, "llm", None)
    if llm is not None:
        checks["llm"] = await _llm_health(llm)
    qdrant = await _qdrant_health(request.app, svc)
    if qdrant is not None:
        checks["qdrant"] = qdrant
    reasons = [f"{name}: {c.get('error') or 'not ok'}" for name, c in checks.items() if not c["ok"]]
    if reasons:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return Health(status="degraded" if reasons else "ok", checks=checks, reasons=reasons)

# ------------------------------------------------------------------ chats
@router.post("/api/chats", response_model=ChatOut, status_code=201, tags=["chats"], operation_id="create_chat",
             responses={**WRITE, **_links(201, "The new chat.", GetChat=("get_chat", "chat_id", "$response.body#/id"),
                                          AppendChat=("append_chat", "chat_id", "$response.body#/id"),
                                          DeleteChat=("delete_chat", "chat_id", "$response.body#/id"))})
async def create_chat(body: ChatCreate, user: User, svc: Svc) -> ChatOut:
    chat = await svc.call(svc.lab.chats.create, user, body.title, _turns(body.turns))
    return ChatOut.of(chat)

@router.get("/api/chats", tags=["chats"], response_model=ChatOut | ChatSearchOut | list[ChatOut],
            operation_id="list_or_search_chats", responses=READ_ONE)
async def list_or_search_chats(
    user: User, svc: Svc,
    q: text_query(2000, "natural-language chat switch, e.g. 'la chat sul viaggio a Tokyo'") | None = None,  # type: ignore[valid-type]
    search: text_query(2000, "the seed's name for `q` (`q` is used when both are given)") | None = None,  # type: ignore[valid-type]
    id: Annotated[str | None, Query(pattern=CHAT_ID_PATTERN,  # noqa: A002 - the seed's parameter name
                                    description="the seed's `GET /api/chats?id=`: that one chat, as "
                                                "`GET /api/chats/{chat_id}` (404 when it is not the user's); "
                                                "`q`, `search` and `k` do not apply to it")] = None,
    k: Annotated[int, Query(ge=1, le=50)] = 5,
) -> ChatOut | ChatSearchOut | list[ChatOut]:
    """The user's chats (most recent first); with ``q`` (or the seed's ``search``), the semantic chat switch; with
    ``id``, that one chat (``id`` first, then ``q``, then ``search``: each query form is answered, never ignored for
    the whole list)."""
    if id is not None:
        return ChatOut.of(await svc.call(svc.lab.chats.get, id, user_id=user))
    query = q if q is not None else search
    if query is None:
        return [ChatOut.of(c) for c in await svc.call(svc.lab.chats.list, user)]
    sw = await svc.call(svc.lab.chats.search, user, query, k)
    return ChatSearchOut(decision=sw.decision, chat_id=sw.chat_id, query=sw.query, candidates=[
        ChatCandidate(chat_id=c.id, title=c.title, summary_text=c.summary_text, theme=c.theme,
                      score=round(float(s), 6))
        for c, s in sw.candidates])

@router.get("/api/chats/{chat_id}", response_model=ChatOut, tags=["chats"], operation_id="get_chat",
            responses=READ_ONE)
async def get_chat(chat_id: ChatIdPath, user: User, svc: Svc) -> ChatOut:
    return ChatOut.of(await svc.call(svc.lab.chats.get, chat_id, user_id=user))

@router.patch("/api/chats/{chat_id}", response_model=ChatOut, tags=["chats"], operation_id="append_chat",
              responses=WRITE_ONE)
async def append_chat(chat_id: ChatIdPath, body: ChatPatch, user: User, svc: Svc) -> ChatOut:
    """Append turns. Every turn is checked first (a bad one: 422, nothing appended); then they are appended
    :data:`PATCH_STEP_TURNS` at a time, each step one service call, so the other users' requests run between the
    steps of a long PATCH (compaction embeds what it archives). Updates of one chat never interleave. If the database
    fails midway, the turns of the steps before stay appended and the 503 says how many."""
    from memlab.chats.store import validate_turns

    chats = svc.lab.chats
    turns = _turns(body.turns)
    validate_turns(turns, owner="PATCH /api/chats/{chat_id}", max_chars=chats.max_turn_chars)
    async with svc.chat_lock(chat_id):
        chat = await svc.call(chats.append, chat_id, turns[:PATCH_STEP_TURNS], user_id=user)
        for i in range(PATCH_STEP_TURNS, len(turns), PATCH_STEP_TURNS):
            try:
                chat = await svc.call(chats.append, chat_id, turns[i:i + PATCH_STEP_TURNS], user_id=user)
            except BackendError as exc:
                raise BackendError(f"{exc} ({i} of the {len(turns)} turns were appended before the failure.)") from exc
    return ChatOut.of(chat)


#: Turns appended per service call by ``PATCH /api/chats/{id}`` (the longest another request waits for a PATCH).
PATCH_STEP_TURNS = 20

@router.delete("/api/chats/{chat_id}", status_code=204, tags=["chats"], operation_id="delete_chat",
               response_class=Response, responses=READ_ONE)
async def delete_chat(chat_id: ChatIdPath, user: User, svc: Svc) -> Response:
    async with svc.chat_lock(chat_id):  # not in the middle of a PATCH
        await svc.call(svc.lab.delete_chat, user, chat_id)
    return Response(status_code=204)

# ------------------------------------------------------------------ memory
@router.post("/api/memory", response_model=MemoryCreated, status_code=201, tags=["memory"], operation_id="add_memory",
             responses={**WRITE, **_links(201, "The stored version.",
                                          GetMemory=("get_memory", "item_id", "$response.body#/memory/id"),
                                          MemoryHistory=("memory_history", "item_id", "$response.body#/memory/id"))})
async def add_memory(body: MemoryCreate, user: User, svc: Svc) -> MemoryCreated:
    fields = body.model_dump(exclude={"text", "wait"})
    item, job_ids = await svc.call(svc.lab.remember, user, body.text, **fields)
    checked = await svc.wait_checks(job_ids) if body.wait else False
    count = await svc.call(svc.lab.notifications.count, user)
    retained = item.retained_id
    outcome = "existing_retained" if retained is not None else "new_version" if item.supersedes else "added"
    return MemoryCreated(memory=MemoryOut.of(item), outcome=outcome, retained_id=retained, job_ids=job_ids,
                         checked=checked, notifications_count=count)

@router.get("/api/memory", response_model=list[MemoryOut], tags=["memory"], operation_id="list_memory",
            responses=READ)
async def list_memory(
    user: User, svc: Svc,
    all: Annotated[bool, Query(description="include superseded and deactivated versions")] = False,  # noqa: A002
    key: text_query(512, "only memories of this slot") | None = None,  # type: ignore[valid-type]
    limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
) -> list[MemoryOut]:
    items = await svc.call(svc.lab.store.list, user, key=key, include_inactive=all, limit=limit)
    return [MemoryOut.of(m) for m in items]

@router.post("/api/memory/search", response_model=list[MemoryHit], tags=["memory"], operation_id="search_memory",
             responses=WRITE)
async def search_memory(body: MemorySearch, user: User, svc: Svc) -> list[MemoryHit]:
    hits = await svc.call(
        svc.lab.store.search, user, body.query, body.k, include_inactive=body.include_inactive, mode=body.mode
    )
    return [MemoryHit(memory=MemoryOut.of(m), score=round(float(s), 6)) for m, s in hits]

@router.get("/api/memory/{item_id:int}", response_model=MemoryOut, tags=["memory"], operation_id="get_memory",
            responses=READ_ONE)
async def get_memory(item_id: ItemId, user: User, svc: Svc) -> MemoryOut:
    return MemoryOut.of(await svc.call(svc.lab.store.get, _id(item_id), user_id=user))

@router.get("/api/memory/{item_id:int}/history", response_model=list[MemoryOut], tags=["memory"],
            operation_id="memory_history", responses=READ_ONE)
async def memory_history(item_id: ItemId, user: User, svc: Svc) -> list[MemoryOut]:
    return [MemoryOut.of(m) for m in await svc.call(svc.lab.store.history, _id(item_id), user_id=user)]

# ------------------------------------------------------------------ notifications
@router.get("/api/notifications", response_model=NotificationsOut, tags=["notifications"],
            operation_id="list_notifications", responses=READ)
async def list_notifications(
    user: User, svc: Svc, include_resolved: bool = False
) -> NotificationsOut:
    def read() -> NotificationsOut:
        items = svc.lab.notifications.list(user, include_resolved=include_resolved)
        groups: dict[str, list[dict[str, Any]]] = {"high": [], "medium": [], "low": []}
        for n in items:
            groups.setdefault(str(n.urgency.value).lower(), []).append(n.to_dict())
        return NotificationsOut(count=svc.lab.notifications.count(user), by_urgency=groups)

    return await svc.call(read)

@router.post("/api/notifications/{notification_id:int}/resolve", tags=["notifications"], response_model=NotificationOut,
             operation_id="resolve_notification", responses={**WRITE_ONE, **error_responses(409), **_links(
                 200, "The resolved notification.", Undo=("undo_notification", "notification_id", "$response.body#/id"))})
async def resolve_notification(notification_id: NotificationId, body: Resolve, user: User, svc: Svc) -> dict[str, Any]:
    def resolve() -> dict[str, Any]:
        n = svc.lab.notifications.get(notification_id, user_id=user)
        if not n.is_open:
            raise ConflictError(f"Notification {n.id} is already {n.status.value}; undo it first to change it.")
        if n.type.value == "contradiction" and body.choice.strip().upper() not in {"A", "B", "C", "D"}:
            raise ConflictError(f"Notification {n.id} is a contradiction: the choice must be A (keep the first), "
                                "B (keep the second), C (both are true) or D (neither).")
        return svc.lab.notifications.resolve(n.id, body.choice, body.note, user_id=user).to_dict()

    return await svc.call(resolve)

@router.post("/api/notifications/{notification_id:int}/undo", tags=["notifications"], response_model=NotificationOut,
             operation_id="undo_notification", responses={**READ_ONE, **error_responses(409), **_links(
                 200, "The notification, open again.",
                 Resolve=("resolve_notification", "notification_id", "$response.body#/id"))})
async def undo_notification(notification_id: NotificationId, user: User, svc: Svc) -> dict[str, Any]:
    def undo() -> dict[str, Any]:
        n = svc.lab.notifications.get(notification_id, user_id=user)
        if n.status.value != "resolved":
            raise ConflictError(f"Notification {n.id} is {n.status.value}, not resolved: nothing to undo.")
        return svc.lab.notifications.undo(n.id, user_id=user).to_dict()

    return await svc.call(undo)

# ------------------------------------------------------------------ one assistant turn
@router.post("/api/turn", tags=["assistant"], response_model=TurnOut, operation_id="turn",
             responses={**WRITE, **error_responses(404)})
async def turn(body: TurnRequest, user: User, svc: Svc) -> dict[str, Any]:
    resp = await svc.call(_respond_at, svc.lab.assistant, user, body.message, body.chat_id, body.at)
    checked = await svc.wait_checks(list(resp.job_ids)) if body.wait else False
    count = await svc.call(svc.lab.notifications.count, user)
    return {**resp.model_dump(), "notifications_count": count, "checked": checked}


def _respond_at(assistant: Any, user: str, message: str, chat_id: str | None, at: Any) -> Any:
    """One turn on the executor's thread, at the message's time when the request gives one (memlab.clock)."""
    from memlab.clock import message_time

    with message_time(at):
        return assistant.respond(user, message, chat_id=chat_id)


def create_app(
    lab: Memlab | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    max_body_bytes: int | None = None,
    **open_kwargs: Any,
) -> FastAPI:
    """Build the app over ``lab`` (kept open by the caller) or over a database opened at startup.

    Args:
        lab: an open :class:`Memlab`; the app starts and stops its agent but does not close it.
        db: an SQLite path or a ``postgresql://`` URL to open with :func:`memlab.app.open_memlab` at startup (closed
            at shutdown).
        settings: settings for ``db`` (default ``Settings()``).
        max_body_bytes: largest request body accepted (default ``MEMLAB_MAX_BODY_BYTES``, else 8 MiB); a larger
            one is answered 413 before it is read.
        **open_kwargs: more :func:`open_memlab` arguments (``embedder``, ``judge``, ``llm``...).

    Raises:
        InvalidInputError: neither or both of ``lab`` and ``db``; a ``max_body_bytes`` that is not an int >= 1.
    """
    if (lab is None) == (db is None):
        raise InvalidInputError("create_app needs exactly one of 'lab' (an open Memlab) or 'db' (a SQLite path).")
    limit = max_body_bytes_from_env() if max_body_bytes is None else max_body_bytes
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"The 'max_body_bytes' parameter of create_app must be an int >= 1. Got {limit!r}.")

    lifespan = _lifespan(lab, db, settings, open_kwargs)

    app = FastAPI(
        title="memlab",
        summary="Versioned long-term memory with contradiction checks, notifications and chat compaction.",
        version=_version(),
        lifespan=lifespan,
    )

    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=limit)  # before routing, parsing and authentication
    app.state.max_body_bytes = limit

    app.router.routes.extend(router.routes)  # flat routes: app.routes lists every path
    from memlab.serve.agent_routes import add_agent_routes  # the agent loop: /v1/chat (SSE), /v1/ingest

    add_agent_routes(app)
    return app


def _turns(turns: list[Any]) -> list[dict[str, Any]]:
    return [t.model_dump(exclude_none=True) for t in turns]


def _id(value: int) -> int:
    """SQLite ids are signed 64-bit: anything outside is an id that cannot exist."""
    if not 0 < value < 2**63:
        raise NotFoundError(f"No item with id {value}.")
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memlab")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0"


#: Longest wait for the chat model's health answer in ``/health``.
LLM_HEALTH_TIMEOUT_S = 10.0


async def _llm_health(llm: Any) -> dict[str, Any]:
    """The chat model's own check (:meth:`memlab.llm.BaseLLM.health`: the server answers and has the model), run off
    the service's worker thread and bounded by :data:`LLM_HEALTH_TIMEOUT_S`."""
    import asyncio

    name = getattr(llm, "name", type(llm).__name__)
    check = getattr(llm, "health", None)
    if not callable(check):
        return {"ok": True, "name": name}
    try:
        st = await asyncio.wait_for(asyncio.to_thread(check), timeout=LLM_HEALTH_TIMEOUT_S)
    except TimeoutError:
        return {"ok": False, "name": name, "error": f"no answer within {LLM_HEALTH_TIMEOUT_S:.0f} s"}
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return {"ok": False, "name": name, "error": str(exc)}
    return {"ok": bool(st.ok), "name": name, "backend": st.backend, "model": st.model, "detail": st.detail,
            "ms": round(float(st.latency_ms), 2)}


async def _qdrant_health(app: FastAPI, svc: Service) -> dict[str, Any] | None:
    """The vector store of ``/v1/ingest``: counted when it is open or a Qdrant server is configured (an embedded
    store not opened yet is reported as such: opening it would lock its folder); None without memlab[ingest]."""
    import importlib.util

    from memlab.serve.agent_routes import _chunks

    settings = svc.lab.settings
    if importlib.util.find_spec("qdrant_client") is None and getattr(app.state, "chunks", None) is None:
        return None
    try:
        chunks = await svc.call(_chunks, app, svc, create=bool(settings.qdrant_url))
    except MemlabError as exc:  # qdrant-client missing, or the server cannot be reached
        if not settings.qdrant_url:
            return None
        return {"ok": False, "url": settings.qdrant_url, "error": str(exc)}
    if chunks is None:
        return {"ok": True, "mode": "embedded", "opened": False}
    try:
        return {"ok": True, **(await svc.call(chunks.stats))}
    except Exception as exc:  # noqa: BLE001 - reported, not raised (the client may raise its own errors)
        return {"ok": False, "error": str(exc)}


def _health_checks(lab: Memlab, writes: WriteLog | None = None) -> dict[str, dict[str, Any]]:
    """Each dependency: ``ok`` plus what was measured. The database is read through a fresh read-only
    connection, so a file that went missing or became unreadable shows up even while the app's own connection
    still has pages cached; ``writes`` is a real write rolled back (:func:`memlab.serve.health.write_health`: a
    read-only file or a full disk fails it, with the reason)."""
    out: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    try:
        n = lab.store.probe()
        out["store"] = {"ok": True, "memories": int(n), "ms": round((time.perf_counter() - t0) * 1000, 2)}
    except (sqlite3.Error, BackendError) as exc:
        out["store"] = {"ok": False, "error": f"database unreadable: {exc}"}
    if getattr(lab.store, "db", None) is not None:  # SQLite (the write probe is SQLite's)
        out["writes"] = write_health(lab.store.db, writes)
    try:
        out["index"] = lab.store.backend.index_health()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        out["index"] = {"ok": False, "error": str(exc)}
    emb = lab.store.embedder
    out["embedder"] = {"ok": True, "name": getattr(emb, "name", type(emb).__name__), "dim": int(emb.dim)}
    if lab.checker is not None:
        judge = lab.checker.judge
        out["judge"] = {"ok": True, "name": getattr(judge, "name", type(judge).__name__)}
    if lab.agent is not None:
        running = lab.agent.running
        try:
            stats = lab.agent.stats()
        except (sqlite3.Error, BackendError) as exc:
            out["agent"] = {"ok": False, "running": running, "error": str(exc)}
        else:
            out["agent"] = {"ok": running, "running": running, "queue_depth": stats.get("pending", 0)
                            + stats.get("running", 0), "jobs": stats}
    return out
