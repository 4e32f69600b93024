"""MCPRegistry: connect to several MCP servers, discover their tools, namespace them, route calls.

Each server is registered under a namespace (``memory``, ``time``, ``vector``); its tool ``search`` becomes
``memory.search`` for the model. A server target is a ``ws://``/``wss://`` URL (memlab's WebSocket transport,
optionally with a bearer key), a :class:`mcp.StdioServerParameters` (a subprocess), an SDK server object
(in-process), or any SDK transport. Each connection is held by a task of its own (asyncio), so any server can be
closed or reconnected in any order. Calls that fail at the transport level (connection lost, timeout) are retried
with exponential backoff (tenacity) after reconnecting that server; a tool's own error result is returned as is,
never retried (the model reads it and corrects itself).

Example:
    >>> import anyio
    >>> from memlab.mcp.servers import make_server
    >>> async def demo():
    ...     async with MCPRegistry({"time": make_server("datetime")}) as reg:
    ...         names = [t["function"]["name"] for t in reg.to_llm_tools()]
    ...         res = await reg.call_tool("time.now", {"timezone": "UTC"})
    ...         return names, res.is_error, res.data["timezone"]
    >>> anyio.run(demo)
    (['time.now'], False, 'UTC')
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from memlab.errors import BackendError, InvalidInputError, NotFoundError

__all__ = ["MCPRegistry", "RegisteredTool", "ServerSpec", "ToolResult", "target_from_text"]

log = logging.getLogger(__name__)

_NAMESPACE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How to reach one MCP server.

    Attributes:
        target: ``ws://host:port/mcp`` URL, :class:`mcp.StdioServerParameters`, an SDK server, or a transport.
        token: bearer key for a WebSocket target (``memlab users add NAME``).
        headers: extra WebSocket handshake headers.
    """

    target: Any
    token: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    """One discovered tool.

    Attributes:
        name: the namespaced name the model sees (``memory.search``).
        namespace: the server's namespace (``memory``).
        tool: the tool's name on its server (``search``).
        description: the server's description.
        input_schema: JSON schema of the arguments.
    """

    name: str
    namespace: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call.

    Attributes:
        name: the namespaced tool name that ran.
        text: the tool's text output (what goes back to the model).
        is_error: the tool reported an error (bad arguments, unknown id ...).
        data: the structured result, when the tool gave one.
        attempts: transport attempts made (1 + retries).
    """

    name: str
    text: str
    is_error: bool = False
    data: Any = None
    attempts: int = 1


def target_from_text(text: str) -> Any:
    """A server target written as text (``Settings.mcp_servers``): a ``ws://``/``wss://`` URL as is, anything else a
    command line started as a subprocess over stdio (:class:`mcp.StdioServerParameters`).

    Raises:
        InvalidInputError: an empty text or an ``http(s)://`` URL (memlab's MCP transport is WebSocket).

    Example:
        >>> target_from_text("ws://127.0.0.1:7001/mcp")
        'ws://127.0.0.1:7001/mcp'
        >>> t = target_from_text("python -m memlab.cli.main mcp serve datetime --transport stdio")
        >>> t.command, t.args[:2]
        ('python', ['-m', 'memlab.cli.main'])
    """
    import shlex

    text = text.strip() if isinstance(text, str) else ""
    if not text or text.startswith(("http://", "https://")):
        raise InvalidInputError(f"An MCP server target must be a ws:// or wss:// URL or a command line. Got {text!r}.")
    if text.startswith(("ws://", "wss://")):
        return text
    from mcp import StdioServerParameters

    argv = shlex.split(text)
    return StdioServerParameters(command=argv[0], args=argv[1:])


class _ConnectFailure(Exception):
    """Carries why a connection could not be opened from the task that tried to the caller."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _TransportFailure(BackendError):
    """A call failed below the tool (connection, timeout): worth a reconnect and a retry."""


