"""MCP transports: WebSocket (the seed's: one JSON-RPC 2.0 message per text frame) and newline-delimited stdio.

The official SDK (2.x) ships stdio and Streamable HTTP transports but no WebSocket one, so these bridges connect a
WebSocket or a pipe to the SDK's session streams:

- :func:`serve_websocket` runs an SDK server over one accepted Starlette WebSocket (subprotocol ``mcp``);
- :func:`serve_stdio_lines` runs it over this process's stdin/stdout (desktop MCP hosts);
- :func:`websocket_client` is a client transport for :class:`mcp.Client` (``Client(websocket_client(url))``).

Every request gets an answer, never silence (the SDK drops a frame it cannot parse, and its client waits
forever): the transport answers a malformed frame itself, through the same writer as the session's replies:

- bytes that are not UTF-8 JSON: JSON-RPC error -32700 (id ``null``);
- JSON that is not one JSON-RPC 2.0 message (an array, a wrong ``jsonrpc``, a bad id or shape): -32600, with the
  frame's id when it has a usable one;
- a request whose strings hold a lone surrogate (``"\\ud800"``: valid JSON, not valid Unicode text, which no
  store or reply could encode): ``tools/call`` gets an error result (``isError: true``, so the model reads why),
  any other method -32602; nothing is run. A malformed notification or response has no id and is only logged.

A reply that cannot be encoded becomes a -32603 for its request, never a dead connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

__all__ = ["SUBPROTOCOL", "serve_stdio_lines", "serve_websocket", "websocket_client"]

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


#: JSON-RPC 2.0 error codes memlab answers malformed frames with.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class FrameReply:
    """A frame the transport answers itself (never reaches the session): ``message`` is the reply, or ``None``
    when nothing may be answered (a malformed notification or response has no id to answer)."""

    __slots__ = ("message",)

    def __init__(self, message: Any) -> None:
        self.message = message


def _error(id_: Any, code: int, message: str) -> Any:
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)))


def _valid_id(obj: Any) -> Any:
    """The frame's id when it is a usable JSON-RPC id (int or str without lone surrogates), else ``None``."""
    id_ = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(id_, bool) or not isinstance(id_, int | str) or (isinstance(id_, str) and _surrogate(id_)):
        return None
    return id_


def _surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(path, character)`` of the first lone surrogate in a decoded JSON value (keys included), else ``None``."""
    from memlab._validation import find_surrogate

    if isinstance(value, str):
        found = find_surrogate(value)
        return None if found is None else (path or "(value)", found)
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            hit = _surrogate(key, where) or _surrogate(item, where)
            if hit is not None:
                return hit
    if isinstance(value, list):
        for i, item in enumerate(value):
            hit = _surrogate(item, f"{path}[{i}]")
            if hit is not None:
                return hit
    return None


def _surrogate_reply(obj: dict[str, Any], where: str, char: str) -> FrameReply:
    """A request with a lone surrogate: ``tools/call`` gets an error result (the model reads it), others -32602."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    id_ = _valid_id(obj)
    where = where.encode("utf-8", "backslashreplace").decode()[:200]  # a printable, bounded path, never the value
    if id_ is None or "method" not in obj:
        log.info("MCP: dropped a notification or response that is not valid Unicode text (%s)", where)
        return FrameReply(None)
    text = (f"Invalid arguments: {where} is not valid Unicode text (lone surrogate U+{ord(char):04X}); nothing "
            "was done.")
    if obj.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return FrameReply(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=id_, result=result)))
    return FrameReply(_error(id_, INVALID_PARAMS, text))


def _parse(raw: str | bytes) -> Any:
    """One frame as a ``SessionMessage`` for the session, or a :class:`FrameReply` the transport sends itself:
    -32700 for bytes that are not UTF-8 JSON, -32600 for JSON that is not a JSON-RPC 2.0 message, an error
    result (``tools/call``) or -32602 for a request whose strings hold lone surrogates."""
    import json

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw  # strict: json.loads would guess UTF-16
        obj = json.loads(text, parse_constant=_no_constant)
    except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return FrameReply(_error(None, PARSE_ERROR, f"Parse error: the frame is not UTF-8 JSON ({exc})."))
    except RecursionError:
        return FrameReply(_error(None, INVALID_REQUEST, _TOO_DEEP))
    if not isinstance(obj, dict):
        kind = "a batch (array)" if isinstance(obj, list) else type(obj).__name__
        return FrameReply(_error(None, INVALID_REQUEST, f"Invalid Request: a frame must be one JSON-RPC 2.0 "
                                                         f"object, got {kind}."))
    try:
        hit = _surrogate(obj)
    except RecursionError:
        return FrameReply(_error(_valid_id(obj), INVALID_REQUEST, _TOO_DEEP))
    if hit is not None:
        return _surrogate_reply(obj, *hit)
    if obj.get("id") is not None and _valid_id(obj) is None:  # e.g. true or 1.5: MCP ids are strings or integers
        return FrameReply(_error(None, INVALID_REQUEST, f"Invalid Request: the id must be a string or an integer, "
                                                         f"got {json.dumps(obj['id'])[:40]}."))
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(obj, by_name=False))
    except Exception as exc:  # noqa: BLE001 - any shape error is answered, never raised
        errors = exc.errors() if hasattr(exc, "errors") else []
        why = (f"{'.'.join(map(str, errors[0].get('loc', ())))}: {errors[0].get('msg', '')}" if errors
               else type(exc).__name__)
        return FrameReply(_error(_valid_id(obj), INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message "
                                                                  f"({why})."))


