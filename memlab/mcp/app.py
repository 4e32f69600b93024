"""Serve one MCP server kind over WebSocket (``/mcp`` plus ``GET /health``, a Starlette app) or over stdio.

Over WebSocket, the user-scoped kinds (``memory``, ``semantic``) need ``Authorization: Bearer <key>`` on the
handshake, a key from ``memlab users add NAME`` (the same hashed :class:`~memlab.serve.auth.ApiKeys` as
``memlab serve``): a missing or wrong key is refused before the WebSocket opens (HTTP 403), and every accepted
connection gets its own server bound to the key's user. Over stdio the user is the ``--user`` of the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memlab.errors import InvalidInputError
from memlab.mcp.servers import SERVER_KINDS, make_server
from memlab.mcp.tools import Runner, thread_runner

__all__ = ["create_mcp_app", "serve_stdio"]

log = logging.getLogger(__name__)


def _bearer(headers: Any) -> str | None:
    value = headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def create_mcp_app(
    kind: str,
    *,
    lab: Any = None,
    chunks: Any = None,
    keys: Any = None,
    runner: Runner | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> Any:
    """A Starlette app serving the ``kind`` MCP server at ``ws://.../mcp`` and its health at ``GET /health``.

    Args:
        kind: ``memory``, ``semantic`` or ``datetime``.
        lab: the open :class:`~memlab.app.Memlab` (``memory``; its database also holds the API keys).
        chunks: the :class:`~memlab.ingest.ChunkStore` (``semantic``).
        keys: the :class:`~memlab.serve.auth.ApiKeys` that authenticate connections (default: ``lab``'s
            database; required for ``semantic``).
        runner: where blocking calls run (default: one worker thread for the whole app).
        on_shutdown: called when the app stops (e.g. to close the database).

    Raises:
        InvalidInputError: a user-scoped kind without its backend or its keys.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocket

    from memlab.mcp.transport import serve_websocket

    if kind not in SERVER_KINDS:
        make_server(kind)  # raises UnknownComponentError with the valid names
    run = runner or thread_runner()
    scoped = kind != "datetime"
    if scoped and keys is None and lab is not None:
        from memlab.serve.auth import ApiKeys

        keys = ApiKeys(lab.store.db)
    if scoped and keys is None:
        raise InvalidInputError(f"The {kind!r} MCP server over WebSocket needs API keys ('keys' or 'lab').")
    # validate the backend once, at build time, with a throw-away user
    make_server(kind, user_id="_check", lab=lab, chunks=chunks, runner=run)
    tool_names = [t.name for t in _tools(kind, lab, chunks)]

    async def health(request: Request) -> JSONResponse:
        ok, checks = await _health_checks(run, lab, chunks)
        return JSONResponse({"status": "ok" if ok else "degraded", "server": kind, "tools": tool_names,
                             "transport": "websocket", "path": "/mcp", "checks": checks},
                            status_code=200 if ok else 503)

    async def mcp_endpoint(websocket: WebSocket) -> None:
        user: str | None = None
        if scoped:
            token = _bearer(websocket.headers)
            user = None if token is None else await run(lambda: keys.user_for(token))
            if user is None:
                log.info("MCP %s: refused a WebSocket without a valid API key", kind)
                await websocket.close(code=1008, reason="missing or invalid API key")
                return
        server = make_server(kind, user_id=user, lab=lab, chunks=chunks, runner=run)
        await serve_websocket(websocket, server)

    lifespan = _lifespan(lab, run, own_runner=runner is None, on_shutdown=on_shutdown)
    return Starlette(routes=[Route("/health", health), WebSocketRoute("/mcp", mcp_endpoint)], lifespan=lifespan)


async def _health_checks(run: Runner, lab: Any, chunks: Any) -> tuple[bool, dict[str, Any]]:
    """Each backend's state (reported, never raised): the store's memory count, the vector store's stats."""
    checks: dict[str, Any] = {}
    ok = True
    if lab is not None:
        try:
            checks["store"] = {"ok": True, "memories": await run(lambda: lab.store.count())}
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            ok = False
            checks["store"] = {"ok": False, "error": str(exc)}
    if chunks is not None:
        try:
            checks["vectors"] = {"ok": True, **(await run(chunks.stats))}
        except Exception as exc:  # noqa: BLE001
            ok = False
            checks["vectors"] = {"ok": False, "error": str(exc)}
    return ok, checks


def _lifespan(lab: Any, run: Runner, *, own_runner: bool, on_shutdown: Callable[[], None] | None) -> Any:
    """Run the lab's agent while the app serves; then stop it, the app's own worker thread and ``on_shutdown``."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        agent = getattr(lab, "agent", None) if lab is not None else None
        if agent is not None:
            await agent.start()
        try:
            yield
        finally:
            if agent is not None:
                await agent.stop()
            executor = getattr(run, "executor", None)
            if executor is not None and own_runner:
                executor.shutdown(wait=True)
            if on_shutdown is not None:
                on_shutdown()

    return lifespan


def _tools(kind: str, lab: Any, chunks: Any) -> list[Any]:
    from memlab.mcp.servers import datetime_tools, memory_tools, semantic_tools

    if kind == "memory":
        return memory_tools(lab, "_check")
    if kind == "semantic":
        return semantic_tools(chunks, "_check")
    return datetime_tools()


def serve_stdio(kind: str, *, user_id: str | None = None, lab: Any = None, chunks: Any = None) -> None:
    """Serve ``kind`` for ``user_id`` over this process's stdin/stdout until stdin closes (desktop MCP hosts).

    Raises:
        InvalidInputError: a user-scoped kind without ``user_id`` or its backend.
    """
    import anyio

    from memlab.mcp.transport import serve_stdio_lines

    run = thread_runner()
    server = make_server(kind, user_id=user_id, lab=lab, chunks=chunks, runner=run)

    async def main() -> None:
        agent = getattr(lab, "agent", None) if lab is not None else None
        if agent is not None:
            await agent.start()
        try:
            await serve_stdio_lines(server)  # answers malformed lines (the SDK's stdio transport drops them)
        finally:
            if agent is not None:
                await agent.stop()

    try:
        anyio.run(main)
    finally:
        run.executor.shutdown(wait=True)  # type: ignore[attr-defined]