class MCPRegistry:
    """Tools of several MCP servers behind one namespaced catalogue.

    Args:
        servers: ``{namespace: target or ServerSpec}``.
        retries: transport-level retries of a call (each after reconnecting its server).
        backoff_s: first backoff wait (doubles, capped at 8x).
        timeout_s: per-request read timeout.
        mode: the SDK's connection mode: ``legacy`` (``initialize`` handshake, as the seed's JSON-RPC) or ``auto``.
        optional: namespaces whose server may be unreachable: :meth:`connect_all` leaves it out (logged, and named
            in :attr:`unavailable`) instead of failing.

    Raises:
        InvalidInputError: a bad namespace or parameter.
    """

    def __init__(
        self,
        servers: Mapping[str, Any],
        *,
        retries: int = 2,
        backoff_s: float = 0.2,
        timeout_s: float = 30.0,
        mode: str = "legacy",
        optional: Collection[str] = (),
    ) -> None:
        if not servers:
            raise InvalidInputError("The 'servers' parameter of MCPRegistry must name at least one server. Got {}.")
        for ns in servers:
            if not isinstance(ns, str) or not _NAMESPACE.match(ns):
                raise InvalidInputError(
                    "MCPRegistry namespaces must be 1-32 letters, digits, '_' or '-', starting with a letter. "
                    f"Got {ns!r} instead.")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidInputError(f"The 'retries' parameter of MCPRegistry must be an int >= 0. Got {retries!r}.")
        self.servers = {ns: s if isinstance(s, ServerSpec) else ServerSpec(s) for ns, s in servers.items()}
        self.retries = retries
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self.mode = mode
        self.optional = frozenset(optional)
        #: optional servers left out by :meth:`connect_all`, with the reason
        self.unavailable: dict[str, str] = {}
        self.tools: dict[str, RegisteredTool] = {}
        self.close_timeout_s = 5.0
        self._clients: dict[str, Any] = {}
        self._holders: dict[str, tuple[Any, Any]] = {}  # ns -> (the task holding its connection, its stop event)

    # ------------------------------------------------------------------ connections
    def _client(self, spec: ServerSpec) -> Any:
        from mcp import Client

        target = spec.target
        if isinstance(target, str):
            if not target.startswith(("ws://", "wss://")):
                raise InvalidInputError(f"MCPRegistry targets given as text must be ws:// or wss:// URLs. Got {target!r}.")
            from memlab.mcp.transport import websocket_client

            target = websocket_client(target, token=spec.token, headers=spec.headers)
        return Client(target, mode=self.mode, read_timeout_seconds=self.timeout_s)

    async def _connect(self, ns: str) -> Any:
        """Open ``ns`` in a task of its own, which holds the connection until :meth:`_disconnect` (the SDK client
        is a nest of anyio task groups and cancel scopes: they must be left by the task that entered them, in
        reverse order, so one shared task could only ever close the server connected last)."""
        import asyncio

        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        stop = asyncio.Event()
        client_cm = self._client(self.servers[ns])  # InvalidInputError for a bad target, before any task

        async def hold() -> None:
            try:
                async with client_cm as client:
                    if not ready.done():
                        ready.set_result(client)
                    await stop.wait()
            except BaseException as exc:  # noqa: BLE001 - reported to the caller or logged; the task just ends
                if not ready.done():
                    ready.set_exception(_ConnectFailure(exc))
                else:
                    log.debug("MCP server %s: connection ended: %s", ns, _leaf(exc))
                if isinstance(exc, asyncio.CancelledError):
                    raise

        task = asyncio.create_task(hold(), name=f"memlab-mcp-{ns}")
        try:
            client = await ready
        except _ConnectFailure as failure:
            await asyncio.gather(task, return_exceptions=True)
            exc = failure.cause
            if isinstance(exc, InvalidInputError):
                raise exc from None
            raise BackendError(f"Cannot connect to MCP server {ns!r}: {_leaf(exc)}") from exc
        except BaseException:  # cancelled while connecting: do not leave the task behind
            stop.set()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        self._holders[ns] = (task, stop)
        self._clients[ns] = client
        return client

    async def _disconnect(self, ns: str) -> None:
        import asyncio

        self._clients.pop(ns, None)
        holder = self._holders.pop(ns, None)
        if holder is None:
            return
        task, stop = holder
        stop.set()
        done, _ = await asyncio.wait({task}, timeout=self.close_timeout_s)
        if not done:  # a dead connection may hang while closing
            log.debug("closing MCP server %s: no answer within %.1f s; cancelled", ns, self.close_timeout_s)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def connect_all(self) -> dict[str, RegisteredTool]:
        """Connect to every server and discover their tools.

        Returns:
            The catalogue (``{namespaced name: RegisteredTool}``).

        Raises:
            BackendError: a server that is not ``optional`` cannot be reached (the others are closed again).
        """
        try:
            for ns in self.servers:
                if ns not in self._clients:
                    try:
                        await self._connect(ns)
                    except (BackendError, InvalidInputError) as exc:
                        if ns not in self.optional:
                            raise
                        log.warning("MCP server %s left out: %s", ns, exc)
                        self.unavailable[ns] = str(exc)
            return await self.refresh_tools()
        except BaseException:
            await self.aclose()
            raise

    async def refresh_tools(self) -> dict[str, RegisteredTool]:
        """Ask every connected server for its tools again (``tools/list``) and rebuild the catalogue."""
        tools: dict[str, RegisteredTool] = {}
        for ns, client in self._clients.items():
            listed = await client.list_tools(cache_mode="refresh")
            for t in listed.tools:
                name = f"{ns}.{t.name}"
                tools[name] = RegisteredTool(name=name, namespace=ns, tool=t.name, description=t.description or "",
                                             input_schema=dict(t.input_schema or {"type": "object"}))
        self.tools = tools
        return tools

    async def aclose(self) -> None:
        """Close every connection."""
        for ns in list(self._holders)[::-1]:
            await self._disconnect(ns)

    async def __aenter__(self) -> MCPRegistry:
        await self.connect_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ the model's view
    def to_llm_tools(self, *, sep: str = ".") -> list[dict[str, Any]]:
        """The catalogue as tool definitions for Ollama / OpenAI chat APIs (``{"type": "function", ...}``).

        Args:
            sep: between namespace and tool: ``.`` (``memory.search``, the seed's names) or ``__`` for APIs that
                only accept ``[A-Za-z0-9_-]`` names (the official OpenAI API); :meth:`call_tool` accepts both.
        """
        return [{"type": "function",
                 "function": {"name": t.namespace + sep + t.tool, "description": t.description,
                              "parameters": dict(t.input_schema)}}
                for t in self.tools.values()]

    def resolve(self, name: str) -> RegisteredTool:
        """The tool a model-given name refers to (``memory.search`` or ``memory__search``).

        Raises:
            NotFoundError: no such tool (the message lists the valid names).
        """
        tool = self.tools.get(name)
        if tool is None and "__" in name:
            tool = self.tools.get(name.replace("__", ".", 1))
        if tool is None:
            raise NotFoundError(f"Unknown tool {name!r}. Valid tools: {', '.join(sorted(self.tools)) or '(none)'}.")
        return tool

    # ------------------------------------------------------------------ calls
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call a namespaced tool on its server.

        Transport failures are retried ``retries`` times with exponential backoff, reconnecting the server
        first; a tool's error result (``isError``) is returned, not raised and not retried.

        Raises:
            NotFoundError: unknown tool.
            BackendError: the server stayed unreachable after the retries.
        """
        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        tool = self.resolve(name)
        args = dict(arguments or {})
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=self.backoff_s, max=self.backoff_s * 8),
            retry=retry_if_exception_type(_TransportFailure),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    result = await self._call_once(tool, args, reconnect=attempts > 1)
        except _TransportFailure as exc:
            raise BackendError(f"MCP tool {tool.name!r} failed after {attempts} attempt(s): {exc}") from exc
        text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        data: Any = result.structured_content
        if data is None and not result.is_error:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
        return ToolResult(name=tool.name, text=text, is_error=bool(result.is_error), data=data, attempts=attempts)

    async def _call_once(self, tool: RegisteredTool, args: dict[str, Any], *, reconnect: bool) -> Any:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        ns = tool.namespace
        try:
            if reconnect or ns not in self._clients:
                await self._disconnect(ns)
                await self._connect(ns)
            return await self._clients[ns].call_tool(tool.tool, args)
        except MCPError as exc:
            if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                await self._disconnect(ns)  # the next call (or retry) reconnects
                raise _TransportFailure(f"{exc} (code {exc.code})") from exc
            # a JSON-RPC error answer: the server is up, retrying will not help
            raise BackendError(f"MCP server {ns!r} answered {tool.tool!r} with an error: {exc}") from exc
        except BackendError as exc:
            raise _TransportFailure(str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - closed streams, timeouts, OSError: the transport failed
            log.warning("MCP call %s failed at the transport level: %s", tool.name, _leaf(exc))
            await self._disconnect(ns)
            raise _TransportFailure(f"{type(_leaf(exc)).__name__}: {_leaf(exc)}") from exc


def _leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside ``exc`` (anyio task groups wrap transport errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