_TOO_DEEP = "Invalid Request: the frame's JSON is nested too deeply."


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _dump(message: Any) -> str | None:
    """The reply's JSON text; a reply that cannot be encoded (e.g. a lone surrogate inside) becomes a -32603 for
    its request, never a dead writer (``None``: a notification that cannot be sent is dropped)."""
    try:
        return str(message.message.model_dump_json(by_alias=True, exclude_unset=True))
    except Exception:  # noqa: BLE001 - pydantic raises its own error on unencodable text
        id_ = getattr(message.message, "id", None)
        log.warning("MCP: a reply could not be encoded as UTF-8 JSON (request id %r)", id_)
        if id_ is None:
            return None
        return str(_error(id_, INTERNAL_ERROR, "Internal error: the reply is not valid Unicode text.")
                   .message.model_dump_json(by_alias=True, exclude_unset=True))


async def _route(raw: str | bytes, to_session: Any, to_client: Any) -> None:
    """Parse one frame and send it to the session, or its :class:`FrameReply` to the client."""
    item = _parse(raw)
    if not isinstance(item, FrameReply):
        await to_session.send(item)
    elif item.message is not None:
        await to_client.send(item.message)


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

    replies = write_stream.clone()  # the transport's own answers to malformed frames share the one writer

    async def reader() -> None:
        async with read_writer, replies:
            try:
                while True:
                    msg = await websocket.receive()
                    if msg["type"] == "websocket.disconnect":
                        return
                    raw = msg.get("text") if msg.get("text") is not None else msg.get("bytes")
                    if raw is not None:
                        await _route(raw, read_writer, replies)
            except (WebSocketDisconnect, anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError):
                return

    async def writer() -> None:
        async with write_reader:
            try:
                async for message in write_reader:
                    text = _dump(message)
                    if text is not None:
                        await websocket.send_text(text)
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


def _claim_std(fd: int, mode: str) -> tuple[Any, Any]:
    """A private binary file on standard ``fd`` (the wire), with ``fd`` itself pointed away from the wire (stdin at
    the null device, stdout at stderr) so that stray reads and prints of libraries never touch a frame; returns
    ``(file, restore)``."""
    import os

    private = os.dup(fd)
    away = os.open(os.devnull, os.O_RDONLY) if fd == 0 else os.dup(2)
    os.dup2(away, fd)
    os.close(away)

    def restore() -> None:
        os.dup2(private, fd)

    # closefd=False: a worker thread may still block on a read of it after the transport exits
    return os.fdopen(private, mode, buffering=0 if "w" in mode else -1, closefd=False), restore


async def _read_lines(stdin: Any, to_session: Any, to_client: Any) -> None:
    """Route each newline-delimited frame of ``stdin`` until EOF; a line longer than :data:`MAX_FRAME` is skipped
    and answered with -32600."""
    def readline(limit: int) -> bytes:
        return bytes(stdin.readline(limit))

    while True:  # abandon_on_cancel: a read blocked on the pipe never holds up shutdown
        line = await anyio.to_thread.run_sync(readline, MAX_FRAME + 1, abandon_on_cancel=True)
        if not line:
            return
        if len(line) > MAX_FRAME and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = await anyio.to_thread.run_sync(readline, MAX_FRAME, abandon_on_cancel=True)
            await to_client.send(_error(None, INVALID_REQUEST, f"Invalid Request: a frame is limited to "
                                                               f"{MAX_FRAME} bytes."))
            continue
        if line.strip():
            await _route(line, to_session, to_client)


async def serve_stdio_lines(server: Any, *, stdin: Any = None, stdout: Any = None) -> None:
    """Serve ``server`` over newline-delimited JSON-RPC on ``stdin``/``stdout`` (binary files; default this
    process's standard streams, claimed while serving) until ``stdin`` reaches EOF.

    The SDK's stdio transport drops a line that does not parse without answering; this one answers every
    malformed line (see :func:`_parse`), so a client never waits forever.
    """
    restores: list[Any] = []
    if stdin is None:
        stdin, restore = _claim_std(0, "rb")
        restores.append(restore)
    if stdout is None:
        stdout, restore = _claim_std(1, "wb")
        restores.append(restore)
    read_writer, read_stream, write_stream, write_reader = _streams()
    replies = write_stream.clone()

    async def reader() -> None:
        async with read_writer, replies:
            try:
                await _read_lines(stdin, read_writer, replies)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def writer() -> None:
        sink = anyio.wrap_file(stdout)
        async with write_reader:
            async for message in write_reader:
                text = _dump(message)
                if text is not None:
                    await sink.write(text.encode("utf-8") + b"\n")
                    await sink.flush()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        for restore in reversed(restores):
            restore()


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
                        item = _parse(raw)
                        if isinstance(item, FrameReply):  # the server sent a malformed frame: not answered
                            log.warning("MCP client: ignored a malformed frame from %s", url)
                        else:
                            await read_writer.send(item)
                except (ConnectionClosed, anyio.ClosedResourceError):
                    return

        async def writer() -> None:
            from websockets.exceptions import ConnectionClosed

            async with write_reader:
                try:
                    async for message in write_reader:
                        text = _dump(message)
                        if text is not None:
                            await ws.send(text)
                except (ConnectionClosed, anyio.ClosedResourceError):
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
