"""Tools as data, served by the official MCP SDK's low-level :class:`mcp.server.Server`.

A :class:`ToolSpec` is a name, a description, a pydantic model of the arguments (its JSON schema is the tool's
``inputSchema``) and a plain synchronous function. :func:`build_server` turns a list of them into an MCP server
whose ``tools/call`` never crashes on bad input: arguments that do not validate, unknown tools and memlab errors
come back as a ``CallToolResult`` with ``isError: true`` and a readable message (the model can correct itself),
and an unexpected exception is logged and reported the same way without its internals.

Example:
    >>> from pydantic import BaseModel
    >>> class Echo(BaseModel):
    ...     text: str
    >>> server = build_server("echo", [ToolSpec("echo", "Repeat the text.", Echo, lambda a: {"text": a.text})])
    >>> server.name
    'echo'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memlab.errors import InvalidInputError, MemlabError, MissingDependencyError

__all__ = ["Runner", "ToolSpec", "build_server", "inline_runner", "thread_runner"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Runs a synchronous call somewhere safe (e.g. the one thread that owns the SQLite store) and awaits it.
Runner = Callable[[Callable[[], Any]], Awaitable[Any]]


async def inline_runner(fn: Callable[[], T]) -> T:
    """Run ``fn`` in the event loop's thread (cheap, pure tools such as the clock)."""
    return fn()


def thread_runner() -> Runner:
    """A runner that executes every call, one at a time, on a single dedicated worker thread.

    memlab's store is one SQLite writer with a FAISS index that is not thread-safe: every connection of a
    server process shares one such runner so their calls never overlap.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-mcp")

    async def run(fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(executor, fn)

    run.executor = executor  # type: ignore[attr-defined]
    return run


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool.

    Attributes:
        name: the tool name on its server (``search``); a registry adds the server's namespace (``memory.search``).
        description: what the model reads to decide when to call it.
        args: pydantic model of the arguments; its JSON schema is the tool's ``inputSchema``.
        fn: ``args -> JSON-able result``; a :class:`~memlab.errors.MemlabError` becomes an error result.
        blocking: run ``fn`` through the server's runner (True: it touches the store) or inline (False).
    """

    name: str
    description: str
    args: type[BaseModel]
    fn: Callable[[Any], Any]
    blocking: bool = True

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, without pydantic's titles (less noise in the model's prompt)."""
        schema = _strip_titles(self.args.model_json_schema())
        schema.pop("description", None)  # the model class's docstring: the tool's description says it better
        return schema  # type: ignore[no-any-return]


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def validation_message(tool: str, exc: ValidationError) -> str:
    """``Invalid arguments for tool 'search': query: Field required; k: ...`` (no input values echoed)."""
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors(include_url=False)]
    return f"Invalid arguments for tool {tool!r}: " + "; ".join(parts)


def build_server(
    name: str,
    tools: Sequence[ToolSpec],
    *,
    runner: Runner | None = None,
    instructions: str | None = None,
    version: str = "",
    refusals: Mapping[str, str] | None = None,
) -> Any:
    """An MCP :class:`mcp.server.Server` serving ``tools`` (``tools/list``, ``tools/call``, ``ping``).

    Args:
        name: the server name reported at ``initialize``.
        tools: the tools (unique names).
        runner: where blocking tools run (default: a new :func:`thread_runner`).
        instructions: text the server gives clients at ``initialize``.
        version: server version string.
        refusals: names that are deliberately not tools (e.g. ``resolve``: only the user may resolve a notification)
            and the error text a call to one of them gets back.

    Raises:
        InvalidInputError: duplicate tool names, or a refused name that is also a tool.
        MissingDependencyError: the ``mcp`` SDK is not installed (``pip install 'memlab[mcp]'``).
    """
    try:
        import mcp_types as types
        from mcp.server import Server
    except ImportError as exc:  # pragma: no cover - installed with memlab[mcp]
        raise MissingDependencyError("mcp", "mcp") from exc

    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools):
        raise InvalidInputError(f"Tool names of server {name!r} must be unique. Got {[t.name for t in tools]}.")
    refused = dict(refusals or {})
    if set(refused) & set(by_name):
        raise InvalidInputError(f"Server {name!r} both offers and refuses {sorted(set(refused) & set(by_name))}.")
    run = runner or thread_runner()
    listed = [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema()) for t in tools]

    def error(text: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = by_name.get(params.name)
        if spec is None and params.name in refused:
            return error(refused[params.name])
        if spec is None:
            return error(f"Unknown tool {params.name!r}. Valid tools: {', '.join(sorted(by_name))}.")
        try:
            args = spec.args.model_validate(params.arguments or {})
        except ValidationError as exc:
            return error(validation_message(spec.name, exc))
        try:
            if spec.blocking:
                value = await run(lambda: spec.fn(args))
            else:
                value = spec.fn(args)
        except MemlabError as exc:
            return error(f"{type(exc).__name__}: {exc}")
        except Exception:  # noqa: BLE001 - a tool failure is reported to the caller, never crashes the server
            log.exception("MCP tool %s.%s failed", name, spec.name)
            return error(f"Tool {spec.name!r} failed with an internal error (see the server log).")
        structured = value if isinstance(value, dict) else {"result": value}
        text = json.dumps(value, ensure_ascii=False, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=json.loads(json.dumps(structured, default=str)))

    return Server(name, version=version, instructions=instructions, on_list_tools=on_list_tools,
                  on_call_tool=on_call_tool)
