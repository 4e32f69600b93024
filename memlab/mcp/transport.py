"""MCP over a WebSocket (the seed's transport): one JSON-RPC 2.0 message per text frame, both directions.

The official SDK (2.x) ships stdio and Streamable HTTP transports but no WebSocket one, so these two bridges
connect a WebSocket to the SDK's session streams exactly the way its stdio transport connects a pipe:

- :func:`serve_websocket` runs an SDK server over one accepted Starlette WebSocket (subprotocol ``mcp``);
- :func:`websocket_client` is a client transport for :class:`mcp.Client` (``Client(websocket_client(url))``).

A frame that is not a JSON-RPC message is handed to the session as an exception (the SDK answers with a
JSON-RPC error where it can), never crashes the connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

__all__ = ["SUBPROTOCOL", "serve_websocket", "websocket_client"]

log = logging.getLogger(__name__)

#: The WebSocket subprotocol MCP clients offer.
SUBPROTOCOL = "mcp"
#: Largest frame accepted (bytes).
MAX_FRAME = 8 * 1024 * 1024


def _streams() -> tuple[Any, Any, Any, Any]:
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    return read_writer, read_stream, write_stream, write_reader


def _parse(raw: str | bytes) -> Any:
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(raw, by_name=False))
    except Exception as exc:  # noqa: BLE001 - any malformed frame goes to the session as an error item
        return exc


def _dump(message: Any) -> str:
    return str(message.message.model_dump_json(by_alias=True, exclude_unset=True))


async def serve_websocket(websocket: Any, server: Any) -> None:
    """Serve ``server`` (an SDK low-level ``Server``) over ``websocket`` until either side closes.

    Args:
        websocket: a Starlette ``WebSocket``, not yet accepted.
        server: the MCP server for this connection.
    """
    from starlette.websockets import WebSocketDisconnect

    offered = websocket.scope.get("subprotocols") or []
    await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
    read_writer, read_stream, write_stream, write_reader = _streams()

    async def reader() -> None:
        async with read_writer:
            try:
                while True:
                    msg = await websocket.receive()
                    if msg["type"] == "websocket.disconnect":
                        return
                    raw = msg.get("text") if msg.get("text") is not None else msg.get("bytes")
                    if raw is not None:
                        await read_writer.send(_parse(raw))
            except (WebSocketDisconnect, anyio.ClosedResourceError, RuntimeError):
                return

    async def writer() -> None:
        async with write_reader:
            try:
                async for message in write_reader:
                    await websocket.send_text(_dump(message))
            except (WebSocketDisconnect, anyio.ClosedResourceError, RuntimeError):
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()
    try:
        await websocket.close()
    except (RuntimeError, WebSocketDisconnect):  # already closed by the client, or the server is shutting down
        pass


@asynccontextmanager
async def websocket_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    open_timeout: float = 10.0,
) -> AsyncIterator[tuple[Any, Any]]:
    """A client transport over a WebSocket (``ws://host:port/mcp``) for :class:`mcp.Client`.

    Args:
        url: the server's WebSocket URL.
        headers: extra handshake headers.
        token: a bearer key, sent as ``Authorization: Bearer <token>``.
        open_timeout: seconds to wait for the handshake.

    Yields:
        ``(read_stream, write_stream)`` as the SDK's transports do.

    Raises:
        websockets.exceptions.InvalidStatus: the server refused the handshake (e.g. 403 on a bad key).
        OSError: the server cannot be reached.
    """
    try:
        from websockets.asyncio.client import connect
    except ImportError as exc:  # pragma: no cover - installed with memlab[mcp]
        from memlab.errors import MissingDependencyError

        raise MissingDependencyError("websockets", "mcp") from exc

    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    read_writer, read_stream, write_stream, write_reader = _streams()
    async with connect(url, subprotocols=[SUBPROTOCOL], additional_headers=hdrs, open_timeout=open_timeout,
                       max_size=MAX_FRAME) as ws:  # type: ignore[list-item]

        async def reader() -> None:
            from websockets.exceptions import ConnectionClosed

            async with read_writer:
                try:
                    async for raw in ws:
                        await read_writer.send(_parse(raw))
                except (ConnectionClosed, anyio.ClosedResourceError):
                    return

        async def writer() -> None:
            from websockets.exceptions import ConnectionClosed

            async with write_reader:
                try:
                    async for message in write_reader:
                        await ws.send(_dump(message))
                except (ConnectionClosed, anyio.ClosedResourceError):
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
