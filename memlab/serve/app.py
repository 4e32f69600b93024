"""The FastAPI app of ``memlab serve``: chats, memory, notifications and turns as thin routes over :class:`memlab.app.Memlab`.

Every ``/api`` route needs ``Authorization: Bearer <key>`` (keys from ``memlab users add NAME``); the key decides
the user, and another user's ids answer 404 exactly like ids that do not exist. Service calls run one at a time
on a single worker thread (SQLite has one writer; the FAISS index is not thread-safe), while the background agent
runs its integrity checks inside the server's lifespan and is drained on shutdown.

Example:
    >>> from memlab.app import open_memlab
    >>> from memlab.testing import FakeEmbedder, ScriptedJudge
    >>> app = create_app(open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge()))
    >>> "/api/memory/{item_id}/history" in {r.path for r in app.routes}
    True
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memlab.app import Memlab, open_memlab
from memlab.config import Settings
from memlab.errors import BackendError, InvalidInputError, MemlabError, NotFoundError
from memlab.serve.auth import ApiKeys
from memlab.serve.schemas import (
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
    NotificationsOut,
    Resolve,
    TurnRequest,
)

__all__ = ["create_app"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Longest a request waits for integrity checks (``wait``) before answering with ``checked: false``.
WAIT_TIMEOUT_S = 120.0


class _Service:
    """The :class:`Memlab` behind the app, and the single worker thread every service call runs on."""

    def __init__(self, lab: Memlab, *, owns_lab: bool) -> None:
        self.lab = lab
        self.owns_lab = owns_lab
        self.keys = ApiKeys(lab.store.db)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-serve")

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    async def wait_checks(self, job_ids: list[int]) -> bool:
        agent = self.lab.agent
        if agent is None or not job_ids:
            return True
        return await agent.wait_idle(job_ids, timeout=WAIT_TIMEOUT_S)


def _status_for(exc: MemlabError) -> int:
    if isinstance(exc, NotFoundError):
        return status.HTTP_404_NOT_FOUND
    if isinstance(exc, InvalidInputError):
        return status.HTTP_422_UNPROCESSABLE_CONTENT
    if isinstance(exc, BackendError):
        return status.HTTP_503_SERVICE_UNAVAILABLE
    return status.HTTP_400_BAD_REQUEST


bearer = HTTPBearer(auto_error=False, description="an API key from `memlab users add NAME`")


def service(request: Request) -> _Service:
    """The app's service (a dependency)."""
    return request.app.state.svc  # type: ignore[no-any-return]

Svc = Annotated[_Service, Depends(service)]


async def current_user(
    svc: Svc, cred: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> str:
    """The user of the request's bearer key (401 without a valid one)."""
    user = None if cred is None else await svc.call(svc.keys.user_for, cred.credentials)
    if user is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Missing or invalid API key "
                            "(send 'Authorization: Bearer <key>'; create one with `memlab users add NAME`).",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


User = Annotated[str, Depends(current_user)]


def _lifespan(
    lab: Memlab | None, db: str | os.PathLike[str] | None, settings: Settings | None, open_kwargs: dict[str, Any]
) -> Any:
    """Open (or adopt) the Memlab at startup and run its agent; stop the agent and close what was opened."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        the_lab = lab if lab is not None else open_memlab(db, settings=settings, **open_kwargs)  # type: ignore[arg-type]
        svc = _Service(the_lab, owns_lab=lab is None)
        app.state.svc = svc
        if the_lab.agent is not None:
            await the_lab.agent.start()
        try:
            yield
        finally:
            if the_lab.agent is not None:
                await the_lab.agent.stop()  # drains the checks in flight; pending jobs stay queued in SQLite
            svc.executor.shutdown(wait=True)
            if svc.owns_lab:
                the_lab.close()
            else:
                the_lab.store.flush()

    return lifespan


#: Every route of the app; :func:`create_app` mounts it (other modules may add routers of their own).
router = APIRouter()


# ------------------------------------------------------------------ health
@router.get("/health", response_model=Health, tags=["health"])
async def health(svc: Svc, response: Response) -> Health:
    checks = await svc.call(_health_checks, svc.lab)
    ok = all(c["ok"] for c in checks.values())
    if not ok:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return Health(status="ok" if ok else "degraded", checks=checks)

# ------------------------------------------------------------------ chats
@router.post("/api/chats", response_model=ChatOut, status_code=201, tags=["chats"])
async def create_chat(body: ChatCreate, user: User, svc: Svc) -> ChatOut:
    chat = await svc.call(svc.lab.chats.create, user, body.title, _turns(body.turns))
    return ChatOut.of(chat)

@router.get("/api/chats", tags=["chats"], response_model=ChatSearchOut | list[ChatOut])
async def list_or_search_chats(
    user: User, svc: Svc,
    q: Annotated[str | None, Query(description="natural-language chat switch, e.g. 'la chat sul viaggio a Tokyo'")] = None,
    k: Annotated[int, Query(ge=1, le=50)] = 5,
) -> ChatSearchOut | list[ChatOut]:
    if q is None:
        return [ChatOut.of(c) for c in await svc.call(svc.lab.chats.list, user)]
    sw = await svc.call(svc.lab.chats.search, user, q, k)
    return ChatSearchOut(decision=sw.decision, chat_id=sw.chat_id, query=sw.query, candidates=[
        ChatCandidate(chat_id=c.id, title=c.title, summary_text=c.summary_text, score=round(float(s), 6))
        for c, s in sw.candidates])

@router.get("/api/chats/{chat_id}", response_model=ChatOut, tags=["chats"])
async def get_chat(chat_id: str, user: User, svc: Svc) -> ChatOut:
    return ChatOut.of(await svc.call(svc.lab.chats.get, chat_id, user_id=user))

@router.patch("/api/chats/{chat_id}", response_model=ChatOut, tags=["chats"])
async def append_chat(chat_id: str, body: ChatPatch, user: User, svc: Svc) -> ChatOut:
    return ChatOut.of(await svc.call(svc.lab.chats.append, chat_id, _turns(body.turns), user_id=user))

@router.delete("/api/chats/{chat_id}", status_code=204, tags=["chats"])
async def delete_chat(chat_id: str, user: User, svc: Svc) -> Response:
    await svc.call(svc.lab.delete_chat, user, chat_id)
    return Response(status_code=204)

# ------------------------------------------------------------------ memory
@router.post("/api/memory", response_model=MemoryCreated, status_code=201, tags=["memory"])
async def add_memory(body: MemoryCreate, user: User, svc: Svc) -> MemoryCreated:
    fields = body.model_dump(exclude={"text", "wait"})
    item, job_ids = await svc.call(svc.lab.remember, user, body.text, **fields)
    checked = await svc.wait_checks(job_ids) if body.wait else False
    count = await svc.call(svc.lab.notifications.count, user)
    return MemoryCreated(memory=MemoryOut.of(item), job_ids=job_ids, checked=checked, notifications_count=count)

@router.get("/api/memory", response_model=list[MemoryOut], tags=["memory"])
async def list_memory(
    user: User, svc: Svc,
    all: Annotated[bool, Query(description="include superseded and deactivated versions")] = False,  # noqa: A002
    key: str | None = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
) -> list[MemoryOut]:
    items = await svc.call(svc.lab.store.list, user, key=key, include_inactive=all, limit=limit)
    return [MemoryOut.of(m) for m in items]

@router.post("/api/memory/search", response_model=list[MemoryHit], tags=["memory"])
async def search_memory(body: MemorySearch, user: User, svc: Svc) -> list[MemoryHit]:
    hits = await svc.call(
        svc.lab.store.search, user, body.query, body.k, include_inactive=body.include_inactive, mode=body.mode
    )
    return [MemoryHit(memory=MemoryOut.of(m), score=round(float(s), 6)) for m, s in hits]

@router.get("/api/memory/{item_id}", response_model=MemoryOut, tags=["memory"])
async def get_memory(item_id: int, user: User, svc: Svc) -> MemoryOut:
    return MemoryOut.of(await svc.call(svc.lab.store.get, _id(item_id), user_id=user))

@router.get("/api/memory/{item_id}/history", response_model=list[MemoryOut], tags=["memory"])
async def memory_history(item_id: int, user: User, svc: Svc) -> list[MemoryOut]:
    return [MemoryOut.of(m) for m in await svc.call(svc.lab.store.history, _id(item_id), user_id=user)]

# ------------------------------------------------------------------ notifications
@router.get("/api/notifications", response_model=NotificationsOut, tags=["notifications"])
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

@router.post("/api/notifications/{notification_id}/resolve", tags=["notifications"])
async def resolve_notification(notification_id: int, body: Resolve, user: User, svc: Svc) -> dict[str, Any]:
    n = await svc.call(svc.lab.notifications.resolve, _id(notification_id), body.choice, body.note, user_id=user)
    return n.to_dict()

@router.post("/api/notifications/{notification_id}/undo", tags=["notifications"])
async def undo_notification(notification_id: int, user: User, svc: Svc) -> dict[str, Any]:
    return (await svc.call(svc.lab.notifications.undo, _id(notification_id), user_id=user)).to_dict()

# ------------------------------------------------------------------ one assistant turn
@router.post("/api/turn", tags=["assistant"])
async def turn(body: TurnRequest, user: User, svc: Svc) -> dict[str, Any]:
    resp = await svc.call(svc.lab.assistant.respond, user, body.message, chat_id=body.chat_id)
    checked = await svc.wait_checks(list(resp.job_ids)) if body.wait else False
    count = await svc.call(svc.lab.notifications.count, user)
    return {**resp.model_dump(), "notifications_count": count, "checked": checked}


def create_app(
    lab: Memlab | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    **open_kwargs: Any,
) -> FastAPI:
    """Build the app over ``lab`` (kept open by the caller) or over a database opened at startup.

    Args:
        lab: an open :class:`Memlab`; the app starts and stops its agent but does not close it.
        db: a SQLite path to open with :func:`memlab.app.open_memlab` at startup (closed at shutdown).
        settings: settings for ``db`` (default ``Settings()``).
        **open_kwargs: more :func:`open_memlab` arguments (``embedder``, ``judge``, ``llm``...).

    Raises:
        InvalidInputError: neither or both of ``lab`` and ``db``.
    """
    if (lab is None) == (db is None):
        raise InvalidInputError("create_app needs exactly one of 'lab' (an open Memlab) or 'db' (a SQLite path).")

    lifespan = _lifespan(lab, db, settings, open_kwargs)

    app = FastAPI(
        title="memlab",
        summary="Versioned long-term memory with contradiction checks, notifications and chat compaction.",
        version=_version(),
        lifespan=lifespan,
    )

    @app.exception_handler(MemlabError)
    async def _memlab_error(request: Request, exc: MemlabError) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=_status_for(exc))

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


def _health_checks(lab: Memlab) -> dict[str, dict[str, Any]]:
    """Each dependency: ``ok`` plus what was measured. The database is read through a fresh read-only
    connection, so a file that went missing or became unreadable shows up even while the app's own connection
    still has pages cached."""
    out: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    try:
        n = lab.store.probe()
        out["store"] = {"ok": True, "memories": int(n), "ms": round((time.perf_counter() - t0) * 1000, 2)}
    except (sqlite3.Error, BackendError) as exc:
        out["store"] = {"ok": False, "error": f"database unreadable: {exc}"}
    try:
        index = lab.store.index
        same_dim = int(index.dim) == int(lab.store.embedder.dim)
        out["index"] = {"ok": same_dim, "vectors": len(index), "dim": int(index.dim)}
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
